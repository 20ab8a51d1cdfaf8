"""Tests that kill mutants mutmut found alive (issue 21) in the warehouse operations behind
sharded runs and a shared DuckLake: a shard's join and the conclusion of its run
(evalwh/warehouse/shards.py), push, pull and the lake's maintenance (transfer.py),
`evalwh migrate` (connect.migrate_file) and which errors count as I/O failures
(ioerrors.is_io_error). They run in this process, on real DuckDB files and on a DuckLake whose
catalog is a local DuckDB file (no server). Each test names the behaviour it pins."""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import duckdb
import pytest

import evalwh
from evalwh.errors import UsageError, WarehouseError
from evalwh.warehouse import connect, shards, transfer
from evalwh.warehouse import lake as lakemod
from evalwh.warehouse.connect import read_connection, write_connection
from evalwh.warehouse.ioerrors import StorageError, is_io_error
from evalwh.warehouse.lake import LakeTarget
from evalwh.warehouse.lease import HOST
from tests.conftest import write

ZERO = {"runs": 0, "cases": 0, "scores": 0, "pairs": 0, "labels": 0}


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A warehouse file holding one finished run of two cells (made once; tests copy it)."""
    folder = tmp_path_factory.mktemp("finished")
    cfg = write(
        folder / "eval.yaml",
        "models:\n  - {id: m, provider: mock}\n"
        "variants:\n  - {id: v, messages: [{role: user, content: hi}]}\n"
        "cases:\n  - {id: c1, expected: x}\n  - {id: c2, expected: y}\n"
        "scorecard:\n  - {name: r, type: contains, value: x}\n",
    )
    result = evalwh.run_eval(cfg, output_dir=folder / "o")
    return folder / "o" / "warehouse.duckdb", result.run_id


@pytest.fixture
def stored(finished: tuple[Path, str], tmp_path: Path) -> tuple[Path, str]:
    """This test's own copy of that warehouse file."""
    db = tmp_path / "o" / "warehouse.duckdb"
    db.parent.mkdir()
    shutil.copyfile(finished[0], db)
    return db, finished[1]


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LakeTarget]:
    """A DuckLake with its catalog in a local DuckDB file, created by its first writer and
    shared by this module's tests (each uses its own run ids)."""
    folder = tmp_path_factory.mktemp("lake")
    target = lakemod.parse_target(
        f"ducklake:{folder / 'meta.ducklake'}",
        {"data_path": "lake-data"},
        base=folder,
        where="test",
    )
    yield target
    lakemod.release(target)


def _set(db: Path, run_id: str, **columns: Any) -> None:
    with duckdb.connect(str(db)) as con:
        sets = ", ".join(f"{name} = ?" for name in columns)
        con.execute(f"UPDATE runs SET {sets} WHERE run_id = ?", [*columns.values(), run_id])


