-- evalwh warehouse schema, version 3: LLM judges, pairwise verdicts, human labels, exec checks.
-- Applied once per warehouse file, in one transaction with its row in schema_migrations.
-- Released migrations are never edited: add 0004_....sql instead (a test enforces this).

-- Judge calls are accounted apart from answers.
ALTER TABLE cases ADD COLUMN judge_cost_usd DOUBLE;
-- An exec check's result sits beside the answer (never cached).
ALTER TABLE cases ADD COLUMN check_passed BOOLEAN;
ALTER TABLE cases ADD COLUMN check_exit_code INTEGER;
ALTER TABLE cases ADD COLUMN check_output VARCHAR;
ALTER TABLE cases ADD COLUMN check_error VARCHAR;

-- A judged criterion: which judge model, its raw score on the judge's scale, what it cost.
ALTER TABLE scores ADD COLUMN judge_model VARCHAR;
ALTER TABLE scores ADD COLUMN raw_score DOUBLE;
ALTER TABLE scores ADD COLUMN cost_usd DOUBLE;

-- Pairwise verdicts: the judge sees both answers in both orders. A side wins only when both
-- orders agree; otherwise the pair is a tie and `flipped` is true.
CREATE TABLE pairs (
    run_id              VARCHAR NOT NULL,
    comparison          VARCHAR NOT NULL,   -- the pairwise entry's name
    case_id             VARCHAR NOT NULL,
    repeat              INTEGER NOT NULL,
    baseline_variant    VARCHAR NOT NULL,
    baseline_model      VARCHAR NOT NULL,
    candidate_variant   VARCHAR NOT NULL,
    candidate_model     VARCHAR NOT NULL,
    judge               VARCHAR NOT NULL,   -- the judge's id
    judge_model         VARCHAR NOT NULL,
    verdict_ab          VARCHAR,            -- baseline shown first: baseline | candidate | tie | invalid
    verdict_ba          VARCHAR,            -- candidate shown first
    verdict             VARCHAR NOT NULL,   -- baseline | candidate | tie (both orders must agree)
    flipped             BOOLEAN NOT NULL,   -- the two orders disagree
    eligible            BOOLEAN NOT NULL,   -- both sides answered and passed the required checks
    excluded_reason     VARCHAR,
    baseline_ok         BOOLEAN NOT NULL,   -- baseline side passed the required criteria / check
    candidate_ok        BOOLEAN NOT NULL,
    rationale_ab        VARCHAR,
    rationale_ba        VARCHAR,
    error               VARCHAR,            -- a judge call failed or gave no usable verdict
    metadata            JSON,               -- the case's metadata, for slices
    cost_usd            DOUBLE,
    created_at          TIMESTAMPTZ NOT NULL
);

-- Human labels shipped with a run's config: pairwise preferences and pointwise labels.
CREATE TABLE labels (
    run_id      VARCHAR NOT NULL,
    kind        VARCHAR NOT NULL,            -- pairwise | pointwise
    comparison  VARCHAR,                     -- pairwise: the comparison's name
    case_id     VARCHAR NOT NULL,
    prefer      VARCHAR,                     -- pairwise: baseline | candidate | tie
    label       JSON,                        -- pointwise: the case's human_label
    note        VARCHAR
);
