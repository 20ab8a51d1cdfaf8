"""sql/tool_calls.sql: per variant × model × tool of a run's tool loops, the calls, the cells
that made them, the failed calls and those with arguments off the schema, and their rates. A
hand-built warehouse, the counts worked out in the comments."""

from __future__ import annotations

from pathlib import Path

from evalwh.warehouse import queries
from tests.sql.conftest import _warehouse


def test_tool_calls_count_calls_failures_and_bad_arguments_per_tool(tmp_path: Path) -> None:
    # run r, v × a: search called 4 times in 2 cells, 1 failed with bad arguments, 1 failed in
    # the tool; fetch called once, fine; an assistant row (not a call). Run s: a failure that
    # does not count.
    con = _warehouse(tmp_path)
    rows = [
        ("r", "c1", 0, "tool", "search", None, True, 2.0),
        ("r", "c1", 0, "tool", "search", "invalid arguments for search: ...", False, 0.1),
        ("r", "c2", 0, "tool", "search", "search failed: boom", True, 3.0),
        ("r", "c2", 0, "tool", "search", None, True, 4.0),
        ("r", "c2", 0, "tool", "fetch", None, True, 1.0),
        ("r", "c2", 0, "assistant", None, None, None, 9.0),
        ("s", "c1", 0, "tool", "search", "search failed: boom", True, 1.0),
    ]
    for seq, (run, case, repeat, role, tool, error, valid, ms) in enumerate(rows):
        con.execute(
            "INSERT INTO turns (run_id, variant, model, case_id, repeat, seq, turn, role, "
            "tool_name, error, args_valid, latency_ms, created_at) "
            "VALUES (?, 'v', 'a', ?, ?, ?, 0, ?, ?, ?, ?, ?, now())",
            [run, case, repeat, seq, role, tool, error, valid, ms],
        )
    got = queries.run_query(con, "tool_calls", run_id="r").to_pylist()
    assert got == [
        {
            "variant": "v",
            "model": "a",
            "tool": "search",
            "n_calls": 4,
            "n_cells": 2,
            "n_errors": 2,
            "n_invalid_args": 1,
            "error_rate": 0.5,
            "invalid_args_rate": 0.25,
            "p50_ms": 2.5,
        },
        {
            "variant": "v",
            "model": "a",
            "tool": "fetch",
            "n_calls": 1,
            "n_cells": 1,
            "n_errors": 0,
            "n_invalid_args": 0,
            "error_rate": 0.0,
            "invalid_args_rate": 0.0,
            "p50_ms": 1.0,
        },
    ]
