"""Opening, migrating and sharing a warehouse (evalwh/warehouse/connect.py): the numbered
migrations and their lock file, what a write connection attaches and how, a file that is no
warehouse or is damaged, the connection a block shares, waiting out another process's lock
(on a fake clock), `evalwh migrate`, and migrating a DuckLake whose catalog is a local DuckDB
file (no server) while another first writer races it. The views the migrations create are
checked on two quickstart runs (the `quickstart_runs` fixture of tests/conftest.py). A migration read whatever the locale
uses the `ascii_locale` fixture of tests/conftest.py."""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import re
import threading
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import duckdb
import pytest

import evalwh
from evalwh.errors import WarehouseError
from evalwh.warehouse import connect
from evalwh.warehouse import lake as lakemod
from evalwh.warehouse.connect import write_connection
from evalwh.warehouse.ioerrors import StorageError
from evalwh.warehouse.lake import LakeTarget
from evalwh.warehouse.resources import resource_dir
from tests.warehouse.test_writer import cache_keys

# Released migrations never change: add a new numbered file instead. When a migration ships,
# record its hash in this lock file.
LOCK = Path(__file__).parent.parent / "migrations.lock.json"


# Numbers handed to branches still in flight: the only gaps allowed. Add a number
# when a branch takes it and remove it once its migration lands; migrate() applies a late
# one to warehouses already past it (none now).
RESERVED: set[int] = set()


def test_migrations_are_numbered_uniquely_and_contiguously() -> None:
    files = sorted(p.name for p in resource_dir("migrations").glob("*.sql"))
    numbers = [int(re.match(r"(\d{4})_", f).group(1)) for f in files]  # type: ignore[union-attr]
    expected = [n for n in range(1, max(numbers) + 1) if n not in RESERVED or n in numbers]
    assert numbers == expected, files


def test_released_migrations_are_unchanged() -> None:
    locked = json.loads(LOCK.read_text())
    for name, digest in locked.items():
        text = (resource_dir("migrations") / name).read_bytes()
        assert hashlib.sha256(text).hexdigest() == digest, (
            f"{name} was edited after release: add a new migration"
        )


def test_migrate_records_versions_and_is_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    with connect.write_connection(path) as con:
        versions = con.execute(
            "SELECT version, name FROM schema_migrations ORDER BY version"
        ).fetchall()
    with connect.write_connection(path) as con:
        again = con.execute("SELECT count(*) FROM schema_migrations").fetchone()
    assert versions[0] == (1, "0001_init") and again == (len(versions),)


def test_a_migration_numbered_below_the_applied_ones_is_applied_late(tmp_path, monkeypatch):
    """A reserved number (RESERVED) lands after a higher one reached warehouses: it is applied
    then, once, not skipped because the warehouse is already past it."""
    path = tmp_path / "w.duckdb"
    real = connect.migrations()
    late = next(m for m in real if m[0] == 5)  # 0005_attachments: one ALTER, nothing needs it
    monkeypatch.setattr(connect, "migrations", lambda: [m for m in real if m != late])
    with connect.write_connection(path) as con:
        before = {r[0] for r in con.execute("SELECT version FROM schema_migrations").fetchall()}
    monkeypatch.setattr(connect, "migrations", lambda: real)
    with connect.write_connection(path) as con:
        after = con.execute("SELECT version FROM schema_migrations ORDER BY 1").fetchall()
    with connect.write_connection(path) as con:
        again = con.execute("SELECT count(*) FROM schema_migrations").fetchone()
    assert late[0] not in before and max(before) > late[0]
    assert [v for (v,) in after] == [m[0] for m in real] and again == (len(real),)


