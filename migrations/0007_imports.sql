-- evalwh warehouse schema, version 7: runs imported from other tools (promptfoo, inspect_ai).
-- Applied once per warehouse file, in one transaction with its row in schema_migrations.
-- Released migrations are never edited: add 0008_....sql instead (a test enforces this).

-- An imported run names the tool and version that made it, and the content hash of the file
-- it came from: importing the same file again finds the hash and adds nothing.
ALTER TABLE runs ADD COLUMN source_tool VARCHAR;      -- NULL for runs made by evalwh itself
ALTER TABLE runs ADD COLUMN source_version VARCHAR;
ALTER TABLE runs ADD COLUMN source_hash VARCHAR;      -- sha256 of the imported file(s)
ALTER TABLE runs ADD COLUMN source_extra JSON;        -- the run-level fields evalwh has no column for
-- A case row's fields from the other tool that have no column here, kept rather than dropped.
ALTER TABLE cases ADD COLUMN extra JSON;
