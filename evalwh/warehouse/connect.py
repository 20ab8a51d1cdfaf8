"""Open the warehouse file, waiting out another process's lock, and migrate it.

DuckDB lets one process write a file at a time (or several read it). evalwh therefore holds a
connection only for as long as one statement batch needs it, and every open retries while
another evalwh process holds the lock, so a run, ``evalwh list``, MCP and the viewer can share
one file.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from evalwh.errors import WarehouseError
from evalwh.resources import resource_dir

log = logging.getLogger("evalwh.warehouse")
MIGRATION_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
# DuckDB's own default is 80 % of RAM; evalwh caps its warehouse connections (setting
# memory_limit, docs/configuration.md). settings_for() sets it from the resolved settings.
_MEMORY_LIMIT = "2GB"


def set_memory_limit(limit: str) -> None:
    """The DuckDB memory_limit of every warehouse connection opened from now on."""
    global _MEMORY_LIMIT
    _MEMORY_LIMIT = limit


def _is_lock_error(exc: Exception) -> bool:
    text = str(exc).lower()
    return "lock" in text and ("conflicting" in text or "could not set" in text)


def open_connection(
    path: Path, *, read_only: bool, wait_s: float | None = 30.0
) -> duckdb.DuckDBPyConnection:
    """Connect, retrying on another process's lock for up to ``wait_s`` seconds (None: forever)."""
    deadline = None if wait_s is None else time.monotonic() + wait_s
    delay, warned_at = 0.01, time.monotonic()
    while True:
        try:
            return duckdb.connect(
                str(path), read_only=read_only, config={"memory_limit": _MEMORY_LIMIT}
            )
        except (duckdb.IOException, duckdb.ConnectionException) as exc:
            if not _is_lock_error(exc):
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
    exists = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_migrations'"
    ).fetchone()
    if not exists or not exists[0]:
        return 0
    row = con.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()
    return int(row[0]) if row else 0


def migrate(con: duckdb.DuckDBPyConnection, path: Path) -> int:
    """Apply pending migrations, each in one transaction with its record. Returns the version."""
    available = migrations()
    latest = available[-1][0] if available else 0
    current = schema_version(con)
    if current > latest:
        raise WarehouseError(
            f"the warehouse {path} is at schema version {current}, ahead of this evalwh "
            f"(which knows up to {latest}); upgrade evalwh to read it"
        )
    if current == 0:
        con.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            "version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMPTZ NOT NULL)"
        )
    for version, name, sql in available:
        if version <= current:
            continue
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(sql)
            con.execute("INSERT INTO schema_migrations VALUES (?, ?, now())", [version, name])
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
        log.info("applied migration %s to %s", name, path)
    return latest


def latest_version() -> int:
    available = migrations()
    return available[-1][0] if available else 0


@contextmanager
def write_connection(
    path: Path, *, wait_s: float | None = 30.0
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A short-lived read-write connection on a migrated warehouse (created when missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    con = open_connection(path, read_only=False, wait_s=wait_s)
    try:
        migrate(con, path)
        yield con
    finally:
        con.close()


@contextmanager
def read_connection(
    path: Path, *, wait_s: float | None = 30.0
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A short-lived read-only connection; migrates first when the file is behind this code."""
    if not path.exists():
        with write_connection(path, wait_s=wait_s):
            pass
    con = open_connection(path, read_only=True, wait_s=wait_s)
    try:
        version = schema_version(con)
        if version != latest_version():
            con.close()
            with write_connection(path, wait_s=wait_s):
                pass
            con = open_connection(path, read_only=True, wait_s=wait_s)
        yield con
    finally:
        con.close()
