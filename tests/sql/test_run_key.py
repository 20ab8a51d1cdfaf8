"""sql/macros/run_key.sql, and the named queries' use of it: every scan of cases or scores that
filters by a run's id in a query on one run (or two) filters by the run's integer key too,
inside the scan, where DuckDB's zone maps skip the row groups of other runs (a string filter on run_id cannot: its min/max keeps 8
bytes, the year and month every run id of a month shares)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb
import pytest

from evalwh.warehouse import connect, queries
from evalwh.warehouse.store import new_run_id

RUN_A, RUN_B, OTHER = (
    "2026-03-01T101500.250-a1b2",
    "2026-03-02T101500-c3d4",
    "2026-04-01T000000-e5f6",
)


def key(run_id: str | None) -> int:
    with duckdb.connect() as con:
        con.execute(queries.macros())
        return con.execute("SELECT run_key(?)", [run_id]).fetchone()[0]  # type: ignore[index]


def test_the_key_is_the_epoch_second_a_run_id_starts_with() -> None:
    now = datetime(2026, 11, 29, 15, 30, 12, 987_000, tzinfo=timezone.utc)
    assert key(new_run_id(now)) == int(now.replace(microsecond=0).timestamp()) == 1795966212
    assert key("2026-11-29T153012-a1b2") == 1795966212  # ids before milliseconds
    # an id that does not start with a time: key 0 (its rows are still found by run_id)
    assert [key(r) for r in ("imported", "2026-13-01T000000-x", "", None)] == [0, 0, 0, 0]


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three runs of a few rows each (with a key of their own, as insert_rows writes them)."""
    path = tmp_path_factory.mktemp("keys") / "w.duckdb"
    with connect.write_connection(path) as con:
        con.execute(queries.macros())
        for rid in (RUN_A, RUN_B, OTHER):
            con.execute(
                "INSERT INTO cases (run_key, run_id, variant, model, case_id, repeat, metadata, "
                "cached, request_hash, attempts, score, passed, error, latency_ms, attachments, "
                "created_at) "
                "SELECT run_key($r), $r, 'v', 'm', 'c' || i, 0, '{\"t\": \"x\"}', false, 'h', 1, "
                "1, i < 3, CASE WHEN i = 3 THEN 'boom' END, 10 * i, "
                '\'[{"name": "a.txt", "media_type": "text/plain", "bytes": 1}]\', '
                "now() FROM range(4) t(i)",
                {"r": rid},
            )
            con.execute(
                "INSERT INTO scores (run_key, run_id, variant, model, case_id, repeat, criterion, "
                "scorer, score, passed, weight, required, judge_model) "
                "SELECT run_key($r), $r, 'v', 'm', 'c' || i, 0, 'k', 'llm-judge', 1, true, 1, "
                "true, 'jm' FROM range(4) t(i)",
                {"r": rid},
            )
    return path


PARAMS: dict[str, Any] = {
    "run_id": RUN_A,
    "run_a": RUN_A,
    "run_b": RUN_B,
    "keys": ["t"],
    "key": "t",
    "criterion": "k",
    "rules": json.dumps(
        [{"scope": "criterion", "target": "*", "metric": "pass_rate", "op": ">=", "limit": 0.5}]
    ),
    "tolerance": 0.0,
    "combine": False,
    "limit": 10,
    "bins": 10,
    "within": 1.0,
    "weights": "quadratic",
    "errors_only": False,
    "only_failures": False,
    "case_ids": ["c1"],
}
ONE_RUN = sorted(
    name
    for name, query in queries.registry().items()
    if {"run_id", "run_a"} & set(query.params)
    and any(f"FROM {t}" in query.sql or f"JOIN {t}" in query.sql for t in ("cases", "scores"))
)


def scans(plan: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for node in plan:
        if node.get("name") == "SEQ_SCAN":
            out.append(node["extra_info"])
        out += scans(node.get("children", []))
    return out


@pytest.mark.parametrize("name", ONE_RUN)
def test_each_scan_of_a_big_table_filters_by_the_run_key(warehouse: Path, name: str) -> None:
    query = queries.get(name)
    params = {p: PARAMS.get(p) for p in query.params}
    with duckdb.connect(str(warehouse), read_only=True) as con:
        con.execute(queries.macros())
        # a top-N query reads its other columns by row id after the filtered scan ("late
        # materialization"): that second scan has no filter of its own; turned off to see each
        # scan that reads the table
        con.execute("SET late_materialization_max_rows = 0")
        (row,) = con.execute(f"EXPLAIN (FORMAT json) {query.sql}", params).fetchall()
    big = [s for s in scans(json.loads(row[1])) if s["Table"].split(".")[-1] in ("cases", "scores")]
    wanted = {f"run_key={key(RUN_A)}", f"run_key={key(RUN_B)}"}
    by_id = [f for f in map(filters, big) if any(x.startswith("run_id=") for x in f)]
    by_key = [f for f in map(filters, big) if wanted & set(f)]
    # every scan that filters by the run's id filters by its key too, and one at least does
    assert by_key and all(wanted & set(f) for f in by_id), (name, big)


def filters(scan: dict[str, Any]) -> list[str]:
    found = scan.get("Filters", [])
    return [found] if isinstance(found, str) else found
