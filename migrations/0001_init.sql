-- evalwh warehouse schema, version 1.
-- Applied once per warehouse file, in one transaction with its row in schema_migrations.
-- Released migrations are never edited: add 0002_....sql instead (a test enforces this).

CREATE TABLE runs (
    run_id          VARCHAR PRIMARY KEY,   -- sortable by time: 2026-11-29T153012-a1b2
    label           VARCHAR,
    suite           VARCHAR NOT NULL,      -- the config's name
    status          VARCHAR NOT NULL,      -- running | completed | interrupted | failed
    config_path     VARCHAR,
    config_hash     VARCHAR NOT NULL,
    dataset_hash    VARCHAR NOT NULL,
    git_commit      VARCHAR,
    config_snapshot JSON,                  -- the config as run (never holds secrets)
    filters         JSON,                  -- --model/--variant/--case selections
    n_planned       INTEGER NOT NULL,      -- cells the run set out to execute
    started_at      TIMESTAMPTZ NOT NULL,
    finished_at     TIMESTAMPTZ,
    heartbeat_at    TIMESTAMPTZ,           -- last flush; a stale heartbeat means the writer died
    host            VARCHAR,
    pid             INTEGER,
    totals          JSON,                  -- written when the run ends
    evalwh_version  VARCHAR NOT NULL
);

-- One row per run x variant x model x case x repeat: the answer and what it cost.
CREATE TABLE cases (
    run_id          VARCHAR NOT NULL,
    variant         VARCHAR NOT NULL,
    model           VARCHAR NOT NULL,
    case_id         VARCHAR NOT NULL,
    repeat          INTEGER NOT NULL,
    vars            JSON,
    expected        JSON,
    metadata        JSON,                  -- the slicing keys
    human_label     JSON,
    messages        JSON,                  -- the rendered request messages
    output          VARCHAR,
    error           VARCHAR,               -- NULL when the request succeeded
    error_kind      VARCHAR,               -- provider | timeout | scoring ...
    latency_ms      DOUBLE,
    input_tokens    BIGINT,
    output_tokens   BIGINT,
    cost_usd        DOUBLE,
    cached          BOOLEAN NOT NULL,
    request_hash    VARCHAR NOT NULL,
    attempts        INTEGER NOT NULL,
    score           DOUBLE,                -- weighted score of the scorecard, 0 on error
    passed          BOOLEAN NOT NULL,      -- every required criterion passed, no error
    created_at      TIMESTAMPTZ NOT NULL
);

-- One row per scored case row x criterion.
CREATE TABLE scores (
    run_id          VARCHAR NOT NULL,
    variant         VARCHAR NOT NULL,
    model           VARCHAR NOT NULL,
    case_id         VARCHAR NOT NULL,
    repeat          INTEGER NOT NULL,
    criterion       VARCHAR NOT NULL,
    scorer          VARCHAR NOT NULL,
    score           DOUBLE NOT NULL,       -- in [0, 1]
    passed          BOOLEAN NOT NULL,
    weight          DOUBLE NOT NULL,
    required        BOOLEAN NOT NULL,
    details         JSON,
    rationale       VARCHAR,
    error           VARCHAR                -- the scorer itself failed (counts as a fail)
);

-- The response cache: a successful answer per request hash (errors are never cached).
-- The hash covers provider, model, every param, the rendered messages and the repeat index.
CREATE TABLE response_cache (
    request_hash    VARCHAR PRIMARY KEY,
    provider        VARCHAR NOT NULL,
    model           VARCHAR NOT NULL,
    output          VARCHAR NOT NULL,
    input_tokens    BIGINT,
    output_tokens   BIGINT,
    latency_ms      DOUBLE,
    created_at      TIMESTAMPTZ NOT NULL,
    run_id          VARCHAR                -- the run that first fetched it
);

-- Stable surface for analysts: one row per case row with its run's label and suite.
CREATE VIEW case_results AS
SELECT r.suite, r.label, r.status AS run_status, r.started_at AS run_started_at, c.*
FROM cases c JOIN runs r USING (run_id);

-- Stable surface for analysts: per run x variant x model aggregates.
CREATE VIEW cell_summary AS
SELECT
    run_id, variant, model,
    count(*)                                  AS n,
    count(*) FILTER (WHERE passed)            AS n_passed,
    count(*) FILTER (WHERE error IS NOT NULL) AS n_errors,
    avg(passed::INTEGER)                      AS pass_rate,
    avg(score)                                AS mean_score,
    quantile_cont(latency_ms, 0.5)            AS p50_latency_ms,
    quantile_cont(latency_ms, 0.95)           AS p95_latency_ms,
    sum(cost_usd)                             AS cost_usd,
    sum(input_tokens)                         AS input_tokens,
    sum(output_tokens)                        AS output_tokens
FROM cases
GROUP BY run_id, variant, model;
