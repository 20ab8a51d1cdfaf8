-- evalwh warehouse schema, version 4: run leases.
-- Applied once per warehouse file, in one transaction with its row in schema_migrations.
-- Released migrations are never edited: add 0005_....sql instead (a test enforces this).

-- The process that writes a run holds its lease: host, pid and a random token, renewed with
-- heartbeat_at. A resume takes the lease in the same transaction that reopens the run, so two
-- processes never write one run; every flush checks the token, so a process whose run was
-- taken over (`evalwh run --resume RUN --force`) stops instead of writing beside the new owner.
ALTER TABLE runs ADD COLUMN lease_token VARCHAR;
