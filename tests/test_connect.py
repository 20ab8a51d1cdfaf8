"""The warehouse's connection code in-process (evalwh/warehouse/connect.py): what a write
connection attaches and how. Written from mutation survivors (docs/testing.md)."""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import duckdb
import pytest

from evalwh.errors import WarehouseError
from evalwh.warehouse import connect
from evalwh.warehouse.ioerrors import StorageError
from evalwh.warehouse.lake import LakeTarget
from tests.test_survivors_inputs import ascii_locale  # noqa: F401  (a fixture)


def test_a_warehouse_under_a_folder_with_an_apostrophe_is_written_and_read(tmp_path: Path) -> None:
    # the path is quoted into ATTACH '...': an apostrophe in it must be escaped, not end it
    path = tmp_path / "o'brien's evals" / "warehouse.duckdb"
    with connect.write_connection(path) as con:
        con.execute("CREATE TABLE notes (t VARCHAR)")
        con.execute("INSERT INTO notes VALUES ('kept')")
        spill = con.execute("SELECT current_setting('temp_directory')").fetchone()
    assert spill == (f"{path}.tmp",)  # spills beside the file, as a direct connection would
    with connect.read_connection(path) as con:
        assert con.execute("SELECT t FROM notes").fetchall() == [("kept",)]


def test_a_duckdb_file_with_tables_of_its_own_is_refused_and_left_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "mine.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE orders (id INTEGER)")
        con.execute("CREATE TABLE customers (id INTEGER)")
    with pytest.raises(WarehouseError) as info, connect.write_connection(path):
        pass
    assert str(info.value) == (
        f"{path} is a DuckDB file but not an evalwh warehouse (it has tables of its own: "
        "customers, orders); it was left unchanged. Point -o/--output-dir or "
        "settings.warehouse at another file"
    )
    with duckdb.connect(str(path), read_only=True) as con:
        assert con.execute("SHOW TABLES").fetchall() == [("customers",), ("orders",)]


def test_a_file_holding_only_an_empty_schema_migrations_table_is_migrated(tmp_path: Path) -> None:
    # another writer created it and is migrating it now: not a foreign file
    path = tmp_path / "warehouse.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute(connect.SCHEMA_MIGRATIONS_DDL)
    with connect.write_connection(path) as con:
        assert connect.schema_version(con) == connect.latest_version()


def test_a_local_file_keeps_the_primary_keys_a_lake_drops(tmp_path: Path) -> None:
    # lake.lake_sql strips PRIMARY KEY for DuckLake, which has none; a DuckDB file keeps them
    # (a second runs row with the same run_id is refused, not stored twice)
    with connect.write_connection(tmp_path / "warehouse.duckdb") as con:
        keys = con.execute(
            "SELECT table_name, constraint_text FROM duckdb_constraints() "
            "WHERE constraint_type = 'PRIMARY KEY' ORDER BY table_name"
        ).fetchall()
    assert keys == [
        ("baselines", 'PRIMARY KEY("name")'),
        ("runs", "PRIMARY KEY(run_id)"),
        ("schema_migrations", 'PRIMARY KEY("version")'),
    ]


def test_each_migration_applied_is_logged_with_its_name_and_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "warehouse.duckdb"
    with caplog.at_level(logging.INFO, logger=connect.log.name):
        with connect.write_connection(path):
            pass
        with connect.write_connection(path):  # nothing left to apply: nothing logged
            pass
    assert caplog.messages == [
        f"applied migration {name} to {path}" for _, name, _ in connect.migrations()
    ]


def test_a_lake_is_never_served_the_connection_shared_on_a_local_file(tmp_path: Path) -> None:
    # a shared connection is a file's; a DuckLake asked for meanwhile opens its own
    lake = LakeTarget(str(tmp_path / "meta.ducklake"))
    with connect.shared_connection(tmp_path / "warehouse.duckdb"):
        assert connect._shared(tmp_path / "warehouse.duckdb") is not None
        assert connect._shared(lake) is None


