-- title: How answers ended
-- description: Per variant x model of a run with an answer that did not simply stop: of its n answers, how many were truncated at the token limit, refused, blocked by a safety filter, ended by a provider error, or called tools (cases.finish_reason; NULL where the provider said nothing). Cells whose answers all stopped are left out.
-- params: run_id
WITH cells AS (
    SELECT
        variant,
        model,
        count(*)                                                  AS n,
        count(*) FILTER (WHERE finish_reason = 'length')          AS n_truncated,
        count(*) FILTER (WHERE finish_reason = 'refusal')         AS n_refused,
        count(*) FILTER (WHERE finish_reason = 'content_filter')  AS n_blocked,
        count(*) FILTER (WHERE finish_reason = 'error')           AS n_finish_error,
        count(*) FILTER (WHERE finish_reason = 'tool_calls')      AS n_tool_calls
    FROM cases
    WHERE run_key = run_key($run_id) AND run_id = $run_id
    GROUP BY variant, model
)
SELECT *
FROM cells
WHERE n_truncated + n_refused + n_blocked + n_finish_error + n_tool_calls > 0
ORDER BY variant, model;
