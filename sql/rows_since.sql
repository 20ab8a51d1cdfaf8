-- title: A run's newest answers
-- description: The live tail of a run: the answers stored after the answer $after names (its created_at, variant, model, case_id and repeat: $after, $after_variant, $after_model, $after_case, $after_repeat; $after NULL for all), oldest first, at most $limit: cell, case, repeat, pass, score, error class, latency and the time waited before sending (queued_ms). Answers are ordered by (created_at, variant, model, case_id, repeat) and the cursor is that whole key, so answers stored in the same microsecond are neither skipped nor repeated when $limit ends a page between them.
-- params: run_id, after, after_variant, after_model, after_case, after_repeat, limit
SELECT variant, model, case_id, repeat, passed, score, error_kind, latency_ms, queued_ms, created_at
FROM cases
WHERE run_key = run_key($run_id) AND run_id = $run_id
  AND ($after IS NULL
       OR (created_at, variant, model, case_id, repeat)
          > ($after::TIMESTAMPTZ, $after_variant, $after_model, $after_case, $after_repeat))
ORDER BY created_at, variant, model, case_id, repeat
LIMIT $limit;
