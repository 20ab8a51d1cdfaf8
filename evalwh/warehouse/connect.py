"""Open the warehouse file, waiting out another process's lock, and migrate it.

DuckDB lets one process write a file at a time (or several read it). evalwh therefore holds a
connection only for as long as one statement batch needs it, and every open retries while
another evalwh process holds the lock, so a run, ``evalwh list``, MCP and the viewer can share
one file.

A DuckLake target (:mod:`evalwh.warehouse.lake`) stands wherever a path does: the same
functions attach it instead of opening a file, migrate it with the lake variant of the
migrations, and :func:`write_transaction` retries a commit that lost a race with another
writer.

Only writers migrate: a read (``list``, ``show``, ``sql`` ...) of a warehouse written by an
older evalwh says to run ``evalwh migrate``. A DuckDB file that is not an evalwh warehouse
(tables of its own, no ``schema_migrations``) is refused before anything is written to it.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, closing, contextmanager, nullcontext
from contextvars import ContextVar
from typing import Any, TypeVar

import duckdb

from evalwh.errors import WarehouseError
from evalwh.warehouse import lake
from evalwh.warehouse.ioerrors import io_guard, is_io_error, storage_error
from evalwh.warehouse.lake import LakeTarget, Location
from evalwh.warehouse.queries import keeps_macros
from evalwh.warehouse.resources import resource_dir

log = logging.getLogger("evalwh.warehouse")
MIGRATION_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
# DuckDB's own default is 80 % of RAM; evalwh caps its warehouse connections (setting
# memory_limit, docs/configuration.md). settings_for() sets it from the resolved settings.
_MEMORY_LIMIT = "2GB"
# The row group size of everything evalwh writes to a warehouse file. With DuckDB's default,
# 122,880 rows, the checkpoint that completes a row group of wide case rows cost a run's flush
# +370 MB and 2 s at a million cases; at this size a flush's peak stays near +90 MB and a flush
# takes a third less (benchmarks/README.md, "flat memory"). DuckDB sets it per attachment, so
# a write connection attaches the file (it stays a plain DuckDB file); every writer must use the
# same size, since a checkpoint merges row groups smaller than its own size.
ROW_GROUP_SIZE = 16_384
ATTACHED_AS = "warehouse"  # the file's catalog name in a write connection
# The files this thread holds a write connection on. A second connection to one of them from
# the same thread (a write attaches the file, which DuckDB lets one connection of a process do
# at a time) would wait for itself forever: it is refused at once instead.
_WRITING = threading.local()
T = TypeVar("T")
# Lakes this process has seen at this code's schema version (each check costs catalog trips).
_CURRENT: set[LakeTarget] = set()
# The read connection of the current ``Warehouse.reading()`` block, per thread and task: (the
# warehouse file, the connection). A write to that file from inside the block would wait for
# itself, so it is refused at once.
HELD: ContextVar[tuple[Location, duckdb.DuckDBPyConnection] | None] = ContextVar(
    "evalwh_read_block", default=None
)


def memory_limit() -> str:
    """The DuckDB memory_limit warehouse connections open with."""
    return _MEMORY_LIMIT


def set_memory_limit(limit: str) -> None:
    """The DuckDB memory_limit of every warehouse connection opened from now on."""
    global _MEMORY_LIMIT
    _MEMORY_LIMIT = limit


def _is_lock_error(exc: Exception) -> bool:
    """Another holder of the file: a process's lock, or a connection of this process opened
    in the other mode (a viewer page reading while a label is written); both end soon."""
    text = str(exc).lower()
    if "different configuration than existing connections" in text:
        return True
    if "unique file handle conflict" in text:  # attached by another connection of ours
        return True
    return "lock" in text and ("conflicting" in text or "could not set" in text)


def open_connection(
    path: Location, *, read_only: bool, wait_s: float | None = 30.0
) -> duckdb.DuckDBPyConnection:
    """Connect, retrying on another process's lock for up to ``wait_s`` seconds (None: forever).
    A write connection attaches the file with evalwh's ROW_GROUP_SIZE."""
    if not read_only:
        _refuse_inside_a_read_block(path)
    if isinstance(path, LakeTarget):  # no file lock: DuckLake serialises commits itself
        return lake.cursor(path, read_only=read_only, memory_limit=_MEMORY_LIMIT)
    if os.path.abspath(path) in _writing():
        raise WarehouseError(
            f"cannot open the warehouse {path} again while this thread holds a write "
            "connection on it: use that connection (or a shared_connection block)"
        )
    deadline = None if wait_s is None else time.monotonic() + wait_s
    delay, warned_at = 0.01, time.monotonic()
    while True:
        try:
            if read_only:
                return duckdb.connect(
                    str(path), read_only=True, config={"memory_limit": _MEMORY_LIMIT}
                )
            return _attached(path)
        except (duckdb.IOException, duckdb.ConnectionException, duckdb.BinderException) as exc:
            if not _is_lock_error(exc):
                if is_io_error(exc) and "database file" not in str(exc):
                    raise storage_error(path, exc, "open the warehouse") from None
                raise WarehouseError(
                    f"cannot open the warehouse {path}: {exc}\n  fix: {OPEN_FIX}"
                ) from None
            if deadline is not None and time.monotonic() > deadline:
                raise WarehouseError(
                    f"the warehouse {path} stayed locked by another process for {wait_s:.0f} s "
                    "(a DuckDB shell or notebook holding it open?); close it and retry"
                ) from None
            if time.monotonic() - warned_at > 10:
                log.warning("waiting for the warehouse lock on %s", path)
                warned_at = time.monotonic()
            time.sleep(delay)
            delay = min(delay * 2, 0.25)


