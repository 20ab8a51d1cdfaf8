-- evalwh warehouse schema, version 14: batch mode's jobs (docs/batch.md).
-- Applied once per warehouse file, in one transaction with its row in schema_migrations.
-- Released migrations are never edited: add 0015_....sql instead (a test enforces this).

-- One row per state of a provider batch job a run submitted: the first when it was submitted
-- (recorded before the run waits on it), another each time a poll finds its state or counts
-- changed. Rows are only appended, never updated (a lake's writers never touch each other's
-- rows); a job's state now is its row with the highest seq (sql/batches_latest.sql).
CREATE TABLE batches (
    run_id          VARCHAR NOT NULL,
    model           VARCHAR NOT NULL,      -- the model's id in the config
    provider        VARCHAR NOT NULL,
    job_id          VARCHAR NOT NULL,      -- the provider's id of the job
    seq             INTEGER NOT NULL,      -- this row's place among the job's rows, from 0
    state           VARCHAR NOT NULL,      -- running | ended | cancelling | cancelled | expired | failed
    provider_state  VARCHAR,               -- the provider's own word (in_progress, JOB_STATE_RUNNING, ...)
    requests        INTEGER NOT NULL,      -- requests the job holds
    bytes           BIGINT NOT NULL,       -- bytes of its serialised requests
    succeeded       INTEGER,               -- requests per outcome, as the provider counts them
    errored         INTEGER,
    expired         INTEGER,
    cancelled       INTEGER,
    processing      INTEGER,
    submitted_at    TIMESTAMPTZ NOT NULL,
    ended_at        TIMESTAMPTZ,           -- when a poll first found it ended (any final state)
    polled_at       TIMESTAMPTZ,           -- the poll this row records (NULL: the submission)
    extra           JSON                   -- the provider's ids of files, URLs of results, ...
);

-- Which requests each job holds: their custom ids, the requests' hashes (cases.request_hash),
-- so a resumed run maps a job's results to its cells and submits none of them again.
CREATE TABLE batch_requests (
    run_id          VARCHAR NOT NULL,
    job_id          VARCHAR NOT NULL,
    custom_id       VARCHAR NOT NULL
);
