"""sql/rows_since.sql: the answers stored strictly after a time, oldest first, against hand-computed
fixtures: each warehouse is built by hand, row by row, and the expected numbers are worked out in
the comments.
"""

from __future__ import annotations

from pathlib import Path

from evalwh.warehouse import queries
from tests.sql.conftest import _warehouse


def test_rows_since_gives_the_answers_stored_strictly_after_oldest_first(tmp_path: Path) -> None:
    # Run r: c1 at 10:00, c2 and c3 at 10:01 (same instant: by case), c4 at 10:02; run s: one
    # answer at 10:01. After 10:01: only c4 (an answer stored exactly then is not new).
    con = _warehouse(tmp_path)
    for run, case, minute in (
        ("r", "c3", 1),
        ("r", "c4", 2),
        ("r", "c1", 0),
        ("r", "c2", 1),
        ("s", "c9", 1),
    ):
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, cached, request_hash, "
            "attempts, score, passed, created_at) "
            "VALUES (?, 'v', 'm', ?, 0, false, 'h', 1, 1, true, ?::TIMESTAMPTZ)",
            [run, case, f"2026-01-01 10:0{minute}:00+00"],
        )

    def since(after: str | None, limit: int = 10) -> list[str]:
        rows = queries.run_query(con, "rows_since", run_id="r", after=after, limit=limit)
        return [r["case_id"] for r in rows.to_pylist()]

    assert since(None) == ["c1", "c2", "c3", "c4"]
    assert since(None, limit=2) == ["c1", "c2"]
    assert since("2026-01-01 10:01:00+00") == ["c4"]
    assert since("2026-01-01 09:00:00+00") == ["c1", "c2", "c3", "c4"]
