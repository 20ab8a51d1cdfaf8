"""The duckdb (sql) datasource (evalwh/datasources/sql.py): keyset and offset paging, and the
checks on its parameters."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from evalwh.datasources import iter_pages
from evalwh.datasources.sql import DuckDBSource
from evalwh.errors import ConfigError


def test_duckdb_keyset_and_offset_paging(tmp_path: Path) -> None:

    duckdb.sql(
        f"COPY (SELECT i AS id, 'q' || i AS q FROM range(25) t(i) ORDER BY random()) "
        f"TO '{tmp_path / 'c.parquet'}' (FORMAT parquet)"
    )
    keyset = DuckDBSource(
        {"query": "SELECT * FROM 'c.parquet'", "key": "id", "page_size": 10}, tmp_path
    )
    pages = list(iter_pages(keyset))
    assert [len(p) for p in pages] == [10, 10, 5]
    assert [r["id"] for p in pages for r in p] == list(range(25))  # in key order
    offset = DuckDBSource({"query": "SELECT * FROM 'c.parquet'", "page_size": 5}, tmp_path)
    rows, cursor = offset.pages(None)
    assert len(rows) == 5 and cursor == 5
    rows, cursor = offset.pages(20)
    assert len(rows) == 5 and cursor == 25  # a full last page: one more (empty) page ends it
    assert offset.pages(25) == ([], None)
    everything = [r["id"] for p in iter_pages(offset) for r in p]
    assert sorted(everything) == list(range(25)) and len(everything) == 25


def test_duckdb_source_checks_its_params(tmp_path: Path) -> None:
    for params, message in (
        ({}, "needs a query"),
        ({"query": "SELECT 1", "page_size": 0}, "page_size must be"),
        ({"query": "SELECT 1", "page_size": 100_001}, "page_size must be"),
        ({"query": "SELECT 1", "limit": 3}, "unknown duckdb datasource parameter"),
    ):
        with pytest.raises(ConfigError, match=message):
            DuckDBSource(params, tmp_path)
    assert DuckDBSource({"query": "SELECT 1", "page_size": 100_000}, tmp_path).page_size == 100_000
    with pytest.raises(ConfigError, match="no column 'nope'"):
        DuckDBSource({"query": "SELECT 1 AS a", "key": "nope", "page_size": 1}, tmp_path).pages(
            None
        )
