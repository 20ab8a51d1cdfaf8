-- title: Threshold gate
-- description: Checks a run against threshold rules (a JSON list of {scope, target, metric, op, limit}); one row per rule and target with the value, its n and whether it passed, failures first.
-- params: run_id, rules
WITH rules AS (
    SELECT unnest(
        from_json($rules, '[{"scope":"VARCHAR","target":"VARCHAR","metric":"VARCHAR","op":"VARCHAR","limit":"DOUBLE"}]'),
        recursive := true
    )
),
metrics AS (
    SELECT 'run' AS scope, 'run' AS target, count(*) AS n,
           avg(passed::INTEGER)::DOUBLE AS pass_rate, avg(score)::DOUBLE AS score,
           avg((error IS NOT NULL)::INTEGER)::DOUBLE AS error_rate,
           coalesce(sum(cost_usd) FILTER (WHERE NOT cached), 0)::DOUBLE AS cost_usd
    FROM cases WHERE run_id = $run_id
    UNION ALL
    SELECT 'cell', variant || ' × ' || model, count(*),
           avg(passed::INTEGER), avg(score), avg((error IS NOT NULL)::INTEGER),
           coalesce(sum(cost_usd) FILTER (WHERE NOT cached), 0)
    FROM cases WHERE run_id = $run_id GROUP BY variant, model
    UNION ALL
    -- a criterion's error rate is the share of answers its scorer could not score
    SELECT 'criterion', criterion, count(*), avg(passed::INTEGER), avg(score),
           avg((error IS NOT NULL)::INTEGER), NULL
    FROM scores WHERE run_id = $run_id GROUP BY criterion
),
long AS (
    UNPIVOT metrics ON pass_rate, score, error_rate, cost_usd INTO NAME metric VALUE value
)
SELECT
    r.scope,
    coalesce(m.target, r.target) AS target,
    r.metric,
    r.op,
    r."limit",
    m.value,
    coalesce(m.n, 0) AS n,
    CASE
        WHEN m.value IS NULL THEN false
        WHEN r.op = '>=' THEN m.value >= r."limit"
        ELSE m.value <= r."limit"
    END AS passed
FROM rules r
LEFT JOIN long m
  ON m.scope = r.scope AND m.metric = r.metric AND (r.target = '*' OR r.target = m.target)
ORDER BY passed, r.scope, target, r.metric;
