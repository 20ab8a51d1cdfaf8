-- title: Metadata keys of runs
-- description: The case metadata keys (the slicing dimensions) found in the given runs ($run_ids, a list), with the number of distinct values and of case rows that carry each.
-- params: run_ids
SELECT key, count(DISTINCT metadata ->> key) AS n_values, count(*) AS n
FROM (
    SELECT metadata, unnest(json_keys(metadata)) AS key
    FROM cases
    WHERE run_id IN (SELECT unnest($run_ids::VARCHAR[])) AND metadata IS NOT NULL
)
GROUP BY key
ORDER BY key;
