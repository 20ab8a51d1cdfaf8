-- title: Baselines
-- description: Every pinned baseline name with its run (label, suite, status, started), the run's pass rate and n, and when it was pinned.
-- params:
SELECT
    b.name,
    b.run_id,
    b.set_at,
    r.label,
    r.suite,
    r.status,
    r.started_at,
    count(c.run_id)                                             AS n,
    count(c.run_id) FILTER (WHERE c.passed)                     AS n_passed,
    count(c.run_id) FILTER (WHERE c.passed) / nullif(count(c.run_id), 0) AS pass_rate
FROM baselines b
LEFT JOIN runs r ON r.run_id = b.run_id
LEFT JOIN cases c ON c.run_id = b.run_id
GROUP BY ALL
ORDER BY b.name;
