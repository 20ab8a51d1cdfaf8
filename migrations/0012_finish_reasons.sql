-- evalwh warehouse schema, version 12: why an answer ended, and its token kinds.
-- Applied once per warehouse file, in one transaction with its row in schema_migrations.
-- Released migrations are never edited: add 0013_....sql instead (a test enforces this).

-- finish_reason: stop, length, tool_calls, refusal, content_filter or error (the provider's own
-- value stays in cases.extra: stop_reason, finish_reason, block_reason). A truncated answer, a
-- refusal and a safety block are failed cells (error_kind truncated / refusal /
-- content_filter); NULL where the provider said nothing (mock, command, imports, old rows).
ALTER TABLE cases ADD COLUMN finish_reason VARCHAR;
ALTER TABLE cases ADD COLUMN refusal VARCHAR;            -- the model's refusal, apart from output
ALTER TABLE cases ADD COLUMN tool_calls JSON;            -- [{"name": ..., "arguments": ...}]
ALTER TABLE cases ADD COLUMN reasoning VARCHAR;          -- thinking / reasoning text; never scored
-- of output_tokens (reasoning is billed as output) and of input_tokens (every prompt token)
ALTER TABLE cases ADD COLUMN reasoning_tokens BIGINT;
ALTER TABLE cases ADD COLUMN cache_read_tokens BIGINT;
ALTER TABLE cases ADD COLUMN cache_write_tokens BIGINT;

-- the same for a cached answer (a JSON object of the fields above and the raw values), so an
-- answer from the cache is scored as the one first received
ALTER TABLE response_cache ADD COLUMN wire JSON;
