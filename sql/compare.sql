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
        a.latency_ms AS latency_a, b.latency_ms AS latency_b
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
criterion_pairs AS (
    SELECT criterion, p.cluster,
           sa.passed::INTEGER::DOUBLE AS pass_a, sb.passed::INTEGER::DOUBLE AS pass_b,
           sa.score AS score_a, sb.score AS score_b
    FROM score_a sa
    JOIN score_b sb USING (variant, model, case_id, repeat, criterion)
    JOIN pairs p USING (variant, model, case_id, repeat)
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
    SELECT 'criterion', criterion, NULL, NULL,
           cluster, pass_a, pass_b, score_a, score_b, NULL, NULL, NULL, NULL
    FROM criterion_pairs
    UNION ALL
    SELECT 'slice',
           array_to_string(list_transform(d.dim, k -> k || '=' || coalesce(p.metadata ->> k, '(none)')), ', '),
           NULL, NULL,
           cluster, pass_a, pass_b, score_a, score_b, cost_a, cost_b, latency_a, latency_b
    FROM pairs p CROSS JOIN dims d
    WHERE len(d.dim) > 0
),
long AS (
    SELECT scope, target, variant, model, cluster, metric, va, vb
    FROM scoped
    UNPIVOT INCLUDE NULLS ((va, vb) FOR metric IN (
        (pass_a, pass_b) AS pass_rate,
        (score_a, score_b) AS score,
        (cost_a, cost_b) AS cost_usd,
        (latency_a, latency_b) AS latency_ms
    ))
    WHERE va IS NOT NULL AND vb IS NOT NULL
),
stats AS (
    SELECT
        scope, target, metric,
        any_value(variant)                  AS variant,
        any_value(model)                    AS model,
        count(*)                            AS n,
        avg(va)                             AS a,
        avg(vb)                             AS b,
        avg(vb - va)                        AS delta,
        stddev_samp(vb - va)                AS sd,
        count(*) FILTER (WHERE vb > va)     AS up,
        count(*) FILTER (WHERE vb < va)     AS down
    FROM long
    GROUP BY scope, target, metric
),
-- Cluster-robust (CR1) standard error of a mean difference:
--   SE = sqrt( G/(G-1) * sum_g (sum_{i in g} (d_i - mean d))^2 ) / n
-- with sum_{i in g} (d_i - mean d) = s_g - m_g * mean d (s_g: the cluster's sum, m_g: its size).
clusters AS (
    SELECT scope, target, metric, cluster, count(*) AS m, sum(vb - va) AS s
    FROM long
    WHERE $cluster IS NOT NULL
    GROUP BY scope, target, metric, cluster
),
robust AS (
    SELECT c.scope, c.target, c.metric, count(*) AS g,
           sum((c.s - c.m * st.delta) * (c.s - c.m * st.delta)) AS ss
    FROM clusters c JOIN stats st USING (scope, target, metric)
    GROUP BY c.scope, c.target, c.metric
),
estimates AS (
    SELECT
        st.*,
        r.g AS clusters,
        CASE
            WHEN $cluster IS NULL THEN st.sd / sqrt(st.n)
            WHEN r.g > 1 THEN sqrt(r.g / (r.g - 1) * r.ss) / st.n
        END AS se
    FROM stats st LEFT JOIN robust r USING (scope, target, metric)
),
wide AS (
    PIVOT (
        SELECT *, delta - 1.959963984540054 * se AS lo, delta + 1.959963984540054 * se AS hi
        FROM estimates
    )
    ON metric IN ('pass_rate', 'score', 'cost_usd', 'latency_ms')
    USING first(n) AS n, first(a) AS a, first(b) AS b, first(delta) AS delta, first(se) AS se,
          first(lo) AS lo, first(hi) AS hi, first(up) AS up, first(down) AS down,
          first(clusters) AS clusters, first(variant) AS variant, first(model) AS model
    GROUP BY scope, target
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
