"""``evalwh sql``: one read-only query over the warehouse, nothing else.

The text must parse as a single SELECT-like statement (SELECT, WITH, FROM, VALUES, TABLE,
DESCRIBE, SHOW, SUMMARIZE); ATTACH, COPY, INSTALL, LOAD, SET, PRAGMA, CREATE, INSERT and
everything else are refused. The query runs on a private in-memory DuckDB that attaches the
warehouse READ_ONLY and then disables file access and locks its configuration, so it can
neither write the warehouse nor read or write other files.

Bounds (:class:`QueryBounds`): the statement runs with a DuckDB ``memory_limit`` and
``threads`` cap, and a timer thread calls ``conn.interrupt()`` once ``timeout_s`` has passed
(query and fetching together), which ends it with a :class:`QueryTimeoutError`. Results are
read as Arrow record batches (:func:`stream_readonly`), so a caller that writes rows as they
come never holds the whole result.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evalwh.errors import UsageError, WarehouseError

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from evalwh.warehouse.lake import LakeTarget

#: Table functions a read-only query may not name: the secret manager's listing (it shows an S3
#: key id; passwords and secret keys it redacts itself) and the two that run a query built
#: from a string, which could name it out of sight. Credentials are kept out of every other
#: catalog function and setting where the lake is attached (evalwh.warehouse.lake.connect).
HIDDEN = frozenset({"duckdb_secrets", "query", "query_table"})
ALLOWED = ("SELECT", "WITH", "FROM", "VALUES", "TABLE", "DESCRIBE", "SHOW", "SUMMARIZE", "(")
COMMENTS = re.compile(r"(--[^\n]*|/\*.*?\*/|\s)+", re.S)
BATCH_ROWS = 10_000


@dataclass(frozen=True)
class QueryBounds:
    """Limits of one read-only statement (settings query_timeout_s, query_memory_limit,
    query_threads; MCP uses mcp_query_timeout_s)."""

    timeout_s: float | None = 30.0  # None or 0: no limit
    memory_limit: str = "1GB"
    threads: int = 2


class QueryTimeoutError(UsageError):
    """A read-only query ran past its time bound and was interrupted."""

    def __init__(self, timeout_s: float) -> None:
        super().__init__(
            f"the query ran longer than {timeout_s:g} s and was stopped\n"
            "  fix: narrow it (WHERE, LIMIT, aggregate first), or raise the bound with "
            "--timeout / the setting query_timeout_s (MCP: mcp_query_timeout_s)"
        )
        self.timeout_s = timeout_s


class _Deadline:
    """Interrupts a connection once ``timeout_s`` has passed (a daemon timer thread)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, timeout_s: float | None) -> None:
        self.fired = False
        self.timeout_s = timeout_s or 0.0
        self._timer: threading.Timer | None = None
        if timeout_s:
            self._timer = threading.Timer(timeout_s, self._fire, args=(con,))
            self._timer.daemon = True
            self._timer.start()

    def _fire(self, con: duckdb.DuckDBPyConnection) -> None:
        self.fired = True
        con.interrupt()

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def error(self, exc: Exception) -> UsageError:
        if self.fired:
            return QueryTimeoutError(self.timeout_s)
        return UsageError(f"query failed: {exc}")


def first_word(text: str) -> str:
    rest = COMMENTS.sub(" ", text).strip()
    if rest.startswith("("):
        return "("
    match = re.match(r"[A-Za-z_]+", rest)
    return match.group(0).upper() if match else rest[:10]


def check_readonly(text: str) -> str:
    """The statement to run, or a UsageError saying why it is not a single read-only query."""
    import duckdb

    if not text.strip():
        raise UsageError("no SQL given")
    try:
        statements = duckdb.extract_statements(text)
    except duckdb.Error as exc:
        raise UsageError(f"SQL does not parse: {exc}") from None
    if len(statements) != 1:
        raise UsageError(
            f"evalwh sql runs one statement at a time; got {len(statements)} "
            "(a PIVOT statement counts as two: write PIVOT inside a FROM clause instead)"
        )
    kind = statements[0].type.name
    word = first_word(text)
    if kind != "SELECT" or word not in ALLOWED:
        raise UsageError(
            f"evalwh sql is read-only: {word if kind == 'SELECT' else kind} statements are "
            "refused; use SELECT, WITH, FROM, VALUES, DESCRIBE, SHOW or SUMMARIZE "
            "(open the file with duckdb yourself to change it)"
        )
    hidden = _hidden_names(text)
    if hidden:
        raise UsageError(
            f"evalwh sql does not read {', '.join(sorted(hidden))}: it can reveal the "
            "warehouse's credentials (list tables with SHOW TABLES or duckdb_tables())"
        )
    return text.strip().rstrip(";")


def _hidden_names(text: str) -> set[str]:
    """The :data:`HIDDEN` functions the statement names, as a table function or as a table
    (DuckDB calls a table function named without parentheses). A statement DuckDB cannot
    serialise (a PIVOT) is searched as text instead, which may refuse a harmless one."""
    import json

    import duckdb

    con = duckdb.connect()
    try:
        found = con.execute("SELECT json_serialize_sql(?)", [text]).fetchone()
    finally:
        con.close()
    tree = json.loads(found[0]) if found else {"error": True}
    if tree.get("error"):
        lowered = text.lower()
        return {name for name in HIDDEN if re.search(rf"\b{name}\b", lowered)}
    names: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key in ("function_name", "table_name"):
                value = node.get(key)
                if isinstance(value, str) and value.lower() in HIDDEN:
                    names.add(value.lower())
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(tree)
    return names


