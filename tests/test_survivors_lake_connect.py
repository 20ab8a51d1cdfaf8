"""Attaching a DuckLake warehouse and waiting out its races, pinned where mutation testing
found them loose (docs/testing.md): which errors are another holder's lock, the backoff of a
conflicting commit and of racing first writers, the lake variant of a migration, and an
attach of a DuckDB-file catalog (no server) with its settings and failures."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from evalwh.errors import WarehouseError
from evalwh.warehouse import connect as connectmod
from evalwh.warehouse import lake as lakemod
from evalwh.warehouse.lake import LakeTarget

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
    assert connectmod._is_lock_error(Exception(text)) is lock


def test_a_migration_loses_its_primary_keys_and_quotes_boolean_defaults_on_a_lake() -> None:
    sql = "CREATE TABLE t (id VARCHAR primary  key, on_ BOOLEAN default TRUE, b BOOLEAN DEFAULT false)"
    assert lakemod.lake_sql(sql) == (
        "CREATE TABLE t (id VARCHAR, on_ BOOLEAN DEFAULT 'TRUE', b BOOLEAN DEFAULT 'false')"
    )


def conflict(text: str = "TransactionContext Error: Transaction conflict: cannot commit") -> Any:
    return duckdb.TransactionException(text)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """lake's clock and sleep, faked: time passes only by the sleeps, which are recorded;
    the jitter is fixed at 0.75 (random() = 0.25)."""
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(round(seconds, 6))
        now[0] += seconds

    monkeypatch.setattr(lakemod.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(lakemod.time, "sleep", sleep)
    monkeypatch.setattr(lakemod.random, "random", lambda: 0.25)
    return slept


def failing(times: int, error: Any) -> Any:
    calls = [0]

    def attempt() -> str:
        calls[0] += 1
        if calls[0] <= times:
            raise error
        return "committed"

    return attempt


def test_a_conflicting_commit_is_retried_with_doubling_jittered_waits_up_to_two_seconds(
    clock: list[float], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="evalwh")
    error = conflict()
    assert lakemod.retry_conflicts(failing(7, error), what="write run r") == "committed"
    # 0.05 s doubling to the 2 s cap, each x 0.75 (the jitter 0.5 + random())
    assert clock == [0.0375, 0.075, 0.15, 0.3, 0.6, 1.2, 1.5]
    tries = [r.getMessage() for r in caplog.records if "DuckLake conflict" in r.getMessage()]
    assert tries == [
        f"write run r: DuckLake conflict (try {n}), retrying: {error}" for n in range(1, 8)
    ]


def test_a_conflict_that_lasts_is_given_up_after_ten_minutes(clock: list[float]) -> None:
    with pytest.raises(duckdb.TransactionException):
        lakemod.retry_conflicts(failing(10**6, conflict()), what="w")
    waited = sum(clock)
    # the first failure after 600 s is raised: 2.3625 s of rising waits, then 1.5 s each
    assert waited == pytest.approx(2.3625 + 1.5 * 399)


def test_only_conflicts_and_the_named_texts_are_retried(clock: list[float]) -> None:
    other = duckdb.CatalogException("Catalog Error: Table with name x does not exist!")
    with pytest.raises(duckdb.CatalogException):
        lakemod.retry_conflicts(failing(1, other), what="w")
    assert clock == []
    named = duckdb.IOException("IO Error: could not write the file (EAGAIN)")
    assert lakemod.retry_conflicts(failing(1, named), what="w", also=("EAGAIN",)) == "committed"
    assert clock == [0.0375]


class Racing:
    """A connection whose ATTACH fails ``times`` times with ``text``."""

    def __init__(self, times: int, text: str) -> None:
        self.times, self.text, self.calls = times, text, 0

    def execute(self, statement: str) -> None:
        self.calls += 1
        if self.calls <= self.times:
            raise duckdb.CatalogException(self.text)


@pytest.mark.parametrize(
    "text",
    [
        'Catalog Error: Table with name "ducklake_metadata" already exists!',
        'Constraint Error: duplicate key "0" violates primary key constraint',
    ],
)
def test_first_writers_racing_for_a_fresh_catalog_attach_again_with_growing_waits(
    clock: list[float], text: str
) -> None:
    con = Racing(7, text)
    lakemod._attach(con, "ATTACH ...")  # type: ignore[arg-type]
    assert con.calls == 8
    # 0.1 s x the attempt's number, x 0.75
    assert clock == [round(0.075 * n, 6) for n in range(1, 8)]


def test_a_race_lost_eight_times_or_any_other_error_is_raised(clock: list[float]) -> None:
    with pytest.raises(duckdb.CatalogException, match="already exists"):
        lakemod._attach(Racing(8, "Catalog Error: x already exists"), "ATTACH ...")  # type: ignore[arg-type]
    assert len(clock) == 7
    clock.clear()
    with pytest.raises(duckdb.CatalogException, match="does not exist"):
        lakemod._attach(Racing(1, "Catalog Error: x does not exist"), "ATTACH ...")  # type: ignore[arg-type]
    assert clock == []


@pytest.fixture
def file_lake(tmp_path: Path) -> Iterator[LakeTarget]:
    target = lakemod.parse_target(
        f"ducklake:{tmp_path / 'meta.ducklake'}",
        None,  # no data path: DuckLake keeps the files beside the catalog
        base=tmp_path,
        where="w",
        # a PostgreSQL password in the environment means nothing to a file catalog
        secret={"EVALWH_PG_PASSWORD": "pg-secret"}.get,  # pragma: allowlist secret
    )
    yield target
    lakemod.release(target)


def test_a_file_catalog_attaches_without_options_and_loads_no_extension_on_its_own(
    file_lake: LakeTarget,
) -> None:
    con = lakemod.connect(file_lake, read_only=False, memory_limit="256MB")
    try:
        settings = con.execute(
            "SELECT current_setting('autoinstall_known_extensions'), "
            "current_setting('autoload_known_extensions'), "
            "(SELECT readonly FROM duckdb_databases() WHERE database_name = 'lake'), "
            "(SELECT path FROM duckdb_databases() WHERE database_name = 'lake')"
        ).fetchone()
        assert settings == (False, False, False, file_lake.catalog)  # no password appended
    finally:
        con.close()
    again = lakemod.connect(file_lake, read_only=True, memory_limit="256MB")
    try:
        assert again.execute(
            "SELECT readonly FROM duckdb_databases() WHERE database_name = 'lake'"
        ).fetchone() == (True,)
    finally:
        again.close()


def test_a_catalog_that_is_not_a_database_is_reported_with_the_fix(tmp_path: Path) -> None:
    (tmp_path / "meta.ducklake").write_text("not a catalog\n" * 100)
    target = LakeTarget(str(tmp_path / "meta.ducklake"))
    for read_only in (True, False):
        with pytest.raises(WarehouseError) as caught:
            lakemod.connect(target, read_only=read_only, memory_limit="256MB")
        assert type(caught.value) is WarehouseError  # not "nothing written yet"
        message = str(caught.value)
        assert message.startswith(f"cannot attach the DuckLake warehouse {target}: ")
        assert "not a valid DuckDB database file" in message
        assert message.endswith(
            "\n  fix: check the catalog (is PostgreSQL reachable, does the database exist, is "
            "EVALWH_PG_PASSWORD set?) and lake.data_path / lake.s3 (docs/scale-out.md)"
        )


def test_a_read_of_a_file_catalog_shares_the_writable_attach_of_the_process(
    file_lake: LakeTarget,
) -> None:
    # a DuckDB file can be attached once per process: the first read attaches it writable
    # and a later write uses that same attach
    reader = lakemod.cursor(file_lake, read_only=True, memory_limit="256MB")
    writer = lakemod.cursor(file_lake, read_only=False, memory_limit="256MB")
    assert_one_writable_attach(file_lake, reader, writer)


def assert_one_writable_attach(
    target: LakeTarget, reader: duckdb.DuckDBPyConnection, writer: duckdb.DuckDBPyConnection
) -> None:
    """The reader sees what the writer wrote: both are cursors of the process's one attach of
    ``target``, a writable one (then both are closed)."""
    try:
        writer.execute("CREATE TABLE t AS SELECT 1 AS x")
        assert reader.execute("SELECT x FROM t").fetchall() == [(1,)]
        assert [k for k in lakemod._INSTANCES if k[0] == target] == [(target, False)]
    finally:
        reader.close()
        writer.close()


def test_a_migration_another_writer_applied_meanwhile_is_skipped_and_the_rest_applied(
    file_lake: LakeTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    # on a lake, two first writers may migrate at once: each migration is looked up again in
    # its own transaction, and one the other writer committed meanwhile is skipped, not the
    # migrations after it
    first, *rest = connectmod.migrations()
    real = connectmod.applied_versions
    calls = [0]

    def other_writer_was_first(con: duckdb.DuckDBPyConnection) -> set[int]:
        calls[0] += 1
        if calls[0] == 1:  # the first migration's own look: the other writer has just run it
            con.execute(lakemod.lake_sql(first[2]))
            con.execute("INSERT INTO schema_migrations VALUES (?, ?, now())", list(first[:2]))
        return real(con)

    monkeypatch.setattr(connectmod, "applied_versions", other_writer_was_first)
    con = lakemod.connect(file_lake, read_only=False, memory_limit="256MB")
    try:
        assert connectmod._migrate(con, file_lake) == rest[-1][0]
        versions = con.execute("SELECT version FROM schema_migrations ORDER BY 1").fetchall()
    finally:
        con.close()
    assert [v for (v,) in versions] == [first[0]] + [v for v, _, _ in rest]  # each one once


def test_a_lake_ahead_of_this_evalwh_is_refused_naming_the_lake(file_lake: LakeTarget) -> None:
    con = lakemod.connect(file_lake, read_only=False, memory_limit="256MB")
    try:
        connectmod.migrate(con, file_lake)
        con.execute("INSERT INTO schema_migrations VALUES (9999, '9999_future', now())")
        connectmod._CURRENT.discard(file_lake)  # as a later process, which has not looked yet
        with pytest.raises(WarehouseError) as info:
            connectmod.check_schema(con, file_lake)
    finally:
        con.close()
    assert str(info.value) == (
        f"the warehouse {file_lake} is at schema version 9999, ahead of this evalwh (which knows "
        f"up to {connectmod.latest_version()}); upgrade evalwh to read it"
    )


def test_a_lake_behind_is_migrated_and_a_lake_found_current_is_not_read_again(
    file_lake: LakeTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    every = connectmod.migrations()
    con = lakemod.connect(file_lake, read_only=False, memory_limit="256MB")
    try:
        with monkeypatch.context() as older:  # a lake an older evalwh made: one migration short
            older.setattr(connectmod, "migrations", lambda: every[:-1])
            connectmod._migrate(con, file_lake)
        connectmod._CURRENT.discard(file_lake)
        # a reader of a lake behind this code sees its version, and a writer then migrates it
        assert connectmod.check_schema(con, file_lake) == every[-2][0]
        assert connectmod.migrate(con, file_lake) == every[-1][0]
        assert connectmod.schema_version(con) == every[-1][0]
        # migrated, or found current, it is not read again in this process: schemas only
        # move forward (a version ahead, added since, goes unseen)
        future = "INSERT INTO schema_migrations VALUES (9999, '9999_future', now())"
        con.execute(future)
        assert connectmod.check_schema(con, file_lake) == every[-1][0]
        con.execute("DELETE FROM schema_migrations WHERE version = 9999")
        connectmod._CURRENT.discard(file_lake)  # as a reader that has not looked yet
        assert connectmod.check_schema(con, file_lake) == every[-1][0]
        con.execute(future)
        assert connectmod.check_schema(con, file_lake) == every[-1][0]
    finally:
        con.close()
        connectmod._CURRENT.discard(file_lake)


def test_a_lake_migration_that_loses_a_race_is_retried_and_logged_as_such(
    file_lake: LakeTarget,
    clock: list[float],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # another first writer created a table meanwhile: "already exists" is retried as a conflict
    real, tries = connectmod._migrate, [0]

    def raced(con: duckdb.DuckDBPyConnection, path: Any) -> int:
        tries[0] += 1
        if tries[0] == 1:
            raise duckdb.CatalogException("Catalog Error: Table with name runs already exists!")
        return real(con, path)

    monkeypatch.setattr(connectmod, "_migrate", raced)
    con = lakemod.connect(file_lake, read_only=False, memory_limit="256MB")
    try:
        with caplog.at_level(logging.DEBUG, logger=lakemod.log.name):
            assert connectmod.migrate(con, file_lake) == connectmod.latest_version()
    finally:
        con.close()
        connectmod._CURRENT.discard(file_lake)
    assert tries == [2] and len(clock) == 1
    assert [m for m in caplog.messages if "conflict" in m] == [
        "migrate the lake: DuckLake conflict (try 1), retrying: "
        "Catalog Error: Table with name runs already exists!"
    ]


def test_a_read_connection_on_a_file_lake_uses_the_writable_attach_already_there(
    file_lake: LakeTarget,
) -> None:
    writer = connectmod.open_connection(file_lake, read_only=False)
    reader = connectmod.open_connection(file_lake, read_only=True)
    assert_one_writable_attach(file_lake, reader, writer)
