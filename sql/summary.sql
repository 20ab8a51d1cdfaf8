-- title: Summary matrix
-- description: One row per variant x model of a run: n, passes, errors, pass rate with its 95% Wilson interval, weighted score, p50/p95 latency, tokens and cost.
-- params: run_id
WITH cells AS (
    SELECT
        variant,
        model,
        count(*)                                        AS n,
        count(*) FILTER (WHERE passed)                  AS n_passed,
        count(*) FILTER (WHERE error IS NOT NULL)       AS n_errors,
        count(*) FILTER (WHERE cached)                  AS n_cached,
        avg(score)                                      AS mean_score,
        quantile_cont(latency_ms, 0.5)                  AS p50_latency_ms,
        quantile_cont(latency_ms, 0.95)                 AS p95_latency_ms,
        coalesce(sum(input_tokens), 0)                  AS input_tokens,
        coalesce(sum(output_tokens), 0)                 AS output_tokens,
        coalesce(sum(cost_usd) FILTER (WHERE NOT cached), 0) AS cost_usd,
        coalesce(sum(cost_usd), 0)                      AS cost_uncached_usd
    FROM cases
    WHERE run_id = $run_id
    GROUP BY variant, model
),
rated AS (
    SELECT *, n_passed / n AS pass_rate, 1.959963984540054 AS z FROM cells
)
SELECT
    variant,
    model,
    n,
    n_passed,
    n_errors,
    n_cached,
    pass_rate,
    -- Wilson score interval for a binomial proportion.
    (pass_rate + z * z / (2 * n) - z * sqrt(pass_rate * (1 - pass_rate) / n + z * z / (4 * n * n)))
        / (1 + z * z / n) AS pass_rate_lo,
    (pass_rate + z * z / (2 * n) + z * sqrt(pass_rate * (1 - pass_rate) / n + z * z / (4 * n * n)))
        / (1 + z * z / n) AS pass_rate_hi,
    mean_score,
    p50_latency_ms,
    p95_latency_ms,
    input_tokens,
    output_tokens,
    cost_usd,
    cost_uncached_usd
FROM rated
ORDER BY variant, model;
