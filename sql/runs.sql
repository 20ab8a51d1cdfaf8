-- title: Runs
-- description: The newest runs first with their status, label, suite, size, pass rate (with n), cost, whether each is a no-look run and its heartbeat (for a run still marked running: the newest of its writers' beats in `run_beats`); only those of suite $suite, label $label and stored status $status started in [$since, $until) (a NULL parameter filters nothing).
-- params: limit, suite, label, status, since, until
WITH top AS (
    SELECT run_id, label, suite, status, started_at, finished_at, heartbeat_at, host, pid, n_planned,
        no_look
    FROM runs
    WHERE ($suite IS NULL OR suite = $suite)
      AND ($label IS NULL OR label = $label)
      AND ($status IS NULL OR status = $status)
      AND ($since IS NULL OR started_at >= $since::TIMESTAMPTZ)
      AND ($until IS NULL OR started_at < $until::TIMESTAMPTZ)
    ORDER BY run_id DESC
    LIMIT $limit
),
-- a running run's writers append a beat per flush (migration 0015) instead of updating its row
beats AS (
    SELECT run_id, max(beat_at) AS beat_at
    FROM run_beats
    WHERE run_id IN (SELECT run_id FROM top WHERE status IN ('running', 'exporting'))
    GROUP BY run_id
),
-- case rows of the listed runs only: joined on the run key (sql/macros/run_key.sql), whose
-- min/max over the listed runs DuckDB pushes into the scan of cases, so the zone maps skip
-- the row groups of older runs (the newest runs were appended last)
counts AS (
    SELECT
        c.run_id,
        count(*)                                   AS n,
        count(*) FILTER (WHERE c.passed)           AS n_passed,
        count(*) FILTER (WHERE c.error IS NOT NULL) AS n_errors,
        sum(c.cost_usd) FILTER (WHERE NOT c.cached) AS cost_usd
    FROM cases c
    SEMI JOIN (SELECT run_key(run_id) AS run_key, run_id FROM top) t
        ON c.run_key = t.run_key AND c.run_id = t.run_id
    GROUP BY c.run_id
)
SELECT
    r.run_id,
    r.label,
    r.suite,
    r.status,
    r.started_at,
    r.finished_at,
    greatest(r.heartbeat_at, b.beat_at)               AS heartbeat_at,
    r.host,
    r.pid,
    r.n_planned,
    r.no_look,
    coalesce(c.n, 0)                                  AS n,
    coalesce(c.n_passed, 0)                           AS n_passed,
    coalesce(c.n_errors, 0)                           AS n_errors,
    c.n_passed / nullif(c.n, 0)                       AS pass_rate,
    coalesce(c.cost_usd, 0)                           AS cost_usd
FROM top r
LEFT JOIN counts c USING (run_id)
LEFT JOIN beats b USING (run_id)
ORDER BY r.run_id DESC;
