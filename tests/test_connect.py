"""The warehouse's connection code in-process (evalwh/warehouse/connect.py): what a write
connection attaches and how. Written from mutation survivors (docs/testing.md)."""

from __future__ import annotations

from pathlib import Path

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
