"""sql/flaky.sql: the cases whose repeats disagree, closest to a coin flip and widest spread first,
against hand-computed fixtures: each warehouse is built by hand, row by row, and the expected
numbers are worked out in the comments.
"""

from __future__ import annotations

from pathlib import Path

from evalwh.warehouse import queries
from tests.builders import fill_run_keys
from tests.sql.conftest import _warehouse


def test_flaky_cases_equally_split_come_by_score_spread_widest_first(tmp_path: Path) -> None:
    # bug: the score sd sorted ascending. z1 and a1 both pass 1 of 2 answers; z1's scores
    # (0.9, 0.1) spread wider than a1's (0.6, 0.4): z1 first, before the case_id order.
    con = _warehouse(tmp_path)
    for case, repeat, ok, score in (
        ("a1", 0, True, 0.6), ("a1", 1, False, 0.4), ("z1", 0, True, 0.9), ("z1", 1, False, 0.1),
    ):  # fmt: skip
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, metadata, cached, "
            "request_hash, attempts, score, passed, created_at) "
            "VALUES ('r', 'v', 'm', ?, ?, '{}', false, 'h', 1, ?, ?, now())",
            [case, repeat, score, ok],
        )
        fill_run_keys(con)
    rows = queries.run_query(con, "flaky", run_id="r").to_pylist()
    assert [(r["case_id"], r["pass_rate"]) for r in rows] == [("z1", 0.5), ("a1", 0.5)]
    assert rows[0]["score_sd"] > rows[1]["score_sd"]
