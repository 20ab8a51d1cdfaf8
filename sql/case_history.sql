-- title: A case across runs
-- description: One row per run and variant x model cell that holds case $case_id (newest run first, at most $limit runs): the run's suite, label and start, the answers (repeats), how many passed, the mean score, errors, mean latency and mean time waited before sending (queued_ms), whether the run is no-look and the first answer's output (NULL in a no-look run, which stores none).
-- params: case_id, limit
-- one scan of cases for the case's rows (a case_id filter skips no row group: case ids share
-- their first 8 bytes, and rows are stored in run order), then the newest runs among them
WITH hits AS MATERIALIZED (
    SELECT run_id, variant, model, repeat, passed, score, error, latency_ms, queued_ms, output
    FROM cases
    WHERE case_id = $case_id
),
runs_with AS (
    SELECT DISTINCT run_id FROM hits ORDER BY run_id DESC LIMIT $limit
)
SELECT
    c.run_id,
    r.suite,
    r.label,
    r.started_at,
    r.no_look,
    c.variant,
    c.model,
    count(*)                                   AS n,
    count(*) FILTER (WHERE c.passed)           AS n_passed,
    avg(c.passed::INTEGER)                     AS pass_rate,
    avg(c.score)                               AS mean_score,
    count(*) FILTER (WHERE c.error IS NOT NULL) AS n_errors,
    avg(c.latency_ms)                          AS latency_ms,
    avg(c.queued_ms)                           AS queued_ms,
    arg_min(c.output, c.repeat)                AS output
FROM hits c
JOIN runs r USING (run_id)
WHERE c.run_id IN (SELECT run_id FROM runs_with)
GROUP BY c.run_id, r.suite, r.label, r.started_at, r.no_look, c.variant, c.model
ORDER BY c.run_id DESC, c.variant, c.model;