def _attach(
    path: Path | LakeTarget, bounds: QueryBounds, wait_s: float = 30.0
) -> duckdb.DuckDBPyConnection:
    import duckdb

    from evalwh.warehouse.connect import OPEN_FIX, _is_lock_error
    from evalwh.warehouse.lake import LakeTarget

    if isinstance(path, LakeTarget):
        return _attach_lake(path, bounds)
    con = duckdb.connect(config={"memory_limit": bounds.memory_limit, "threads": bounds.threads})
    quoted = str(path).replace("'", "''")
    deadline, delay = time.monotonic() + wait_s, 0.01
    while True:
        try:
            con.execute(f"ATTACH '{quoted}' AS warehouse (READ_ONLY)")
            break
        except (duckdb.IOException, duckdb.ConnectionException) as exc:
            if not _is_lock_error(exc) or time.monotonic() > deadline:
                con.close()
                raise WarehouseError(
                    f"cannot open the warehouse {path}: {exc}\n  fix: {OPEN_FIX}"
                ) from None
            time.sleep(delay)
            delay = min(delay * 2, 0.25)
    con.execute("USE warehouse")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con


def _attach_lake(target: LakeTarget, bounds: QueryBounds) -> duckdb.DuckDBPyConnection:
    """A fresh read-only attach of a DuckLake (never the process's shared one: the bounds
    below lock its configuration). The catalog is read in PostgreSQL READ ONLY transactions;
    the only files it may open are the lake's data files (``allowed_directories``)."""
    from evalwh.warehouse import lake

    if not target.on_postgres:
        lake.release(target)  # a DuckDB file catalog attaches once per process
    con = lake.connect(target, read_only=True, memory_limit=bounds.memory_limit)
    con.execute(f"SET threads = {int(bounds.threads)}")
    # without lake.data_path the files are where the catalog says (DuckLake's default for a
    # file catalog: <catalog>.files/), so that folder is the one to allow
    data_path = target.data_path or _catalog_data_path(con, lake.ALIAS)
    if data_path:
        con.execute("SET allowed_directories = ?", [[data_path]])
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con


def open_readonly(path: Path | LakeTarget, bounds: QueryBounds) -> duckdb.DuckDBPyConnection:
    """A connection that can only read the warehouse (or lake): attached READ_ONLY, file
    access off and its configuration locked, within ``bounds``' memory and threads. A
    warehouse written by an older evalwh is refused with the command that upgrades it."""
    from evalwh.warehouse.connect import read_connection

    with read_connection(path):  # the schema checked: an older warehouse says `evalwh migrate`
        pass
    return _attach(path, bounds)


def _catalog_data_path(con: duckdb.DuckDBPyConnection, alias: str) -> str | None:
    row = con.execute(
        "SELECT value FROM ducklake_options(?) WHERE option_name = 'data_path'", [alias]
    ).fetchone()
    return str(row[0]) if row and row[0] else None


@contextmanager
def stream_readonly(
    path: Path | LakeTarget,
    text: str,
    *,
    bounds: QueryBounds | None = None,
    batch_rows: int = BATCH_ROWS,
) -> Iterator[tuple[pa.Schema, Iterator[pa.RecordBatch]]]:
    """Run one read-only query; yield its schema and an iterator of record batches.

    The time bound covers the query and the fetching of its rows; a DuckDB error or the
    timeout surfaces as a UsageError (:class:`QueryTimeoutError`) from either.
    """
    import duckdb

    bounds = bounds or QueryBounds()
    sql = check_readonly(text)
    con = open_readonly(path, bounds)
    deadline = _Deadline(con, bounds.timeout_s)
    try:
        try:
            reader = con.execute(sql).to_arrow_reader(batch_size=batch_rows)
        except (duckdb.Error, RuntimeError) as exc:
            raise deadline.error(exc) from None

        def batches() -> Iterator[pa.RecordBatch]:
            while True:
                try:
                    batch = reader.read_next_batch()
                except StopIteration:
                    return
                except (duckdb.Error, RuntimeError, OSError) as exc:
                    raise deadline.error(exc) from None
                yield batch

        yield reader.schema, batches()
    finally:
        deadline.cancel()
        con.close()


def run_readonly(
    path: Path | LakeTarget,
    text: str,
    *,
    limit: int | None = None,
    bounds: QueryBounds | None = None,
) -> tuple[pa.Table, bool]:
    """Run one read-only query; return at most ``limit`` rows and whether more were left."""
    import pyarrow as pa

    size = min(limit or BATCH_ROWS, BATCH_ROWS)
    with stream_readonly(path, text, bounds=bounds, batch_rows=size) as (schema, batches):
        kept, rows = [], 0
        for batch in batches:
            kept.append(batch)
            rows += batch.num_rows
            if limit is not None and rows > limit:
                break
        table = pa.Table.from_batches(kept, schema=schema)
    if limit is not None and table.num_rows > limit:
        return table.slice(0, limit), True
    return table, False
