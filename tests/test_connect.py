"""The warehouse's connection code in-process (evalwh/warehouse/connect.py): what a write
connection attaches and how. Written from mutation survivors (docs/testing.md)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from evalwh.errors import WarehouseError
from evalwh.warehouse import connect


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
