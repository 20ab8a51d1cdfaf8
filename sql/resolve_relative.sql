-- title: Resolve a relative run reference
-- description: The run $offset places before the newest run, among the runs of the newest run's suite (newest first): 'latest~N' and 'previous' (offset 1). No row when the suite has fewer runs.
-- params: offset
WITH newest AS (
    SELECT suite FROM runs ORDER BY started_at DESC, run_id DESC LIMIT 1
)
SELECT run_id, suite, started_at
FROM runs
WHERE suite = (SELECT suite FROM newest)
ORDER BY started_at DESC, run_id DESC
LIMIT 1 OFFSET $offset;
