-- evalwh warehouse schema, version 13: a tool loop's transcript (docs/tools.md).
-- Applied once per warehouse file, in one transaction with its row in schema_migrations.
-- Released migrations are never edited: add 0014_....sql instead (a test enforces this).

-- One row per step of a cell that ran as a model-tool loop (a variant with `tools:`): each
-- model answer (role assistant) and each tool call's result (role tool). The cell's final
-- answer stays in `cases` (its tokens, latency and cost there are the sums over its turns);
-- a cell of a single request has no rows here, and a no-look run stores none.
CREATE TABLE turns (
    run_id          VARCHAR NOT NULL,
    variant         VARCHAR NOT NULL,
    model           VARCHAR NOT NULL,
    case_id         VARCHAR NOT NULL,
    repeat          INTEGER NOT NULL,
    seq             INTEGER NOT NULL,      -- the step's place in the cell, from 0
    turn            INTEGER NOT NULL,      -- the model request it belongs to, from 0
    role            VARCHAR NOT NULL,      -- assistant | tool
    content         VARCHAR,               -- the answer's text; the text the tool sent back
    tool_name       VARCHAR,               -- tool: the tool called
    call_id         VARCHAR,               -- tool: the call's id (as the provider gave it)
    arguments       JSON,                  -- assistant: its calls [{id, name, arguments}]; tool: the arguments
    result          JSON,                  -- tool: what it returned (NULL on error)
    error           VARCHAR,               -- tool: unknown tool, invalid arguments, or its failure
    args_valid      BOOLEAN,               -- tool: the arguments fit the tool's schema
    latency_ms      DOUBLE,                -- the request's, or the tool call's, own time
    input_tokens    BIGINT,                -- assistant: the request's tokens and cost
    output_tokens   BIGINT,
    cost_usd        DOUBLE,
    cached          BOOLEAN,               -- assistant: served from the response cache
    finish_reason   VARCHAR,               -- assistant: why the answer ended
    created_at      TIMESTAMPTZ NOT NULL
);
