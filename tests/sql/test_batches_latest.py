"""sql/batches_latest.sql and sql/batch_requests.sql: a run's jobs at their highest seq."""

from __future__ import annotations

from pathlib import Path

from evalwh.warehouse import queries
from tests.sql.conftest import _warehouse


def test_each_job_is_its_row_with_the_highest_seq_oldest_job_first(tmp_path: Path) -> None:
    con = _warehouse(tmp_path)
    rows = [  # (run, job, seq, state, submitted minute)
        ("r", "b", 0, "running", 2),
        ("r", "a", 0, "running", 1),
        ("r", "a", 2, "ended", 1),
        ("r", "a", 1, "running", 1),
        ("s", "c", 5, "failed", 0),
    ]
    for run, job, seq, state, minute in rows:
        con.execute(
            "INSERT INTO batches (run_id, model, provider, job_id, seq, state, requests, bytes, "
            "submitted_at) VALUES (?, 'm', 'mock', ?, ?, ?, 1, 1, "
            "TIMESTAMPTZ '2026-12-06 08:00:00+00' + to_minutes(?))",
            [run, job, seq, state, minute],
        )
    got = queries.run_query(con, "batches_latest", run_id="r").to_pylist()
    assert [(r["job_id"], r["seq"], r["state"]) for r in got] == [
        ("a", 2, "ended"),
        ("b", 0, "running"),
    ]
    con.execute(
        "INSERT INTO batch_requests VALUES ('r', 'a', 'h2'), ('r', 'a', 'h1'), ('s', 'c', 'x')"
    )
    ids = queries.run_query(con, "batch_requests", run_id="r").to_pylist()
    assert ids == [{"job_id": "a", "custom_id": "h1"}, {"job_id": "a", "custom_id": "h2"}]
