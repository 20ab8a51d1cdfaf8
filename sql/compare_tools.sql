-- title: Tool use between two runs
-- description: The tool calls of run A and of run B (the turns table) over the cells both runs have (same variant, model, case_id, repeat), in two scopes. `tool`: per variant x model x tool, the calls on each side, how many failed (an unknown tool, invalid arguments or the tool's own error) and how many had arguments off the tool's schema, their rates and B minus A. `cell`: the paired cells whose tool use changed (the sequence of tools called, or a count), with the tools called in order on each side and the verdicts; at most $limit of them (NULL: all). Most new failures first in each scope; no rows when neither run stored a tool loop.
-- params: run_a, run_b, limit
WITH paired AS (
    SELECT variant, model, case_id, repeat, a.passed AS passed_a, b.passed AS passed_b
    FROM (
        SELECT variant, model, case_id, repeat, passed FROM cases
        WHERE run_key = run_key($run_a) AND run_id = $run_a
    ) a
    JOIN (
        SELECT variant, model, case_id, repeat, passed FROM cases
        WHERE run_key = run_key($run_b) AND run_id = $run_b
    ) b
        USING (variant, model, case_id, repeat)
),
calls AS (
    SELECT 'a' AS side, variant, model, case_id, repeat, seq, tool_name, error, args_valid
    FROM turns
    WHERE run_id = $run_a AND role = 'tool'
    UNION ALL
    SELECT 'b' AS side, variant, model, case_id, repeat, seq, tool_name, error, args_valid
    FROM turns
    WHERE run_id = $run_b AND role = 'tool'
),
grouped AS (
    SELECT
        CASE WHEN grouping(case_id) = 0 THEN 'cell' ELSE 'tool' END            AS scope,
        variant,
        model,
        coalesce(tool_name, '(none)')                                          AS tool,
        case_id,
        repeat,
        any_value(passed_a)                                                    AS passed_a,
        any_value(passed_b)                                                    AS passed_b,
        coalesce(list(coalesce(tool_name, '(none)') ORDER BY seq) FILTER (WHERE side = 'a'), [])
                                                                               AS tools_a,
        coalesce(list(coalesce(tool_name, '(none)') ORDER BY seq) FILTER (WHERE side = 'b'), [])
                                                                               AS tools_b,
        count(*) FILTER (WHERE side = 'a')                                     AS n_calls_a,
        count(*) FILTER (WHERE side = 'b')                                     AS n_calls_b,
        count(*) FILTER (WHERE side = 'a' AND error IS NOT NULL)               AS n_errors_a,
        count(*) FILTER (WHERE side = 'b' AND error IS NOT NULL)               AS n_errors_b,
        count(*) FILTER (WHERE side = 'a' AND args_valid = false)              AS n_invalid_args_a,
        count(*) FILTER (WHERE side = 'b' AND args_valid = false)              AS n_invalid_args_b
    FROM calls
    JOIN paired USING (variant, model, case_id, repeat)
    GROUP BY GROUPING SETS ((variant, model, tool), (variant, model, case_id, repeat))
),
shown AS (
    SELECT *
    FROM grouped
    WHERE scope = 'tool'
       OR tools_a <> tools_b
       OR n_errors_a <> n_errors_b
       OR n_invalid_args_a <> n_invalid_args_b
    QUALIFY scope = 'tool' OR $limit IS NULL OR row_number() OVER (
        PARTITION BY scope
        ORDER BY n_errors_b - n_errors_a DESC, abs(n_calls_b - n_calls_a) DESC,
                 case_id, variant, model, repeat
    ) <= $limit
)
SELECT
    scope,
    variant,
    model,
    CASE WHEN scope = 'tool' THEN tool END                                     AS tool,
    case_id,
    repeat,
    CASE WHEN scope = 'cell' THEN passed_a END                                 AS passed_a,
    CASE WHEN scope = 'cell' THEN passed_b END                                 AS passed_b,
    CASE WHEN scope = 'cell' THEN tools_a END                                  AS tools_a,
    CASE WHEN scope = 'cell' THEN tools_b END                                  AS tools_b,
    n_calls_a,
    n_calls_b,
    n_errors_a,
    n_errors_b,
    n_invalid_args_a,
    n_invalid_args_b,
    round(n_errors_a / nullif(n_calls_a, 0), 4)                                AS error_rate_a,
    round(n_errors_b / nullif(n_calls_b, 0), 4)                                AS error_rate_b,
    round(n_errors_b / nullif(n_calls_b, 0) - n_errors_a / nullif(n_calls_a, 0), 4)
                                                                               AS error_rate_delta,
    round(n_invalid_args_a / nullif(n_calls_a, 0), 4)                          AS invalid_args_rate_a,
    round(n_invalid_args_b / nullif(n_calls_b, 0), 4)                          AS invalid_args_rate_b
FROM shown
ORDER BY
    scope DESC,
    n_errors_b - n_errors_a DESC,
    CASE WHEN scope = 'tool' THEN n_calls_a + n_calls_b ELSE abs(n_calls_b - n_calls_a) END DESC,
    variant, model, tool, case_id, repeat;
