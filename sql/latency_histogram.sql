-- title: Latency histogram
-- description: The latency distribution of a run per variant x model: $bins equal-width bins from 0 to the run's 99th-percentile latency (slower answers count in the last bin), with each bin's bounds in ms and its number of answers; failed requests left out.
-- params: run_id, bins
WITH c AS (
    SELECT variant, model, latency_ms
    FROM cases
    WHERE run_key = run_key($run_id) AND run_id = $run_id AND latency_ms IS NOT NULL AND error IS NULL
),
top AS (
    SELECT greatest(coalesce(quantile_cont(latency_ms, 0.99), 0), 1e-6) AS hi FROM c
),
binned AS (
    SELECT variant, model, least(floor(latency_ms / hi * $bins), $bins - 1)::INTEGER AS bin, hi
    FROM c, top
)
SELECT
    variant, model, bin,
    any_value(hi) / $bins * bin       AS lo_ms,
    any_value(hi) / $bins * (bin + 1) AS hi_ms,
    count(*)                          AS n
FROM binned
GROUP BY variant, model, bin
ORDER BY variant, model, bin;
