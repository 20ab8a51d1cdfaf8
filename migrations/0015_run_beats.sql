-- evalwh warehouse schema, version 15: a run's heartbeats as appended rows (docs/scale-out.md).
-- Applied once per warehouse file, in one transaction with its row in schema_migrations.
-- Released migrations are never edited: add 0016_....sql instead (a test enforces this).

-- One row per flush of a running run's writer (and per heartbeat of an idle one): when it
-- beat, under which lease, and how far it had got. A writer never updates a row while its run
-- runs: on a DuckLake an UPDATE is a delete, which conflicts with every other writer's insert
-- into the same table, so heartbeats that updated `runs` made concurrent writers retry each
-- other's commits. Readers take the newest beat per run (`runs.heartbeat_at` is still set
-- when a run starts and when it concludes); the rows are small and DuckLake keeps a
-- transaction's few rows in its catalog, without a data file.
CREATE TABLE run_beats (
    run_id          VARCHAR NOT NULL,
    beat_at         TIMESTAMPTZ NOT NULL,
    lease_token     VARCHAR,               -- the lease the writer held (NULL: a shard's writer)
    host            VARCHAR,
    pid             INTEGER,
    rows_written    BIGINT,                -- case rows this writer had committed, this batch included
    retries         INTEGER                -- conflicting commits this writer had retried so far
);
