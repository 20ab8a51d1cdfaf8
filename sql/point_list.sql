-- title: Judged answers to label
-- description: One item per llm-judge criterion x case: the first repeat's answer of every variant x model with the judge's verdict, raw score and rationale and the stored label of that answer if any (a label of one answer is compared with the judge's verdict on it), the rendered prompt of the first answer, the expected value, the stored label of the case if any (the criterion's own label before the case's human_label; compared with the judge's majority over the case's judged answers: judge_passed when it passed at least half of them, judge_raw_score their mean, n_answers how many); for blind labelling of each answer.
-- params: run_id
WITH s AS (
    SELECT *
    FROM scores
    WHERE run_key = run_key($run_id) AND run_id = $run_id AND scorer = 'llm-judge'
    QUALIFY row_number() OVER (
        PARTITION BY criterion, case_id, variant, model ORDER BY repeat
    ) = 1
),
agg AS (   -- the verdict a label of the case is compared with: every judged answer
    SELECT criterion, case_id, avg(passed::INTEGER) >= 0.5 AS judge_passed,
           avg(raw_score) AS judge_raw_score, count(*) AS n_answers
    FROM scores
    WHERE run_key = run_key($run_id) AND run_id = $run_id AND judge_model IS NOT NULL AND error IS NULL
    GROUP BY criterion, case_id
),
lab AS (   -- the label of the case
    SELECT criterion, case_id, label AS human
    FROM (SELECT DISTINCT criterion, case_id FROM s) k
    JOIN labels l USING (case_id)
    WHERE l.run_id = $run_id AND l.kind = 'pointwise' AND l.variant IS NULL
        AND (l.comparison = k.criterion OR l.comparison IS NULL)
    QUALIFY row_number() OVER (
        PARTITION BY criterion, case_id ORDER BY l.comparison IS NULL, l.label::VARCHAR
    ) = 1
),
answer_lab AS (   -- the label of each answer
    SELECT comparison AS criterion, case_id, variant, model, repeat, label AS human
    FROM labels
    WHERE run_id = $run_id AND kind = 'pointwise' AND variant IS NOT NULL
    QUALIFY row_number() OVER (
        PARTITION BY comparison, case_id, variant, model, repeat ORDER BY label::VARCHAR
    ) = 1
)
SELECT
    s.criterion, s.case_id,
    list({
        'variant': s.variant, 'model': s.model, 'repeat': s.repeat, 'output': c.output,
        'error': c.error, 'passed': s.passed, 'raw_score': s.raw_score,
        'rationale': s.rationale, 'judge_error': s.error, 'human': a.human
    } ORDER BY s.variant, s.model) AS answers,
    arg_min(c.messages, s.variant || chr(0) || s.model) AS messages,
    any_value(c.expected) AS expected,
    any_value(agg.judge_passed) AS judge_passed,
    any_value(agg.judge_raw_score) AS judge_raw_score,
    any_value(agg.n_answers) AS n_answers,
    any_value(lab.human) AS human
FROM s
JOIN cases c ON c.run_key = s.run_key AND c.run_id = s.run_id AND c.variant = s.variant AND c.model = s.model
    AND c.case_id = s.case_id AND c.repeat = s.repeat
LEFT JOIN agg ON agg.criterion = s.criterion AND agg.case_id = s.case_id
LEFT JOIN lab ON lab.criterion = s.criterion AND lab.case_id = s.case_id
LEFT JOIN answer_lab a ON a.criterion = s.criterion AND a.case_id = s.case_id
    AND a.variant = s.variant AND a.model = s.model AND a.repeat = s.repeat
GROUP BY s.criterion, s.case_id
ORDER BY s.criterion, s.case_id;
