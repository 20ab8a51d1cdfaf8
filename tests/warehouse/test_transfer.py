"""Moving runs between a warehouse file and a DuckLake, and the lake's upkeep
(evalwh/warehouse/transfer.py): `evalwh lake push` and `pull` count the rows of each table
and skip runs already there, and `evalwh lake maintain` expires only what is older than the
days given. On a DuckLake whose catalog is a local DuckDB file (no server); against a
PostgreSQL catalog and S3, see tests/features/test_scale_out.py."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pytest

from evalwh.warehouse import connect, shards, transfer
from evalwh.warehouse.connect import read_connection, write_connection
from evalwh.warehouse.lake import LakeTarget
from tests.warehouse.test_shards import _shard_row

ZERO = {"runs": 0, "cases": 0, "scores": 0, "pairs": 0, "labels": 0, "turns": 0}


def _count(db: Path, table: str) -> int:
    with duckdb.connect(str(db), read_only=True) as con:
        found = con.execute(f"SELECT count(*) FROM {table}").fetchone()
    assert found is not None
    return int(found[0])


def test_copying_no_runs_reports_zero_rows_of_each_table(tmp_path: Path) -> None:
    target = LakeTarget(catalog=str(tmp_path / "meta.ducklake"))
    for direction in ("push", "pull"):
        assert transfer.copy_runs(target, tmp_path / "w.duckdb", [], direction=direction) == (
            [],
            [],
            ZERO,
        )
    assert not (tmp_path / "meta.ducklake").exists()  # nothing was opened


def test_push_and_pull_count_the_rows_of_each_table_and_skip_runs_already_there(
    finished_copy: tuple[Path, str], file_catalog_lake: LakeTarget, tmp_path: Path
) -> None:
    lake = file_catalog_lake
    db, run_id = finished_copy
    rows = {"runs": 1, "cases": 2, "scores": 2, "pairs": 0, "labels": 0, "turns": 0}
    # a push only reads the file: a reader (the viewer) may hold it open meanwhile
    with read_connection(db):
        assert transfer.copy_runs(lake, db, [run_id], direction="push") == ([run_id], [], rows)
    assert transfer.copy_runs(lake, db, [run_id], direction="push") == ([], [run_id], ZERO)
    with write_connection(lake) as con:  # the push took the run's cached answers along
        found = con.execute("SELECT count(*) FROM response_cache").fetchone()
    assert found is not None and found[0] == 2

    dest = tmp_path / "pulled.duckdb"
    with write_connection(dest):  # as `evalwh pull` does: the file is created first
        pass
    assert transfer.copy_runs(lake, dest, [run_id], direction="pull") == ([run_id], [], rows)
    assert transfer.copy_runs(lake, dest, [run_id], direction="pull") == ([], [run_id], ZERO)
    assert (_count(dest, "cases"), _count(dest, "scores")) == (2, 2)
    assert _count(dest, "response_cache") == 0  # a pull brings runs, not the lake's cache


class _Recording:
    """A connection that keeps the statements sent through it."""

    def __init__(self, con: duckdb.DuckDBPyConnection, sent: list[str]) -> None:
        self.con, self.sent = con, sent

    def execute(self, sql: str, *args: Any) -> duckdb.DuckDBPyConnection:
        self.sent.append(sql)
        return self.con.execute(sql, *args)


def test_lake_maintenance_expires_only_what_is_older_than_the_days_given(
    file_catalog_lake: LakeTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake = file_catalog_lake
    shards.join(lake, _shard_row("r-4"), 2)  # a few snapshots, all seconds old
    real = connect.write_connection  # the one transfer uses
    sent: list[str] = []

    @contextmanager
    def recording(target: Any, **options: Any) -> Iterator[_Recording]:
        with real(target, **options) as con:
            yield _Recording(con, sent)

    monkeypatch.setattr(transfer, "write_connection", recording)
    steps = transfer.maintain_lake(lake, expire_days=1.5)
    older = "older_than => now() - INTERVAL 129600 SECOND)"  # 1.5 days
    assert sent == [
        "CALL ducklake_flush_inlined_data('lake')",
        "CALL ducklake_merge_adjacent_files('lake')",
        f"CALL ducklake_expire_snapshots('lake', {older}",
        f"CALL ducklake_cleanup_old_files('lake', {older}",
        f"CALL ducklake_delete_orphaned_files('lake', {older}",
    ]
    assert [s["step"] for s in steps] == [
        "flush_inlined_data",
        "merge_adjacent_files",
        "expire_snapshots",
        "cleanup_old_files",
        "delete_orphaned_files",
    ]
    assert steps[2]["rows"] == 0  # no snapshot is that old
