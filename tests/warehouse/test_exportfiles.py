"""The Parquet export's layout (evalwh/warehouse/exportfiles.py): one Hive-partitioned folder
per table, JSON columns as text, and the move of exports kept in the layout before it."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.parquet as pq
import pytest

import evalwh
from evalwh.warehouse import exportfiles
from evalwh.warehouse.store import Warehouse
from tests.builders import ROWS_CONFIG
from tests.conftest import dead_pid, write


def old_layout_export(db: Path, run_id: str, exports: Path) -> Path:
    """The run's export as evalwh wrote it before schema version 2: both tables in one
    ``run_id=<id>/`` folder, the JSON columns with Parquet's JSON annotation (the COPY of
    that version, verbatim)."""
    folder = exports / f"run_id={run_id}"
    folder.mkdir(parents=True)
    with duckdb.connect(str(db), read_only=True) as con:
        for table in ("cases", "scores"):
            con.execute(
                f"COPY (SELECT * FROM {table} WHERE run_id = $run_id) TO "
                f"'{(folder / f'{table}.parquet').as_posix()}' (FORMAT parquet, COMPRESSION "
                f"zstd, KV_METADATA {{schema_version: '1', run_id: '{run_id}'}})",
                {"run_id": run_id},
            )
    return folder


@pytest.fixture
def two_runs(tmp_path: Path) -> tuple[Path, list[str]]:
    cfg = write(tmp_path / "eval.yaml", ROWS_CONFIG)
    out = tmp_path / "out"
    ids = [evalwh.run_eval(cfg, output_dir=out).run_id for _ in range(2)]
    return out, ids


def test_the_next_export_moves_exports_of_the_old_layout_into_one_folder_per_table(
    two_runs: tuple[Path, list[str]], caplog: pytest.LogCaptureFixture
) -> None:
    """A warehouse exported before schema version 2 holds ``exports/run_id=<id>/{cases,
    scores}.parquet``. The next export (of any run) rewrites those files into
    ``cases/run_id=<id>/`` and ``scores/run_id=<id>/`` with text JSON columns, removes the old
    folder with a killed export's leftover in it, and says so: the folder is never left half
    in one layout and half in the other."""
    out, (first, second) = two_runs
    db, exports = out / "warehouse.duckdb", out / "exports"
    for table in ("cases", "scores"):  # as an older evalwh would have left the first run
        (exportfiles.final_file(exports, table, first)).unlink()
    old = old_layout_export(db, first, exports)
    assert pl.read_parquet(old / "cases.parquet").schema["vars"] == pl.Binary  # the bug
    (old / f".cases.parquet.tmp-{dead_pid()}-abcdef").write_bytes(b"half a file")

    with caplog.at_level(logging.WARNING, logger="evalwh.warehouse"):
        Warehouse(db).export_run(second, exports)

    assert not old.exists()
    assert "moved the Parquet exports of 1 run(s)" in caplog.text
    with duckdb.connect(str(db), read_only=True) as con:
        counts = {
            t: con.execute(f"SELECT count(*) FROM {t} WHERE run_id = ?", [first]).fetchone()[0]  # type: ignore[index]
            for t in ("cases", "scores")
        }
    for table in ("cases", "scores"):
        file = exportfiles.final_file(exports, table, first)
        meta = pq.read_metadata(file).metadata
        assert meta[b"schema_version"] == b"2" and meta[b"run_id"] == first.encode()
        frame = pl.read_parquet(file)
        assert frame.height == counts[table]
        json_column = {"cases": "vars", "scores": "details"}[table]
        assert frame.schema[json_column] == pl.String
        assert meta[b"json_columns"].decode().split(",").count(json_column) == 1
    moved = pl.read_parquet(exportfiles.final_file(exports, "cases", first))
    assert sorted(json.loads(v)["q"] for v in moved["vars"]) == ["one", "three", "two"]
    both = pl.scan_parquet(exports / "cases", hive_partitioning=True).collect()
    assert sorted(both["run_id"].unique()) == [first, second]


def test_a_file_evalwh_did_not_write_keeps_the_old_folder_and_is_named(
    two_runs: tuple[Path, list[str]], caplog: pytest.LogCaptureFixture
) -> None:
    """The old folder goes only when nothing else is in it: a file of the user's stays where
    it is, and the warning names it; the tables still move. A table already exported in the
    new layout keeps its (newer) file, and the old one goes."""
    out, (first, _) = two_runs
    db, exports = out / "warehouse.duckdb", out / "exports"
    new_file = exportfiles.final_file(exports, "cases", first)
    before = new_file.stat().st_mtime_ns
    old = old_layout_export(db, first, exports)
    (old / "notes.txt").write_text("mine")
    with caplog.at_level(logging.WARNING, logger="evalwh.warehouse"):
        assert exportfiles.migrate_layout(exports) == [first]
    assert sorted(p.name for p in old.iterdir()) == ["notes.txt"]
    assert "still holds notes.txt, which evalwh did not write" in caplog.text
    assert new_file.stat().st_mtime_ns == before


def test_nothing_to_move_is_silent(
    two_runs: tuple[Path, list[str]], caplog: pytest.LogCaptureFixture
) -> None:
    out, _ = two_runs
    with caplog.at_level(logging.WARNING, logger="evalwh.warehouse"):
        assert exportfiles.migrate_layout(out / "exports") == []
        assert exportfiles.migrate_layout(out / "missing") == []
    assert caplog.text == ""
    assert not (out / "missing").exists()


def test_the_staging_folder_keeps_temporary_files_out_of_the_tables_folders(
    two_runs: tuple[Path, list[str]],
) -> None:
    """Polars reads a table's folder only when it holds nothing but Parquet files: a file
    being written (or left by a killed export) lives in ``.tmp/``, beside the tables."""
    out, (first, _) = two_runs
    exports = out / "exports"
    live = exportfiles.staging_file(exports, "cases", first)
    assert live.parent == exports / ".tmp" and live.name.startswith(f".cases.{first}.parquet")
    assert f"-{os.getpid()}-" in live.name
    live.write_bytes(b"being written")
    frame = pl.scan_parquet(exports / "cases", hive_partitioning=True).collect()
    assert frame.height == 6
