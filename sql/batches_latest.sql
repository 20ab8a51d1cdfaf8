-- title: A run's batch jobs
-- description: Each provider batch job of run $run_id as it stands now: its latest state row (highest seq), oldest job first.
-- params: run_id
SELECT run_id, model, provider, job_id, seq, state, provider_state, requests, bytes, succeeded,
       errored, expired, cancelled, processing, submitted_at, ended_at, polled_at, extra
FROM batches
WHERE run_id = $run_id
QUALIFY row_number() OVER (PARTITION BY job_id ORDER BY seq DESC) = 1
ORDER BY submitted_at, job_id;
