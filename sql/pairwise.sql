-- title: Pairwise results with calibration
-- description: Per comparison: the judge's agreement with human labels (Cohen's kappa, Landis-Koch band, raw agreement, base rate, n_labels = distinct labelled cases: a label counts once, against the judge's majority verdict over that case's eligible pairs, a tie between the most frequent verdicts reading 'tie'), then the candidate's win rate (the mean over eligible cases of each case's share of wins across its repeats) with its 95% Wilson interval on n_cases, ties, exclusions, flip rate and each side's pass rate; headline_eligible is false when the judge is uncalibrated or flips too often.
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
        count(DISTINCT case_id) FILTER (WHERE eligible)              AS n_cases,
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
-- the case is the unit: each case's share of candidate wins over its eligible pairs (repeats)
case_wins AS (
    SELECT comparison, case_id, avg((verdict = 'candidate')::INTEGER) AS case_win
    FROM p WHERE eligible
    GROUP BY comparison, case_id
),
case_rates AS (
    SELECT comparison, avg(case_win) AS win_rate FROM case_wins GROUP BY comparison
),
-- A label counts once: one judge verdict per labelled (comparison, case) -- the most frequent
-- verdict over that case's eligible pairs (its repeats); a tie between the top counts is 'tie'.
verdict_counts AS (
    SELECT comparison, case_id, verdict, count(*) AS c
    FROM p WHERE eligible
    GROUP BY comparison, case_id, verdict
),
case_verdicts AS (
    SELECT comparison, case_id,
           CASE WHEN count(*) FILTER (WHERE c = top) > 1 THEN 'tie'
                ELSE any_value(verdict) FILTER (WHERE c = top) END AS judge
    FROM (SELECT *, max(c) OVER (PARTITION BY comparison, case_id) AS top FROM verdict_counts)
    GROUP BY comparison, case_id
),
human AS (   -- one label per (comparison, case): a repeated label counts once
    SELECT comparison, case_id, mode(prefer) AS human
    FROM labels
    WHERE run_id = $run_id AND kind = 'pairwise'
    GROUP BY comparison, case_id
),
joined AS (
    SELECT h.comparison, h.human, v.judge
    FROM human h JOIN case_verdicts v USING (comparison, case_id)
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
           cr.win_rate,
           n_flipped / nullif(n, 0)       AS flip_rate,
           1.959963984540054              AS z
    FROM per LEFT JOIN k2 USING (comparison) LEFT JOIN case_rates cr USING (comparison)
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
    n_pairs, n, n_cases, n_excluded, candidate_wins, baseline_wins, ties,
    win_rate,
    -- Wilson score interval on n = n_cases (repeats of a case are not independent), in [0, 1]
    CASE WHEN n_cases > 0 THEN greatest(0, (win_rate + z * z / (2 * n_cases) - z * sqrt(win_rate * (1 - win_rate) / n_cases + z * z / (4 * n_cases * n_cases))) / (1 + z * z / n_cases)) END AS win_rate_lo,
    CASE WHEN n_cases > 0 THEN least(1, (win_rate + z * z / (2 * n_cases) + z * sqrt(win_rate * (1 - win_rate) / n_cases + z * z / (4 * n_cases * n_cases))) / (1 + z * z / n_cases)) END AS win_rate_hi,
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
