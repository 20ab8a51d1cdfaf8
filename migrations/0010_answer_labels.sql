-- evalwh warehouse schema, version 10: a pointwise label of one answer.
-- Applied once per warehouse file, in one transaction with its row in schema_migrations.
-- Released migrations are never edited: add 0011_....sql instead (a test enforces this).

-- A pointwise label may grade one answer (variant x model x case x repeat) rather than the
-- case: the judge's verdict on that answer is what it is compared with. The three columns are
-- NULL for a pairwise label and for a per-case label (a `labels:` entry without them, or a
-- case's `human_label`), which keeps its meaning: compared with the judge's majority verdict
-- over the case's judged answers.
ALTER TABLE labels ADD COLUMN variant VARCHAR;
ALTER TABLE labels ADD COLUMN model VARCHAR;
ALTER TABLE labels ADD COLUMN repeat INTEGER;
