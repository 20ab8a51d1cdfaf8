-- evalwh warehouse schema, version 5: attached files.
-- Applied once per warehouse file, in one transaction with its row in schema_migrations.
-- Released migrations are never edited: add 0006_....sql instead (a test enforces this).

-- The files a case carried, by name: {"photo": {"sha256": ..., "media_type": ...,
-- "bytes": ...}}, NULL for a case without files. The bytes are in the artifact store
-- beside the warehouse (artifacts/ab/cdef...), once per content across runs.
ALTER TABLE cases ADD COLUMN attachments JSON;
