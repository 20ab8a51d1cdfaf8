-- title: Summary matrix
-- description: One row per variant x model of a run: n answers, n_cases, passes, errors, pass rate (the mean over cases of each case's pass fraction across its repeats) with its 95% interval on n_cases (Wilson when every case's pass fraction is 0 or 1, else the CLT interval on the case means; sql/macros/stats.sql), weighted score, p50/p95 latency (each answer's own time), p95 of the time requests waited before they were sent (queued_ms: paces, slots, Retry-After pauses, back-offs; NULL when no request was made), tokens and cost.
-- params: run_id
WITH per_case AS (   -- the case is the unit: its repeats are averaged first
    SELECT variant, model, case_id, avg(passed::INTEGER) AS case_pass
    FROM cases
    WHERE run_key = run_key($run_id) AND run_id = $run_id
    GROUP BY variant, model, case_id
),
case_rates AS (
    SELECT variant, model, count(*) AS n_cases, avg(case_pass) AS pass_rate,
           stddev_samp(case_pass) AS pass_sd, bool_and(case_pass IN (0, 1)) AS zero_one
    FROM per_case
    GROUP BY variant, model
),
cells AS (
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
        quantile_cont(queued_ms, 0.95)                  AS p95_queued_ms,
        coalesce(sum(input_tokens), 0)                  AS input_tokens,
        coalesce(sum(output_tokens), 0)                 AS output_tokens,
        coalesce(sum(cost_usd) FILTER (WHERE NOT cached), 0) AS cost_usd,
        coalesce(sum(cost_usd), 0)                      AS cost_uncached_usd
    FROM cases
    WHERE run_key = run_key($run_id) AND run_id = $run_id
    GROUP BY variant, model
),
rated AS (
    SELECT cells.*, r.n_cases, r.pass_rate, r.pass_sd, r.zero_one
    FROM cells JOIN case_rates r USING (variant, model)
)
SELECT
    variant,
    model,
    n,
    n_cases,
    n_passed,
    n_errors,
    n_cached,
    pass_rate,
    -- Wilson on n_cases when every case's pass fraction is 0 or 1, else the CLT interval on
    -- the case means (sql/macros/stats.sql)
    case_rate_lo(pass_rate, pass_sd, n_cases, zero_one) AS pass_rate_lo,
    case_rate_hi(pass_rate, pass_sd, n_cases, zero_one) AS pass_rate_hi,
    mean_score,
    p50_latency_ms,
    p95_latency_ms,
    p95_queued_ms,
    input_tokens,
    output_tokens,
    cost_usd,
    cost_uncached_usd
FROM rated
ORDER BY variant, model;