def _refuse_inside_a_read_block(path: Location) -> None:
    held = HELD.get()
    if held is not None and held[0] == path:
        raise WarehouseError(
            f"cannot write the warehouse {path} inside a read block of the same request "
            "(Warehouse.reading): end the block first"
        )


def _attached(path: Any) -> duckdb.DuckDBPyConnection:
    """The file attached for writing (and USEd) in a new in-memory DuckDB, spilling beside the
    file as a direct connection would (``<file>.tmp``), its writes in ROW_GROUP_SIZE rows."""
    con = duckdb.connect(config={"memory_limit": _MEMORY_LIMIT, "temp_directory": f"{path}.tmp"})
    file = str(path).replace("'", "''")
    try:
        con.execute(f"ATTACH '{file}' AS {ATTACHED_AS} (ROW_GROUP_SIZE {ROW_GROUP_SIZE})")
        con.execute(f"USE {ATTACHED_AS}")
    except BaseException:
        con.close()
        raise
    return con


# The table that records the migrations applied to a warehouse (created before the first).
SCHEMA_MIGRATIONS_DDL = (
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    "version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMPTZ NOT NULL)"
)
OPEN_FIX = (
    "check that the path is an evalwh warehouse (a DuckDB file); if it is damaged, move it "
    "aside and run again (the Parquet exports next to it keep finished runs)"
)


def migrations() -> list[tuple[int, str, str]]:
    """(version, name, sql) for every file in migrations/, in order."""
    out = []
    for file in sorted(resource_dir("migrations").glob("*.sql")):
        match = MIGRATION_NAME.match(file.name)
        if not match:
            raise WarehouseError(f"badly named migration {file.name}: expected NNNN_name.sql")
        out.append((int(match.group(1)), file.stem, file.read_text(encoding="utf-8")))
    versions = [v for v, _, _ in out]
    if len(set(versions)) != len(versions):
        raise WarehouseError(f"duplicate migration numbers in {resource_dir('migrations')}")
    return out


