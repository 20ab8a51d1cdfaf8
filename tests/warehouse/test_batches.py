"""Batch jobs' rows: appended states read back as each job's latest, with its requests."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from evalwh.warehouse.batches import (
    JobRow,
    job_requests,
    latest_states,
    record_states,
    record_submission,
)
from evalwh.warehouse.connect import write_connection
from evalwh.warehouse.store import Warehouse

T0 = datetime(2026, 12, 6, 8, 0, tzinfo=timezone.utc)


def job(job_id: str, seq: int, state: str, **counts: int) -> JobRow:
    return JobRow("r1", "m", "mock", job_id, seq, state, state, 3, 120, counts, submitted_at=T0)


def test_states_are_appended_and_the_latest_per_job_is_read_back(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    with write_connection(path):
        pass  # migrated
    record_submission(path, job("j1", 0, "running", processing=3), ["h1", "h2", "h3"])
    record_submission(path, job("j2", 0, "running"), ["h4"])
    record_states(path, [job("j1", 1, "ended", succeeded=2, errored=1)])
    store = Warehouse(path)
    latest = latest_states(store, "r1")
    assert [(j.job_id, j.seq, j.state, j.counts) for j in latest] == [
        ("j1", 1, "ended", {"succeeded": 2, "errored": 1}),
        ("j2", 0, "running", {}),
    ]
    assert job_requests(store, "r1") == {"j1": ["h1", "h2", "h3"], "j2": ["h4"]}
    assert latest_states(store, "other") == [] and job_requests(store, "other") == {}
    count = store.sql("SELECT count(*) AS n FROM batches").to_pylist()[0]["n"]
    assert count == 3  # nothing updated in place


def test_a_warehouse_that_does_not_exist_has_no_jobs(tmp_path: Path) -> None:
    store = Warehouse(tmp_path / "none.duckdb")
    assert latest_states(store, "r1") == [] and job_requests(store, "r1") == {}
