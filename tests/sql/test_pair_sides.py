"""sql/pair_sides.sql: every answer of a run with only this run's passed criteria, against hand-
computed fixtures: each warehouse is built by hand, row by row, and the expected numbers are worked
out in the comments.
"""

from __future__ import annotations

from pathlib import Path

from evalwh.warehouse import queries
from tests.builders import fill_run_keys
from tests.sql.conftest import _case, _score, _warehouse


def test_pair_sides_list_every_answer_with_only_this_runs_passed_criteria(tmp_path: Path) -> None:
    # bugs: criteria read from another run's scores; an answer without score rows (an error)
    # dropped by an inner join. Run r: c1 passed k1, failed k2; c2 errored (no scores). Run s:
    # c1 passed k3.
    con = _warehouse(tmp_path)
    for run, case, error in (("r", "c1", None), ("r", "c2", "boom"), ("s", "c1", None)):
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, metadata, cached, "
            "request_hash, attempts, passed, error, created_at) "
            "VALUES (?, 'v', 'm', ?, 0, '{}', false, 'h', 1, ?, ?, now())",
            [run, case, error is None, error],
        )
        fill_run_keys(con)
    for run, criterion, ok in (("r", "k1", True), ("r", "k2", False), ("s", "k3", True)):
        con.execute(
            "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, scorer, "
            "score, passed, weight, required) VALUES (?, 'v', 'm', 'c1', 0, ?, 'x', 1, ?, 1, true)",
            [run, criterion, ok],
        )
        fill_run_keys(con)
    rows = queries.run_query(con, "pair_sides", run_id="r").to_pylist()
    got = sorted((r["case_id"], r["error"], r["criteria_passed"]) for r in rows)
    assert got == [("c1", None, ["k1"]), ("c2", "boom", [])]


def test_pair_sides_keep_failed_cells_and_only_this_runs_passed_criteria(tmp_path: Path) -> None:
    # run r: c1 passed x, failed y; c2 failed its request (no scores). Run s has the same cell
    # c1 with criterion z passed, which is not run r's.
    con = _warehouse(tmp_path)
    _case(con, "r", "c1")
    _score(con, "r", "c1", "x", True)
    _score(con, "r", "c1", "y", False)
    _case(con, "r", "c2", error="boom", output=None)
    _case(con, "s", "c1")
    _score(con, "s", "c1", "z", True)
    got = queries.run_query(con, "pair_sides", run_id="r").to_pylist()
    assert sorted((r["case_id"], r["error"], r["criteria_passed"]) for r in got) == [
        ("c1", None, ["x"]),
        ("c2", "boom", []),
    ]
