-- evalwh warehouse schema, version 13: the time a request waited, apart from its latency.
-- Applied once per warehouse file, in one transaction with its row in schema_migrations.
-- Released migrations are never edited: add 0014_....sql instead (a test enforces this).

-- latency_ms is the kept attempt's own time, from sending the request to the last byte of
-- its answer. queued_ms is what the call waited before its attempts were sent: a model's
-- rate pace, a concurrency slot, a Retry-After pause, the back-offs between attempts. NULL
-- when no request was made (a cached answer, a prompt that did not render) and in rows
-- written before this version.
ALTER TABLE cases ADD COLUMN queued_ms DOUBLE;
