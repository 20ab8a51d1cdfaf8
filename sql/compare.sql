-- title: Compare two runs
-- description: Run B minus run A, paired on (variant, model, case_id, repeat); the case in its cell is the unit: a case's repeats are averaged into one paired difference first ($cluster 'case_id' also clusters a case's cells). One row for the whole run (scope 'run'), per variant x model cell ('cell', with cells only one run has), per criterion ('criterion') and per metadata slice ('slice'; $keys, combined into one dimension when $combine, else one dimension per key). For pass_rate, score, cost_usd and latency_ms: n cases (n_pairs answers), the means in A and B, the mean paired difference with its standard error (sample sd of the case differences / sqrt(n), or cluster-robust CR1 over the clusters of metadata key $cluster), its 95% t-interval and the two-sided p-value of the same paired t statistic (delta / se on n - 1 df, or clusters - 1), so that the interval excludes 0 exactly when p < 0.05 (sql/macros/stats.sql: t_975, paired_p); no interval and no p where there is no standard error (one case, one cluster), a zero-width interval and p 0 (1 for no change) where every case moved by the same amount; each side's pass rate with its interval (Wilson when every case's pass fraction is 0 or 1, else CLT); cases fixed and broken, as counts; a verdict: worse when the pass rate's or the score's p < 0.05 with a drop, better when one of them rose so and none dropped, same when nothing moved, else within noise. Criteria and slices come worst first. $scopes lists the scopes computed (NULL: all four); a scope left out costs nothing (the criterion scope alone reads the scores table).
-- params: run_a, run_b, cluster, keys, combine, scopes
WITH a AS (
    SELECT variant, model, case_id, repeat, passed, score,
           coalesce(cost_usd, 0) AS cost_usd, latency_ms, metadata
    FROM cases
    WHERE run_key = run_key($run_a) AND run_id = $run_a
),
b AS (
    SELECT variant, model, case_id, repeat, passed, score,
           coalesce(cost_usd, 0) AS cost_usd, latency_ms, metadata
    FROM cases
    WHERE run_key = run_key($run_b) AND run_id = $run_b
),
matched AS (
    SELECT
        variant, model, case_id, repeat,
        coalesce(b.metadata, a.metadata) AS metadata,
        CASE
            WHEN $cluster IS NULL THEN NULL
            WHEN $cluster = 'case_id' THEN case_id
            -- a case without the key is a cluster of its own (with its repeats)
            ELSE coalesce(b.metadata ->> $cluster, a.metadata ->> $cluster, '(case) ' || case_id)
        END AS cluster,
        a.passed::INTEGER::DOUBLE AS pass_a, b.passed::INTEGER::DOUBLE AS pass_b,
        a.score AS score_a, b.score AS score_b,
        a.cost_usd AS cost_a, b.cost_usd AS cost_b,
        a.latency_ms AS latency_a, b.latency_ms AS latency_b
    FROM a JOIN b USING (variant, model, case_id, repeat)
),
-- each case in its cell (the unit) numbered once, and whether it was paired once: a unit
-- paired once needs no averaging over its repeats (its means are its values). Grouped, not
-- ranked in a window: the number only names the unit, and sorting 100,000s of rows on three
-- strings was about a third of the run and cell scopes' time.
unit_keys AS (
    SELECT variant, model, case_id, count(*) = 1 AS single, row_number() OVER () AS unit
    FROM matched
    GROUP BY variant, model, case_id
),
pairs AS (
    SELECT m.*, u.unit, u.single, row_number() OVER () AS pair_id
    FROM matched m JOIN unit_keys u USING (variant, model, case_id)
),
score_a AS (
    SELECT variant, model, case_id, repeat, criterion, passed, score
    FROM scores WHERE run_key = run_key($run_a) AND run_id = $run_a
),
score_b AS (
    SELECT variant, model, case_id, repeat, criterion, passed, score
    FROM scores WHERE run_key = run_key($run_b) AND run_id = $run_b
),
-- score rows of paired cases, keyed by their pair (joined on an integer, not four strings).
-- Each scope is computed only when $scopes names it (NULL: all): the condition is a constant
-- of the execution, so a scope left out is pruned from the plan with its reads (the
-- criterion scope's condition removes both reads of the scores table).
keyed_a AS (
    SELECT p.pair_id, sa.criterion, sa.passed, sa.score
    FROM score_a sa JOIN pairs p USING (variant, model, case_id, repeat)
),
keyed_b AS (
    SELECT p.pair_id, p.unit, p.single, p.cluster, sb.criterion, sb.passed, sb.score
    FROM score_b sb JOIN pairs p USING (variant, model, case_id, repeat)
),
criterion_pairs AS (
    SELECT criterion, kb.unit, kb.single, kb.cluster,
           ka.passed::INTEGER::DOUBLE AS pass_a, kb.passed::INTEGER::DOUBLE AS pass_b,
           ka.score AS score_a, kb.score AS score_b
    FROM keyed_a ka
    JOIN keyed_b kb USING (pair_id, criterion)
    WHERE $scopes IS NULL OR list_contains($scopes::VARCHAR[], 'criterion')
),
dims AS (
    SELECT unnest(
        CASE WHEN $combine THEN [$keys::VARCHAR[]] ELSE list_transform($keys::VARCHAR[], k -> [k]) END
    ) AS dim
),
scoped AS (
    SELECT 'run' AS scope, 'run' AS target, NULL::VARCHAR AS variant, NULL::VARCHAR AS model,
           unit, single, cluster, pass_a, pass_b, score_a, score_b, cost_a, cost_b, latency_a, latency_b
    FROM pairs
    WHERE $scopes IS NULL OR list_contains($scopes::VARCHAR[], 'run')
    UNION ALL
    SELECT 'cell', variant || ' × ' || model, variant, model,
           unit, single, cluster, pass_a, pass_b, score_a, score_b, cost_a, cost_b, latency_a, latency_b
    FROM pairs
    WHERE $scopes IS NULL OR list_contains($scopes::VARCHAR[], 'cell')
    UNION ALL
    SELECT 'slice',
           array_to_string(list_transform(d.dim, k -> k || '=' || coalesce(p.metadata ->> k, '(none)')), ', '),
           NULL, NULL,
           unit, single, cluster, pass_a, pass_b, score_a, score_b, cost_a, cost_b, latency_a, latency_b
    FROM pairs p CROSS JOIN dims d
    WHERE len(d.dim) > 0 AND ($scopes IS NULL OR list_contains($scopes::VARCHAR[], 'slice'))
),
-- The unit of analysis is the case (in its cell): per (scope, target, variant x model x case)
-- and metric, the mean of A and of B over the repeats where both sides have the metric (a
-- metric without pairs stays NULL). cluster = 'case_id' also joins a case's cells.
units AS (
    SELECT
        scope, target, unit,
        any_value(variant) AS variant, any_value(model) AS model, any_value(cluster) AS cluster,
        count(*) AS n_pairs,
        avg(pass_a) FILTER (WHERE pass_b IS NOT NULL)       AS pass_a,
        avg(pass_b) FILTER (WHERE pass_a IS NOT NULL)       AS pass_b,
        avg(score_a) FILTER (WHERE score_b IS NOT NULL)     AS score_a,
        avg(score_b) FILTER (WHERE score_a IS NOT NULL)     AS score_b,
        avg(cost_a) FILTER (WHERE cost_b IS NOT NULL)       AS cost_a,
        avg(cost_b) FILTER (WHERE cost_a IS NOT NULL)       AS cost_b,
        avg(latency_a) FILTER (WHERE latency_b IS NOT NULL) AS latency_a,
        avg(latency_b) FILTER (WHERE latency_a IS NOT NULL) AS latency_b
    FROM scoped
    WHERE NOT single
    GROUP BY scope, target, unit
    UNION ALL
    -- the same means over a unit of one pair, without grouping 100,000s of rows for it
    SELECT
        scope, target, unit, variant, model, cluster, 1,
        CASE WHEN pass_b IS NOT NULL THEN pass_a END,
        CASE WHEN pass_a IS NOT NULL THEN pass_b END,
        CASE WHEN score_b IS NOT NULL THEN score_a END,
        CASE WHEN score_a IS NOT NULL THEN score_b END,
        CASE WHEN cost_b IS NOT NULL THEN cost_a END,
        CASE WHEN cost_a IS NOT NULL THEN cost_b END,
        CASE WHEN latency_b IS NOT NULL THEN latency_a END,
        CASE WHEN latency_a IS NOT NULL THEN latency_b END
    FROM scoped
    WHERE single
    UNION ALL
    SELECT
        'criterion', criterion, unit, NULL, NULL, any_value(cluster), count(*),
        avg(pass_a) FILTER (WHERE pass_b IS NOT NULL),
        avg(pass_b) FILTER (WHERE pass_a IS NOT NULL),
        avg(score_a) FILTER (WHERE score_b IS NOT NULL),
        avg(score_b) FILTER (WHERE score_a IS NOT NULL),
        NULL::DOUBLE, NULL::DOUBLE, NULL::DOUBLE, NULL::DOUBLE
    FROM criterion_pairs
    WHERE NOT single
    GROUP BY criterion, unit
    UNION ALL
    SELECT
        'criterion', criterion, unit, NULL, NULL, cluster, 1,
        CASE WHEN pass_b IS NOT NULL THEN pass_a END,
        CASE WHEN pass_a IS NOT NULL THEN pass_b END,
        CASE WHEN score_b IS NOT NULL THEN score_a END,
        CASE WHEN score_a IS NOT NULL THEN score_b END,
        NULL::DOUBLE, NULL::DOUBLE, NULL::DOUBLE, NULL::DOUBLE
    FROM criterion_pairs
    WHERE single
),
-- Per (scope, target), for each metric over the cases: n, the means in A and B, the mean
-- paired difference and its sample sd, how many cases went up and down.
stats AS (
    SELECT
        scope, target,
        any_value(variant) FILTER (WHERE pass_a IS NOT NULL AND pass_b IS NOT NULL) AS pass_rate_variant,
        any_value(model) FILTER (WHERE pass_a IS NOT NULL AND pass_b IS NOT NULL)   AS pass_rate_model,
        sum(n_pairs)::BIGINT                                AS n_pairs,
        nullif(count(*) FILTER (WHERE pass_a IS NOT NULL AND pass_b IS NOT NULL), 0) AS pass_rate_n,
        avg(pass_a)                                         AS pass_rate_a,
        avg(pass_b)                                         AS pass_rate_b,
        -- each side's spread over the cases, and whether every case's pass fraction is 0 or 1
        -- (then the side's interval is Wilson's, else the CLT interval on the case means)
        stddev_samp(pass_a) FILTER (WHERE pass_b IS NOT NULL) AS pass_rate_a_sd,
        stddev_samp(pass_b) FILTER (WHERE pass_a IS NOT NULL) AS pass_rate_b_sd,
        bool_and(pass_a IN (0, 1)) FILTER (WHERE pass_b IS NOT NULL) AS pass_rate_a_binary,
        bool_and(pass_b IN (0, 1)) FILTER (WHERE pass_a IS NOT NULL) AS pass_rate_b_binary,
        avg(pass_b - pass_a)                                AS pass_rate_delta,
        stddev_samp(pass_b - pass_a)                        AS pass_rate_sd,
        count(*) FILTER (WHERE pass_b > pass_a)             AS pass_rate_up,
        count(*) FILTER (WHERE pass_b < pass_a)             AS pass_rate_down,
        nullif(count(*) FILTER (WHERE score_a IS NOT NULL AND score_b IS NOT NULL), 0) AS score_n,
        avg(score_a)                                        AS score_a,
        avg(score_b)                                        AS score_b,
        avg(score_b - score_a)                              AS score_delta,
        stddev_samp(score_b - score_a)                      AS score_sd,
        nullif(count(*) FILTER (WHERE cost_a IS NOT NULL AND cost_b IS NOT NULL), 0) AS cost_usd_n,
        avg(cost_a)                                         AS cost_usd_a,
        avg(cost_b)                                         AS cost_usd_b,
        avg(cost_b - cost_a)                                AS cost_usd_delta,
        stddev_samp(cost_b - cost_a)                        AS cost_usd_sd,
        nullif(count(*) FILTER (WHERE latency_a IS NOT NULL AND latency_b IS NOT NULL), 0) AS latency_ms_n,
        avg(latency_a)                                      AS latency_ms_a,
        avg(latency_b)                                      AS latency_ms_b,
        avg(latency_b - latency_a)                          AS latency_ms_delta,
        stddev_samp(latency_b - latency_a)                  AS latency_ms_sd
    FROM units
    GROUP BY scope, target
),
-- Cluster-robust (CR1) standard error of a mean difference:
--   SE = sqrt( G/(G-1) * sum_g (sum_{i in g} (d_i - mean d))^2 ) / n
-- with sum_{i in g} (d_i - mean d) = s_g - m_g * mean d (s_g: the cluster's sum, m_g: its size).
clusters AS (
    SELECT
        scope, target, cluster,
        count(pass_b - pass_a) AS pass_rate_m,       sum(pass_b - pass_a) AS pass_rate_s,
        count(score_b - score_a) AS score_m,         sum(score_b - score_a) AS score_s,
        count(cost_b - cost_a) AS cost_usd_m,        sum(cost_b - cost_a) AS cost_usd_s,
        count(latency_b - latency_a) AS latency_ms_m, sum(latency_b - latency_a) AS latency_ms_s
    FROM units
    WHERE $cluster IS NOT NULL
    GROUP BY scope, target, cluster
),
robust AS (
    SELECT
        c.scope, c.target,
        nullif(count(*) FILTER (WHERE c.pass_rate_m > 0), 0) AS pass_rate_g,
        sum((c.pass_rate_s - c.pass_rate_m * st.pass_rate_delta) * (c.pass_rate_s - c.pass_rate_m * st.pass_rate_delta))
            FILTER (WHERE c.pass_rate_m > 0) AS pass_rate_ss,
        nullif(count(*) FILTER (WHERE c.score_m > 0), 0) AS score_g,
        sum((c.score_s - c.score_m * st.score_delta) * (c.score_s - c.score_m * st.score_delta))
            FILTER (WHERE c.score_m > 0) AS score_ss,
        nullif(count(*) FILTER (WHERE c.cost_usd_m > 0), 0) AS cost_usd_g,
        sum((c.cost_usd_s - c.cost_usd_m * st.cost_usd_delta) * (c.cost_usd_s - c.cost_usd_m * st.cost_usd_delta))
            FILTER (WHERE c.cost_usd_m > 0) AS cost_usd_ss,
        nullif(count(*) FILTER (WHERE c.latency_ms_m > 0), 0) AS latency_ms_g,
        sum((c.latency_ms_s - c.latency_ms_m * st.latency_ms_delta) * (c.latency_ms_s - c.latency_ms_m * st.latency_ms_delta))
            FILTER (WHERE c.latency_ms_m > 0) AS latency_ms_ss
    FROM clusters c JOIN stats st USING (scope, target)
    GROUP BY c.scope, c.target
),
estimates AS (
    SELECT
        st.*,
        r.pass_rate_g AS pass_rate_clusters,
        CASE
            WHEN $cluster IS NULL THEN st.pass_rate_sd / sqrt(st.pass_rate_n)
            WHEN r.pass_rate_g > 1 THEN sqrt(r.pass_rate_g / (r.pass_rate_g - 1) * r.pass_rate_ss) / st.pass_rate_n
        END AS pass_rate_se,
        CASE
            WHEN $cluster IS NULL THEN st.score_sd / sqrt(st.score_n)
            WHEN r.score_g > 1 THEN sqrt(r.score_g / (r.score_g - 1) * r.score_ss) / st.score_n
        END AS score_se,
        CASE
            WHEN $cluster IS NULL THEN st.cost_usd_sd / sqrt(st.cost_usd_n)
            WHEN r.cost_usd_g > 1 THEN sqrt(r.cost_usd_g / (r.cost_usd_g - 1) * r.cost_usd_ss) / st.cost_usd_n
        END AS cost_usd_se,
        CASE
            WHEN $cluster IS NULL THEN st.latency_ms_sd / sqrt(st.latency_ms_n)
            WHEN r.latency_ms_g > 1 THEN sqrt(r.latency_ms_g / (r.latency_ms_g - 1) * r.latency_ms_ss) / st.latency_ms_n
        END AS latency_ms_se,
        -- degrees of freedom of each t-interval: cases - 1, or clusters - 1 when clustered
        CASE WHEN $cluster IS NULL THEN st.pass_rate_n ELSE r.pass_rate_g END - 1   AS pass_rate_df,
        CASE WHEN $cluster IS NULL THEN st.score_n ELSE r.score_g END - 1           AS score_df,
        CASE WHEN $cluster IS NULL THEN st.cost_usd_n ELSE r.cost_usd_g END - 1     AS cost_usd_df,
        CASE WHEN $cluster IS NULL THEN st.latency_ms_n ELSE r.latency_ms_g END - 1 AS latency_ms_df
    FROM stats st LEFT JOIN robust r USING (scope, target)
),
-- One method per delta: the paired t on the case differences (or over the clusters). The
-- interval is delta -/+ t_975(df) * se and the p-value the two-sided p of delta / se on the same
-- df (macros in sql/macros/stats.sql), so the interval excludes 0 exactly when p < 0.05. No
-- standard error (n = 1, one cluster): no interval and no p. A difference of two rates or
-- scores in [0, 1] lies in [-1, 1]: so do the bounds of its interval, when it has one.
wide AS (
    SELECT
        *,
        CASE WHEN pass_rate_se IS NOT NULL
            THEN greatest(-1, pass_rate_delta - t_975(pass_rate_df) * pass_rate_se) END AS pass_rate_lo,
        CASE WHEN pass_rate_se IS NOT NULL
            THEN least(1, pass_rate_delta + t_975(pass_rate_df) * pass_rate_se) END     AS pass_rate_hi,
        CASE WHEN score_se IS NOT NULL
            THEN greatest(-1, score_delta - t_975(score_df) * score_se) END             AS score_lo,
        CASE WHEN score_se IS NOT NULL
            THEN least(1, score_delta + t_975(score_df) * score_se) END                 AS score_hi,
        cost_usd_delta - t_975(cost_usd_df) * cost_usd_se       AS cost_usd_lo,
        cost_usd_delta + t_975(cost_usd_df) * cost_usd_se       AS cost_usd_hi,
        latency_ms_delta - t_975(latency_ms_df) * latency_ms_se AS latency_ms_lo,
        latency_ms_delta + t_975(latency_ms_df) * latency_ms_se AS latency_ms_hi,
        paired_p(pass_rate_delta, pass_rate_se, pass_rate_df)   AS pass_rate_p,
        paired_p(score_delta, score_se, score_df)               AS score_p,
        paired_p(cost_usd_delta, cost_usd_se, cost_usd_df)      AS cost_usd_p,
        paired_p(latency_ms_delta, latency_ms_se, latency_ms_df) AS latency_ms_p
    FROM estimates
),
presence AS (
    SELECT 'cell' AS scope, variant || ' × ' || model AS target, variant, model,
           count(*) FILTER (WHERE side = 'a') AS n_a, count(*) FILTER (WHERE side = 'b') AS n_b
    FROM (
        SELECT 'a' AS side, variant, model FROM a
        UNION ALL
        SELECT 'b' AS side, variant, model FROM b
    )
    WHERE $scopes IS NULL OR list_contains($scopes::VARCHAR[], 'cell')
    GROUP BY variant, model
    UNION ALL
    SELECT 'run', 'run', NULL, NULL, (SELECT count(*) FROM a), (SELECT count(*) FROM b)
    WHERE $scopes IS NULL OR list_contains($scopes::VARCHAR[], 'run')
),
joined AS (
    SELECT
        scope, target,
        coalesce(p.variant, w.pass_rate_variant) AS variant,
        coalesce(p.model, w.pass_rate_model) AS model,
        p.n_a, p.n_b,
        coalesce(w.pass_rate_n, 0) AS n,
        w.pass_rate_clusters AS n_clusters,
        coalesce(w.n_pairs, 0) AS n_pairs,
        w.pass_rate_up AS n_fixed,
        w.pass_rate_down AS n_broken,
        w.pass_rate_a, w.pass_rate_a_sd, w.pass_rate_a_binary,
        w.pass_rate_b, w.pass_rate_b_sd, w.pass_rate_b_binary,
        w.pass_rate_delta, w.pass_rate_se, w.pass_rate_lo, w.pass_rate_hi, w.pass_rate_p,
        w.score_n, w.score_a, w.score_b, w.score_delta, w.score_se, w.score_lo, w.score_hi, w.score_p,
        w.cost_usd_n, w.cost_usd_a, w.cost_usd_b, w.cost_usd_delta, w.cost_usd_se, w.cost_usd_lo,
        w.cost_usd_hi, w.cost_usd_p,
        w.latency_ms_n, w.latency_ms_a, w.latency_ms_b, w.latency_ms_delta, w.latency_ms_se,
        w.latency_ms_lo, w.latency_ms_hi, w.latency_ms_p
    FROM wide w FULL JOIN presence p USING (scope, target)
)
SELECT
    scope, target, variant, model, n_a, n_b, n, n_pairs, n_clusters, n_fixed, n_broken,
    CASE
        WHEN n = 0 AND n_b = 0 THEN 'only in A'
        WHEN n = 0 AND n_a = 0 THEN 'only in B'
        WHEN n = 0 THEN 'no pairs'
        -- the pass rate's or the score's paired t-test (p < 0.05: its interval excludes 0),
        -- in the direction of its mean difference; a significant drop of either is worse
        WHEN (pass_rate_p < 0.05 AND pass_rate_delta < 0) OR (score_p < 0.05 AND score_delta < 0) THEN 'worse'
        WHEN (pass_rate_p < 0.05 AND pass_rate_delta > 0) OR (score_p < 0.05 AND score_delta > 0) THEN 'better'
        WHEN pass_rate_delta = 0 AND coalesce(score_delta, 0) = 0 THEN 'same'
        ELSE 'within noise'
    END AS verdict,
    -- each side's pass rate over the n paired cases: Wilson when every case's pass fraction is
    -- 0 or 1, else the CLT interval on the case means (sql/macros/stats.sql)
    pass_rate_a,
    case_rate_lo(pass_rate_a, pass_rate_a_sd, n, pass_rate_a_binary) AS pass_rate_a_lo,
    case_rate_hi(pass_rate_a, pass_rate_a_sd, n, pass_rate_a_binary) AS pass_rate_a_hi,
    pass_rate_b,
    case_rate_lo(pass_rate_b, pass_rate_b_sd, n, pass_rate_b_binary) AS pass_rate_b_lo,
    case_rate_hi(pass_rate_b, pass_rate_b_sd, n, pass_rate_b_binary) AS pass_rate_b_hi,
    pass_rate_delta, pass_rate_se, pass_rate_lo, pass_rate_hi, pass_rate_p,
    score_n, score_a, score_b, score_delta, score_se, score_lo, score_hi, score_p,
    cost_usd_n, cost_usd_a, cost_usd_b, cost_usd_delta, cost_usd_se, cost_usd_lo, cost_usd_hi,
    cost_usd_p,
    latency_ms_n, latency_ms_a, latency_ms_b, latency_ms_delta, latency_ms_se, latency_ms_lo,
    latency_ms_hi, latency_ms_p
FROM joined
ORDER BY
    CASE scope WHEN 'run' THEN 0 WHEN 'cell' THEN 1 WHEN 'criterion' THEN 2 ELSE 3 END,
    CASE WHEN scope = 'cell' THEN variant END,
    CASE WHEN scope = 'cell' THEN model END,
    pass_rate_delta NULLS LAST,
    score_delta NULLS LAST,
    target;