def test_a_new_file_is_created_in_one_transaction_and_an_upgrade_in_one_per_migration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit each for 16 migrations was ~0.1 s of CPU (and a WAL sync each) of a first
    run; a new file's schema commits once, all or nothing. An upgrade keeps a transaction per
    migration, so a failing one leaves the file at the version before it."""
    real_transaction = connect.transaction
    opened: list[str] = []

    def counting(con: duckdb.DuckDBPyConnection):  # type: ignore[no-untyped-def]
        opened.append("BEGIN")
        return real_transaction(con)

    monkeypatch.setattr(connect, "transaction", counting)
    real = connect.migrations()
    path = tmp_path / "w.duckdb"
    monkeypatch.setattr(connect, "migrations", lambda: real[:-2])
    with connect.write_connection(path):
        pass
    assert opened == ["BEGIN"]
    opened.clear()
    monkeypatch.setattr(connect, "migrations", lambda: real)
    with connect.write_connection(path) as con:
        versions = [
            v for (v,) in con.execute("SELECT version FROM schema_migrations ORDER BY 1").fetchall()
        ]
    assert opened == ["BEGIN", "BEGIN"] and versions == [m[0] for m in real]


def test_refuses_a_warehouse_newer_than_the_code(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    with connect.write_connection(path) as con:
        con.execute("INSERT INTO schema_migrations VALUES (999, '0999_future', now())")
    with pytest.raises(WarehouseError, match="ahead of this evalwh"), connect.read_connection(path):
        pass


def packaged_migrations(
    folder: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str]
) -> None:
    """``files`` as the package's migrations folder (looked up by its name, as the code does)."""
    for name, sql in files.items():
        (folder / name).write_text(sql, encoding="utf-8")
    monkeypatch.setattr(connect, "resource_dir", {"migrations": folder}.__getitem__)


@pytest.mark.parametrize(
    ("files", "message"),
    [
        pytest.param(
            {"0001_init.sql": "SELECT 1;", "init.sql": "SELECT 1;"},
            "badly named migration init.sql: expected NNNN_name.sql",
            id="badly-named",
        ),
        # a number reserved by two branches that both landed: neither may be skipped silently
        pytest.param(
            {"0001_a.sql": "SELECT 1;", "0001_b.sql": "SELECT 2;"},
            "duplicate migration numbers in {folder}",
            id="one-number-twice",
        ),
    ],
)
def test_a_migrations_folder_that_cannot_be_ordered_is_refused_naming_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str], message: str
) -> None:
    packaged_migrations(tmp_path, monkeypatch, files)
    with pytest.raises(WarehouseError) as info:
        connect.migrations()
    assert str(info.value) == message.format(folder=tmp_path)


@pytest.mark.usefixtures("ascii_locale")
def test_a_migration_is_read_as_utf8_whatever_the_locale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sql = "-- the café's tables\nCREATE TABLE t (x INTEGER);\n"
    packaged_migrations(tmp_path, monkeypatch, {"0001_t.sql": sql})
    assert connect.migrations() == [(1, "0001_t", sql)]


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


def test_migration_0009_keeps_the_cached_answers_and_drops_the_key(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute(connect.SCHEMA_MIGRATIONS_DDL)
        for version, name, sql in connect.migrations():
            if version < 9:
                con.execute(sql)
                con.execute("INSERT INTO schema_migrations VALUES (?, ?, now())", [version, name])
        con.execute(
            "INSERT INTO response_cache VALUES ('h1', 'mock', 'm', 'kept', 3, 4, 5.5, now(), 'r1')"
        )
    assert cache_keys(db) == (1,)
    assert connect.migrate_file(db) == (8, connect.latest_version())
    assert cache_keys(db) == (0,)
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            "SELECT request_hash, provider, model, output, input_tokens, output_tokens, "
            "latency_ms, run_id FROM response_cache"
        ).fetchall()
    assert rows == [("h1", "mock", "m", "kept", 3, 4, 5.5, "r1")]


def test_documented_views(quickstart_runs: tuple[Path, list[str]]) -> None:
    out, (run_a, _) = quickstart_runs
    wh = evalwh.open_warehouse(out / "warehouse.duckdb")
    cells = wh.sql(
        f"SELECT * FROM cell_summary WHERE run_id = '{run_a}' ORDER BY variant, model"
    ).to_pylist()
    summary = wh.summary(run_a).to_dicts()
    assert [(c["variant"], c["model"], c["n"], c["n_passed"]) for c in cells] == [
        (s["variant"], s["model"], s["n"], s["n_passed"]) for s in summary
    ]
    labelled = wh.sql("SELECT DISTINCT label FROM case_results WHERE label IS NOT NULL").to_pylist()
    assert labelled == [{"label": "first"}]


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


