-- title: Case rows for export
-- description: Every case row of a run, flat (one row per variant x model x case x repeat): the verdict, score, error, cost, latency, the time waited before sending (queued_ms), why the answer ended (finish reason, refusal, tool calls, reasoning and cache tokens), the answer, and the criteria as a JSON object {criterion: {score, passed}} plus the names of the failed ones.
-- params: run_id
WITH crit AS (
    SELECT
        variant, model, case_id, repeat,
        json_group_object(criterion, json_object('score', score, 'passed', passed, 'error', error)) AS criteria,
        array_to_string(list(criterion ORDER BY criterion) FILTER (WHERE NOT passed), ', ') AS failed_criteria
    FROM scores
    WHERE run_key = run_key($run_id) AND run_id = $run_id
    GROUP BY variant, model, case_id, repeat
)
SELECT
    c.variant, c.model, c.case_id, c.repeat, c.passed, c.score,
    c.error, c.error_kind, c.latency_ms, c.queued_ms, c.input_tokens, c.output_tokens, c.cost_usd,
    c.cached, c.attempts,
    c.finish_reason, c.refusal, c.tool_calls, c.reasoning_tokens, c.cache_read_tokens, c.cache_write_tokens,
    coalesce(s.failed_criteria, '') AS failed_criteria,
    s.criteria,
    c.output, c.expected, c.vars, c.metadata
FROM cases c
LEFT JOIN crit s USING (variant, model, case_id, repeat)
WHERE c.run_key = run_key($run_id) AND c.run_id = $run_id
ORDER BY c.variant, c.model, c.case_id, c.repeat;
