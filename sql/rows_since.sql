-- title: A run's newest answers
-- description: The live tail of a run: the answers stored after $after (a created_at; NULL for all), oldest first, at most $limit: cell, case, repeat, pass, score, error class, latency and the time waited before sending (queued_ms).
-- params: run_id, after, limit
SELECT variant, model, case_id, repeat, passed, score, error_kind, latency_ms, queued_ms, created_at
FROM cases
WHERE run_id = $run_id AND ($after IS NULL OR created_at > $after::TIMESTAMPTZ)
ORDER BY created_at, variant, model, case_id, repeat
LIMIT $limit;