def test_a_shared_connection_serves_every_open_until_its_block_ends(tmp_path: Path) -> None:
    import threading

    path = tmp_path / "w.duckdb"
    with connect.shared_connection(path):
        with connect.write_connection(path) as first, connect.read_connection(path) as second:
            assert first is second  # one connection, migrated once
            first.execute("CREATE TABLE t AS SELECT 1 AS x")
        with connect.shared_connection(path), connect.read_connection(path) as nested:
            assert nested is first  # a nested block uses the outer one's
        seen: list[object] = []

        def other_thread() -> None:  # a cursor of it: no second open of the file
            with connect.read_connection(path) as con:
                seen.append(con.execute("SELECT x FROM t").fetchone())
                seen.append(con is first)

        worker = threading.Thread(target=other_thread)
        worker.start()
        worker.join()
        assert seen == [(1,), False]
        # the block's end waits for a cursor still in use in another thread
        holding, release = threading.Event(), threading.Event()

        def slow_reader() -> None:
            with connect.read_connection(path) as con:
                holding.set()
                release.wait(5)
                seen.append(con.execute("SELECT x + 1 FROM t").fetchone())

        late = threading.Thread(target=slow_reader)
        late.start()
        holding.wait(5)
        threading.Timer(0.05, release.set).start()  # fires while the block is ending
    late.join()
    assert seen[-1] == (2,)
    assert not connect._SHARED
    with connect.read_connection(path) as con:  # closed: the file opens read-only again
        assert con is not first and con.execute("SELECT x FROM t").fetchone() == (1,)


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


def test_a_lake_is_never_served_the_connection_shared_on_a_local_file(tmp_path: Path) -> None:
    # a shared connection is a file's; a DuckLake asked for meanwhile opens its own
    lake = LakeTarget(str(tmp_path / "meta.ducklake"))
    with connect.shared_connection(tmp_path / "warehouse.duckdb"):
        assert connect._shared(tmp_path / "warehouse.duckdb") is not None
        assert connect._shared(lake) is None


