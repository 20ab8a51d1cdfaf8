-- title: Slices of a run
-- description: The run cut by case metadata keys ($keys, combined: one slice per combination of their values; a missing key reads '(none)'). Per slice overall (variant and model NULL) and per slice x variant x model: n, passes, errors, pass rate with its 95% Wilson interval, mean score, cost.
-- params: run_id, keys
WITH sliced AS (
    SELECT
        array_to_string(
            list_transform($keys::VARCHAR[], k -> k || '=' || coalesce(metadata ->> k, '(none)')), ', '
        ) AS slice,
        list_transform($keys::VARCHAR[], k -> coalesce(metadata ->> k, '(none)')) AS slice_values,
        variant, model, passed, score, error, cost_usd, cached
    FROM cases
    WHERE run_id = $run_id
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
rated AS (
    SELECT *, n_passed / n AS pass_rate, 1.959963984540054 AS z FROM groups
)
SELECT
    slice, slice_values, variant, model, n, n_passed, n_errors, pass_rate,
    greatest(0, (pass_rate + z * z / (2 * n) - z * sqrt(pass_rate * (1 - pass_rate) / n + z * z / (4 * n * n)))
        / (1 + z * z / n)) AS pass_rate_lo,
    least(1, (pass_rate + z * z / (2 * n) + z * sqrt(pass_rate * (1 - pass_rate) / n + z * z / (4 * n * n)))
        / (1 + z * z / n)) AS pass_rate_hi,
    mean_score,
    cost_usd
FROM rated
ORDER BY slice, variant NULLS FIRST, model NULLS FIRST;
