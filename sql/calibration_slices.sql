-- title: Judge calibration by slice
-- description: Per pairwise comparison and value of one case metadata key: labelled pairs, raw agreement and Cohen's kappa, so a judge that is good overall but poor on a slice shows.
-- params: run_id, key
WITH joined AS (
    SELECT l.comparison, coalesce(json_extract_string(p.metadata, '$.' || $key), '(none)') AS slice,
           l.prefer AS human, p.verdict AS judge
    FROM labels l
    JOIN pairs p ON p.run_id = l.run_id AND p.comparison = l.comparison AND p.case_id = l.case_id
    WHERE l.run_id = $run_id AND l.kind = 'pairwise' AND p.eligible
),
counts AS (SELECT comparison, slice, count(*) AS n, count(*) FILTER (WHERE human = judge) AS agree FROM joined GROUP BY ALL),
hm AS (SELECT comparison, slice, human AS k, count(*) AS c FROM joined GROUP BY ALL),
jm AS (SELECT comparison, slice, judge AS k, count(*) AS c FROM joined GROUP BY ALL),
chance AS (SELECT comparison, slice, sum(hm.c * jm.c) AS s FROM hm JOIN jm USING (comparison, slice, k) GROUP BY ALL)
SELECT comparison, slice, n,
       agree / n AS agreement,
       CASE WHEN coalesce(s, 0) / (n * n) < 1
            THEN (agree / n - coalesce(s, 0) / (n * n)) / (1 - coalesce(s, 0) / (n * n)) END AS kappa
FROM counts LEFT JOIN chance USING (comparison, slice)
ORDER BY comparison, slice;
