-- title: Judged pairs
-- description: Every pairwise-judged pair of a run (the first repeat of each case per comparison, since a label counts once per case) with both answers, the rendered prompt, the judge's verdict in both orders with rationales, and the stored human label if any; for labelling and drill-downs.
-- params: run_id
WITH p AS (
    SELECT *
    FROM pairs
    WHERE run_id = $run_id
    QUALIFY row_number() OVER (PARTITION BY comparison, case_id ORDER BY repeat) = 1
),
lab AS (
    SELECT comparison, case_id, any_value(prefer) AS human, any_value(note) AS note
    FROM labels
    WHERE run_id = $run_id AND kind = 'pairwise'
    GROUP BY ALL
)
SELECT
    p.comparison, p.case_id, p.repeat,
    p.baseline_variant, p.baseline_model, p.candidate_variant, p.candidate_model,
    p.judge, p.verdict_ab, p.verdict_ba, p.verdict, p.flipped, p.eligible, p.excluded_reason,
    p.rationale_ab, p.rationale_ba, p.error,
    cb.messages AS messages,
    cb.expected AS expected,
    cb.output AS baseline_output, cb.error AS baseline_error,
    cc.output AS candidate_output, cc.error AS candidate_error,
    lab.human, lab.note
FROM p
LEFT JOIN cases cb ON cb.run_key = run_key($run_id) AND cb.run_id = p.run_id AND cb.variant = p.baseline_variant
    AND cb.model = p.baseline_model AND cb.case_id = p.case_id AND cb.repeat = p.repeat
LEFT JOIN cases cc ON cc.run_key = run_key($run_id) AND cc.run_id = p.run_id AND cc.variant = p.candidate_variant
    AND cc.model = p.candidate_model AND cc.case_id = p.case_id AND cc.repeat = p.repeat
LEFT JOIN lab ON lab.comparison = p.comparison AND lab.case_id = p.case_id
ORDER BY p.comparison, p.case_id;
