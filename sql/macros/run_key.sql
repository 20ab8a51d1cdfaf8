-- The integer key of a run (migration 0016): Unix epoch seconds of the time its run_id starts
-- with (2026-11-29T153012.123-a1b2 -> 1795966212), 0 for a run_id without one. cases and scores
-- hold it per row (run_key); a query on one run filters `run_key = run_key($run_id) AND
-- run_id = $run_id`, so that DuckDB's zone maps skip the row groups of other runs (a string's
-- min/max keeps only its first 8 bytes, which all run ids of a month share).
CREATE OR REPLACE TEMP MACRO run_key(r) AS
    coalesce(epoch(try_strptime(left(r, 17), '%Y-%m-%dT%H%M%S'))::BIGINT, 0);
