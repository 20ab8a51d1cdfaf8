-- title: Pairwise results with calibration
-- description: Per comparison: the judge's agreement with human labels (Cohen's kappa, Landis-Koch band, raw agreement, base rate, n_labels = distinct labelled cases: a label counts once, against the judge's majority verdict over that case's eligible pairs, a tie between the most frequent verdicts reading 'tie'), then the candidate's results: pairs won, tied and lost (candidate_wins, ties, baseline_wins; n eligible, n_excluded), cases won, tied and lost (the case is the unit: a case's score is the mean over its eligible pairs of 1 for a candidate win, 1/2 for a tie, 0 for a loss, and it is won above 1/2, tied at 1/2, lost below), the win rate (cases won + 1/2 cases tied) / n_cases, the exact two-sided sign test of cases won against cases lost (ties left out; win_rate_p = min(1, 2 P(X <= min(won, lost))), X ~ Binomial(won + lost, 1/2)) and the 95% interval that inverts it (Clopper-Pearson on won / (won + lost), bisected over the binomial tails, mapped to the win-rate scale with the tied cases fixed; NULL without a decisive case), so that the interval excludes 1/2 exactly when win_rate_p < 0.05 and the verdict is better or worse (same: every case tied); the flip rate, the share of pairs each side was eligible in (answered, passed its exec check and require), and headline_eligible, false when the judge is uncalibrated or flips too often.
-- params: run_id, min_kappa, min_labels, max_flip_rate
WITH RECURSIVE p AS (
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
        count(*) FILTER (WHERE baseline_ok)                          AS baseline_eligible,
        count(*) FILTER (WHERE candidate_ok)                         AS candidate_eligible,
        coalesce(sum(cost_usd), 0)                                   AS judge_cost_usd
    FROM p
    GROUP BY comparison
),
-- the case is the unit: its score is the mean over its eligible pairs (repeats) of 1 for a
-- candidate win, 1/2 for a tie and 0 for a loss; it is won when that is above 1/2, i.e. when
-- it has more winning than losing pairs (compared in integers, not in floating point)
case_pairs AS (
    SELECT comparison, case_id,
           count(*) FILTER (WHERE verdict = 'candidate') AS won,
           count(*) FILTER (WHERE verdict = 'baseline')  AS lost
    FROM p WHERE eligible
    GROUP BY comparison, case_id
),
case_counts AS (
    SELECT comparison,
           count(*) FILTER (WHERE won > lost)  AS cases_won,
           count(*) FILTER (WHERE won = lost)  AS cases_tied,
           count(*) FILTER (WHERE won < lost)  AS cases_lost
    FROM case_pairs GROUP BY comparison
),
-- The exact sign test of cases won (w) against cases lost (l), m = w + l decisive cases, and
-- the Clopper-Pearson interval of w / m that inverts it, by bisection: the lower bound is where
-- P(X >= w; pi) = 0.025, the upper where P(X <= w; pi) = 0.025 (X ~ Binomial(m, pi), terms
-- through lgamma). The first midpoint of both searches is exactly 1/2, and the sign test's p
-- is taken from those two tails: so a bound lands beyond 1/2 exactly when its tail at 1/2 is
-- below 0.025, i.e. when p < 0.05 -- the interval and the test cannot disagree. 52 halvings
-- leave the bounds within 2^-52 of the root.
bisect AS (
    SELECT comparison, cases_won AS w, cases_won + cases_lost AS m, 0 AS step,
           0.0::DOUBLE AS lo_a, 1.0::DOUBLE AS lo_b, 0.0::DOUBLE AS hi_a, 1.0::DOUBLE AS hi_b,
           NULL::DOUBLE AS ge_half, NULL::DOUBLE AS le_half
    FROM case_counts
    WHERE cases_won + cases_lost > 0
    UNION ALL
    SELECT comparison, w, m, step + 1,
           CASE WHEN ge < 0.025 THEN mid_lo ELSE lo_a END,
           CASE WHEN ge < 0.025 THEN lo_b ELSE mid_lo END,
           CASE WHEN le < 0.025 THEN hi_a ELSE mid_hi END,
           CASE WHEN le < 0.025 THEN mid_hi ELSE hi_b END,
           coalesce(ge_half, ge), coalesce(le_half, le)
    FROM (
        SELECT *,
            list_sum(list_transform(range(w, m + 1),
                k -> exp(lgamma(m + 1) - lgamma(k + 1) - lgamma(m - k + 1)
                         + k * ln(mid_lo) + (m - k) * ln(1 - mid_lo)))) AS ge,
            list_sum(list_transform(range(0, w + 1),
                k -> exp(lgamma(m + 1) - lgamma(k + 1) - lgamma(m - k + 1)
                         + k * ln(mid_hi) + (m - k) * ln(1 - mid_hi)))) AS le
        FROM (SELECT *, (lo_a + lo_b) / 2 AS mid_lo, (hi_a + hi_b) / 2 AS mid_hi
              FROM bisect WHERE step < 52)
    )
),
sign_test AS (
    SELECT comparison,
           least(1.0, 2 * least(ge_half, le_half))         AS win_rate_p,
           CASE WHEN w = 0 THEN 0.0 ELSE lo_b END          AS pi_lo,
           CASE WHEN w = m THEN 1.0 ELSE hi_a END          AS pi_hi
    FROM bisect WHERE step = 52
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
           cc.cases_won, cc.cases_tied, cc.cases_lost, st.win_rate_p, st.pi_lo, st.pi_hi,
           n_flipped / nullif(n, 0)       AS flip_rate
    FROM per LEFT JOIN k2 USING (comparison) LEFT JOIN case_counts cc USING (comparison)
    LEFT JOIN sign_test st USING (comparison)
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
    coalesce(cases_won, 0) AS cases_won, coalesce(cases_tied, 0) AS cases_tied,
    coalesce(cases_lost, 0) AS cases_lost,
    -- ties count half a win; NULL without an eligible case
    (cases_won + cases_tied / 2) / nullif(n_cases, 0) AS win_rate,
    -- the interval of pi = won / (won + lost) on the win-rate scale, the tied cases fixed:
    -- (tied / 2 + pi (won + lost)) / n_cases, which is 1/2 where pi is, above where pi is
    (cases_tied / 2 + pi_lo * (cases_won + cases_lost)) / n_cases AS win_rate_lo,
    (cases_tied / 2 + pi_hi * (cases_won + cases_lost)) / n_cases AS win_rate_hi,
    CASE WHEN n_cases > 0 THEN coalesce(win_rate_p, 1.0) END AS win_rate_p,
    CASE
        WHEN n_cases = 0 THEN 'no eligible pairs'
        WHEN cases_won = 0 AND cases_lost = 0 THEN 'same'
        WHEN win_rate_p < 0.05 AND cases_won > cases_lost THEN 'better'
        WHEN win_rate_p < 0.05 THEN 'worse'
        ELSE 'within noise'
    END AS verdict,
    n_flipped, flip_rate,
    baseline_eligible / n_pairs  AS baseline_eligible_rate,
    candidate_eligible / n_pairs AS candidate_eligible_rate,
    judge_cost_usd,
    coalesce(n_labels, 0) >= $min_labels AND kappa IS NOT NULL AND kappa >= $min_kappa AS calibrated,
    coalesce(flip_rate, 0) > $max_flip_rate AS flip_flagged,
    (coalesce(n_labels, 0) >= $min_labels AND kappa IS NOT NULL AND kappa >= $min_kappa)
        AND NOT coalesce(flip_rate, 0) > $max_flip_rate AS headline_eligible
FROM rated
ORDER BY comparison;