def schema_version(con: duckdb.DuckDBPyConnection) -> int:
    # asked directly: an information_schema lookup first cost 10-30 ms on every connection
    try:
        row = con.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()
    except duckdb.CatalogException:  # no such table: a new file, or not an evalwh warehouse
        return 0
    return int(row[0]) if row else 0


def check_schema(con: duckdb.DuckDBPyConnection, path: Location) -> int:
    """The file's schema version; refuses a foreign DuckDB file and one newer than this code.

    On a lake both reads come from one snapshot: between two autocommitted reads another
    writer may commit a migration, and its tables would look foreign."""
    if isinstance(path, LakeTarget):
        if path in _CURRENT:
            return latest_version()
        with transaction(con):
            version = _check_schema(con, path)
        if version == latest_version():
            _CURRENT.add(path)  # schemas only move forward: no need to look again
        return version
    return _check_schema(con, path)


def _check_schema(con: duckdb.DuckDBPyConnection, path: Location) -> int:
    current = schema_version(con)
    if current == 0:
        tables = [
            r[0]
            for r in con.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_catalog = current_database() ORDER BY 1 LIMIT 5"
            ).fetchall()
        ]
        # an empty schema_migrations alone: another writer is migrating this warehouse now
        if tables and tables != ["schema_migrations"]:
            raise WarehouseError(
                f"{path} is a DuckDB file but not an evalwh warehouse (it has tables of its own: "
                f"{', '.join(tables)}); it was left unchanged. Point -o/--output-dir or "
                "settings.warehouse at another file"
            )
    latest = latest_version()
    if current > latest:
        raise WarehouseError(
            f"the warehouse {path} is at schema version {current}, ahead of this evalwh "
            f"(which knows up to {latest}); upgrade evalwh to read it"
        )
    return current


def migrate(con: duckdb.DuckDBPyConnection, path: Location) -> int:
    """Apply pending migrations, each in one transaction with its record (a new file's all
    in one transaction). Returns the version.

    On a lake each migration runs in its lake variant (:func:`evalwh.warehouse.lake.lake_sql`),
    and the schema_migrations row commits with it, so two writers migrating a fresh lake at
    once conflict: the loser retries, finds the migration applied and skips it."""
    if isinstance(path, LakeTarget):
        if path in _CURRENT:
            return latest_version()
        version = lake.retry_conflicts(
            lambda: _migrate(con, path), what="migrate the lake", also=("already exists",)
        )
        _CURRENT.add(path)
        return version
    return _migrate(con, path)


def _migrate(con: duckdb.DuckDBPyConnection, path: Location) -> int:
    available = migrations()
    latest = available[-1][0] if available else 0
    current = check_schema(con, path)
    on_lake = isinstance(path, LakeTarget)
    # a new file is created in one transaction, all or nothing: a commit each (16 of them)
    # was ~0.1 s of CPU and a WAL sync each, most of a first 1-case run's warehouse set-up
    new_file = current == 0 and not on_lake
    with transaction(con) if new_file else nullcontext(con):
        if current == 0:
            con.execute(lake.lake_sql(SCHEMA_MIGRATIONS_DDL) if on_lake else SCHEMA_MIGRATIONS_DDL)
        applied = applied_versions(con) if current else set()
        for version, name, sql in available:
            if version in applied:  # by set, not by the highest: a number reserved for a
                continue  # branch still in flight may land after a higher one was applied
            with nullcontext(con) if new_file else transaction(con):
                if on_lake and version in applied_versions(con):
                    continue  # another writer applied it since we looked
                con.execute(lake.lake_sql(sql) if on_lake else sql)
                con.execute("INSERT INTO schema_migrations VALUES (?, ?, now())", [version, name])
            log.info("applied migration %s to %s", name, path)
    return latest


def applied_versions(con: duckdb.DuckDBPyConnection) -> set[int]:
    """The migration numbers recorded in the file (by set: a number reserved for a branch in
    flight may land after a higher one was applied, and is applied then)."""
    if not schema_version(con):
        return set()
    return {int(r[0]) for r in con.execute("SELECT version FROM schema_migrations").fetchall()}


