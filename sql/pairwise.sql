-- title: Pairwise results with calibration
-- description: Per comparison: the judge's agreement with human labels (Cohen's kappa, Landis-Koch band, raw agreement, base rate, n), then the candidate's win rate over eligible pairs with its 95% Wilson interval, ties, exclusions, flip rate and each side's pass rate; headline_eligible is false when the judge is uncalibrated or flips too often.
-- params: run_id, min_kappa, min_labels, max_flip_rate
WITH p AS (
    SELECT * FROM pairs WHERE run_id = $run_id
),
per AS (
    SELECT
        comparison,
        any_value(judge)                                             AS judge,
        any_value(judge_model)                                       AS judge_model,
        string_agg(DISTINCT baseline_variant || ' × ' || baseline_model, ', ')   AS baseline,
        string_agg(DISTINCT candidate_variant || ' × ' || candidate_model, ', ') AS candidate,
        count(*)                                                     AS n_pairs,
        count(*) FILTER (WHERE eligible)                             AS n,
        count(*) FILTER (WHERE NOT eligible)                         AS n_excluded,
        count(*) FILTER (WHERE eligible AND verdict = 'candidate')   AS candidate_wins,
        count(*) FILTER (WHERE eligible AND verdict = 'baseline')    AS baseline_wins,
        count(*) FILTER (WHERE eligible AND verdict = 'tie')         AS ties,
        count(*) FILTER (WHERE eligible AND flipped)                 AS n_flipped,
        count(*) FILTER (WHERE baseline_ok)                          AS baseline_ok,
        count(*) FILTER (WHERE candidate_ok)                         AS candidate_ok,
        coalesce(sum(cost_usd), 0)                                   AS judge_cost_usd
    FROM p
    GROUP BY comparison
),
joined AS (   -- a human label meets every judged pair of its case in that comparison
    SELECT l.comparison, l.prefer AS human, p.verdict AS judge
    FROM labels l
    JOIN p ON p.comparison = l.comparison AND p.case_id = l.case_id
    WHERE l.run_id = $run_id AND l.kind = 'pairwise' AND p.eligible
),
counts AS (
    SELECT comparison, count(*) AS n, count(*) FILTER (WHERE human = judge) AS agree
    FROM joined GROUP BY comparison
),
human_marg AS (SELECT comparison, human AS k, count(*) AS c FROM joined GROUP BY ALL),
judge_marg AS (SELECT comparison, judge AS k, count(*) AS c FROM joined GROUP BY ALL),
chance AS (
    SELECT h.comparison, sum(h.c * j.c) AS s
    FROM human_marg h JOIN judge_marg j USING (comparison, k)
    GROUP BY h.comparison
),
base AS (SELECT comparison, max(c) AS majority FROM human_marg GROUP BY comparison),
kappa AS (
    SELECT
        c.comparison,
        c.n                                               AS n_labels,
        c.agree / c.n                                     AS agreement,
        b.majority / c.n                                  AS base_rate,
        coalesce(ch.s, 0) / (c.n * c.n)                   AS chance_agreement
    FROM counts c
    LEFT JOIN chance ch USING (comparison)
    LEFT JOIN base b USING (comparison)
),
k2 AS (
    SELECT *,
        CASE WHEN chance_agreement < 1 THEN (agreement - chance_agreement) / (1 - chance_agreement) END AS kappa
    FROM kappa
),
rated AS (
    SELECT per.*, k2.n_labels, k2.agreement, k2.base_rate, k2.chance_agreement, k2.kappa,
           candidate_wins / nullif(n, 0)  AS win_rate,
           n_flipped / nullif(n, 0)       AS flip_rate,
           1.959963984540054              AS z
    FROM per LEFT JOIN k2 USING (comparison)
)
SELECT
    comparison, judge, judge_model, baseline, candidate,
    coalesce(n_labels, 0) AS n_labels,
    kappa,
    CASE
        WHEN kappa IS NULL THEN 'undefined'
        WHEN kappa < 0 THEN 'poor'
        WHEN kappa <= 0.20 THEN 'slight'
        WHEN kappa <= 0.40 THEN 'fair'
        WHEN kappa <= 0.60 THEN 'moderate'
        WHEN kappa <= 0.80 THEN 'substantial'
        ELSE 'almost perfect'
    END AS kappa_band,
    agreement, base_rate, chance_agreement,
    n_pairs, n, n_excluded, candidate_wins, baseline_wins, ties,
    win_rate,
    CASE WHEN n > 0 THEN (win_rate + z * z / (2 * n) - z * sqrt(win_rate * (1 - win_rate) / n + z * z / (4 * n * n))) / (1 + z * z / n) END AS win_rate_lo,
    CASE WHEN n > 0 THEN (win_rate + z * z / (2 * n) + z * sqrt(win_rate * (1 - win_rate) / n + z * z / (4 * n * n))) / (1 + z * z / n) END AS win_rate_hi,
    n_flipped, flip_rate,
    baseline_ok / n_pairs  AS baseline_pass_rate,
    candidate_ok / n_pairs AS candidate_pass_rate,
    judge_cost_usd,
    coalesce(n_labels, 0) >= $min_labels AND kappa IS NOT NULL AND kappa >= $min_kappa AS calibrated,
    coalesce(flip_rate, 0) > $max_flip_rate AS flip_flagged,
    (coalesce(n_labels, 0) >= $min_labels AND kappa IS NOT NULL AND kappa >= $min_kappa)
        AND NOT coalesce(flip_rate, 0) > $max_flip_rate AS headline_eligible
FROM rated
ORDER BY comparison;
