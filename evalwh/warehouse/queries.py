"""The registry of named queries in ``sql/``: one loader for the CLI, the API and MCP.

Each ``sql/<name>.sql`` starts with header comments::

    -- title: Summary matrix
    -- description: Per variant x model: pass rate with its Wilson interval, score, latency, cost.
    -- params: run_id

and uses named parameters (``$run_id``). Results come back as Arrow tables.

The functions DuckDB lacks (Student's t quantile and p-value, Wilson bounds, ...) are temporary
macros in ``sql/macros/*.sql``, defined on the connection before a named query runs (on a read
connection once: defining them costs 5-15 ms), so that each formula is written once for all the
queries that use it.
"""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import duckdb
import pyarrow as pa

from evalwh.warehouse.resources import resource_dir

HEADER = re.compile(r"^--\s*(title|description|params):\s*(.*)$")
PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class NamedQuery:
    name: str
    title: str
    description: str
    params: tuple[str, ...]
    sql: str


def _parse(name: str, text: str) -> NamedQuery:
    meta: dict[str, str] = {}
    for line in text.splitlines():
        match = HEADER.match(line.strip())
        if match:
            meta[match.group(1)] = match.group(2).strip()
        elif line.strip() and not line.strip().startswith("--"):
            break
    if "title" not in meta or "description" not in meta:
        raise ValueError(f"sql/{name}.sql must start with '-- title:' and '-- description:' lines")
    declared = tuple(p.strip() for p in meta.get("params", "").split(",") if p.strip())
    used = tuple(dict.fromkeys(PARAM.findall(_strip_comments(text))))
    if set(declared) != set(used):
        raise ValueError(f"sql/{name}.sql declares params {declared} but uses {used}")
    return NamedQuery(name, meta["title"], meta["description"], declared, text)


def _strip_comments(text: str) -> str:
    return "\n".join(line.split("--", 1)[0] for line in text.splitlines())


@lru_cache(maxsize=1)
def registry() -> dict[str, NamedQuery]:
    folder = resource_dir("sql")
    return {
        f.stem: _parse(f.stem, f.read_text(encoding="utf-8")) for f in sorted(folder.glob("*.sql"))
    }


@lru_cache(maxsize=1)
def macros() -> str:
    """The ``CREATE OR REPLACE TEMP MACRO`` statements of ``sql/macros/*.sql``, in name order."""
    folder = resource_dir("sql") / "macros"
    return "\n".join(f.read_text(encoding="utf-8") for f in sorted(folder.glob("*.sql")))


# Read connections that never run a transaction (``connect.read_connection``'s): macros defined
# on one stay until it closes. On any other connection a ROLLBACK would drop macros defined
# inside its transaction, so they are defined before each query there. Weak sets: a connection
# closed and collected drops out, so a new one never inherits another's entry.
_KEEPS_MACROS: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()
_WITH_MACROS: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()


def keeps_macros(con: duckdb.DuckDBPyConnection) -> None:
    """Mark ``con`` as a connection that runs no transaction: :func:`define_macros` then
    defines the macros on it once."""
    _KEEPS_MACROS.add(con)


def define_macros(con: duckdb.DuckDBPyConnection) -> None:
    """Define ``sql/macros/*.sql`` on ``con``: once on a connection :func:`keeps_macros`
    marked, else every time."""
    if con in _WITH_MACROS:
        return
    con.execute(macros())
    if con in _KEEPS_MACROS:
        _WITH_MACROS.add(con)


def get(name: str) -> NamedQuery:
    try:
        return registry()[name]
    except KeyError:
        raise KeyError(f"no query named {name!r}; known: {', '.join(registry())}") from None


def run_query(con: duckdb.DuckDBPyConnection, name: str, **params: Any) -> pa.Table:
    """Execute ``sql/<name>.sql`` with named parameters and return an Arrow table."""
    query = get(name)
    missing = [p for p in query.params if p not in params]
    if missing:
        raise TypeError(f"query {name!r} needs parameter(s): {', '.join(missing)}")
    args = {p: params[p] for p in query.params}
    define_macros(con)  # temporary: each connection holds its own
    return con.execute(query.sql, args).to_arrow_table()
