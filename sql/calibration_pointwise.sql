-- title: Pointwise judge calibration
-- description: Per llm-judge criterion, one row with slice NULL (all labels) and, when case metadata key $key is given, one row per value of it after it (one pass gives both), agreement with the human labels: pass/fail Cohen's kappa, raw agreement and base rate for boolean-like labels; for numeric labels, exact agreement of the rounded raw score, agreement within $within points (within_1_agreement keeps the within-1 figure), and the weighted kappa of the ordinal scale ($weights 'quadratic' or 'linear': 1 - mean disagreement weight / its expectation under independent marginals, the weight the squared or absolute difference); n for each. A label of one answer (variant, model and repeat set: the Label answers tab, or a `labels:` entry naming them) is compared with the judge's verdict on that answer and counts once per answer (n_answer_labels). A label of a case (a `labels:` entry naming no answer, or the case's human_label) keeps its meaning: it counts once per case x criterion and is compared with the judge's verdict aggregated over every judged answer of that case (variants, models, repeats) -- pass when the judge passed at least half of them, and the mean raw score (n_case_labels; case_label_answers_min/max: how many answers each such majority is over). A case with labels of its answers for a criterion is counted by those, not by a case label.
-- params: run_id, within, key, weights
-- Pointwise rows of `labels` with `comparison` set grade that criterion only; case labels with
-- it NULL (a case's human_label) grade every llm-judge criterion. The criterion's own label wins.
WITH answers AS (   -- every judged answer's verdict
    SELECT criterion, case_id, variant, model, repeat, passed, raw_score
    FROM scores
    WHERE run_key = run_key($run_id) AND run_id = $run_id AND judge_model IS NOT NULL AND error IS NULL
),
per_case AS (
    SELECT criterion, case_id,
           avg(passed::INTEGER) >= 0.5 AS passed,
           avg(raw_score)              AS raw_score,
           count(*)                    AS n_answers
    FROM answers
    GROUP BY criterion, case_id
),
answer_labels AS (   -- one label per labelled answer (a repeated label counts once)
    SELECT comparison AS criterion, case_id, variant, model, repeat, label
    FROM labels
    WHERE run_id = $run_id AND kind = 'pointwise' AND variant IS NOT NULL
    QUALIFY row_number() OVER (
        PARTITION BY comparison, case_id, variant, model, repeat ORDER BY label::VARCHAR
    ) = 1
),
case_labels AS (   -- one label per (criterion, case) whose answers carry no label of their own
    SELECT c.criterion, c.case_id, l.label
    FROM per_case c
    JOIN labels l ON l.case_id = c.case_id
        AND (l.comparison = c.criterion OR l.comparison IS NULL)
    WHERE l.run_id = $run_id AND l.kind = 'pointwise' AND l.variant IS NULL
        AND NOT EXISTS (
            SELECT 1 FROM answer_labels a WHERE a.criterion = c.criterion AND a.case_id = c.case_id
        )
    QUALIFY row_number() OVER (
        PARTITION BY c.criterion, c.case_id ORDER BY l.comparison IS NULL, l.label::VARCHAR
    ) = 1
),
items AS (
    SELECT a.criterion, a.case_id, j.passed, j.raw_score, a.label, true AS per_answer,
           1 AS n_answers
    FROM answer_labels a
    JOIN answers j USING (criterion, case_id, variant, model, repeat)
    UNION ALL
    SELECT c.criterion, c.case_id, p.passed, p.raw_score, c.label, false, p.n_answers
    FROM case_labels c
    JOIN per_case p USING (criterion, case_id)
),
sliced AS (   -- a case's metadata is the same in every cell: one value per case
    SELECT case_id, coalesce(any_value(json_extract_string(metadata, '$.' || $key)), '(none)') AS slice
    FROM cases
    WHERE run_key = run_key($run_id) AND run_id = $run_id AND $key IS NOT NULL  -- else not read
    GROUP BY case_id
),
judged AS (   -- every item overall (slice NULL) and, when $key is given, again in its slice
    SELECT i.*, NULL::VARCHAR AS slice FROM items i
    UNION ALL
    SELECT i.*, coalesce(m.slice, '(none)')
    FROM items i
    LEFT JOIN sliced m USING (case_id)
    WHERE $key IS NOT NULL
),
typed AS (
    SELECT *,
        CASE
            WHEN json_type(label) = 'BOOLEAN' THEN label::BOOLEAN
            WHEN lower(label ->> '$') IN ('pass', 'yes', 'good', 'true', 'correct') THEN true
            WHEN lower(label ->> '$') IN ('fail', 'no', 'bad', 'false', 'incorrect') THEN false
        END AS human_pass,
        TRY_CAST(label ->> '$' AS DOUBLE) AS human_score,
        round(raw_score) AS judge_score
    FROM judged
),
bin AS (
    SELECT criterion, slice,
        count(*) FILTER (WHERE human_pass IS NOT NULL)                        AS n,
        count(*) FILTER (WHERE human_pass = passed)                           AS agree,
        count(*) FILTER (WHERE human_pass)                                    AS human_yes,
        count(*) FILTER (WHERE human_pass IS NOT NULL AND passed)             AS judge_yes,
        count(*) FILTER (WHERE per_answer AND (human_pass IS NOT NULL OR human_score IS NOT NULL))
            AS n_answer_labels,
        count(*) FILTER (WHERE NOT per_answer AND (human_pass IS NOT NULL OR human_score IS NOT NULL))
            AS n_case_labels,
        min(n_answers) FILTER (WHERE NOT per_answer AND (human_pass IS NOT NULL OR human_score IS NOT NULL))
            AS case_label_answers_min,
        max(n_answers) FILTER (WHERE NOT per_answer AND (human_pass IS NOT NULL OR human_score IS NOT NULL))
            AS case_label_answers_max
    FROM typed GROUP BY criterion, slice
),
scored AS (   -- the numeric labels with a judge score: the weighted kappa's items
    SELECT criterion, slice, human_score AS h, judge_score AS j
    FROM typed WHERE human_score IS NOT NULL AND raw_score IS NOT NULL
),
weight AS (   -- the disagreement weight of (h, j): squared or absolute difference
    SELECT criterion, slice, h, j,
           CASE WHEN $weights = 'linear' THEN abs(h - j) ELSE (h - j) * (h - j) END AS w
    FROM scored
),
expected AS (   -- its expectation under independent marginals (every h against every j)
    SELECT h.criterion, h.slice,
           avg(CASE WHEN $weights = 'linear' THEN abs(h.h - j.j) ELSE (h.h - j.j) * (h.h - j.j) END) AS e
    FROM scored h JOIN scored j ON j.criterion = h.criterion AND j.slice IS NOT DISTINCT FROM h.slice
    GROUP BY h.criterion, h.slice
),
num AS (
    SELECT criterion, slice,
        count(*) FILTER (WHERE human_score IS NOT NULL AND raw_score IS NOT NULL)  AS n_numeric,
        avg((judge_score = human_score)::INTEGER) FILTER (WHERE human_score IS NOT NULL) AS exact_agreement,
        avg((abs(raw_score - human_score) <= 1)::INTEGER) FILTER (WHERE human_score IS NOT NULL) AS within_1_agreement,
        avg((abs(raw_score - human_score) <= $within)::INTEGER) FILTER (WHERE human_score IS NOT NULL) AS within_agreement
    FROM typed GROUP BY criterion, slice
),
observed AS (SELECT criterion, slice, avg(w) AS o FROM weight GROUP BY criterion, slice),
k AS (
    SELECT criterion, slice, n, agree / nullif(n, 0) AS agreement,
        greatest(human_yes, n - human_yes) / nullif(n, 0) AS base_rate,
        (human_yes * judge_yes + (n - human_yes) * (n - judge_yes)) / nullif(n * n, 0) AS chance,
        n_answer_labels, n_case_labels, case_label_answers_min, case_label_answers_max
    FROM bin
)
SELECT k.criterion, k.slice, k.n AS n_labels, k.agreement, k.base_rate,
       CASE WHEN k.chance < 1 THEN (k.agreement - k.chance) / (1 - k.chance) END AS kappa,
       k.n_answer_labels, k.n_case_labels, k.case_label_answers_min, k.case_label_answers_max,
       num.n_numeric, num.exact_agreement, num.within_1_agreement,
       $within::DOUBLE AS within, num.within_agreement,
       CASE WHEN $weights = 'linear' THEN 'linear' ELSE 'quadratic' END AS weights,
       1 - o.o / nullif(e.e, 0) AS weighted_kappa
FROM k
JOIN num ON num.criterion = k.criterion AND num.slice IS NOT DISTINCT FROM k.slice
LEFT JOIN observed o ON o.criterion = k.criterion AND o.slice IS NOT DISTINCT FROM k.slice
LEFT JOIN expected e ON e.criterion = k.criterion AND e.slice IS NOT DISTINCT FROM k.slice
ORDER BY k.criterion, k.slice NULLS FIRST;
