-- title: Baselines
-- description: Every pinned baseline name with its run (label, suite, status, started), the run's answers n and n_passed, n_cases, its pass rate (the mean over the cases of every variant x model cell of each case's pass fraction across its repeats, as run_totals computes it), and when it was pinned.
-- params:
WITH per_case AS (   -- the case (in its cell) is the unit: its repeats are averaged first
    SELECT c.run_id, c.variant, c.model, c.case_id,
           count(*) AS answers,
           count(*) FILTER (WHERE c.passed) AS passes,
           avg(c.passed::INTEGER) AS case_pass
    FROM cases c
    SEMI JOIN baselines b ON b.run_id = c.run_id
    GROUP BY ALL
),
per_run AS (
    SELECT run_id,
           sum(answers)::BIGINT  AS n,
           sum(passes)::BIGINT   AS n_passed,
           count(*)              AS n_cases,
           avg(case_pass)        AS pass_rate
    FROM per_case
    GROUP BY run_id
)
SELECT
    b.name,
    b.run_id,
    b.set_at,
    r.label,
    r.suite,
    r.status,
    r.started_at,
    coalesce(p.n, 0)        AS n,
    coalesce(p.n_passed, 0) AS n_passed,
    coalesce(p.n_cases, 0)  AS n_cases,
    p.pass_rate
FROM baselines b
LEFT JOIN runs r ON r.run_id = b.run_id
LEFT JOIN per_run p ON p.run_id = b.run_id
ORDER BY b.name;
