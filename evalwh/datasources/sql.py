"""The ``duckdb`` (alias ``sql``) datasource: pages of a query over anything DuckDB reads.

::

    cases:
      - source: duckdb
        params:
          query: SELECT ticket_id, body, lang FROM read_parquet('tickets/*.parquet')
          key: ticket_id        # optional: keyset paging on this unique, sortable column
          page_size: 1000       # rows per page (default 1000)
          setup: []             # optional statements run once first (LOAD, ATTACH ...)
        id: ticket_id
        metadata: [lang]

Paging: with ``key`` each page is its own query, ``... WHERE key > <last key> ORDER BY key
LIMIT page_size`` (keyset): stable and as cheap on page 1,000 as on page 1, and the right
choice for a live database (Postgres through the postgres extension). Without ``key`` the
pages are ``LIMIT page_size OFFSET n`` over the query as written: DuckDB keeps a file's row
order, so this is deterministic for Parquet/CSV/JSON files, but each page re-reads the rows
before it. Relative paths in the query resolve against the config's folder.

The connection is in memory, with spilling to disk turned off (``temp_directory = ''``): a
query too large to sort in memory fails rather than writing case data to a temporary file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalwh.errors import ConfigError

DEFAULT_PAGE_SIZE = 1000
MAX_PAGE_SIZE = 100_000
MEMORY_LIMIT = "512MB"


def _page_size(params: dict[str, Any], where: str) -> int:
    size = params.get("page_size", DEFAULT_PAGE_SIZE)
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_PAGE_SIZE:
        raise ConfigError(
            f"page_size must be a whole number from 1 to {MAX_PAGE_SIZE}, got {size!r}",
            where=f"{where}.page_size",
            fix=f"e.g. page_size: {DEFAULT_PAGE_SIZE}",
        )
    return size


class DuckDBSource:
    """A SQL query read page by page (keyset on ``key``, else LIMIT/OFFSET)."""

    def __init__(self, params: dict[str, Any], root: Path) -> None:
        where = "params"
        query = params.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ConfigError(
                "the duckdb datasource needs a query",
                where=f"{where}.query",
                fix="e.g. query: SELECT * FROM read_parquet('cases.parquet')",
            )
        key = params.get("key")
        if key is not None and (not isinstance(key, str) or not key):
            raise ConfigError("key must be a column name", where=f"{where}.key", fix="e.g. key: id")
        setup = params.get("setup") or []
        if not isinstance(setup, list) or not all(isinstance(s, str) for s in setup):
            raise ConfigError(
                "setup must be a list of SQL statements",
                where=f"{where}.setup",
                fix='e.g. setup: ["LOAD postgres"]',
            )
        unknown = set(params) - {"query", "key", "page_size", "setup"}
        if unknown:
            raise ConfigError(
                f"unknown duckdb datasource parameter(s): {', '.join(sorted(unknown))}",
                where=where,
                fix="use query, key, page_size and setup",
            )
        self.query = query.strip().rstrip(";")
        self.key = key
        self.page_size = _page_size(params, where)
        self.setup = setup
        self.root = root
        self._con: Any = None

    def _connection(self) -> Any:
        if self._con is None:
            import duckdb

            con = duckdb.connect()
            con.execute("SET temp_directory = ''")  # never spill case data to disk
            con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
            con.execute("SET file_search_path = $p", {"p": str(self.root)})
            for statement in self.setup:
                con.execute(statement)
            self._con = con
        return self._con

    def pages(self, cursor: Any | None) -> tuple[list[dict[str, Any]], Any | None]:
        con = self._connection()
        if self.key is not None:
            if cursor is None:
                self._check_key(con)
            column = '"' + self.key.replace('"', '""') + '"'
            text = f"SELECT * FROM ({self.query}) AS q"
            if cursor is not None:
                text += f" WHERE {column} > $after"
            text += f" ORDER BY {column} LIMIT {self.page_size}"
            result = con.execute(text, {"after": cursor} if cursor is not None else {})
        else:
            offset = int(cursor or 0)
            result = con.execute(
                f"SELECT * FROM ({self.query}) AS q LIMIT {self.page_size} OFFSET {offset}"
            )
        names = [d[0] for d in result.description]
        rows = [dict(zip(names, values, strict=True)) for values in result.fetchall()]
        if len(rows) < self.page_size:
            self.close()
            return rows, None
        if self.key is not None:
            return rows, rows[-1][self.key]
        return rows, int(cursor or 0) + len(rows)

    def _check_key(self, con: Any) -> None:
        names = [
            d[0] for d in con.execute(f"SELECT * FROM ({self.query}) AS q LIMIT 0").description
        ]
        if self.key not in names:
            raise ConfigError(
                f"the query has no column '{self.key}' (the key)",
                where="params.key",
                fix=f"use one of: {', '.join(names)}",
            )

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None
