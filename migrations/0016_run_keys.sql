-- evalwh warehouse schema, version 16: an integer run key on the big tables (docs/storage.md).
-- Applied once per warehouse file, in one transaction with its row in schema_migrations.
-- Released migrations are never edited: add 0017_....sql instead (a test enforces this).

-- run_key: the second the run started, as Unix epoch seconds read from its run_id
-- (2026-11-29T153012.123-a1b2 -> 1795966212), or 0 for a run_id that does not start with
-- such a time. DuckDB keeps only the first 8 bytes of a string in a row group's min/max, and
-- every run id of a year shares its first 8 ("2026-11-"), so `WHERE run_id = ...` reads the
-- run_id of every row of the table; `WHERE run_key = run_key(...) AND run_id = ...` lets the
-- zone maps skip every row group holding no row of that second (rows are appended in run
-- order). Several runs may share a key: the run_id filter stays. Written with every row
-- (evalwh.warehouse.keys.insert_rows; the macro run_key in sql/macros/run_key.sql is this
-- expression), filled here for the rows already stored.
ALTER TABLE cases ADD COLUMN run_key BIGINT;
UPDATE cases SET run_key = coalesce(epoch(try_strptime(left(run_id, 17), '%Y-%m-%dT%H%M%S'))::BIGINT, 0);
ALTER TABLE scores ADD COLUMN run_key BIGINT;
UPDATE scores SET run_key = coalesce(epoch(try_strptime(left(run_id, 17), '%Y-%m-%dT%H%M%S'))::BIGINT, 0);
