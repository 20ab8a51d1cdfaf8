-- title: Metadata keys of runs
-- description: The case metadata keys (the slicing dimensions) found in the given runs ($run_ids, a list), with the number of distinct values and of case rows that carry each.
-- params: run_ids
WITH distinct_metadata AS (   -- a few distinct metadata objects stand for many case rows
    SELECT metadata, count(*) AS n
    FROM cases
    WHERE run_id IN (SELECT unnest($run_ids::VARCHAR[])) AND metadata IS NOT NULL
    GROUP BY metadata
)
SELECT key, count(DISTINCT metadata ->> key) AS n_values, sum(n)::BIGINT AS n
FROM (
    SELECT metadata, n, unnest(json_keys(metadata)) AS key
    FROM distinct_metadata
)
GROUP BY key
ORDER BY key;
