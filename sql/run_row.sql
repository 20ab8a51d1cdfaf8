-- title: Run row
-- description: A run's row of `runs`, its heartbeat the newest of the row's (set when the run starts and when it concludes) and of its writers' appended beats in `run_beats` (migration 0015).
-- params: run_id
SELECT r.* REPLACE (greatest(r.heartbeat_at, b.beat_at) AS heartbeat_at)
FROM runs r
LEFT JOIN (
    SELECT run_id, max(beat_at) AS beat_at
    FROM run_beats
    WHERE run_id = $run_id
    GROUP BY run_id
) b ON b.run_id = r.run_id
WHERE r.run_id = $run_id;
