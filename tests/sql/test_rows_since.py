"""sql/rows_since.sql and sql/rows_latest.sql: the live tail's answers after a cursor and its
start, oldest first, against hand-built fixtures: each warehouse is built by hand, row by row,
and the expected lists are worked out in the comments.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from evalwh.viewer.pages import cursor
from evalwh.warehouse import queries
from tests.builders import fill_run_keys
from tests.sql.conftest import _warehouse


def _answers(con: duckdb.DuckDBPyConnection, rows: list[tuple[str, str, int, int]]) -> None:
    """(run, case, repeat, minute past 10:00) answers of cell v × m."""
    for run, case, repeat, minute in rows:
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, cached, request_hash, "
            "attempts, score, passed, created_at) "
            "VALUES (?, 'v', 'm', ?, ?, false, 'h', 1, 1, true, ?::TIMESTAMPTZ)",
            [run, case, repeat, f"2026-01-01 10:0{minute}:00+00"],
        )
        fill_run_keys(con)


def _since(con: duckdb.DuckDBPyConnection, after: dict[str, Any] | None, limit: int = 10) -> list:
    rows = queries.run_query(con, "rows_since", run_id="r", limit=limit, **cursor(after))
    return rows.to_pylist()


def test_rows_since_gives_the_answers_after_the_cursor_oldest_first(tmp_path: Path) -> None:
    # Run r: c1 at 10:00, c2 and c3 at 10:01 (same instant: by case), c4 at 10:02; run s: one
    # answer at 10:01. After c2's key: c3 (same instant, later case) and c4.
    con = _warehouse(tmp_path)
    _answers(con, [("r", "c3", 0, 1), ("r", "c4", 0, 2), ("r", "c1", 0, 0), ("r", "c2", 0, 1)])
    _answers(con, [("s", "c9", 0, 1)])

    def ids(rows: list[dict[str, Any]]) -> list[str]:
        return [r["case_id"] for r in rows]

    everything = _since(con, None)
    assert ids(everything) == ["c1", "c2", "c3", "c4"]
    assert ids(_since(con, None, limit=2)) == ["c1", "c2"]
    assert ids(_since(con, everything[1])) == ["c3", "c4"]
    assert ids(_since(con, everything[3])) == []


def test_paging_through_answers_stored_in_one_instant_loses_none(tmp_path: Path) -> None:
    # Seven answers in the same microsecond (c1..c3 with repeats), read two at a time from
    # the last one seen: every answer once, in (case, repeat) order. A cursor of the time
    # alone ('created_at > after') would lose all but the first page.
    con = _warehouse(tmp_path)
    keys = [("c1", 0), ("c1", 1), ("c2", 0), ("c2", 1), ("c2", 2), ("c3", 0), ("c3", 1)]
    _answers(con, [("r", case, repeat, 1) for case, repeat in reversed(keys)])
    seen: list[tuple[str, int]] = []
    after = None
    while page := _since(con, after, limit=2):
        seen += [(r["case_id"], r["repeat"]) for r in page]
        after = page[-1]
    assert seen == keys


def test_rows_latest_gives_the_newest_answers_oldest_first(tmp_path: Path) -> None:
    # c1 10:00, c2 10:01, c3 10:02, c4 10:02 (same instant: by case); another run's c9 at
    # 10:05. The 3 latest of r: c2, c3, c4, listed oldest first; more than r holds: all 4.
    con = _warehouse(tmp_path)
    _answers(con, [("r", "c4", 0, 2), ("r", "c2", 0, 1), ("r", "c1", 0, 0), ("r", "c3", 0, 2)])
    _answers(con, [("s", "c9", 0, 5)])

    def latest(limit: int) -> list[str]:
        rows = queries.run_query(con, "rows_latest", run_id="r", limit=limit)
        return [r["case_id"] for r in rows.to_pylist()]

    assert latest(3) == ["c2", "c3", "c4"]
    assert latest(10) == ["c1", "c2", "c3", "c4"]
