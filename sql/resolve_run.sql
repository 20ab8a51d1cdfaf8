-- title: Resolve a run reference
-- description: Runs matching a reference: the exact id, an id prefix, a label (newest first), or 'latest'.
-- params: ref
SELECT run_id, label, status,
       CASE WHEN run_id = $ref THEN 0 WHEN $ref = 'latest' THEN 1
            WHEN label = $ref THEN 2 ELSE 3 END AS how
FROM runs
WHERE run_id = $ref
   OR starts_with(run_id, $ref)
   OR label = $ref
   OR $ref = 'latest'
ORDER BY how, run_id DESC;
