-- title: Judged answers to label
-- description: One item per llm-judge criterion x case (a pointwise label counts once per case x criterion): the first repeat's answer of every variant x model with the judge's verdict, raw score and rationale, the verdict calibration_pointwise compares with a label (pass when the judge passed at least half of the case's judged answers; their mean raw score), the rendered prompt of the first answer, the expected value, and the stored human label if any (the criterion's own label before the case's human_label); for blind pointwise labelling.
-- params: run_id
WITH s AS (
    SELECT *
    FROM scores
    WHERE run_id = $run_id AND scorer = 'llm-judge'
    QUALIFY row_number() OVER (
        PARTITION BY criterion, case_id, variant, model ORDER BY repeat
    ) = 1
),
agg AS (   -- the verdict calibration_pointwise compares with a label: every judged answer
    SELECT criterion, case_id, avg(passed::INTEGER) >= 0.5 AS judge_passed,
           avg(raw_score) AS judge_raw_score
    FROM scores
    WHERE run_id = $run_id AND judge_model IS NOT NULL AND error IS NULL
    GROUP BY criterion, case_id
),
lab AS (
    SELECT criterion, case_id, label AS human
    FROM (SELECT DISTINCT criterion, case_id FROM s) k
    JOIN labels l USING (case_id)
    WHERE l.run_id = $run_id AND l.kind = 'pointwise'
        AND (l.comparison = k.criterion OR l.comparison IS NULL)
    QUALIFY row_number() OVER (
        PARTITION BY criterion, case_id ORDER BY l.comparison IS NULL, l.label::VARCHAR
    ) = 1
)
SELECT
    s.criterion, s.case_id,
    list({
        'variant': s.variant, 'model': s.model, 'output': c.output, 'error': c.error,
        'passed': s.passed, 'raw_score': s.raw_score, 'rationale': s.rationale,
        'judge_error': s.error
    } ORDER BY s.variant, s.model) AS answers,
    arg_min(c.messages, s.variant || chr(0) || s.model) AS messages,
    any_value(c.expected) AS expected,
    any_value(agg.judge_passed) AS judge_passed,
    any_value(agg.judge_raw_score) AS judge_raw_score,
    any_value(lab.human) AS human
FROM s
JOIN cases c ON c.run_id = s.run_id AND c.variant = s.variant AND c.model = s.model
    AND c.case_id = s.case_id AND c.repeat = s.repeat
LEFT JOIN agg ON agg.criterion = s.criterion AND agg.case_id = s.case_id
LEFT JOIN lab ON lab.criterion = s.criterion AND lab.case_id = s.case_id
GROUP BY s.criterion, s.case_id
ORDER BY s.criterion, s.case_id;
