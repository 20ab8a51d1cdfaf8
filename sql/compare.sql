-- title: Compare two runs
-- description: Run B minus run A, paired on (variant, model, case_id, repeat). One row for the whole run (scope 'run'), per variant x model cell ('cell', with cells only one run has), per criterion ('criterion') and per metadata slice ('slice'; $keys, combined into one dimension when $combine, else one dimension per key). For pass_rate, score, cost_usd and latency_ms: n pairs, the means in A and B, the mean paired difference with its standard error (sample sd / sqrt(n), or cluster-robust CR1 over the clusters of metadata key $cluster; 'case_id' clusters the repeats of a case) and 95% interval; cases fixed and broken; a verdict. Criteria and slices come worst first.
-- params: run_a, run_b, cluster, keys, combine
WITH a AS (
    SELECT variant, model, case_id, repeat, passed, score,
           coalesce(cost_usd, 0) AS cost_usd, latency_ms, metadata
    FROM cases
    WHERE run_id = $run_a
),
b AS (
    SELECT variant, model, case_id, repeat, passed, score,
           coalesce(cost_usd, 0) AS cost_usd, latency_ms, metadata
    FROM cases
    WHERE run_id = $run_b
),
pairs AS (
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
        a.latency_ms AS latency_a, b.latency_ms AS latency_b,
        row_number() OVER () AS pair_id
    FROM a JOIN b USING (variant, model, case_id, repeat)
),
score_a AS (
    SELECT variant, model, case_id, repeat, criterion, passed, score
    FROM scores WHERE run_id = $run_a
),
score_b AS (
    SELECT variant, model, case_id, repeat, criterion, passed, score
    FROM scores WHERE run_id = $run_b
),
-- score rows of paired cases, keyed by their pair (joined on an integer, not four strings)
keyed_a AS (
    SELECT p.pair_id, sa.criterion, sa.passed, sa.score
    FROM score_a sa JOIN pairs p USING (variant, model, case_id, repeat)
),
keyed_b AS (
    SELECT p.pair_id, p.cluster, sb.criterion, sb.passed, sb.score
    FROM score_b sb JOIN pairs p USING (variant, model, case_id, repeat)
),
criterion_pairs AS (
    SELECT criterion, kb.cluster,
           ka.passed::INTEGER::DOUBLE AS pass_a, kb.passed::INTEGER::DOUBLE AS pass_b,
           ka.score AS score_a, kb.score AS score_b
    FROM keyed_a ka
    JOIN keyed_b kb USING (pair_id, criterion)
),
dims AS (
    SELECT unnest(
        CASE WHEN $combine THEN [$keys::VARCHAR[]] ELSE list_transform($keys::VARCHAR[], k -> [k]) END
    ) AS dim
),
scoped AS (
    SELECT 'run' AS scope, 'run' AS target, NULL::VARCHAR AS variant, NULL::VARCHAR AS model,
           cluster, pass_a, pass_b, score_a, score_b, cost_a, cost_b, latency_a, latency_b
    FROM pairs
    UNION ALL
    SELECT 'cell', variant || ' × ' || model, variant, model,
           cluster, pass_a, pass_b, score_a, score_b, cost_a, cost_b, latency_a, latency_b
    FROM pairs
    UNION ALL
    SELECT 'slice',
           array_to_string(list_transform(d.dim, k -> k || '=' || coalesce(p.metadata ->> k, '(none)')), ', '),
           NULL, NULL,
           cluster, pass_a, pass_b, score_a, score_b, cost_a, cost_b, latency_a, latency_b
    FROM pairs p CROSS JOIN dims d
    WHERE len(d.dim) > 0
),
-- Per (scope, target), for each metric over the pairs where both sides have it: n, the means
-- in A and B, the mean paired difference and its sample sd, how many went up and down (one
-- pass over the pairs, a column group per metric; a metric without pairs stays NULL).
cell_stats AS (
    SELECT
        scope, target,
        any_value(variant) FILTER (WHERE pass_a IS NOT NULL AND pass_b IS NOT NULL) AS pass_rate_variant,
        any_value(model) FILTER (WHERE pass_a IS NOT NULL AND pass_b IS NOT NULL)   AS pass_rate_model,
        nullif(count(*) FILTER (WHERE pass_a IS NOT NULL AND pass_b IS NOT NULL), 0) AS pass_rate_n,
        avg(pass_a) FILTER (WHERE pass_b IS NOT NULL)       AS pass_rate_a,
        avg(pass_b) FILTER (WHERE pass_a IS NOT NULL)       AS pass_rate_b,
        avg(pass_b - pass_a)                                AS pass_rate_delta,
        stddev_samp(pass_b - pass_a)                        AS pass_rate_sd,
        count(*) FILTER (WHERE pass_b > pass_a)             AS pass_rate_up,
        count(*) FILTER (WHERE pass_b < pass_a)             AS pass_rate_down,
        nullif(count(*) FILTER (WHERE score_a IS NOT NULL AND score_b IS NOT NULL), 0) AS score_n,
        avg(score_a) FILTER (WHERE score_b IS NOT NULL)     AS score_a,
        avg(score_b) FILTER (WHERE score_a IS NOT NULL)     AS score_b,
        avg(score_b - score_a)                              AS score_delta,
        stddev_samp(score_b - score_a)                      AS score_sd,
        nullif(count(*) FILTER (WHERE cost_a IS NOT NULL AND cost_b IS NOT NULL), 0) AS cost_usd_n,
        avg(cost_a) FILTER (WHERE cost_b IS NOT NULL)       AS cost_usd_a,
        avg(cost_b) FILTER (WHERE cost_a IS NOT NULL)       AS cost_usd_b,
        avg(cost_b - cost_a)                                AS cost_usd_delta,
        stddev_samp(cost_b - cost_a)                        AS cost_usd_sd,
        nullif(count(*) FILTER (WHERE latency_a IS NOT NULL AND latency_b IS NOT NULL), 0) AS latency_ms_n,
        avg(latency_a) FILTER (WHERE latency_b IS NOT NULL) AS latency_ms_a,
        avg(latency_b) FILTER (WHERE latency_a IS NOT NULL) AS latency_ms_b,
        avg(latency_b - latency_a)                          AS latency_ms_delta,
        stddev_samp(latency_b - latency_a)                  AS latency_ms_sd
    FROM scoped
    GROUP BY scope, target
),
criterion_stats AS (   -- the same for the criterion rows (pass and score only)
    SELECT
        'criterion' AS scope, criterion AS target,
        NULL::VARCHAR AS pass_rate_variant,
        NULL::VARCHAR AS pass_rate_model,
        nullif(count(*) FILTER (WHERE pass_a IS NOT NULL AND pass_b IS NOT NULL), 0) AS pass_rate_n,
        avg(pass_a) FILTER (WHERE pass_b IS NOT NULL)       AS pass_rate_a,
        avg(pass_b) FILTER (WHERE pass_a IS NOT NULL)       AS pass_rate_b,
        avg(pass_b - pass_a)                                AS pass_rate_delta,
        stddev_samp(pass_b - pass_a)                        AS pass_rate_sd,
        count(*) FILTER (WHERE pass_b > pass_a)             AS pass_rate_up,
        count(*) FILTER (WHERE pass_b < pass_a)             AS pass_rate_down,
        nullif(count(*) FILTER (WHERE score_a IS NOT NULL AND score_b IS NOT NULL), 0) AS score_n,
        avg(score_a) FILTER (WHERE score_b IS NOT NULL)     AS score_a,
        avg(score_b) FILTER (WHERE score_a IS NOT NULL)     AS score_b,
        avg(score_b - score_a)                              AS score_delta,
        stddev_samp(score_b - score_a)                      AS score_sd,
        NULL::BIGINT AS cost_usd_n, NULL::DOUBLE AS cost_usd_a, NULL::DOUBLE AS cost_usd_b,
        NULL::DOUBLE AS cost_usd_delta, NULL::DOUBLE AS cost_usd_sd,
        NULL::BIGINT AS latency_ms_n, NULL::DOUBLE AS latency_ms_a, NULL::DOUBLE AS latency_ms_b,
        NULL::DOUBLE AS latency_ms_delta, NULL::DOUBLE AS latency_ms_sd
    FROM criterion_pairs
    GROUP BY criterion
),
stats AS (
    SELECT * FROM cell_stats
    UNION ALL
    SELECT * FROM criterion_stats
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
    FROM scoped
    WHERE $cluster IS NOT NULL
    GROUP BY scope, target, cluster
    UNION ALL
    SELECT
        'criterion', criterion, cluster,
        count(pass_b - pass_a), sum(pass_b - pass_a),
        count(score_b - score_a), sum(score_b - score_a),
        0, NULL::DOUBLE,
        0, NULL::DOUBLE
    FROM criterion_pairs
    WHERE $cluster IS NOT NULL
    GROUP BY criterion, cluster
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
        END AS latency_ms_se
    FROM stats st LEFT JOIN robust r USING (scope, target)
),
wide AS (
    SELECT
        *,
        pass_rate_delta - 1.959963984540054 * pass_rate_se   AS pass_rate_lo,
        pass_rate_delta + 1.959963984540054 * pass_rate_se   AS pass_rate_hi,
        score_delta - 1.959963984540054 * score_se           AS score_lo,
        score_delta + 1.959963984540054 * score_se           AS score_hi,
        cost_usd_delta - 1.959963984540054 * cost_usd_se     AS cost_usd_lo,
        cost_usd_delta + 1.959963984540054 * cost_usd_se     AS cost_usd_hi,
        latency_ms_delta - 1.959963984540054 * latency_ms_se AS latency_ms_lo,
        latency_ms_delta + 1.959963984540054 * latency_ms_se AS latency_ms_hi
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
    GROUP BY variant, model
    UNION ALL
    SELECT 'run', 'run', NULL, NULL, (SELECT count(*) FROM a), (SELECT count(*) FROM b)
),
joined AS (
    SELECT
        scope, target,
        coalesce(p.variant, w.pass_rate_variant) AS variant,
        coalesce(p.model, w.pass_rate_model) AS model,
        p.n_a, p.n_b,
        coalesce(w.pass_rate_n, 0) AS n,
        w.pass_rate_clusters AS n_clusters,
        w.pass_rate_up AS n_fixed,
        w.pass_rate_down AS n_broken,
        w.pass_rate_a, w.pass_rate_b, w.pass_rate_delta, w.pass_rate_se, w.pass_rate_lo, w.pass_rate_hi,
        w.score_n, w.score_a, w.score_b, w.score_delta, w.score_se, w.score_lo, w.score_hi,
        w.cost_usd_n, w.cost_usd_a, w.cost_usd_b, w.cost_usd_delta, w.cost_usd_se, w.cost_usd_lo, w.cost_usd_hi,
        w.latency_ms_n, w.latency_ms_a, w.latency_ms_b, w.latency_ms_delta, w.latency_ms_se,
        w.latency_ms_lo, w.latency_ms_hi,
        1.959963984540054 AS z
    FROM wide w FULL JOIN presence p USING (scope, target)
)
SELECT
    scope, target, variant, model, n_a, n_b, n, n_clusters, n_fixed, n_broken,
    CASE
        WHEN n = 0 AND n_b = 0 THEN 'only in A'
        WHEN n = 0 AND n_a = 0 THEN 'only in B'
        WHEN n = 0 THEN 'no pairs'
        WHEN pass_rate_hi < 0 OR score_hi < 0 THEN 'worse'
        WHEN pass_rate_lo > 0 OR score_lo > 0 THEN 'better'
        WHEN pass_rate_delta = 0 AND coalesce(score_delta, 0) = 0 THEN 'same'
        ELSE 'within noise'
    END AS verdict,
    pass_rate_a,
    greatest(0, (pass_rate_a + z * z / (2 * n) - z * sqrt(pass_rate_a * (1 - pass_rate_a) / n + z * z / (4 * n * n)))
        / (1 + z * z / n)) AS pass_rate_a_lo,
    least(1, (pass_rate_a + z * z / (2 * n) + z * sqrt(pass_rate_a * (1 - pass_rate_a) / n + z * z / (4 * n * n)))
        / (1 + z * z / n)) AS pass_rate_a_hi,
    pass_rate_b,
    greatest(0, (pass_rate_b + z * z / (2 * n) - z * sqrt(pass_rate_b * (1 - pass_rate_b) / n + z * z / (4 * n * n)))
        / (1 + z * z / n)) AS pass_rate_b_lo,
    least(1, (pass_rate_b + z * z / (2 * n) + z * sqrt(pass_rate_b * (1 - pass_rate_b) / n + z * z / (4 * n * n)))
        / (1 + z * z / n)) AS pass_rate_b_hi,
    pass_rate_delta, pass_rate_se, pass_rate_lo, pass_rate_hi,
    score_n, score_a, score_b, score_delta, score_se, score_lo, score_hi,
    cost_usd_n, cost_usd_a, cost_usd_b, cost_usd_delta, cost_usd_se, cost_usd_lo, cost_usd_hi,
    latency_ms_n, latency_ms_a, latency_ms_b, latency_ms_delta, latency_ms_se, latency_ms_lo,
    latency_ms_hi
FROM joined
ORDER BY
    CASE scope WHEN 'run' THEN 0 WHEN 'cell' THEN 1 WHEN 'criterion' THEN 2 ELSE 3 END,
    CASE WHEN scope = 'cell' THEN variant END,
    CASE WHEN scope = 'cell' THEN model END,
    pass_rate_delta NULLS LAST,
    score_delta NULLS LAST,
    target;