def _runs(db: Path, run_id: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(
            "SELECT status, host, pid, lease_token FROM runs WHERE run_id = ?", [run_id]
        ).fetchall()


def _count(db: Path, table: str) -> int:
    with duckdb.connect(str(db), read_only=True) as con:
        found = con.execute(f"SELECT count(*) FROM {table}").fetchone()
    assert found is not None
    return int(found[0])


def _names(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ``what=`` of each write transaction the shard code opens (a DuckLake commit
    conflict's retry message names it)."""
    real = connect.write_transaction
    names: list[str] = []

    def named(path: Any, body: Any, *, what: str = "write") -> Any:
        names.append(what)
        return real(path, body, what=what)

    monkeypatch.setattr(shards, "write_transaction", named)
    return names


def _shard_row(run_id: str, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "run_id": run_id,
        "suite": "s",
        "status": "running",
        "config_hash": "c1",
        "dataset_hash": "d1",
        "filters": json.dumps({"shards": 2}),
        "no_look": False,
        "n_planned": 4,
        "started_at": datetime.now(timezone.utc),
        "evalwh_version": "v",
    }
    return {**base, **fields}


# ---- what a bad --run-id or --shard is told ---------------------------------------------


def test_a_bad_run_id_is_refused_with_the_characters_allowed_and_an_example() -> None:
    with pytest.raises(UsageError) as info:
        shards.check_run_id("../x")
    assert str(info.value) == (
        "--run-id '../x' is not a usable run id: use 1-128 letters, digits, '.', '_', "
        "':' or '-', starting with a letter or digit (e.g. nightly-2026-11-30-${CI_PIPELINE_ID})"
    )


def test_a_bad_shard_is_refused_with_the_form_and_an_example() -> None:
    with pytest.raises(UsageError) as info:
        shards.parse_shard("5/4")
    assert str(info.value) == (
        "--shard '5/4' is not K/N with 1 <= K <= N <= 10000 (e.g. --shard 3/8: the third of "
        "eight shards)"
    )


# ---- a shard joins the run ----------------------------------------------------------------


def test_the_first_shard_creates_the_run_as_this_process_and_the_next_joins_it(
    tmp_path: Path,
) -> None:
    # a row carrying another process's host, pid and token is stamped with this one's
    db = tmp_path / "w.duckdb"
    row = _shard_row("nightly-1", host="ci-runner-7", pid=6257, lease_token="theirs")
    assert shards.join(db, row, 2) is True
    [(status, host, pid, token)] = _runs(db, "nightly-1")
    assert (status, host, pid) == ("running", HOST, os.getpid())
    assert re.fullmatch(r"[0-9a-f]{16}", token), token
    assert shards.join(db, _shard_row("nightly-1"), 2) is False  # joined, not created
    assert _runs(db, "nightly-1") == [("running", HOST, os.getpid(), token)]  # one row, as was


def test_join_and_conclusion_name_their_run_to_the_write_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "w.duckdb"
    names = _names(monkeypatch)
    shards.join(db, _shard_row("r-2", n_planned=0), 2)
    shards.join(db, _shard_row("r-2", n_planned=0), 2)
    assert shards.claim_conclusion(db, "r-2") is not None
    assert names == ["join run r-2", "join run r-2", "conclude run r-2"]


def test_a_shard_joining_a_lake_run_commits_once(
    lake: LakeTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the creator checks that one row stayed (two first shards may both insert); a shard
    # that only joins has nothing to check
    names = _names(monkeypatch)
    assert shards.join(lake, _shard_row("r-3"), 2) is True
    assert names == ["join run r-3", "join run r-3"]
    assert shards.join(lake, _shard_row("r-3"), 2) is False
    assert names == ["join run r-3"] * 3


# ---- concluding a sharded run -------------------------------------------------------------


def test_concluding_an_unknown_run_names_it(stored: tuple[Path, str]) -> None:
    db, _ = stored
    with pytest.raises(UsageError) as info:
        shards.claim_conclusion(db, "nope")
    assert str(info.value) == "no run nope"
    assert not isinstance(info.value, shards.ShardsMissing)


def test_an_interrupted_run_with_every_cell_is_concluded_by_this_process(
    stored: tuple[Path, str],
) -> None:
    db, run_id = stored
    _set(db, run_id, status="interrupted", host="ci-runner-7", pid=6257, lease_token="theirs")
    token = shards.claim_conclusion(db, run_id)
    assert token is not None and re.fullmatch(r"[0-9a-f]{16}", token), token
    assert _runs(db, run_id) == [("exporting", HOST, os.getpid(), token)]
    assert shards.claim_conclusion(db, run_id) is None  # being concluded: not again


def test_a_finished_run_is_not_concluded_again(stored: tuple[Path, str]) -> None:
    db, run_id = stored
    before = _runs(db, run_id)
    assert before[0][0] == "completed"
    assert shards.claim_conclusion(db, run_id) is None
    assert _runs(db, run_id) == before


def test_a_run_missing_cells_says_how_many_and_both_ways_out(stored: tuple[Path, str]) -> None:
    db, run_id = stored
    _set(db, run_id, status="running", n_planned=3)  # two cells of three stored
    with pytest.raises(shards.ShardsMissing) as info:
        shards.claim_conclusion(db, run_id)
    assert str(info.value) == (
        f"run {run_id} has 2 of its 3 cells: a shard has not finished (re-run the missing "
        "`--shard K/N` commands; each resumes where it stopped), or conclude it as it is with "
        "`evalwh finish RUN --partial`"
    )
    assert _runs(db, run_id)[0][0] == "running"  # unchanged
    token = shards.claim_conclusion(db, run_id, partial=True)
    assert token is not None and _runs(db, run_id)[0][::3] == ("exporting", token)


# ---- push, pull and maintenance of a DuckLake -----------------------------------------------


def test_copying_no_runs_reports_zero_rows_of_each_table(tmp_path: Path) -> None:
    target = LakeTarget(catalog=str(tmp_path / "meta.ducklake"))
    for direction in ("push", "pull"):
        assert transfer.copy_runs(target, tmp_path / "w.duckdb", [], direction=direction) == (
            [],
            [],
            ZERO,
        )
    assert not (tmp_path / "meta.ducklake").exists()  # nothing was opened


def test_push_and_pull_count_the_rows_of_each_table_and_skip_runs_already_there(
    stored: tuple[Path, str], lake: LakeTarget, tmp_path: Path
) -> None:
    db, run_id = stored
    rows = {"runs": 1, "cases": 2, "scores": 2, "pairs": 0, "labels": 0}
    # a push only reads the file: a reader (the viewer) may hold it open meanwhile
    with read_connection(db):
        assert transfer.copy_runs(lake, db, [run_id], direction="push") == ([run_id], [], rows)
    assert transfer.copy_runs(lake, db, [run_id], direction="push") == ([], [run_id], ZERO)
    with write_connection(lake) as con:  # the push took the run's cached answers along
        found = con.execute("SELECT count(*) FROM response_cache").fetchone()
    assert found is not None and found[0] == 2

    dest = tmp_path / "pulled.duckdb"
    with write_connection(dest):  # as `evalwh pull` does: the file is created first
        pass
    assert transfer.copy_runs(lake, dest, [run_id], direction="pull") == ([run_id], [], rows)
    assert transfer.copy_runs(lake, dest, [run_id], direction="pull") == ([], [run_id], ZERO)
    assert (_count(dest, "cases"), _count(dest, "scores")) == (2, 2)
    assert _count(dest, "response_cache") == 0  # a pull brings runs, not the lake's cache


class _Recording:
    """A connection that keeps the statements sent through it."""

    def __init__(self, con: duckdb.DuckDBPyConnection, sent: list[str]) -> None:
        self.con, self.sent = con, sent

    def execute(self, sql: str, *args: Any) -> duckdb.DuckDBPyConnection:
        self.sent.append(sql)
        return self.con.execute(sql, *args)


def test_lake_maintenance_expires_only_what_is_older_than_the_days_given(
    lake: LakeTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    shards.join(lake, _shard_row("r-4"), 2)  # a few snapshots, all seconds old
    real = connect.write_connection  # the one transfer uses
    sent: list[str] = []

    @contextmanager
    def recording(target: Any, **options: Any) -> Iterator[_Recording]:
        with real(target, **options) as con:
            yield _Recording(con, sent)

    monkeypatch.setattr(transfer, "write_connection", recording)
    steps = transfer.maintain_lake(lake, expire_days=1.5)
    older = "older_than => now() - INTERVAL 129600 SECOND)"  # 1.5 days
    assert sent == [
        "CALL ducklake_flush_inlined_data('lake')",
        "CALL ducklake_merge_adjacent_files('lake')",
        f"CALL ducklake_expire_snapshots('lake', {older}",
        f"CALL ducklake_cleanup_old_files('lake', {older}",
        f"CALL ducklake_delete_orphaned_files('lake', {older}",
    ]
    assert [s["step"] for s in steps] == [
        "flush_inlined_data",
        "merge_adjacent_files",
        "expire_snapshots",
        "cleanup_old_files",
        "delete_orphaned_files",
    ]
    assert steps[2]["rows"] == 0  # no snapshot is that old


# ---- evalwh migrate -----------------------------------------------------------------------


def test_migrating_a_missing_warehouse_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(WarehouseError) as info:
        connect.migrate_file(tmp_path / "none.duckdb")
    assert str(info.value) == f"no warehouse at {tmp_path / 'none.duckdb'} to migrate"


def test_a_full_disk_while_migrating_names_the_file_and_the_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "w.duckdb"
    with write_connection(db):
        pass

    def full(con: Any, path: Any) -> int:
        raise duckdb.IOException(
            f'IO Error: Could not write file "{path}": No space left on device'
        )

    monkeypatch.setattr(connect, "migrate", full)
    with pytest.raises(StorageError) as info:
        connect.migrate_file(db)
    assert str(info.value) == (
        f"cannot migrate the warehouse {db}: No space left on device\n"
        "  fix: free space on that file system (rows flushed so far are kept; "
        "`evalwh run CONFIG --resume RUN` continues a run)"
    )


def test_migrate_waits_as_long_as_another_connection_holds_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `evalwh migrate` never gives up on a busy warehouse (a plain write gives up after 30 s):
    # here every look at the clock is 100 s later, and the holder lets go at the first wait
    db = tmp_path / "w.duckdb"
    with write_connection(db):
        pass
    latest = connect.latest_version()
    holder = duckdb.connect(str(db), read_only=True)
    ticks = itertools.count(start=0.0, step=100.0)
    waits: list[float] = []

    def wait(delay: float) -> None:
        waits.append(delay)
        holder.close()

    monkeypatch.setattr(connect, "time", SimpleNamespace(monotonic=lambda: next(ticks), sleep=wait))
    try:
        assert connect.migrate_file(db) == (latest, latest)
    finally:
        holder.close()
    assert len(waits) == 1  # it waited once, then the file was free


# ---- which errors are I/O failures --------------------------------------------------------


@pytest.mark.parametrize(
    "error",
    [
        duckdb.IOException("IO Error: could not read block 7 of the file"),
        duckdb.FatalException("FATAL Error: the database was invalidated"),
        duckdb.PermissionException("Permission Error: the file is not ours"),
    ],
)
def test_duckdb_io_fatal_and_permission_errors_are_io_errors_whatever_they_say(
    error: Exception,
) -> None:
    assert is_io_error(error) is True


def test_another_error_is_an_io_error_only_from_duckdb_and_naming_an_os_cause() -> None:
    disk = "No space left on device"
    assert is_io_error(duckdb.InvalidInputException(f"Invalid Input Error: {disk}")) is True
    assert is_io_error(duckdb.BinderException("Binder Error: no column q")) is False
    assert is_io_error(ValueError(disk)) is False
