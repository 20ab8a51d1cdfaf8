-- title: Judge calibration confusion matrix
-- description: Per pairwise comparison, the 3 x 3 confusion matrix of human label (rows) against the judge's verdict (columns) over labelled, judged pairs, zeros included.
-- params: run_id
WITH joined AS (
    SELECT l.comparison, l.prefer AS human, p.verdict AS judge
    FROM labels l
    JOIN pairs p ON p.run_id = l.run_id AND p.comparison = l.comparison AND p.case_id = l.case_id
    WHERE l.run_id = $run_id AND l.kind = 'pairwise' AND p.eligible
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
