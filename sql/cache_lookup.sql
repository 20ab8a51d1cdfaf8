-- title: Cache lookup
-- description: Cached answers for the request hashes of a planned run (the hashes arrive as a registered Arrow table named planned_hashes), oldest first, so that where a hash has several answers (a DuckLake appends the answers of a `--no-cache` run beside the old ones) the newest, read last, wins.
-- params:
SELECT c.request_hash, c.output, c.input_tokens, c.output_tokens, c.latency_ms, c.wire
FROM response_cache c
SEMI JOIN planned_hashes p ON p.request_hash = c.request_hash
ORDER BY c.created_at;
