"""sql/compare_tools.sql: tool use between two runs over the cells both runs have, per variant x
model x tool (scope ``tool``) and per cell whose calls changed (scope ``cell``). The runs of
tests/sql/conftest.py's _two_tool_runs, the counts worked out in its comments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from evalwh.warehouse import queries
from tests.sql.conftest import _two_tool_runs


def scope(
    con: duckdb.DuckDBPyConnection, name: str, a: str = "a", b: str = "b", limit: Any = None
) -> list[dict[str, Any]]:
    rows = queries.run_query(con, "compare_tools", run_a=a, run_b=b, limit=limit).to_pylist()
    return [r for r in rows if r["scope"] == name]


def test_each_tools_calls_failures_and_bad_arguments_are_counted_on_both_sides(
    tmp_path: Path,
) -> None:
    con = _two_tool_runs(tmp_path)
    # search: A 2 calls (c1, c2), 0 failed; B 3 calls (c1 twice, c2), 1 failed with bad args
    # fetch: A 2 calls (c2, c3), both failed; B 1 call (c2), failed; c4 (B only) never counts
    got = [
        (
            r["tool"],
            (r["n_calls_a"], r["n_calls_b"]),
            (r["n_errors_a"], r["n_errors_b"]),
            (r["n_invalid_args_a"], r["n_invalid_args_b"]),
            (r["error_rate_a"], r["error_rate_b"], r["error_rate_delta"]),
            (r["invalid_args_rate_a"], r["invalid_args_rate_b"]),
            (r["case_id"], r["tools_a"], r["passed_a"]),
        )
        for r in scope(con, "tool")
    ]
    assert got == [
        ("search", (2, 3), (0, 1), (0, 1), (0.0, 0.3333, 0.3333), (0.0, 0.3333), (None,) * 3),
        ("fetch", (2, 1), (2, 1), (0, 0), (1.0, 1.0, 0.0), (0.0, 0.0), (None,) * 3),
    ]


def test_a_tool_one_side_never_called_has_no_rate_on_that_side(tmp_path: Path) -> None:
    con = _two_tool_runs(tmp_path)
    con.execute("DELETE FROM turns WHERE run_id = 'a' AND tool_name = 'fetch'")
    (fetch,) = [r for r in scope(con, "tool") if r["tool"] == "fetch"]
    assert (fetch["n_calls_a"], fetch["error_rate_a"], fetch["error_rate_delta"]) == (0, None, None)


def test_the_cells_whose_tool_use_changed_are_listed_new_failures_first(tmp_path: Path) -> None:
    con = _two_tool_runs(tmp_path)
    got = [
        (
            r["case_id"],
            r["tools_a"],
            r["tools_b"],
            (r["n_calls_a"], r["n_calls_b"]),
            (r["n_errors_a"], r["n_errors_b"]),
            (r["n_invalid_args_a"], r["n_invalid_args_b"]),
            (r["passed_a"], r["passed_b"]),
            r["tool"],
        )
        for r in scope(con, "cell")
    ]
    # c2 did the same in both runs: not listed; c4 is not paired
    assert got == [
        ("c1", ["search"], ["search", "search"], (1, 2), (0, 1), (0, 1), (True, False), None),
        ("c3", ["fetch"], [], (1, 0), (1, 0), (0, 0), (True, True), None),
    ]
    # $limit bounds the cells, never the tools
    assert [r["case_id"] for r in scope(con, "cell", limit=1)] == ["c1"]
    assert len(scope(con, "tool", limit=1)) == 2
    assert scope(con, "cell", limit=0) == []


def test_runs_without_tool_loops_give_no_rows(tmp_path: Path) -> None:
    con = _two_tool_runs(tmp_path)
    con.execute("DELETE FROM turns")
    assert queries.run_query(con, "compare_tools", run_a="a", run_b="b", limit=None).num_rows == 0


def test_a_run_compared_with_itself_has_no_changed_cell(tmp_path: Path) -> None:
    con = _two_tool_runs(tmp_path)
    assert all(r["n_calls_a"] == r["n_calls_b"] for r in scope(con, "tool", "b", "b"))
    assert scope(con, "cell", "b", "b") == []
