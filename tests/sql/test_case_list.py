"""sql/case_list.sql: a run's case rows with their own criteria, failures first, against hand-computed
fixtures: each warehouse is built by hand, row by row, and the expected numbers are worked out in
the comments.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalwh.warehouse import queries
from tests.builders import ROWS, add_run
from tests.sql.conftest import _warehouse


def test_case_list_filters_orders_and_keeps_each_rows_own_criteria(tmp_path: Path) -> None:
    # run G (tests.builders.ROWS): m1 c3 and c4 fail, the other six cases pass. Run H has the
    # same cells with other scores: none of its criterion rows may show up in G's listing.

    con = _warehouse(tmp_path)
    add_run(con, "G", ROWS)
    add_run(con, "H", [(m, c, not p, 0.25, e) for m, c, p, _, e in ROWS])

    def listing(only_failures: bool = False, case_id: str | None = None) -> list[Any]:
        return queries.run_query(
            con, "case_list", run_id="G", only_failures=only_failures, case_id=case_id, limit=None
        ).to_pylist()

    rows = listing()
    # failures first, then by case id, variant, model
    assert [(r["model"], r["case_id"], r["passed"]) for r in rows] == [
        ("m1", "c3", False),
        ("m1", "c4", False),
        ("m1", "c1", True),
        ("m2", "c1", True),
        ("m1", "c2", True),
        ("m2", "c2", True),
        ("m2", "c3", True),
        ("m2", "c4", True),
    ]
    for r in rows:
        assert [c["criterion"] for c in r["criteria"]] == ["k1", "k2"]
        assert r["criteria"][0]["score"] == r["score"] and r["criteria"][0]["passed"] == r["passed"]
    assert [(r["model"], r["case_id"]) for r in listing(only_failures=True)] == [
        ("m1", "c3"),
        ("m1", "c4"),
    ]
    assert [(r["model"], r["passed"]) for r in listing(case_id="c4")] == [
        ("m1", False),
        ("m2", True),
    ]
    assert listing(only_failures=True, case_id="c1") == []
