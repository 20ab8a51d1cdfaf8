-- title: Cache lookup
-- description: Cached answers for the request hashes of a planned run (the hashes arrive as a registered Arrow table named planned_hashes).
-- params:
SELECT c.request_hash, c.output, c.input_tokens, c.output_tokens, c.latency_ms, c.wire
FROM response_cache c
SEMI JOIN planned_hashes p ON p.request_hash = c.request_hash;
