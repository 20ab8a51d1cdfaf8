-- title: Run totals
-- description: One row for a whole run: n answers, n_cases, passes, errors, pass rate (the mean over the cases of every variant x model cell of each case's pass fraction across its repeats) with its 95% interval on n_cases (cases x cells) (Wilson when every case's pass fraction is 0 or 1, else the CLT interval on the case means; sql/macros/stats.sql), mean score, cost (answers, and judges apart), tokens and how many answers came from the cache.
-- params: run_id
WITH per_case AS (   -- the case (in its cell) is the unit: its repeats are averaged first
    SELECT variant, model, case_id, avg(passed::INTEGER) AS case_pass
    FROM cases
    WHERE run_key = run_key($run_id) AND run_id = $run_id
    GROUP BY variant, model, case_id
),
t AS (
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
        (SELECT count(*) FROM per_case)                   AS n_cases,
        (SELECT avg(case_pass) FROM per_case)             AS p,
        (SELECT stddev_samp(case_pass) FROM per_case)     AS pass_sd,
        (SELECT bool_and(case_pass IN (0, 1)) FROM per_case) AS zero_one
    FROM cases
    WHERE run_key = run_key($run_id) AND run_id = $run_id
)
SELECT
    n,
    n_cases,
    n_passed,
    n_errors,
    n_cached,
    p AS pass_rate,
    -- Wilson on n_cases when every case's pass fraction is 0 or 1, else the CLT interval on
    -- the case means (sql/macros/stats.sql); none for a run without answers
    case_rate_lo(p, pass_sd, n_cases, zero_one) AS pass_rate_lo,
    case_rate_hi(p, pass_sd, n_cases, zero_one) AS pass_rate_hi,
    n_errors / nullif(n, 0) AS error_rate,
    mean_score,
    cost_usd,
    cost_uncached_usd,
    input_tokens,
    output_tokens,
    judge_cost_usd
FROM t;
