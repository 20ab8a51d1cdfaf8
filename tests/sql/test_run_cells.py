"""sql/run_cells.sql: a run's stored cells, or only the errored ones, against hand-computed fixtures:
each warehouse is built by hand, row by row, and the expected numbers are worked out in the
comments.
"""

from __future__ import annotations

from pathlib import Path

from evalwh.warehouse import queries
from tests.builders import fill_run_keys
from tests.sql.conftest import _warehouse


def test_run_cells_lists_stored_cells_or_only_the_errored_or_misjudged_ones(tmp_path: Path) -> None:
    # run r: (v, m, c1, 0) ok, (v, m, c1, 1) error, (v, m, c2, 0) ok; run s: (v, m, c3, 0) error
    con = _warehouse(tmp_path)
    for run, case, repeat, error in (
        ("r", "c1", 0, None),
        ("r", "c1", 1, "boom"),
        ("r", "c2", 0, None),
        ("s", "c3", 0, "boom"),
    ):
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, error, cached, "
            "request_hash, attempts, score, passed, created_at) "
            "VALUES (?, 'v', 'm', ?, ?, ?, false, 'x', 1, 0, false, now())",
            [run, case, repeat, error],
        )
        fill_run_keys(con)

    def cells(errors_only: bool) -> set[tuple[str, str, str, int]]:
        table = queries.run_query(con, "run_cells", run_id="r", errors_only=errors_only)
        return {(r["variant"], r["model"], r["case_id"], r["repeat"]) for r in table.to_pylist()}

    assert cells(False) == {("v", "m", "c1", 0), ("v", "m", "c1", 1), ("v", "m", "c2", 0)}
    assert cells(True) == {("v", "m", "c1", 1)}
    # (v, m, c2, 0)'s judge failed: it is retried; (v, m, c1, 0)'s contains scorer failed: not
    for case, scorer in (("c2", "llm-judge"), ("c1", "contains")):
        con.execute(
            "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, scorer, "
            "score, passed, weight, required, error) "
            "VALUES ('r', 'v', 'm', ?, 0, 'k', ?, 0, false, 1, true, 'failed')",
            [case, scorer],
        )
    fill_run_keys(con)
    assert cells(True) == {("v", "m", "c1", 1), ("v", "m", "c2", 0)}
