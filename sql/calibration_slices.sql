-- title: Judge calibration by slice
-- description: Per pairwise comparison and value of one case metadata key: labelled cases (a label counts once, against the judge's majority verdict over the case's eligible pairs), raw agreement and Cohen's kappa, so a judge that is good overall but poor on a slice shows.
-- params: run_id, key
-- A label counts once: the judge's verdict for a labelled (comparison, case) is the most
-- frequent verdict over that case's eligible pairs (its repeats); a tie between the top
-- counts is 'tie'. A repeated label of the same case counts once (its most frequent value).
WITH verdict_counts AS (
    SELECT comparison, case_id, verdict, count(*) AS c,
           any_value(coalesce(json_extract_string(metadata, '$.' || $key), '(none)')) AS slice
    FROM pairs WHERE run_id = $run_id AND eligible
    GROUP BY comparison, case_id, verdict
),
case_verdicts AS (
    SELECT comparison, case_id,
           any_value(slice) AS slice,
           CASE WHEN count(*) FILTER (WHERE c = top) > 1 THEN 'tie'
                ELSE any_value(verdict) FILTER (WHERE c = top) END AS judge
    FROM (SELECT *, max(c) OVER (PARTITION BY comparison, case_id) AS top FROM verdict_counts)
    GROUP BY comparison, case_id
),
human AS (
    SELECT comparison, case_id, mode(prefer) AS human
    FROM labels WHERE run_id = $run_id AND kind = 'pairwise'
    GROUP BY comparison, case_id
),
joined AS (
    SELECT h.comparison, v.slice, h.human, v.judge
    FROM human h JOIN case_verdicts v USING (comparison, case_id)
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
