-- title: Cache of one model
-- description: Every cached reply of one provider model (judge requests are loaded this way: their hashes are only known once the answers exist), oldest first: where a hash has several (a DuckLake appends a `--no-cache` run's answers beside the old ones) the newest, read last, wins.
-- params: provider, model
SELECT request_hash, output, input_tokens, output_tokens, latency_ms, wire
FROM response_cache
WHERE provider = $provider AND model = $model
ORDER BY created_at;
