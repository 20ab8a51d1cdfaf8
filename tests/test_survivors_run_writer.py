"""The run writer (evalwh.warehouse.writer.RunWriter), called directly on a real warehouse
file: when a batch is due, what a flush writes (and replaces, on a retry of errors), an empty
flush, a lease another process took, the response cache in its own file, the debug pause, and
the label of each write.

Written from mutants that survived the mutation run (docs/testing.md). Whole runs are in
test_engine.py, test_reliability.py and test_resume.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest

from evalwh.config.model import Case
from evalwh.engine.records import RowSink
from evalwh.engine.runner import CachedAnswer
from evalwh.warehouse import writer
from evalwh.warehouse.store import Warehouse
from evalwh.warehouse.writer import LeaseLostError, RunWriter
from tests.test_survivors_refs_labels import run_row, write_labels
from tests.test_survivors_row_sink import MODEL, result


@pytest.fixture
def path(tmp_path: Path) -> Path:
    where = tmp_path / "w.duckdb"
    Warehouse(where).create_run(run_row(lease_token="tok"))
    return where


def rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def flush_one(run_writer: RunWriter, output: str, case_id: str = "c1") -> None:
    cell = result(Case(id=case_id))
    cell.output = output
    RowSink(run_writer, "r-1")(cell)
    run_writer.flush(run_writer.take_batch())


def test_a_batch_is_due_when_full_when_old_or_when_the_heartbeat_is(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [1000.0]
    monkeypatch.setattr(writer.time, "monotonic", lambda: clock[0])
    run_writer = RunWriter(path, "r-1", batch_size=3, flush_interval_s=1.0, heartbeat_s=30.0)
    row = [None] * len(writer.CASE_COLUMNS)
    assert run_writer.due() is False
    clock[0] = 1001.0
    assert run_writer.due() is False  # old enough, but nothing to write
    run_writer.add_case(row)
    clock[0] = 1000.5
    assert run_writer.due() is False  # one row, not yet a second old
    clock[0] = 1001.0
    assert run_writer.due() is True
    clock[0] = 1000.0
    run_writer.add_case(row)
    assert run_writer.due() is False
    run_writer.add_case(row)
    assert run_writer.due() is True  # a full batch, at once
    run_writer.take_batch()
    clock[0] = 1029.9
    assert run_writer.due() is False
    clock[0] = 1030.0
    assert run_writer.due() is True  # nothing to write, but the heartbeat is due


def test_a_flush_appends_and_a_retry_of_errors_replaces_the_cells_rows(path: Path) -> None:
    first = RunWriter(path, "r-1", token="tok")
    flush_one(first, "old")
    flush_one(first, "other", "c2")
    assert (first.rows_written, first.flushes) == (2, 2)
    retry = RunWriter(path, "r-1", token="tok", replace=True)
    flush_one(retry, "new")
    assert rows(path, "SELECT case_id, output FROM cases ORDER BY case_id") == [
        ("c1", "new"),
        ("c2", "other"),
    ]
    assert rows(path, "SELECT case_id, count(*) FROM scores GROUP BY ALL ORDER BY 1") == [
        ("c1", 1),
        ("c2", 1),
    ]
    again = RunWriter(path, "r-1", token="tok")  # not a retry: the rows add up
    flush_one(again, "newer")
    assert rows(path, "SELECT count(*) FROM cases WHERE case_id = 'c1'") == [(2,)]


def test_an_empty_flush_writes_nothing_until_the_heartbeat_is_due(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [1000.0]
    monkeypatch.setattr(writer.time, "monotonic", lambda: clock[0])
    run_writer = RunWriter(path, "r-1", token="tok", heartbeat_s=30.0)
    before = rows(path, "SELECT CAST(heartbeat_at AS VARCHAR) FROM runs")
    run_writer.write((None, None, None))
    assert run_writer.flushes == 0
    clock[0] = 1030.0
    run_writer.write((None, None, None))
    assert run_writer.flushes == 1
    assert rows(path, "SELECT CAST(heartbeat_at AS VARCHAR) FROM runs") != before


def test_a_lease_another_process_took_stops_the_writes(path: Path) -> None:
    with pytest.raises(LeaseLostError) as info:
        flush_one(RunWriter(path, "r-1", token="someone else's"), "x")
    assert str(info.value) == (
        "run r-1 was taken over by another process (`evalwh run --resume RUN --force`); this"
        " process stopped writing it"
    )
    assert rows(path, "SELECT count(*) FROM cases") == [(0,)]


def test_answers_go_to_the_cache_file_when_it_is_its_own(path: Path, tmp_path: Path) -> None:
    cache_file = tmp_path / "cache.duckdb"
    run_writer = RunWriter(path, "r-1", token="tok", cache_path=cache_file)
    RowSink(run_writer, "r-1").remember("h1", MODEL, CachedAnswer("out", 1, 2, 3.0))
    run_writer.flush(run_writer.take_batch())
    assert rows(cache_file, "SELECT request_hash, output FROM response_cache") == [("h1", "out")]
    assert rows(path, "SELECT count(*) FROM response_cache") == [(0,)]
    assert (run_writer.rows_written, run_writer.flushes) == (0, 1)  # no case row was written


@pytest.mark.parametrize(("pause", "slept"), [("0.5", [0.5]), ("0", []), ("", [])])
def test_the_debug_pause_holds_each_flush_open(
    path: Path, monkeypatch: pytest.MonkeyPatch, pause: str, slept: list[float]
) -> None:
    monkeypatch.setenv(writer.FLUSH_PAUSE_ENV, pause)
    pauses: list[float] = []
    monkeypatch.setattr(writer.time, "sleep", pauses.append)
    flush_one(RunWriter(path, "r-1", token="tok"), "x")
    assert pauses == slept


def test_a_flush_is_labelled_with_its_run(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    labels = write_labels(monkeypatch, writer)
    flush_one(RunWriter(path, "r-1", token="tok"), "x")
    assert labels == ["flush run r-1"]


def test_a_cache_batch_is_unregistered_once_inserted() -> None:
    # a view left behind would hold the batch (a consumed stream) for the connection's life
    con = duckdb.connect()
    con.execute("CREATE TABLE response_cache (request_hash VARCHAR, output VARCHAR)")
    for replace in (False, True):
        batch = pa.table({"request_hash": ["h"], "output": [f"replace={replace}"]})
        writer._insert_cache(con, batch, replace=replace)
        left = "SELECT view_name FROM duckdb_views() WHERE view_name ILIKE '%evalwh_cache%'"
        assert con.execute(left).fetchall() == []
    assert con.execute("SELECT * FROM response_cache").fetchall() == [("h", "replace=True")]
    con.close()


def test_by_default_a_row_waits_at_most_a_second_and_one_batch_is_the_most_held(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [1000.0]
    monkeypatch.setattr(writer.time, "monotonic", lambda: clock[0])
    run_writer = RunWriter(path, "r-1")  # a run's writer sets no flush interval
    run_writer.add_case([None] * len(writer.CASE_COLUMNS))
    clock[0] = 1000.99
    assert run_writer.due() is False
    clock[0] = 1001.0
    assert run_writer.due() is True
    # the engine waits for the writer once a batch is pending: one batch, never less than a row
    assert [RunWriter(path, "r-1", batch_size=n).max_pending for n in (1, 0, 500)] == [1, 1, 500]


def test_a_cache_file_that_is_the_warehouse_is_no_file_of_its_own(
    path: Path, tmp_path: Path
) -> None:
    assert RunWriter(path, "r-1", cache_path=path).cache_path is None
    assert RunWriter(path, "r-1").cache_path is None
    assert (
        RunWriter(path, "r-1", cache_path=tmp_path / "c.duckdb").cache_path == tmp_path / "c.duckdb"
    )


def test_a_batch_converts_each_value_to_its_columns_type_and_refuses_one_of_another_type() -> None:
    """Typed conversion, not inference then a cast: integers are microseconds in a timestamp
    column, and a number in a text column is a bug to surface, not text to store as "1"."""
    columns = writer._Columns(
        [("t", pa.timestamp("us", tz="UTC")), ("n", pa.float64()), ("s", pa.string())]
    )
    table = columns.table([(1_700_000_000_000_000, 1, None), (0, 2.5, "x")])
    assert table is not None and table.schema == columns.schema
    assert table.column("n").to_pylist() == [1.0, 2.5]
    assert [t.isoformat() for t in table.column("t").to_pylist()] == [
        "2023-11-14T22:13:20+00:00",
        "1970-01-01T00:00:00+00:00",
    ]
    with pytest.raises(pa.ArrowTypeError):
        columns.table([(0, 1.0, 1)])
