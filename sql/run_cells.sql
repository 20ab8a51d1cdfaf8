-- title: Stored cells of a run
-- description: The (variant, model, case_id, repeat) cells a run has stored, or only those that ended in an error; resume and retry-errors plan from it.
-- params: run_id, errors_only
SELECT variant, model, case_id, repeat
FROM cases
WHERE run_key = run_key($run_id) AND run_id = $run_id
  AND (NOT $errors_only OR error IS NOT NULL);
