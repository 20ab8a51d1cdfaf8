-- evalwh warehouse schema, version 2: named baselines.
-- Applied once per warehouse file, in one transaction with its row in schema_migrations.
-- Released migrations are never edited: add 0003_....sql instead (a test enforces this).

-- A baseline is a name pinned to a run: `evalwh baseline set RUN [--name NAME]`. The name
-- (default `baseline`) then works wherever a run reference does, and the regression
-- thresholds of `evalwh run` compare against it.
CREATE TABLE baselines (
    name    VARCHAR PRIMARY KEY,
    run_id  VARCHAR NOT NULL,
    set_at  TIMESTAMPTZ NOT NULL
);
