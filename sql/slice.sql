-- title: Slices of a run
-- description: The run cut by case metadata keys ($keys, combined: one slice per combination of their values; a missing key reads '(none)'). Per slice overall (variant and model NULL) and per slice x variant x model: n answers, n_cases, passes, errors, pass rate (the mean over cases, per cell, of each case's pass fraction across its repeats) with its 95% interval on n_cases (cases x cells) (Wilson when every case's pass fraction is 0 or 1, else the CLT interval on the case means; sql/macros/stats.sql), mean score, cost.
-- params: run_id, keys
WITH sliced AS (
    SELECT
        array_to_string(
            list_transform($keys::VARCHAR[], k -> k || '=' || coalesce(metadata ->> k, '(none)')), ', '
        ) AS slice,
        list_transform($keys::VARCHAR[], k -> coalesce(metadata ->> k, '(none)')) AS slice_values,
        variant, model, case_id, passed, score, error, cost_usd, cached
    FROM cases
    WHERE run_key = run_key($run_id) AND run_id = $run_id
),
groups AS (
    SELECT
        slice,
        any_value(slice_values)                         AS slice_values,
        variant,
        model,
        count(*)                                        AS n,
        count(*) FILTER (WHERE passed)                  AS n_passed,
        count(*) FILTER (WHERE error IS NOT NULL)       AS n_errors,
        avg(score)                                      AS mean_score,
        coalesce(sum(cost_usd) FILTER (WHERE NOT cached), 0) AS cost_usd
    FROM sliced
    GROUP BY GROUPING SETS ((slice), (slice, variant, model))
),
-- the case (in its cell) is the unit: each case's repeats are averaged first
per_case AS (
    SELECT slice, variant, model, case_id, avg(passed::INTEGER) AS case_pass
    FROM sliced
    GROUP BY slice, variant, model, case_id
),
case_rates AS (
    SELECT slice, variant, model, count(*) AS n_cases, avg(case_pass) AS pass_rate,
           stddev_samp(case_pass) AS pass_sd, bool_and(case_pass IN (0, 1)) AS zero_one
    FROM per_case GROUP BY GROUPING SETS ((slice), (slice, variant, model))
),
rated AS (
    SELECT g.*, r.n_cases, r.pass_rate, r.pass_sd, r.zero_one
    FROM groups g
    JOIN case_rates r
      ON r.slice = g.slice AND r.variant IS NOT DISTINCT FROM g.variant
     AND r.model IS NOT DISTINCT FROM g.model
)
SELECT
    slice, slice_values, variant, model, n, n_cases, n_passed, n_errors, pass_rate,
    -- Wilson on n_cases when every case's pass fraction is 0 or 1, else the CLT interval on
    -- the case means (sql/macros/stats.sql)
    case_rate_lo(pass_rate, pass_sd, n_cases, zero_one) AS pass_rate_lo,
    case_rate_hi(pass_rate, pass_sd, n_cases, zero_one) AS pass_rate_hi,
    mean_score,
    cost_usd
FROM rated
ORDER BY slice, variant NULLS FIRST, model NULLS FIRST;
