-- title: Cases that moved between two runs
-- description: Paired case rows (same variant, model, case_id, repeat) whose verdict or score differs from run A to run B, worst first: broken (pass -> fail), score down, score up, fixed (fail -> pass); with the criteria that broke or got fixed. At most $limit rows (NULL: all).
-- params: run_a, run_b, limit
WITH a AS (
    SELECT variant, model, case_id, repeat, passed, score, error, output, metadata
    FROM cases
    WHERE run_key = run_key($run_a) AND run_id = $run_a
),
b AS (
    SELECT variant, model, case_id, repeat, passed, score, error, output, metadata
    FROM cases
    WHERE run_key = run_key($run_b) AND run_id = $run_b
),
moved AS (
    SELECT
        variant, model, case_id, repeat,
        a.passed AS passed_a, b.passed AS passed_b,
        a.score AS score_a, b.score AS score_b,
        b.score - a.score AS score_delta,
        CASE
            WHEN a.passed AND NOT b.passed THEN 'broken'
            WHEN b.passed AND NOT a.passed THEN 'fixed'
            WHEN b.score < a.score THEN 'score down'
            ELSE 'score up'
        END AS movement,
        a.error AS error_a, b.error AS error_b,
        a.output AS output_a, b.output AS output_b,
        coalesce(b.metadata, a.metadata) AS metadata
    FROM a JOIN b USING (variant, model, case_id, repeat)
    WHERE a.passed <> b.passed OR a.score IS DISTINCT FROM b.score
),
-- the movers shown (worst first, at most $limit): their criteria are all that is looked up
top AS (
    SELECT *
    FROM moved
    ORDER BY
        passed_b::INTEGER - passed_a::INTEGER,
        score_delta NULLS FIRST,
        case_id, variant, model, repeat
    LIMIT $limit
),
score_a AS (
    SELECT variant, model, case_id, repeat, criterion, passed
    FROM scores
    WHERE run_key = run_key($run_a) AND run_id = $run_a AND case_id IN (SELECT case_id FROM top)
),
score_b AS (
    SELECT variant, model, case_id, repeat, criterion, passed
    FROM scores
    WHERE run_key = run_key($run_b) AND run_id = $run_b AND case_id IN (SELECT case_id FROM top)
),
criteria AS (
    SELECT
        variant, model, case_id, repeat,
        list(criterion ORDER BY criterion) FILTER (WHERE sa.passed AND NOT sb.passed) AS criteria_broken,
        list(criterion ORDER BY criterion) FILTER (WHERE sb.passed AND NOT sa.passed) AS criteria_fixed
    FROM score_a sa
    JOIN score_b sb USING (variant, model, case_id, repeat, criterion)
    WHERE sa.passed <> sb.passed
    GROUP BY variant, model, case_id, repeat
)
SELECT
    m.*,
    coalesce(c.criteria_broken, []) AS criteria_broken,
    coalesce(c.criteria_fixed, []) AS criteria_fixed
FROM top m
LEFT JOIN criteria c USING (variant, model, case_id, repeat)
ORDER BY
    passed_b::INTEGER - passed_a::INTEGER,
    score_delta NULLS FIRST,
    case_id, variant, model, repeat
LIMIT $limit;
