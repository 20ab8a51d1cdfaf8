-- title: Run totals
-- description: One row for a whole run: n answers, n_cases, passes, errors, pass rate (the mean over the cases of every variant x model cell of each case's pass fraction across its repeats) with its 95% Wilson interval on n_cases (cases x cells), mean score, cost (answers, and judges apart), tokens and how many answers came from the cache.
-- params: run_id
WITH per_case AS (   -- the case (in its cell) is the unit: its repeats are averaged first
    SELECT variant, model, case_id, avg(passed::INTEGER) AS case_pass
    FROM cases
    WHERE run_id = $run_id
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
        1.959963984540054                                 AS z
    FROM cases
    WHERE run_id = $run_id
)
SELECT
    n,
    n_cases,
    n_passed,
    n_errors,
    n_cached,
    p AS pass_rate,
    -- Wilson score interval on n = n_cases, clamped to [0, 1]
    -- (none for a run without answers: greatest/least would turn NULL into 0 and 1)
    CASE WHEN n_cases > 0 THEN greatest(0, (p + z * z / (2 * n_cases) - z * sqrt(p * (1 - p) / n_cases + z * z / (4 * n_cases * n_cases)))
        / (1 + z * z / n_cases)) END AS pass_rate_lo,
    CASE WHEN n_cases > 0 THEN least(1, (p + z * z / (2 * n_cases) + z * sqrt(p * (1 - p) / n_cases + z * z / (4 * n_cases * n_cases)))
        / (1 + z * z / n_cases)) END AS pass_rate_hi,
    n_errors / nullif(n, 0) AS error_rate,
    mean_score,
    cost_usd,
    cost_uncached_usd,
    input_tokens,
    output_tokens,
    judge_cost_usd
FROM t;
