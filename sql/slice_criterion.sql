-- title: A criterion per slice
-- description: One criterion ($criterion) of a run cut by one case metadata key ($key; NULL: the whole run as one slice '(all)'; a missing key reads '(none)'): n scored answers, the criterion's pass rate and mean score, worst first.
-- params: run_id, key, criterion
SELECT
    CASE WHEN $key IS NULL THEN '(all)' ELSE coalesce(c.metadata ->> $key, '(none)') END AS slice,
    count(*)                     AS n,
    avg(s.passed::INTEGER)       AS pass_rate,
    avg(s.score)                 AS mean_score
FROM scores s
JOIN cases c USING (run_id, run_key, variant, model, case_id, repeat)
WHERE s.run_key = run_key($run_id) AND s.run_id = $run_id AND s.criterion = $criterion
GROUP BY 1
ORDER BY pass_rate, slice;
