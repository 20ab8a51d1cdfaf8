-- title: Pointwise judge calibration
-- description: Per llm-judge criterion, agreement with the human labels (a pointwise `labels:` entry or `evalwh labels import` for that criterion, else the case's human_label): pass/fail Cohen's kappa, raw agreement and base rate for boolean-like labels; exact and within-1 agreement of the raw score for numeric labels; n for each. A label counts once per case x criterion (labels name no model): it is compared with the judge's verdict aggregated over every judged answer of that case (variants, models, repeats) -- pass when the judge passed at least half of them, and the mean raw score.
-- params: run_id
-- a label counts once: the judge's answers for a (criterion, case) are aggregated first.
-- Pointwise rows of `labels` with `comparison` set grade that criterion only; rows with it NULL
-- (a case's human_label) grade every llm-judge criterion. The criterion's own label wins.
WITH per_case AS (
    SELECT criterion, case_id,
           avg(passed::INTEGER) >= 0.5 AS passed,
           avg(raw_score)              AS raw_score
    FROM scores
    WHERE run_id = $run_id AND judge_model IS NOT NULL AND error IS NULL
    GROUP BY criterion, case_id
),
judged AS (
    SELECT s.criterion, s.case_id, s.passed, s.raw_score, l.label
    FROM per_case s
    JOIN (
        SELECT c.criterion, c.case_id, l.label
        FROM per_case c
        JOIN labels l ON l.case_id = c.case_id
            AND (l.comparison = c.criterion OR l.comparison IS NULL)
        WHERE l.run_id = $run_id AND l.kind = 'pointwise'
        QUALIFY row_number() OVER (
            PARTITION BY c.criterion, c.case_id ORDER BY l.comparison IS NULL, l.label::VARCHAR
        ) = 1
    ) l USING (criterion, case_id)
),
typed AS (
    SELECT *,
        CASE
            WHEN json_type(label) = 'BOOLEAN' THEN label::BOOLEAN
            WHEN lower(label ->> '$') IN ('pass', 'yes', 'good', 'true', 'correct') THEN true
            WHEN lower(label ->> '$') IN ('fail', 'no', 'bad', 'false', 'incorrect') THEN false
        END AS human_pass,
        TRY_CAST(label ->> '$' AS DOUBLE) AS human_score
    FROM judged
),
bin AS (
    SELECT criterion,
        count(*) FILTER (WHERE human_pass IS NOT NULL)                        AS n,
        count(*) FILTER (WHERE human_pass = passed)                           AS agree,
        count(*) FILTER (WHERE human_pass)                                    AS human_yes,
        count(*) FILTER (WHERE human_pass IS NOT NULL AND passed)             AS judge_yes
    FROM typed GROUP BY criterion
),
num AS (
    SELECT criterion,
        count(*) FILTER (WHERE human_score IS NOT NULL AND raw_score IS NOT NULL)  AS n_numeric,
        avg((round(raw_score) = human_score)::INTEGER) FILTER (WHERE human_score IS NOT NULL) AS exact_agreement,
        avg((abs(raw_score - human_score) <= 1)::INTEGER) FILTER (WHERE human_score IS NOT NULL) AS within_1_agreement
    FROM typed GROUP BY criterion
),
k AS (
    SELECT criterion, n, agree / nullif(n, 0) AS agreement,
        greatest(human_yes, n - human_yes) / nullif(n, 0) AS base_rate,
        (human_yes * judge_yes + (n - human_yes) * (n - judge_yes)) / nullif(n * n, 0) AS chance
    FROM bin
)
SELECT k.criterion, k.n AS n_labels, k.agreement, k.base_rate,
       CASE WHEN k.chance < 1 THEN (k.agreement - k.chance) / (1 - k.chance) END AS kappa,
       num.n_numeric, num.exact_agreement, num.within_1_agreement
FROM k JOIN num USING (criterion)
ORDER BY k.criterion;
