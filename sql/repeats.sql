-- title: Repeat statistics
-- description: For a run sampled several times per case (repeat 0..N-1): per variant x model (and overall: variant and model NULL) and k = 1..max repeats, the unbiased pass@k (Chen et al. 2021; 1 - C(n-c, k) / C(n, k)) and pass^k (tau-bench; C(c, k) / C(n, k)) averaged over the cases with at least k samples (n_cases), the number of flaky cases (repeats disagree on pass) and the mean per-case spread (sample sd of the score across repeats).
-- params: run_id
WITH per_case AS (
    SELECT
        variant, model, case_id,
        count(*)                                        AS n,
        count(*) FILTER (WHERE passed)                  AS c,
        stddev_samp(score)                              AS score_sd
    FROM cases
    WHERE run_key = run_key($run_id) AND run_id = $run_id
    GROUP BY variant, model, case_id
),
ks AS (
    SELECT unnest(range(1, max(n) + 1)) AS k FROM per_case
),
-- C(x, k) / C(n, k) = x! (n-k)! / ((x-k)! n!) as exp(lgamma) (DuckDB has no binomial); 0 when x < k.
estimates AS (
    SELECT
        p.variant, p.model, p.case_id, ks.k, p.n, p.c, p.score_sd,
        CASE WHEN p.n - p.c < ks.k THEN 1.0
             ELSE 1.0 - exp(lgamma(p.n - p.c + 1) - lgamma(p.n - p.c - ks.k + 1)
                            - lgamma(p.n + 1) + lgamma(p.n - ks.k + 1))
        END AS pass_at_k,
        CASE WHEN p.c < ks.k THEN 0.0
             ELSE exp(lgamma(p.c + 1) - lgamma(p.c - ks.k + 1)
                      - lgamma(p.n + 1) + lgamma(p.n - ks.k + 1))
        END AS pass_hat_k
    FROM per_case p JOIN ks ON ks.k <= p.n
)
SELECT
    variant,
    model,
    k,
    count(*)                                            AS n_cases,
    sum(n)::BIGINT                                      AS n_samples,
    min(n)                                              AS min_repeats,
    max(n)                                              AS max_repeats,
    avg(pass_at_k)                                      AS pass_at_k,
    avg(pass_hat_k)                                     AS pass_hat_k,
    count(*) FILTER (WHERE c > 0 AND c < n)             AS n_flaky,
    avg(score_sd)                                       AS mean_score_sd
FROM estimates
GROUP BY GROUPING SETS ((variant, model, k), (k))
ORDER BY variant NULLS FIRST, model NULLS FIRST, k;
