-- title: Criteria summary
-- description: One row per criterion of a run: n scored, pass rate with its 95% Wilson interval, mean score, scorer errors, and for a schema asked of the model how it was asked (mode: native, prompted, or both, from details.mode).
-- params: run_id
WITH c AS (
    SELECT
        criterion,
        any_value(scorer)                          AS scorer,
        any_value(weight)                          AS weight,
        bool_and(required)                         AS required,
        count(*)                                   AS n,
        count(*) FILTER (WHERE passed)             AS n_passed,
        count(*) FILTER (WHERE error IS NOT NULL)  AS n_errors,
        avg(score)                                 AS mean_score,
        string_agg(DISTINCT details ->> 'mode', ', ' ORDER BY details ->> 'mode') AS mode,
        1.959963984540054                          AS z
    FROM scores
    WHERE run_id = $run_id
    GROUP BY criterion
)
SELECT
    criterion, scorer, weight, required, n, n_passed, n_errors,
    n_passed / n AS pass_rate,
    (n_passed / n + z * z / (2 * n) - z * sqrt((n_passed / n) * (1 - n_passed / n) / n + z * z / (4 * n * n)))
        / (1 + z * z / n) AS pass_rate_lo,
    (n_passed / n + z * z / (2 * n) + z * sqrt((n_passed / n) * (1 - n_passed / n) / n + z * z / (4 * n * n)))
        / (1 + z * z / n) AS pass_rate_hi,
    mean_score, mode
FROM c
ORDER BY criterion;
