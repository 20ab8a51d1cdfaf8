-- title: Threshold gate
-- description: Checks a run against threshold rules (a JSON list of {scope, target, metric, op, limit}); one row per rule and target with the value, its n (cases x cells: each case's repeats are averaged first, so a rate is the mean over cases) and whether it passed, failures first. A value passes '>=' when value >= limit - $tolerance and '<=' when value <= limit + $tolerance (evalwh.scoring.tolerance.TOLERANCE).
-- params: run_id, rules, tolerance
WITH rules AS (
    SELECT unnest(
        from_json($rules, '[{"scope":"VARCHAR","target":"VARCHAR","metric":"VARCHAR","op":"VARCHAR","limit":"DOUBLE"}]'),
        recursive := true
    )
),
-- the case (in its cell) is the unit: per (variant, model, case) and per (criterion, variant,
-- model, case) the repeats are averaged first, then the cases. Cost is a sum.
case_cells AS (
    SELECT variant, model, case_id,
           avg(passed::INTEGER)::DOUBLE AS pass_rate, avg(score)::DOUBLE AS score,
           avg((error IS NOT NULL)::INTEGER)::DOUBLE AS error_rate,
           coalesce(sum(cost_usd) FILTER (WHERE NOT cached), 0)::DOUBLE AS cost_usd
    FROM cases WHERE run_key = run_key($run_id) AND run_id = $run_id GROUP BY variant, model, case_id
),
metrics AS (
    SELECT 'run' AS scope, 'run' AS target, count(*) AS n,
           avg(pass_rate) AS pass_rate, avg(score) AS score,
           avg(error_rate) AS error_rate, sum(cost_usd) AS cost_usd
    FROM case_cells
    UNION ALL
    SELECT 'cell', variant || ' × ' || model, count(*),
           avg(pass_rate), avg(score), avg(error_rate), sum(cost_usd)
    FROM case_cells GROUP BY variant, model
    UNION ALL
    -- a criterion's error rate is the share of answers its scorer could not score; read
    -- only when a rule judges a criterion (the score rows are ten times the case rows)
    SELECT 'criterion', criterion, count(*), avg(pass_rate), avg(score), avg(error_rate), NULL
    FROM (
        SELECT criterion, avg(passed::INTEGER)::DOUBLE AS pass_rate,
               avg(score)::DOUBLE AS score, avg((error IS NOT NULL)::INTEGER)::DOUBLE AS error_rate
        FROM scores
        WHERE run_key = run_key($run_id) AND run_id = $run_id AND EXISTS (SELECT 1 FROM rules WHERE scope = 'criterion')
        GROUP BY criterion, variant, model, case_id
    )
    GROUP BY criterion
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
        WHEN r.op = '>=' THEN m.value >= r."limit" - $tolerance
        ELSE m.value <= r."limit" + $tolerance
    END AS passed
FROM rules r
LEFT JOIN long m
  ON m.scope = r.scope AND m.metric = r.metric AND (r.target = '*' OR r.target = m.target)
ORDER BY passed, r.scope, target, r.metric;