def test_a_run_opens_the_warehouse_twice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Create the run, then one shared connection from the end of the engine on: the last
    flush, marking it exporting, the export, the final status and the summary, error and
    threshold queries (they took eight, then four). Each connection is a connect and a
    checkpoint at close (~40 ms of CPU together)."""
    config = tmp_path / "eval.yaml"
    config.write_text(
        "name: t\nmodels:\n  - {id: m, provider: mock}\n"
        "variants:\n  - id: v\n    messages: [{role: user, content: 'Q {{ q }}'}]\n"
        "cases:\n  - {id: c1, vars: {q: one}, expected: one}\n"
        "scorecard:\n  - {name: ok, type: contains}\n"
        "thresholds: {min_pass_rate: 0.5}\n",
        encoding="utf-8",
    )
    opened: list[bool] = []
    real = duckdb.connect

    def counting(*args: object, **kwargs: object) -> duckdb.DuckDBPyConnection:
        opened.append(bool(kwargs.get("read_only")))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(connect.duckdb, "connect", counting)
    result = evalwh.run_eval(config, output_dir=tmp_path / "out")
    assert result.status == "completed" and result.exports and result.gate
    assert opened == [False, False]
    opened.clear()
    again = evalwh.run_eval(config, output_dir=tmp_path / "out")  # + the cache lookup
    assert again.stats["cache_hits"] == 1 and opened == [True, False, False]


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


def test_a_second_connection_from_the_thread_holding_the_write_one_is_refused_not_awaited(
    tmp_path: Path,
) -> None:
    """A write connection attaches the file, which one connection of a process may do at a
    time: a second open from the same thread would wait for itself forever (wait_s=None)."""
    path = tmp_path / "w.duckdb"
    with connect.write_connection(path):
        for read_only in (True, False):
            with pytest.raises(WarehouseError, match="holds a write connection"):
                connect.open_connection(path, read_only=read_only, wait_s=None)
    with connect.read_connection(path, wait_s=None) as con:  # released with the block
        assert con.execute("SELECT count(*) FROM runs").fetchone() == (0,)


HELD = (
    'IO Error: Could not set lock on file "/w/warehouse.duckdb": Conflicting lock is held in '
    "/usr/bin/python3 (PID 550). See also https://duckdb.org/docs/stable/connect/concurrency"
)


@pytest.mark.parametrize(
    ("text", "lock"),
    [
        (HELD, True),
        ("IO Error: Could not set lock on file", True),  # either half of DuckDB's text
        ("IO Error: Conflicting lock is held", True),
        (
            "Connection Error: Can't open a connection to same database file with a different "
            "configuration than existing connections",
            True,
        ),
        ('Binder Error: Unique file handle conflict: database "w" is already attached', True),
        ("Catalog Error: Table with name lock does not exist!", False),  # "lock", no holder
        ("TransactionContext Error: Conflicting write to the same row", False),  # no "lock"
        ('IO Error: Cannot open file "/w/warehouse.duckdb": No such file or directory', False),
    ],
)
def test_only_another_holders_lock_counts_as_a_lock(text: str, lock: bool) -> None:
    assert connect._is_lock_error(Exception(text)) is lock


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


def test_a_migration_another_writer_applied_meanwhile_is_skipped_and_the_rest_applied(
    file_lake: LakeTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    # on a lake, two first writers may migrate at once: each migration is looked up again in
    # its own transaction, and one the other writer committed meanwhile is skipped, not the
    # migrations after it
    first, *rest = connect.migrations()
    real = connect.applied_versions
    calls = [0]

    def other_writer_was_first(con: duckdb.DuckDBPyConnection) -> set[int]:
        calls[0] += 1
        if calls[0] == 1:  # the first migration's own look: the other writer has just run it
            con.execute(lakemod.lake_sql(first[2]))
            con.execute("INSERT INTO schema_migrations VALUES (?, ?, now())", list(first[:2]))
        return real(con)

    monkeypatch.setattr(connect, "applied_versions", other_writer_was_first)
    con = lakemod.connect(file_lake, read_only=False, memory_limit="256MB")
    try:
        assert connect._migrate(con, file_lake) == rest[-1][0]
        versions = con.execute("SELECT version FROM schema_migrations ORDER BY 1").fetchall()
    finally:
        con.close()
    assert [v for (v,) in versions] == [first[0]] + [v for v, _, _ in rest]  # each one once


def test_a_lake_ahead_of_this_evalwh_is_refused_naming_the_lake(file_lake: LakeTarget) -> None:
    con = lakemod.connect(file_lake, read_only=False, memory_limit="256MB")
    try:
        connect.migrate(con, file_lake)
        con.execute("INSERT INTO schema_migrations VALUES (9999, '9999_future', now())")
        connect._CURRENT.discard(file_lake)  # as a later process, which has not looked yet
        with pytest.raises(WarehouseError) as info:
            connect.check_schema(con, file_lake)
    finally:
        con.close()
    assert str(info.value) == (
        f"the warehouse {file_lake} is at schema version 9999, ahead of this evalwh (which knows "
        f"up to {connect.latest_version()}); upgrade evalwh to read it"
    )


def test_a_lake_behind_is_migrated_and_a_lake_found_current_is_not_read_again(
    file_lake: LakeTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    every = connect.migrations()
    con = lakemod.connect(file_lake, read_only=False, memory_limit="256MB")
    try:
        with monkeypatch.context() as older:  # a lake an older evalwh made: one migration short
            older.setattr(connect, "migrations", lambda: every[:-1])
            connect._migrate(con, file_lake)
        connect._CURRENT.discard(file_lake)
        # a reader of a lake behind this code sees its version, and a writer then migrates it
        assert connect.check_schema(con, file_lake) == every[-2][0]
        assert connect.migrate(con, file_lake) == every[-1][0]
        assert connect.schema_version(con) == every[-1][0]
        # migrated, or found current, it is not read again in this process: schemas only
        # move forward (a version ahead, added since, goes unseen)
        future = "INSERT INTO schema_migrations VALUES (9999, '9999_future', now())"
        con.execute(future)
        assert connect.check_schema(con, file_lake) == every[-1][0]
        con.execute("DELETE FROM schema_migrations WHERE version = 9999")
        connect._CURRENT.discard(file_lake)  # as a reader that has not looked yet
        assert connect.check_schema(con, file_lake) == every[-1][0]
        con.execute(future)
        assert connect.check_schema(con, file_lake) == every[-1][0]
    finally:
        con.close()
        connect._CURRENT.discard(file_lake)


def test_a_lake_migration_that_loses_a_race_is_retried_and_logged_as_such(
    file_lake: LakeTarget,
    lake_clock: list[float],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # another first writer created a table meanwhile: "already exists" is retried as a conflict
    real, tries = connect._migrate, [0]

    def raced(con: duckdb.DuckDBPyConnection, path: Any) -> int:
        tries[0] += 1
        if tries[0] == 1:
            raise duckdb.CatalogException("Catalog Error: Table with name runs already exists!")
        return real(con, path)

    monkeypatch.setattr(connect, "_migrate", raced)
    con = lakemod.connect(file_lake, read_only=False, memory_limit="256MB")
    try:
        with caplog.at_level(logging.DEBUG, logger=lakemod.log.name):
            assert connect.migrate(con, file_lake) == connect.latest_version()
    finally:
        con.close()
        connect._CURRENT.discard(file_lake)
    assert tries == [2] and len(lake_clock) == 1
    assert [m for m in caplog.messages if "conflict" in m] == [
        "migrate the lake: DuckLake conflict (try 1), retrying: "
        "Catalog Error: Table with name runs already exists!"
    ]
