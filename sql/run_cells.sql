-- title: Stored cells of a run
-- description: The (variant, model, case_id, repeat) cells a run has stored, or only those that ended in an error or whose judge failed (an llm-judge criterion's error: a judge request that errored, expired or was cut); resume and retry-errors plan from it.
-- params: run_id, errors_only
SELECT variant, model, case_id, repeat
FROM cases c
WHERE c.run_key = run_key($run_id) AND c.run_id = $run_id
  AND (NOT $errors_only OR c.error IS NOT NULL OR EXISTS (
    SELECT 1 FROM scores s
    WHERE s.run_key = c.run_key AND s.run_id = c.run_id AND s.variant = c.variant
      AND s.model = c.model AND s.case_id = c.case_id AND s.repeat = c.repeat
      AND s.scorer = 'llm-judge' AND s.error IS NOT NULL
  ));
