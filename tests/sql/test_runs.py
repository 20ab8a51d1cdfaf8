"""sql/runs.sql: the run list, filtered on each parameter, newest first, against hand-computed
fixtures: each warehouse is built by hand, row by row, and the expected numbers are worked out in
the comments.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evalwh.warehouse import queries
from tests.sql.conftest import _costed_answer, _row, _warehouse


def test_runs_filter_on_each_parameter_and_list_newest_ids_first(tmp_path: Path) -> None:
    # bugs: a filter inverted or or-ed with the others, the time window's ends moved (since
    # is in, until is out), the oldest runs listed, a run without answers given 1 answer or
    # dropped, the cached cost counted, an answer too many. Runs (suite, label, status,
    # day): r1 (a, x, completed, 1) answered c1 pass 0.25, c2 errored 0.5 cached, c3 pass
    # 0.125; r2 (a, y, failed, 2) no answers; r3 (b, x, completed, 3) c1 pass 0.125; r4 (a,
    # x, running, 4).
    con = _warehouse(tmp_path)
    for run_id, suite, label, status, day in (
        ("r1", "a", "x", "completed", 1), ("r2", "a", "y", "failed", 2),
        ("r3", "b", "x", "completed", 3), ("r4", "a", "x", "running", 4),
    ):  # fmt: skip
        con.execute(
            "INSERT INTO runs (run_id, label, suite, status, config_hash, dataset_hash, "
            "n_planned, started_at, evalwh_version) VALUES (?, ?, ?, ?, 'h', 'd', 1, ?, 't')",
            [run_id, label, suite, status, f"2026-01-0{day} 00:00:00+00"],
        )
    for run_id, case, ok, cost, cached, error in (
        ("r1", "c1", True, 0.25, False, None), ("r1", "c2", False, 0.5, True, "boom"),
        ("r1", "c3", True, 0.125, False, None), ("r3", "c1", True, 0.125, False, None),
    ):  # fmt: skip
        _costed_answer(con, run_id, case, {}, ok, cost, cached, error)

    def runs(limit: int = 10, **filters: str) -> list[str]:
        params = {k: filters.get(k) for k in ("suite", "label", "status", "since", "until")}
        rows = queries.run_query(con, "runs", limit=limit, **params).to_pylist()
        return [r["run_id"] for r in rows]

    everything = {
        r["run_id"]: (r["n"], r["n_passed"], r["n_errors"], r["pass_rate"], r["cost_usd"])
        for r in queries.run_query(
            con, "runs", limit=10, suite=None, label=None, status=None, since=None, until=None
        ).to_pylist()
    }
    assert list(everything) == ["r4", "r3", "r2", "r1"]
    assert everything["r1"] == (3, 2, 1, pytest.approx(2 / 3), 0.375)
    assert everything["r2"] == (0, 0, 0, None, 0)
    assert runs(limit=2) == ["r4", "r3"]
    assert runs(suite="a") == ["r4", "r2", "r1"]
    assert runs(label="x") == ["r4", "r3", "r1"]
    assert runs(status="completed") == ["r3", "r1"]
    window = {"since": "2026-01-02 00:00:00+00", "until": "2026-01-04 00:00:00+00"}
    assert runs(**window) == ["r3", "r2"]


def test_runs_filter_each_parameter_at_its_bounds_newest_first(tmp_path: Path) -> None:
    # r1 (suite a, label L, completed, 10:01): answers pass (cost 0.5) and error (cached, 0.25);
    # r2 (b, running, 10:02); r3 (a, L, failed, 10:03): one pass without a cost; r4 (a,
    # completed, 10:04). Since is inclusive, until exclusive.
    con = _warehouse(tmp_path)
    for run_id, suite, label, status, minute in (
        ("r1", "a", "L", "completed", 1),
        ("r2", "b", None, "running", 2),
        ("r3", "a", "L", "failed", 3),
        ("r4", "a", None, "completed", 4),
    ):
        con.execute(
            "INSERT INTO runs (run_id, suite, label, status, config_hash, dataset_hash, "
            "n_planned, started_at, evalwh_version) "
            "VALUES (?, ?, ?, ?, 'h', 'd', 1, ?::TIMESTAMPTZ, 't')",
            [run_id, suite, label, status, f"2026-01-01 10:0{minute}:00+00"],
        )
    _row(con, "r1", cost_usd=0.5)
    _row(con, "r1", case_id="c2", passed=False, error="boom", cached=True, cost_usd=0.25)
    _row(con, "r3")

    def runs(limit: int = 10, **given: str) -> list[str]:
        params = {k: given.get(k) for k in ("suite", "label", "status", "since", "until")}
        return [
            r["run_id"] for r in queries.run_query(con, "runs", limit=limit, **params).to_pylist()
        ]

    every = queries.run_query(
        con, "runs", limit=10, suite=None, label=None, status=None, since=None, until=None
    ).to_pylist()
    keys = ("run_id", "n", "n_passed", "n_errors", "pass_rate", "cost_usd")
    assert [tuple(r[k] for k in keys) for r in every] == [
        ("r4", 0, 0, 0, None, 0),
        ("r3", 1, 1, 0, 1.0, 0),
        ("r2", 0, 0, 0, None, 0),
        ("r1", 2, 1, 1, 0.5, 0.5),
    ]
    assert runs(limit=2) == ["r4", "r3"]
    assert runs(suite="a") == ["r4", "r3", "r1"]
    assert runs(label="L") == ["r3", "r1"]
    assert runs(status="completed") == ["r4", "r1"]
    assert runs(since="2026-01-01 10:02:00+00") == ["r4", "r3", "r2"]
    assert runs(until="2026-01-01 10:03:00+00") == ["r2", "r1"]
    assert runs(suite="a", status="completed", until="2026-01-01 10:04:00+00") == ["r1"]
