-- title: Runs
-- description: The newest runs first with their status, label, suite, size, pass rate (with n) and cost.
-- params: limit
SELECT
    r.run_id,
    r.label,
    r.suite,
    r.status,
    r.started_at,
    r.finished_at,
    r.heartbeat_at,
    r.host,
    r.pid,
    r.n_planned,
    count(c.run_id)                                   AS n,
    count(c.run_id) FILTER (WHERE c.passed)           AS n_passed,
    count(c.run_id) FILTER (WHERE c.error IS NOT NULL) AS n_errors,
    count(c.run_id) FILTER (WHERE c.passed) / nullif(count(c.run_id), 0) AS pass_rate,
    coalesce(sum(c.cost_usd) FILTER (WHERE NOT c.cached), 0) AS cost_usd
FROM runs r
LEFT JOIN cases c USING (run_id)
GROUP BY ALL
ORDER BY r.run_id DESC
LIMIT $limit;
