-- title: Resolve a run reference
-- description: Runs matching a reference: the exact id, 'latest', a baseline name, a label (newest first), or an id prefix.
-- params: ref
SELECT run_id, label, status,
       CASE WHEN run_id = $ref THEN 0 WHEN $ref = 'latest' THEN 1
            WHEN label = $ref THEN 2 ELSE 3 END AS how,
       started_at
FROM runs
WHERE run_id = $ref
   OR starts_with(run_id, $ref)
   OR label = $ref
   OR $ref = 'latest'
UNION ALL
-- a pinned baseline name ('latest' is never one) ranks with 'latest', before labels
SELECT r.run_id, r.label, r.status, 1 AS how, r.started_at
FROM baselines b JOIN runs r ON r.run_id = b.run_id
WHERE b.name = $ref
-- newest first: two runs started in the same second differ only by their random suffix
ORDER BY how, started_at DESC, run_id DESC;