def latest_version() -> int:
    available = migrations()
    return available[-1][0] if available else 0


def register_stream(con: duckdb.DuckDBPyConnection, name: str, table: Any) -> None:
    """Register an Arrow table as the view ``name`` for ONE scan, through its Arrow C stream.

    DuckDB scans a registered pyarrow object through ``pyarrow.dataset``, whose first import
    costs a process ~60 ms of CPU (``pyarrow.compute`` wraps some 290 functions at import); a
    stream is read directly. A second scan of the view raises (the stream is consumed), so
    register again before each statement that reads it.
    """
    con.register(name, table.__arrow_c_stream__())


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """BEGIN ... COMMIT; on any failure ROLLBACK, without letting a failed rollback (a full
    disk, an invalidated database) hide the error that caused it."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
        con.execute("COMMIT")
    except BaseException:
        try:
            con.execute("ROLLBACK")
        except duckdb.Error as exc:
            log.debug("rollback failed after an error: %s", exc)
        raise


class _Held:
    """The connection a shared_connection block holds, and the cursors other threads use."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.owner = threading.get_ident()
        self.cursors = 0  # in use by other threads; the block's end waits for them
        self.idle = threading.Condition()


_SHARED: dict[str, _Held] = {}  # warehouse path -> its shared connection
_SHARED_LOCK = threading.Lock()


@contextmanager
def shared_connection(path: Location) -> Iterator[None]:
    """Until the block ends, every read or write connection this process asks for on ``path``
    is one read-write connection, opened (waiting for the file as long as needed) and migrated
    once; another thread gets a cursor of it (the block's end waits until it is given back).
    A run's closing steps (export, final status, summary, errors, thresholds) would otherwise
    open and close the file about six times, each ~15-25 ms of CPU (connect, schema check, a
    checkpoint at close). Other processes wait for the file meanwhile, as they wait for a
    flush. A nested block uses the outer one's. On a DuckLake there is no file to hold: each
    step opens its own connection.
    """
    if isinstance(path, LakeTarget):
        yield
        return
    key = os.path.abspath(path)
    if key in _SHARED:
        yield
        return
    with write_connection(path, wait_s=None) as con:
        held = _SHARED[key] = _Held(con)
        try:
            yield
        finally:
            with _SHARED_LOCK:
                del _SHARED[key]
            with held.idle:  # closing the connection would close the cursors in use
                held.idle.wait_for(lambda: held.cursors == 0)


def _shared(path: Location) -> AbstractContextManager[duckdb.DuckDBPyConnection] | None:
    """The shared connection on ``path`` for this thread (a cursor in another one), or None."""
    if not _SHARED or isinstance(path, LakeTarget):
        return None
    with _SHARED_LOCK:
        held = _SHARED.get(os.path.abspath(path))
        if held is None:
            return None
        if held.owner == threading.get_ident():
            return nullcontext(held.con)
        with held.idle:
            held.cursors += 1
    return _cursor(held)


@contextmanager
def _cursor(held: _Held) -> Iterator[duckdb.DuckDBPyConnection]:
    try:
        with closing(held.con.cursor()) as cursor:
            cursor.execute(f"USE {ATTACHED_AS}")  # a cursor starts in the in-memory catalog
            yield cursor
    finally:
        with held.idle:
            held.cursors -= 1
            held.idle.notify_all()


