-- title: Judge calibration confusion matrix
-- description: Per pairwise comparison, the 3 x 3 confusion matrix of human label (rows) against the judge's verdict (columns) over labelled cases (a label counts once, against the judge's majority verdict over the case's eligible pairs), zeros included.
-- params: run_id
-- A label counts once: the judge's verdict for a labelled (comparison, case) is the most
-- frequent verdict over that case's eligible pairs (its repeats); a tie between the top
-- counts is 'tie'. A repeated label of the same case counts once (its most frequent value).
WITH verdict_counts AS (
    SELECT comparison, case_id, verdict, count(*) AS c
    FROM pairs WHERE run_id = $run_id AND eligible
    GROUP BY comparison, case_id, verdict
),
case_verdicts AS (
    SELECT comparison, case_id,
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
    SELECT h.comparison, h.human, v.judge
    FROM human h JOIN case_verdicts v USING (comparison, case_id)
),
classes AS (SELECT unnest(['baseline', 'candidate', 'tie']) AS k)
SELECT c.comparison, h.k AS human, j.k AS judge,
       count(x.human) AS n
FROM (SELECT DISTINCT comparison FROM joined) c
CROSS JOIN classes h
CROSS JOIN classes j
LEFT JOIN joined x ON x.comparison = c.comparison AND x.human = h.k AND x.judge = j.k
GROUP BY ALL
ORDER BY c.comparison, h.k, j.k;
