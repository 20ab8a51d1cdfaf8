-- title: Criteria summary
-- description: One row per criterion of a run: n scored, n_cases, pass rate (the mean over cases of each case's pass fraction across its repeats, per variant x model cell) with its 95% interval on n_cases (cases x cells) (Wilson when every case's pass fraction is 0 or 1, else the CLT interval on the case means; sql/macros/stats.sql), mean score, scorer errors, and for a schema asked of the model how it was asked (mode: native, prompted, or both, from details.mode).
-- params: run_id
-- the case (in its cell) is the unit: its repeats are averaged first. Only cases answered
-- more than once need that grouping (a cell's case, repeat and criterion is one score row:
-- resume and retry replace rows, never add a second), so a run without repeats reads each
-- score row as its case, and a 1M-row run is not grouped on four strings for nothing.
WITH repeated AS (
    SELECT DISTINCT variant, model, case_id FROM cases WHERE run_key = run_key($run_id) AND run_id = $run_id AND repeat > 0
),
per_case AS (
    SELECT criterion, variant, model, case_id, avg(passed::INTEGER) AS case_pass
    FROM scores SEMI JOIN repeated USING (variant, model, case_id)
    WHERE run_key = run_key($run_id) AND run_id = $run_id
    GROUP BY criterion, variant, model, case_id
    UNION ALL
    SELECT criterion, variant, model, case_id, passed::INTEGER AS case_pass
    FROM scores ANTI JOIN repeated USING (variant, model, case_id)
    WHERE run_key = run_key($run_id) AND run_id = $run_id
),
case_rates AS (
    SELECT criterion, count(*) AS n_cases, avg(case_pass) AS pass_rate,
           stddev_samp(case_pass) AS pass_sd, bool_and(case_pass IN (0, 1)) AS zero_one
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
        string_agg(DISTINCT details ->> 'mode', ', ' ORDER BY details ->> 'mode') AS mode
    FROM scores
    WHERE run_key = run_key($run_id) AND run_id = $run_id
    GROUP BY criterion
),
rated AS (
    SELECT c.*, r.n_cases, r.pass_rate AS p, r.pass_sd, r.zero_one
    FROM c JOIN case_rates r USING (criterion)
)
SELECT
    criterion, scorer, weight, required, n, n_cases, n_passed, n_errors,
    p AS pass_rate,
    -- Wilson on n_cases when every case's pass fraction is 0 or 1, else the CLT interval on
    -- the case means (sql/macros/stats.sql)
    case_rate_lo(p, pass_sd, n_cases, zero_one) AS pass_rate_lo,
    case_rate_hi(p, pass_sd, n_cases, zero_one) AS pass_rate_hi,
    mean_score, mode
FROM rated
ORDER BY criterion;
