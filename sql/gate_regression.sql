-- title: Regression gate
-- description: Checks regression rules (a JSON list of {scope, target, metric, limit, significant_only}) against a run's paired deltas versus its baseline: the rows of sql/compare.sql (baseline as run A), registered as the relation `deltas`. The drop (baseline minus run) may not exceed the limit; with significant_only a larger drop fails only when it is significant: compare.sql's paired t-test of the delta (or its cluster-robust t with analysis.cluster) gives p < 0.05, which is when the drop's 95% interval excludes 0; a drop without a standard error (one case, one cluster) is never significant. A drop within limit + $tolerance passes (evalwh.scoring.tolerance.TOLERANCE). One row per rule and target with the drop, its interval and the paired n; failures first.
-- params: rules, tolerance
WITH rules AS (
    SELECT unnest(
        from_json($rules, '[{"scope":"VARCHAR","target":"VARCHAR","metric":"VARCHAR","limit":"DOUBLE","significant_only":"BOOLEAN"}]'),
        recursive := true
    )
),
long AS (
    SELECT scope, target, n, 'pass_rate' AS metric,
           pass_rate_a AS baseline_value, pass_rate_b AS run_value,
           -- 0 - x, not -x: no negative zero for an unchanged rate
           0 - pass_rate_delta AS drop, 0 - pass_rate_hi AS drop_lo, 0 - pass_rate_lo AS drop_hi,
           -- the drop is significant when the paired t-test of the delta (compare.sql: the
           -- interval excludes 0 exactly when p < 0.05) finds it below 0
           pass_rate_p AS p_value,
           pass_rate_delta < 0 AND pass_rate_p < 0.05 AS significant
    FROM deltas
    UNION ALL
    SELECT scope, target, coalesce(score_n, 0), 'score',
           score_a, score_b, 0 - score_delta, 0 - score_hi, 0 - score_lo,
           score_p, score_delta < 0 AND score_p < 0.05
    FROM deltas
)
SELECT
    r.scope,
    coalesce(d.target, r.target)                AS target,
    r.metric || '_drop'                         AS metric,
    '<='                                        AS op,
    r."limit",
    d.drop                                      AS value,
    coalesce(d.n, 0)                            AS n,
    d.baseline_value,
    d.run_value,
    d.drop_lo,
    d.drop_hi,
    d.p_value,
    coalesce(d.significant, false)              AS significant,
    coalesce(r.significant_only, false)         AS significant_only,
    CASE
        WHEN d.drop IS NULL THEN false
        WHEN d.drop <= r."limit" + $tolerance THEN true
        WHEN r.significant_only THEN NOT coalesce(d.significant, false)
        ELSE false
    END                                         AS passed
FROM rules r
LEFT JOIN long d
  ON d.scope = r.scope AND d.metric = r.metric
 AND (r.target = d.target OR (r.target = '*' AND d.n > 0))
ORDER BY passed, r.scope, target, r.metric;