def test_a_shared_blocks_end_waits_for_every_cursor_in_use(tmp_path: Path) -> None:
    # b takes a cursor, a takes one and gives it back: the block's end must still wait for b
    path = tmp_path / "warehouse.duckdb"
    seen: list[tuple[str, object]] = []
    b_holding, a_done, release_b = threading.Event(), threading.Event(), threading.Event()

    def a() -> None:
        b_holding.wait(5)
        with connect.read_connection(path) as con:
            seen.append(("a", con.execute("SELECT x FROM t").fetchone()))
        a_done.set()

    def b() -> None:
        with connect.read_connection(path) as con:
            b_holding.set()
            release_b.wait(5)
            seen.append(("b", con.execute("SELECT x + 1 FROM t").fetchone()))

    with connect.shared_connection(path):
        with connect.write_connection(path) as con:
            con.execute("CREATE TABLE t AS SELECT 1 AS x")
        threads = [threading.Thread(target=a), threading.Thread(target=b)]
        for thread in threads:
            thread.start()
        assert a_done.wait(5)
        threading.Timer(0.05, release_b.set).start()  # fires while the block is ending
    for thread in threads:
        thread.join()
    assert seen == [("a", (1,)), ("b", (2,))]


def packaged_migrations(
    folder: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str]
) -> None:
    """``files`` as the package's migrations folder (looked up by its name, as the code does)."""
    for name, sql in files.items():
        (folder / name).write_text(sql, encoding="utf-8")
    monkeypatch.setattr(connect, "resource_dir", {"migrations": folder}.__getitem__)


def test_a_badly_named_migration_is_refused_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    packaged_migrations(
        tmp_path, monkeypatch, {"0001_init.sql": "SELECT 1;", "init.sql": "SELECT 1;"}
    )
    with pytest.raises(WarehouseError) as info:
        connect.migrations()
    assert str(info.value) == "badly named migration init.sql: expected NNNN_name.sql"


@pytest.mark.usefixtures("ascii_locale")
def test_a_migration_is_read_as_utf8_whatever_the_locale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sql = "-- the café's tables\nCREATE TABLE t (x INTEGER);\n"
    packaged_migrations(tmp_path, monkeypatch, {"0001_t.sql": sql})
    assert connect.migrations() == [(1, "0001_t", sql)]


def test_two_migrations_with_one_number_are_refused_naming_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a number reserved by two branches that both landed: neither may be skipped silently
    packaged_migrations(
        tmp_path, monkeypatch, {"0001_a.sql": "SELECT 1;", "0001_b.sql": "SELECT 2;"}
    )
    with pytest.raises(WarehouseError) as info:
        connect.migrations()
    assert str(info.value) == f"duplicate migration numbers in {tmp_path}"


def test_a_write_inside_a_read_block_of_the_same_warehouse_is_refused(tmp_path: Path) -> None:
    from evalwh.warehouse.store import Warehouse

    path = tmp_path / "warehouse.duckdb"
    with connect.write_connection(path):
        pass
    with Warehouse(path).reading(), pytest.raises(WarehouseError) as info:
        connect.open_connection(path, read_only=False)
    assert str(info.value) == (
        f"cannot write the warehouse {path} inside a read block of the same request "
        "(Warehouse.reading): end the block first"
    )


def held_warehouse(tmp_path: Path) -> tuple[Path, duckdb.DuckDBPyConnection]:
    """A warehouse and a connection to it in another configuration (a lock to evalwh's writes)."""
    path = tmp_path / "warehouse.duckdb"
    with connect.write_connection(path):
        pass
    return path, duckdb.connect(str(path), read_only=True)


def locked_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, monotonic: Callable[[], float]
) -> tuple[WarehouseError, list[float]]:
    """A write connection to a held warehouse (``held_warehouse``), on a fake clock: the error
    it gave up with, and the waits it slept before."""
    path, holder = held_warehouse(tmp_path)
    waits: list[float] = []
    monkeypatch.setattr(connect, "time", SimpleNamespace(monotonic=monotonic, sleep=waits.append))
    try:
        with pytest.raises(WarehouseError) as info:
            connect.open_connection(path, read_only=False)
    finally:
        holder.close()
    return info.value, waits


