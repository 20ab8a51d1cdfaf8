-- evalwh warehouse schema, version 6: who stored a label, and when.
-- Applied once per warehouse file, in one transaction with its row in schema_migrations.
-- Released migrations are never edited: add 0007_....sql instead (a test enforces this).

-- A label stored from the viewer (`evalwh serve`) or `evalwh labels import` names who gave
-- it and when; labels from an eval config's `labels:` leave both NULL.
ALTER TABLE labels ADD COLUMN labelled_by VARCHAR;
ALTER TABLE labels ADD COLUMN labelled_at TIMESTAMPTZ;
