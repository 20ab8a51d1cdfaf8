-- title: A run's latest answers
-- description: Where a live tail starts: a run's $limit most recently stored answers, oldest first, with the columns of rows_since.sql (whose cursor is the last of them).
-- params: run_id, limit
SELECT *
FROM (
    SELECT variant, model, case_id, repeat, passed, score, error_kind, latency_ms, queued_ms,
           created_at
    FROM cases
    WHERE run_key = run_key($run_id) AND run_id = $run_id
    ORDER BY created_at DESC, variant DESC, model DESC, case_id DESC, repeat DESC
    LIMIT $limit
)
ORDER BY created_at, variant, model, case_id, repeat;
