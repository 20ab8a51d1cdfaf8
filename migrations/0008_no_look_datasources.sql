-- evalwh warehouse schema, version 8: no-look runs and datasources.
-- Applied once per warehouse file, in one transaction with its row in schema_migrations.
-- Released migrations are never edited: add 0009_....sql instead (a test enforces this).

-- no_look: the run kept no case data (docs/no-look.md): its cases rows hold ids, metadata,
-- scores, pass/fail, tokens, cost, latency and error classes only; readers decline outputs.
ALTER TABLE runs ADD COLUMN no_look BOOLEAN DEFAULT false;

-- datasources: what a run read page by page (docs/datasources.md), one object per source:
-- name, params, where, rows_read, pages, complete, digest. NULL for file and inline runs.
ALTER TABLE runs ADD COLUMN datasources JSON;
