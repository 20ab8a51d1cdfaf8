"""sql/transcripts.sql: the steps of the tool-loop transcripts of a page's cells in one query,
each cell's first steps only with its totals over all of them, optionally each run × cell ×
case's first repeat only. A hand-built warehouse, the counts worked out in the comments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from evalwh.warehouse import queries
from tests.sql.conftest import _warehouse


def _turn(
    con: duckdb.DuckDBPyConnection,
    run: str,
    case: str,
    repeat: int,
    seq: int,
    role: str,
    error: str | None = None,
) -> None:
    con.execute(
        "INSERT INTO turns (run_id, variant, model, case_id, repeat, seq, turn, role, error, "
        "created_at) VALUES (?, 'v', 'm', ?, ?, ?, ?, ?, ?, now())",
        [run, case, repeat, seq, seq // 2, role, error],
    )


def _case(con: duckdb.DuckDBPyConnection, run: str, case: str, repeat: int) -> None:
    con.execute(
        "INSERT INTO cases (run_id, variant, model, case_id, repeat, cached, request_hash, "
        "attempts, passed, created_at) VALUES (?, 'v', 'm', ?, ?, false, 'h', 1, true, now())",
        [run, case, repeat],
    )


def _build(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    # run r, case c1: repeat 0 answered without a loop (no turns); repeat 1 a loop of 5 steps:
    # 3 model turns, 2 calls, 1 failed. Case c2 repeat 0: 2 steps, 1 turn, 1 call, no error.
    # Run s, case c1 repeat 0: 1 step. Run t: a case with turns the query is not asked for.
    con = _warehouse(tmp_path)
    for run, case, repeat in (("r", "c1", 0), ("r", "c1", 1), ("r", "c2", 0), ("s", "c1", 0)):
        _case(con, run, case, repeat)
    steps = ["assistant", "tool", "assistant", "tool", "assistant"]
    for seq, role in enumerate(steps):
        _turn(con, "r", "c1", 1, seq, role, "boom" if seq == 3 else None)
    _turn(con, "r", "c2", 0, 0, "assistant")
    _turn(con, "r", "c2", 0, 1, "tool")
    _turn(con, "s", "c1", 0, 0, "assistant")
    _turn(con, "t", "c1", 0, 0, "assistant")
    return con


def _ask(con: duckdb.DuckDBPyConnection, **params: Any) -> list[tuple[Any, ...]]:
    rows = queries.run_query(con, "transcripts", **params).to_pylist()
    shown = ("run_id", "case_id", "repeat", "seq", "role", "n_steps", "n_turns", "n_calls")
    return [tuple(r[k] for k in (*shown, "n_errors")) for r in rows]


def test_transcripts_give_each_cells_first_steps_with_its_totals(tmp_path: Path) -> None:
    con = _build(tmp_path)
    got = _ask(con, run_ids=["r", "s"], case_ids=None, first_repeat=False, max_steps=3)
    assert got == [
        # c1 #1: its first 3 of 5 steps, the totals over all 5
        ("r", "c1", 1, 0, "assistant", 5, 3, 2, 1),
        ("r", "c1", 1, 1, "tool", 5, 3, 2, 1),
        ("r", "c1", 1, 2, "assistant", 5, 3, 2, 1),
        ("r", "c2", 0, 0, "assistant", 2, 1, 1, 0),
        ("r", "c2", 0, 1, "tool", 2, 1, 1, 0),
        ("s", "c1", 0, 0, "assistant", 1, 1, 0, 0),
    ]
    only_c2 = _ask(con, run_ids=["r"], case_ids=["c2"], first_repeat=False, max_steps=50)
    assert [(r[1], r[3]) for r in only_c2] == [("c2", 0), ("c2", 1)]
    assert _ask(con, run_ids=["r"], case_ids=[], first_repeat=False, max_steps=50) == []


def test_transcripts_of_first_repeats_only_follow_the_cases_table(tmp_path: Path) -> None:
    # c1's first repeat in run r is 0, which ran no loop: no transcript, not repeat 1's
    con = _build(tmp_path)
    got = _ask(con, run_ids=["r", "s"], case_ids=["c1"], first_repeat=True, max_steps=50)
    assert got == [("s", "c1", 0, 0, "assistant", 1, 1, 0, 0)]
