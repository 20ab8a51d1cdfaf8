-- evalwh warehouse schema, version 9: the response cache without its primary key.
-- Applied once per warehouse file, in one transaction with its row in schema_migrations.
-- Released migrations are never edited: add 0010_....sql instead (a test enforces this).

-- DuckDB loads and rewrites the whole ART index of a key whenever a transaction inserts into
-- its table, so every flush of a run cost memory and time that grew with the cache (a million
-- answers: over 100 MB and ~0.7 s a flush; benchmarks/README.md, "flat memory"). The writer
-- keeps one row per request_hash itself (evalwh/warehouse/writer.py): new answers go in through
-- an anti-join on the hash, a refresh (--no-cache) deletes the old row first. A DuckLake never
-- had the key; there this rebuilds the same table. Same columns, same order.
ALTER TABLE response_cache RENAME TO response_cache_keyed;
CREATE TABLE response_cache (
    request_hash    VARCHAR NOT NULL,
    provider        VARCHAR NOT NULL,
    model           VARCHAR NOT NULL,
    output          VARCHAR NOT NULL,
    input_tokens    BIGINT,
    output_tokens   BIGINT,
    latency_ms      DOUBLE,
    created_at      TIMESTAMPTZ NOT NULL,
    run_id          VARCHAR                -- the run that first fetched it
);
INSERT INTO response_cache SELECT * FROM response_cache_keyed;
DROP TABLE response_cache_keyed;
