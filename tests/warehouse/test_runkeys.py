"""evalwh.warehouse.runkeys and migration 0016: every case and score row carries the integer
key of its run (run_key), whichever way it was written: by a run, by an import, on a lake, or
stored before the key existed (the migration fills it)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from evalwh import api
from evalwh.warehouse import connect
from evalwh.warehouse.queries import macros
from evalwh.warehouse.runkeys import insert_rows
from tests.builders import PROMPTFOO, lake_store
from tests.warehouse.test_store import one_run


def unkeyed(path: Path) -> list[tuple[str, int]]:
    """(table, rows) whose run_key is not the one the macro derives from their run_id."""
    with duckdb.connect(str(path), read_only=True) as con:
        con.execute(macros())
        return [
            (table, n)
            for table in ("cases", "scores")
            for (n,) in con.execute(
                f"SELECT count(*) FROM {table} "
                "WHERE run_key IS DISTINCT FROM run_key(run_id) OR run_key = 0"
            ).fetchall()
            if n
        ]


def test_a_run_writes_each_case_and_score_row_with_its_run_key(tmp_path: Path) -> None:
    path, run_id = one_run(tmp_path)
    with duckdb.connect(str(path), read_only=True) as con:
        keys = con.execute("SELECT DISTINCT run_key FROM scores").fetchall()
    # the second the run started, read from its id (2026-11-29T153012.123-a1b2)
    started = datetime.strptime(run_id[:17], "%Y-%m-%dT%H%M%S").replace(tzinfo=timezone.utc)
    assert unkeyed(path) == [] and keys == [(int(started.timestamp()),)]


def test_an_imported_run_writes_its_rows_with_their_run_key(tmp_path: Path) -> None:
    wh = tmp_path / "w.duckdb"
    api.import_results("promptfoo", [PROMPTFOO], warehouse=wh)
    assert unkeyed(wh) == []


def test_rows_into_a_table_without_a_key_are_inserted_as_they_are(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    with connect.write_connection(path) as con:
        con.register(
            "_rows",
            pa.table(
                {
                    "request_hash": ["h"],
                    "provider": ["p"],
                    "model": ["m"],
                    "output": ["o"],
                    "created_at": pa.array([0], pa.timestamp("us", "UTC")),
                }
            ),
        )
        insert_rows(con, "response_cache", "_rows")
        assert con.execute("SELECT request_hash, output FROM response_cache").fetchall() == [
            ("h", "o")
        ]


def test_a_lake_is_migrated_with_the_key_and_its_rows_carry_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = lake_store(tmp_path, monkeypatch)
    rid = "2026-11-29T153012.123-a1b2"
    connect.write_transaction(
        store.path,
        lambda con: (
            con.register(
                "_rows",
                pa.table(
                    {
                        "run_id": [rid],
                        "variant": ["v"],
                        "model": ["m"],
                        "case_id": ["c"],
                        "repeat": pa.array([0], pa.int32()),
                        "criterion": ["k"],
                        "scorer": ["exact"],
                        "score": [1.0],
                        "passed": [True],
                        "weight": [1.0],
                        "required": [True],
                    }
                ),
            ),
            insert_rows(con, "scores", "_rows"),
        ),
        what="write a score row",
    )
    assert store.sql("SELECT run_id, run_key FROM scores").to_pylist() == [
        {"run_id": rid, "run_key": 1795966212}
    ]


def test_migration_0016_fills_the_key_of_every_row_stored_before_it(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    ids = ["2026-11-29T153012.123-a1b2", "2026-11-29T153012-c3d4", "imported-run"]
    with duckdb.connect(str(db)) as con:
        con.execute(connect.SCHEMA_MIGRATIONS_DDL)
        for version, name, sql in connect.migrations():
            if version < 16:
                con.execute(sql)
                con.execute("INSERT INTO schema_migrations VALUES (?, ?, now())", [version, name])
        for rid in ids:
            con.execute(
                "INSERT INTO cases (run_id, variant, model, case_id, repeat, cached, "
                "request_hash, attempts, passed, created_at) "
                "VALUES (?, 'v', 'm', 'c', 0, false, 'h', 1, true, now())",
                [rid],
            )
            con.execute(
                "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, scorer, "
                "score, passed, weight, required) VALUES (?, 'v', 'm', 'c', 0, 'k', 'x', 1, true, 1, true)",
                [rid],
            )
    connect.migrate_file(db)
    with duckdb.connect(str(db), read_only=True) as con:
        for table in ("cases", "scores"):
            assert con.execute(
                f"SELECT run_id, run_key FROM {table} ORDER BY run_id"
            ).fetchall() == [
                ("2026-11-29T153012-c3d4", 1795966212),  # the same second: one key
                ("2026-11-29T153012.123-a1b2", 1795966212),
                ("imported-run", 0),  # no time at its start: key 0, found by its run_id
            ]
