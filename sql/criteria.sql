-- title: Criteria summary
-- description: One row per criterion of a run: n scored, n_cases, pass rate (the mean over cases of each case's pass fraction across its repeats, per variant x model cell) with its 95% Wilson interval on n_cases (cases x cells), mean score, scorer errors.
-- params: run_id
WITH per_case AS (   -- the case (in its cell) is the unit: its repeats are averaged first
    SELECT criterion, variant, model, case_id, avg(passed::INTEGER) AS case_pass
    FROM scores
    WHERE run_id = $run_id
    GROUP BY criterion, variant, model, case_id
),
case_rates AS (
    SELECT criterion, count(*) AS n_cases, avg(case_pass) AS pass_rate
    FROM per_case GROUP BY criterion
),
c AS (
    SELECT
        criterion,
        any_value(scorer)                          AS scorer,
        any_value(weight)                          AS weight,
        bool_and(required)                         AS required,
        count(*)                                   AS n,
        count(*) FILTER (WHERE passed)             AS n_passed,
        count(*) FILTER (WHERE error IS NOT NULL)  AS n_errors,
        avg(score)                                 AS mean_score,
        1.959963984540054                          AS z
    FROM scores
    WHERE run_id = $run_id
    GROUP BY criterion
),
rated AS (SELECT c.*, r.n_cases, r.pass_rate AS p FROM c JOIN case_rates r USING (criterion))
SELECT
    criterion, scorer, weight, required, n, n_cases, n_passed, n_errors,
    p AS pass_rate,
    -- Wilson score interval on n = n_cases, clamped to [0, 1]
    greatest(0, (p + z * z / (2 * n_cases) - z * sqrt(p * (1 - p) / n_cases + z * z / (4 * n_cases * n_cases)))
        / (1 + z * z / n_cases)) AS pass_rate_lo,
    least(1, (p + z * z / (2 * n_cases) + z * sqrt(p * (1 - p) / n_cases + z * z / (4 * n_cases * n_cases)))
        / (1 + z * z / n_cases)) AS pass_rate_hi,
    mean_score
FROM rated
ORDER BY criterion;