def test_a_write_gives_up_on_a_file_locked_for_30_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # every look at the clock is 1 s later: 30 s of waits, then the error names the wait
    ticks = itertools.count(start=0.0, step=1.0)
    error, waits = locked_write(tmp_path, monkeypatch, lambda: next(ticks))
    assert str(error) == (
        f"the warehouse {tmp_path / 'warehouse.duckdb'} stayed locked by another process for "
        "30 s (a DuckDB shell or notebook holding it open?); close it and retry"
    )
    # it waited before it gave up, doubling each wait up to a quarter second
    assert waits[:7] == [0.01, 0.02, 0.04, 0.08, 0.16, 0.25, 0.25] and max(waits) == 0.25


def test_a_lock_wait_tries_again_at_exactly_its_limit_and_gives_up_past_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the clock reads: the start, the last warning (25 s on: none due before 35), exactly 30 s
    # on (not past the limit: one more try), then 30.5 s
    clock = iter([0.0, 25.0, 30.0, 30.0, 30.5])
    error, waits = locked_write(tmp_path, monkeypatch, lambda: next(clock))
    assert "stayed locked by another process for 30 s" in str(error)
    assert waits == [0.01]


def test_a_lock_wait_warns_once_in_each_ten_seconds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # a clock far from zero, as a real monotonic clock is, read 1 s apart: over the 30 s the
    # waits after the 10th and the 21st second each warn, and no other
    ticks = itertools.count(start=5000.0, step=1.0)
    with caplog.at_level(logging.WARNING, logger="evalwh"):
        error, waits = locked_write(tmp_path, monkeypatch, lambda: next(ticks))
    path = tmp_path / "warehouse.duckdb"
    assert [r.getMessage() for r in caplog.records] == [
        f"waiting for the warehouse lock on {path}"
    ] * 2
    assert "stayed locked" in str(error) and len(waits) > 2


def test_a_write_transaction_waits_out_a_lock_of_any_length(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a flush holds rows only memory has: it waits for the lock however long it is held (here
    # 120 s on a clock read 1 s apart, four times a plain write's 30 s), then writes
    path, holder = held_warehouse(tmp_path)
    ticks, waits = itertools.count(start=5000.0, step=1.0), []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        if next(ticks) > 5120:
            holder.close()

    monkeypatch.setattr(
        connect, "time", SimpleNamespace(monotonic=lambda: next(ticks), sleep=sleep)
    )
    try:
        connect.write_transaction(
            path, lambda con: con.execute("CREATE TABLE t AS SELECT 1 AS x"), what="test"
        )
    finally:
        holder.close()
    assert len(waits) > 30
    with duckdb.connect(str(path), read_only=True) as con:
        assert con.execute("SELECT x FROM t").fetchall() == [(1,)]


@pytest.mark.parametrize("read_only", [True, False])
def test_a_damaged_file_and_a_file_in_the_folders_place_get_their_own_fix(
    tmp_path: Path, read_only: bool
) -> None:
    # a file that is no database says how to set it aside; a storage failure says what to
    # move (and that flushed rows are kept)
    damaged = tmp_path / "warehouse.duckdb"
    damaged.write_bytes(b"not a database" * 100)
    with pytest.raises(WarehouseError) as info:
        connect.open_connection(damaged, read_only=read_only)
    assert str(info.value) == (
        f'cannot open the warehouse {damaged}: IO Error: The file "{damaged}" exists, but it '
        f"is not a valid DuckDB database file!\n  fix: {connect.OPEN_FIX}"
    )
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    misplaced = tmp_path / "afile" / "warehouse.duckdb"
    with pytest.raises(StorageError) as stored:
        connect.open_connection(misplaced, read_only=read_only)
    assert str(stored.value).startswith(
        f"cannot open the warehouse {misplaced}: Not a directory\n  fix: a file sits where a "
        "folder should be"
    )
