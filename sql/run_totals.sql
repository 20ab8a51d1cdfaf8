-- title: Run totals
-- description: One row for a whole run: n, passes, errors, pass rate with its 95% Wilson interval, mean score, cost (answers, and judges apart), tokens and how many answers came from the cache.
-- params: run_id
WITH t AS (
    SELECT
        count(*)                                          AS n,
        count(*) FILTER (WHERE passed)                    AS n_passed,
        count(*) FILTER (WHERE error IS NOT NULL)         AS n_errors,
        count(*) FILTER (WHERE cached)                    AS n_cached,
        avg(score)                                        AS mean_score,
        coalesce(sum(cost_usd) FILTER (WHERE NOT cached), 0) AS cost_usd,
        coalesce(sum(cost_usd), 0)                        AS cost_uncached_usd,
        coalesce(sum(input_tokens), 0)                    AS input_tokens,
        coalesce(sum(output_tokens), 0)                   AS output_tokens,
        coalesce(sum(judge_cost_usd), 0)
            + (SELECT coalesce(sum(cost_usd), 0) FROM pairs WHERE run_id = $run_id) AS judge_cost_usd,
        1.959963984540054                                 AS z
    FROM cases
    WHERE run_id = $run_id
)
SELECT
    n,
    n_passed,
    n_errors,
    n_cached,
    n_passed / nullif(n, 0) AS pass_rate,
    (n_passed / n + z * z / (2 * n) - z * sqrt((n_passed / n) * (1 - n_passed / n) / n + z * z / (4 * n * n)))
        / (1 + z * z / n) AS pass_rate_lo,
    (n_passed / n + z * z / (2 * n) + z * sqrt((n_passed / n) * (1 - n_passed / n) / n + z * z / (4 * n * n)))
        / (1 + z * z / n) AS pass_rate_hi,
    n_errors / nullif(n, 0) AS error_rate,
    mean_score,
    cost_usd,
    cost_uncached_usd,
    input_tokens,
    output_tokens,
    judge_cost_usd
FROM t;
