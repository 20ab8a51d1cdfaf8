-- title: Case listing
-- description: Every case row of a run with its verdict and the per-criterion scores, optionally only failures or one case id; failures first; at most $limit rows (NULL: all).
-- params: run_id, only_failures, case_id, limit
WITH keys AS (   -- the rows shown, chosen on the sort keys alone; then only they are read
    SELECT variant, model, case_id, repeat
    FROM cases c
    WHERE c.run_key = run_key($run_id) AND c.run_id = $run_id
      AND (NOT $only_failures OR NOT c.passed)
      AND ($case_id IS NULL OR c.case_id = $case_id)
    ORDER BY c.passed, c.case_id, c.variant, c.model, c.repeat
    LIMIT $limit
),
picked AS (
    SELECT c.*
    FROM cases c
    SEMI JOIN keys k
        ON c.variant = k.variant AND c.model = k.model AND c.case_id = k.case_id AND c.repeat = k.repeat
    WHERE c.run_key = run_key($run_id) AND c.run_id = $run_id
),
crit AS (
    SELECT
        s.variant, s.model, s.case_id, s.repeat,
        list({
            'criterion': s.criterion, 'scorer': s.scorer, 'score': s.score, 'passed': s.passed,
            'weight': s.weight, 'required': s.required, 'details': s.details, 'error': s.error,
            'rationale': s.rationale, 'judge_model': s.judge_model
        } ORDER BY s.criterion) AS criteria
    FROM scores s
    SEMI JOIN picked p
        ON s.variant = p.variant AND s.model = p.model AND s.case_id = p.case_id AND s.repeat = p.repeat
    WHERE s.run_key = run_key($run_id) AND s.run_id = $run_id
    GROUP BY s.variant, s.model, s.case_id, s.repeat
)
SELECT
    c.variant,
    c.model,
    c.case_id,
    c.repeat,
    c.passed,
    c.score,
    c.error,
    c.output,
    c.expected,
    c.vars,
    c.metadata,
    c.messages,
    c.attachments,
    c.latency_ms,
    c.queued_ms,
    c.input_tokens,
    c.output_tokens,
    c.cost_usd,
    c.cached,
    c.attempts,
    c.error_kind,
    k.criteria
FROM picked c
LEFT JOIN crit k USING (variant, model, case_id, repeat)
ORDER BY c.passed, c.case_id, c.variant, c.model, c.repeat;
