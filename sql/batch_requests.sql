-- title: A run's batched requests
-- description: The custom ids (request hashes) each batch job of run $run_id holds.
-- params: run_id
SELECT job_id, custom_id
FROM batch_requests
WHERE run_id = $run_id
ORDER BY job_id, custom_id;
