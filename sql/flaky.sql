-- title: Flaky cases
-- description: Cases of a run whose repeats disagree on pass (some passed, some failed), per variant x model: the number of repeats, passes, the pass rate, and the score's mean, sample sd, min and max across repeats; the least stable first.
-- params: run_id
SELECT
    variant,
    model,
    case_id,
    count(*)                                AS n,
    count(*) FILTER (WHERE passed)          AS n_passed,
    count(*) FILTER (WHERE passed) / count(*) AS pass_rate,
    count(*) FILTER (WHERE error IS NOT NULL) AS n_errors,
    avg(score)                              AS mean_score,
    stddev_samp(score)                      AS score_sd,
    min(score)                              AS min_score,
    max(score)                              AS max_score,
    list(passed ORDER BY repeat)            AS passed_by_repeat
FROM cases
WHERE run_key = run_key($run_id) AND run_id = $run_id
GROUP BY variant, model, case_id
HAVING bool_or(passed) AND NOT bool_and(passed)
ORDER BY abs(0.5 - count(*) FILTER (WHERE passed) / count(*)), score_sd DESC NULLS LAST, case_id, variant, model;
