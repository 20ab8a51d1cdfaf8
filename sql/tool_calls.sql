-- title: Tool calls per tool
-- description: Per variant x model x tool of a run's tool loops (the turns table): the calls made, the cells that made them, how many failed (an unknown tool, invalid arguments or the tool's own error) and how many of those had arguments that did not fit the tool's schema, with both as rates of the calls. Most failures first.
-- params: run_id
SELECT
    variant,
    model,
    coalesce(tool_name, '(none)')                                  AS tool,
    count(*)                                                       AS n_calls,
    count(DISTINCT (case_id, repeat))                              AS n_cells,
    count(*) FILTER (WHERE error IS NOT NULL)                      AS n_errors,
    count(*) FILTER (WHERE args_valid = false)                     AS n_invalid_args,
    round(count(*) FILTER (WHERE error IS NOT NULL) / count(*), 4)  AS error_rate,
    round(count(*) FILTER (WHERE args_valid = false) / count(*), 4) AS invalid_args_rate,
    round(median(latency_ms), 3)                                   AS p50_ms
FROM turns
WHERE run_id = $run_id AND role = 'tool'
GROUP BY variant, model, tool_name
ORDER BY n_errors DESC, n_calls DESC, variant, model, tool;
