-- title: Case listing
-- description: Every case row of a run with its verdict and the per-criterion scores, optionally only failures or one case id; failures first.
-- params: run_id, only_failures, case_id
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
    c.input_tokens,
    c.output_tokens,
    c.cost_usd,
    c.cached,
    c.attempts,
    (
        SELECT list({
            'criterion': s.criterion, 'scorer': s.scorer, 'score': s.score, 'passed': s.passed,
            'weight': s.weight, 'required': s.required, 'details': s.details, 'error': s.error
        } ORDER BY s.criterion)
        FROM scores s
        WHERE s.run_id = c.run_id AND s.variant = c.variant AND s.model = c.model
          AND s.case_id = c.case_id AND s.repeat = c.repeat
    ) AS criteria
FROM cases c
WHERE c.run_id = $run_id
  AND (NOT $only_failures OR NOT c.passed)
  AND ($case_id IS NULL OR c.case_id = $case_id)
ORDER BY c.passed, c.case_id, c.variant, c.model, c.repeat;