@contextmanager
def write_connection(
    path: Location, *, wait_s: float | None = 30.0
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A short-lived read-write connection on a migrated warehouse (created when missing), or
    the one a ``shared_connection`` block holds."""
    if isinstance(path, LakeTarget):
        con = open_connection(path, read_only=False)
        try:
            migrate(con, path)
            yield con
        finally:
            con.close()
        return
    with io_guard(path, "write the warehouse"):
        shared = _shared(path)
        if shared is not None:
            with shared as con:
                yield con
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        con = open_connection(path, read_only=False, wait_s=wait_s)
        key = os.path.abspath(path)
        _writing().add(key)
        try:
            migrate(con, path)
            yield con
        finally:
            _writing().discard(key)
            con.close()


def _writing() -> set[str]:
    """The files this thread holds a write connection on (``_WRITING``)."""
    held: set[str] | None = getattr(_WRITING, "paths", None)
    if held is None:
        held = _WRITING.paths = set()
    return held


def write_transaction(
    path: Location,
    body: Callable[[duckdb.DuckDBPyConnection], T],
    *,
    what: str,
    backoff: lake.Backoff | None = None,
) -> T:
    """``body(con)`` in one transaction on a short-lived write connection. On a lake, a commit
    that lost a race with another writer is retried whole, with ``backoff`` (which counts the
    retries; a fresh one when None), until it lands; each retry is logged naming ``what`` the
    transaction does ("flush run r-1")."""

    def attempt() -> T:
        with (
            write_connection(path, wait_s=None) as con,
            transaction(con),
        ):
            return body(con)

    if isinstance(path, LakeTarget):
        target = path

        def lake_attempt() -> T:
            with _lake_transaction(target) as con:
                return body(con)

        return lake.retry_conflicts(lake_attempt, what=what, backoff=backoff)
    return attempt()


@contextmanager
def _lake_transaction(path: LakeTarget) -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor of the lake (migrated) inside one transaction, pointed at the lake only once
    the transaction has begun: every statement, ``USE`` included, then reads the one snapshot
    the transaction took (a ``USE`` before ``BEGIN`` cost a catalog transaction of its own,
    6 of a flush's 52 PostgreSQL statements; benchmarks/README.md, the lake group)."""
    _refuse_inside_a_read_block(path)
    con = lake.cursor(path, read_only=False, memory_limit=_MEMORY_LIMIT, use=path not in _CURRENT)
    try:
        migrate(con, path)
        with transaction(con):
            con.execute(f"USE {lake.ALIAS}")
            yield con
    finally:
        con.close()


@contextmanager
def read_connection(
    path: Location, *, wait_s: float | None = 30.0
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A short-lived read-only connection. Never writes: a warehouse behind this code is
    refused with the command that upgrades it (``evalwh migrate``). Inside a
    ``shared_connection`` block: the block's (migrated) connection."""
    shared = _shared(path)
    if shared is not None:
        with shared as con:
            yield con
        return
    if not path.exists():
        raise WarehouseError(
            f"no warehouse at {path}: nothing has been run here yet (run `evalwh run`)"
        )
    with io_guard(str(path), "read the warehouse"):
        con = open_connection(path, read_only=True, wait_s=wait_s)
    try:
        with io_guard(str(path), "read the warehouse"):
            version = check_schema(con, path)
        if {v for v, _, _ in migrations()} - applied_versions(con):
            raise WarehouseError(
                f"the warehouse {path} is at schema version {version} and this evalwh "
                f"reads version {latest_version()}: run `evalwh migrate` to upgrade it "
                "(read commands never change the file)"
            )
        if not isinstance(path, LakeTarget):  # a file's read connection runs no transaction
            keeps_macros(con)  # so the macros defined on it stay: defined once
        yield con  # the caller names what its own statements read or write
    finally:
        con.close()


def migrate_file(path: Location) -> tuple[int, int]:
    """Upgrade a warehouse to this evalwh's schema: (version before, version after)."""
    if not isinstance(path, LakeTarget) and not path.exists():  # a lake is created here
        raise WarehouseError(f"no warehouse at {path} to migrate")
    with io_guard(str(path), "migrate the warehouse"):
        con = open_connection(path, read_only=False, wait_s=None)
        try:
            before = check_schema(con, path)
            return before, migrate(con, path)
        finally:
            con.close()
