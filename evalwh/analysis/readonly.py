"""``evalwh sql``: one read-only query over the warehouse, nothing else.

The text must parse as a single SELECT-like statement (SELECT, WITH, FROM, VALUES, TABLE,
DESCRIBE, SHOW, SUMMARIZE); ATTACH, COPY, INSTALL, LOAD, SET, PRAGMA, CREATE, INSERT and
everything else are refused. The query runs on a private in-memory DuckDB that attaches the
warehouse READ_ONLY and then disables file access and locks its configuration, so it can
neither write the warehouse nor read or write other files.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

from evalwh.errors import UsageError, WarehouseError

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

ALLOWED = ("SELECT", "WITH", "FROM", "VALUES", "TABLE", "DESCRIBE", "SHOW", "SUMMARIZE", "(")
COMMENTS = re.compile(r"(--[^\n]*|/\*.*?\*/|\s)+", re.S)


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
    return text.strip().rstrip(";")


def _attach(path: Path, wait_s: float = 30.0) -> duckdb.DuckDBPyConnection:
    import duckdb

    from evalwh.warehouse.connect import _is_lock_error

    con = duckdb.connect()
    quoted = str(path).replace("'", "''")
    deadline, delay = time.monotonic() + wait_s, 0.01
    while True:
        try:
            con.execute(f"ATTACH '{quoted}' AS warehouse (READ_ONLY)")
            break
        except (duckdb.IOException, duckdb.ConnectionException) as exc:
            if not _is_lock_error(exc) or time.monotonic() > deadline:
                con.close()
                raise WarehouseError(f"cannot open the warehouse {path}: {exc}") from None
            time.sleep(delay)
            delay = min(delay * 2, 0.25)
    con.execute("USE warehouse")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con


def run_readonly(path: Path, text: str, *, limit: int | None = None) -> tuple[pa.Table, bool]:
    """Run one read-only query; return at most ``limit`` rows and whether more were left."""
    import duckdb
    import pyarrow as pa

    from evalwh.warehouse.connect import read_connection

    sql = check_readonly(text)
    with read_connection(path):  # migrate a warehouse written by an older evalwh first
        pass
    con = _attach(path)
    try:
        size = min(limit or 10_000, 10_000)
        reader = con.execute(sql).to_arrow_reader(batch_size=size)
        batches, rows = [], 0
        for batch in reader:
            batches.append(batch)
            rows += batch.num_rows
            if limit is not None and rows > limit:
                break
        table = pa.Table.from_batches(batches, schema=reader.schema)
    except duckdb.Error as exc:
        raise UsageError(f"query failed: {exc}") from None
    finally:
        con.close()
    if limit is not None and table.num_rows > limit:
        return table.slice(0, limit), True
    return table, False
