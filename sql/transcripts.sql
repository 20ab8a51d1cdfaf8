-- title: Transcripts of cells
-- description: The steps of the tool-loop transcripts (the turns table) of runs $run_ids' cells, for the cases $case_ids (NULL: every case), only each run × variant × model × case's first repeat (its lowest in cases) when $first_repeat: at most the first $max_steps steps of each cell, every row carrying its cell's totals over all its steps (n_steps, n_turns: the model requests, n_calls: the tool calls, n_errors: the calls that failed). In run, variant, model, case, repeat, step order. A no-look run stores no turns, so it has no rows here.
-- params: run_ids, case_ids, first_repeat, max_steps
WITH firsts AS (   -- each run × cell × case's first repeat, as sql/case_history.sql shows it
    SELECT run_id, variant, model, case_id, min(repeat) AS repeat
    FROM cases
    WHERE $first_repeat
        AND list_contains($run_ids::VARCHAR[], run_id)
        AND ($case_ids IS NULL OR list_contains($case_ids::VARCHAR[], case_id))
    GROUP BY run_id, variant, model, case_id
),
steps AS (
    SELECT
        t.*,
        count(*) OVER cell                                          AS n_steps,
        count(*) FILTER (WHERE t.role = 'assistant') OVER cell      AS n_turns,
        count(*) FILTER (WHERE t.role = 'tool') OVER cell           AS n_calls,
        count(*) FILTER (WHERE t.role = 'tool' AND t.error IS NOT NULL) OVER cell AS n_errors,
        row_number() OVER (cell ORDER BY t.seq)                     AS place
    FROM turns t
    WHERE list_contains($run_ids::VARCHAR[], t.run_id)
        AND ($case_ids IS NULL OR list_contains($case_ids::VARCHAR[], t.case_id))
        AND (NOT $first_repeat OR EXISTS (
            SELECT 1 FROM firsts f
            WHERE f.run_id = t.run_id AND f.variant = t.variant AND f.model = t.model
                AND f.case_id = t.case_id AND f.repeat = t.repeat
        ))
    WINDOW cell AS (PARTITION BY t.run_id, t.variant, t.model, t.case_id, t.repeat)
)
SELECT
    run_id, variant, model, case_id, repeat, seq, turn, role, content, tool_name, call_id,
    arguments, result, error, args_valid, latency_ms, input_tokens, output_tokens, cost_usd,
    cached, finish_reason, n_steps, n_turns, n_calls, n_errors
FROM steps
WHERE place <= $max_steps
ORDER BY run_id, variant, model, case_id, repeat, seq;
