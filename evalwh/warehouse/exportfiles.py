"""Where a run's Parquet export lives, how its files are written, and the move from the
layout before it.

One folder per table, Hive-partitioned by run, so each table is a dataset of its own that
pyarrow, Polars, DuckDB or Spark reads with its Hive option and nothing else::

    exports/
      cases/run_id=<id>/cases.parquet
      scores/run_id=<id>/scores.parquet
      .tmp/                 files being written (hidden; renamed into place when whole)

A file is written under a temporary name in ``.tmp/`` and renamed into its run's folder, so a
table's folder only ever holds whole files (Polars refuses a folder with any other file in it,
and a glob never matches a partial one). The JSON columns (``vars``, ``expected``,
``metadata``, ``messages``, ``details`` ...) are written as Parquet strings: every reader gets
text that parses as JSON (DuckDB's JSON type is written as Parquet's JSON annotation on bytes,
which Polars reads as binary). The key-value metadata names them (``json_columns``).

Before schema version 2 the tables shared a folder (``exports/run_id=<id>/{cases,scores}
.parquet``) and the JSON columns carried the JSON annotation: :func:`migrate_layout` rewrites
such files into the layout above, and every export runs it first, so a folder is never left
half in one layout and half in the other.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import duckdb

from evalwh.warehouse.tempnames import temp_name, writer_ended

log = logging.getLogger("evalwh.warehouse")

SCHEMA_VERSION = "2"
TABLES = ("cases", "scores", "turns")
STAGING = ".tmp"
PARTITION = "run_id="
# An export streams a run's rows into Parquet in the order they were stored, on one DuckDB
# thread, in row groups of ROW_GROUP rows: its memory is bounded by a row group, not by the
# run (a global ORDER BY sorted the whole run: +400 MB at a million cases; benchmarks/
# README.md, "flat memory"). Readers sort as they need (docs/storage.md).
MEMORY_LIMIT = "32MB"  # at a million cases: +50 MB of RSS (128 MB: +140), as fast
MEMORY_RETRY = "512MB"  # a run of very long texts that does not fit MEMORY_LIMIT
ROW_GROUP = 16_384


def final_file(root: Path, table: str, run_id: str) -> Path:
    """Where ``table``'s rows of run ``run_id`` end up: ``root/<table>/run_id=<id>/<table>.parquet``."""
    return root / table / f"{PARTITION}{run_id}" / f"{table}.parquet"


def staging_file(root: Path, table: str, run_id: str) -> Path:
    """A temporary name for :func:`final_file` in ``root/.tmp/``, holding the writer's pid."""
    return temp_name(root / STAGING / f"{table}.{run_id}.parquet")


def clean_staging(root: Path) -> None:
    """Remove the temporary files of exports whose process has ended (a killed export);
    those of an export still being written stay."""
    for stale in (root / STAGING).glob(".*.parquet.tmp-*"):
        if writer_ended(stale):
            stale.unlink(missing_ok=True)


def text_columns(con: Any, source: str) -> tuple[str, list[str]]:
    """The select list that reads ``source`` (a table or ``read_parquet(...)``) with its
    JSON columns as text, and those columns' names."""
    described = con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()
    json_columns = [row[0] for row in described if row[1] == "JSON"]
    if not json_columns:
        return "*", []
    casts = ", ".join(f'CAST("{c}" AS VARCHAR) AS "{c}"' for c in json_columns)
    return f"* REPLACE ({casts})", json_columns


def copy_table(con: Any, query: str, out: Path, run_id: str, json_columns: list[str]) -> None:
    """``COPY (query) TO out`` as an export file: zstd, bounded row groups, key-value metadata
    ``schema_version``, ``run_id`` and ``json_columns``; run again within MEMORY_RETRY when
    MEMORY_LIMIT is too small. ``query`` may use the parameter ``$run_id``."""
    meta = {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "json_columns": ",".join(json_columns),
    }
    pairs = ", ".join(f"{k}: {_literal(v)}" for k, v in meta.items())
    copy = (
        f"COPY ({query}) TO {_literal(out.as_posix())} (FORMAT parquet, COMPRESSION zstd, "
        f"ROW_GROUP_SIZE {ROW_GROUP}, KV_METADATA {{{pairs}}})"
    )
    params = {"run_id": run_id} if "$run_id" in query else {}
    try:
        con.execute(copy, params)
    except duckdb.OutOfMemoryException:
        con.execute(f"SET memory_limit = '{MEMORY_RETRY}'")
        con.execute(copy, params)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def move_into_place(written: list[tuple[Path, Path]]) -> None:
    """Rename each written temporary file to its final name (its run's folder made first)."""
    for temp, final in written:
        final.parent.mkdir(parents=True, exist_ok=True)
        os.replace(temp, final)


def old_folders(root: Path) -> list[Path]:
    """The run folders of the layout before schema version 2 (``root/run_id=<id>/``)."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.glob(f"{PARTITION}*") if p.is_dir())


def migrate_layout(root: Path) -> list[str]:
    """Rewrite the exports under ``root`` kept in the layout before schema version 2 into
    ``root/<table>/run_id=<id>/`` with text JSON columns; return the run ids moved.

    A table already exported in the new layout keeps its file (it is the newer one); the old
    file is removed either way, and the old folder once nothing else is left in it (a file
    evalwh did not write stays, with a warning)."""
    moved: list[str] = []
    for folder in old_folders(root):
        run_id = folder.name[len(PARTITION) :]
        written: list[tuple[Path, Path]] = []
        (root / STAGING).mkdir(parents=True, exist_ok=True)
        try:
            with duckdb.connect(config={"threads": 1, "memory_limit": MEMORY_LIMIT}) as con:
                for table in TABLES:
                    old = folder / f"{table}.parquet"
                    final = final_file(root, table, run_id)
                    if not old.is_file() or final.exists():
                        continue
                    temp = staging_file(root, table, run_id)
                    source = f"read_parquet({_literal(old.as_posix())})"
                    select, json_columns = text_columns(con, source)
                    copy_table(con, f"SELECT {select} FROM {source}", temp, run_id, json_columns)
                    written.append((temp, final))
            move_into_place(written)
        finally:
            for temp, _ in written:
                temp.unlink(missing_ok=True)
        for table in TABLES:
            (folder / f"{table}.parquet").unlink(missing_ok=True)
        for stale in folder.glob(".*.parquet.tmp-*"):
            if writer_ended(stale):
                stale.unlink(missing_ok=True)
        moved.append(run_id)
        try:
            folder.rmdir()
        except OSError:
            left = ", ".join(sorted(p.name for p in folder.iterdir()))
            log.warning(
                "the old export folder %s still holds %s, which evalwh did not write: "
                "move it out of %s",
                folder,
                left,
                root,
            )
    if moved:
        log.warning(
            "moved the Parquet exports of %d run(s) from %s/run_id=<id>/ to "
            "%s/{cases,scores}/run_id=<id>/ (schema version %s: one folder per table, "
            "JSON columns as text); see docs/storage.md",
            len(moved),
            root,
            root,
            SCHEMA_VERSION,
        )
    return moved
