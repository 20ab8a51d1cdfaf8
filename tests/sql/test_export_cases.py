"""sql/export_cases.sql: exported case rows naming their failed criteria, against hand-computed
fixtures: each warehouse is built by hand, row by row, and the expected numbers are worked out in
the comments.
"""

from __future__ import annotations

import json
from pathlib import Path

from evalwh.warehouse import queries
from tests.builders import ROWS, add_run
from tests.sql.conftest import _timed_answer, _warehouse


def test_exported_cases_name_their_failed_criteria(tmp_path: Path) -> None:
    # run G (tests.builders.ROWS): criterion k1 mirrors the case, k2 passes on every other
    # row: (m1, c1) fails none, (m1, c2) fails k2, (m1, c3) fails k1, (m1, c4) fails k1 and k2

    con = _warehouse(tmp_path)
    add_run(con, "G", ROWS)
    rows = queries.run_query(con, "export_cases", run_id="G").to_pylist()
    failed = {(r["model"], r["case_id"]): r["failed_criteria"] for r in rows}
    assert [failed[("m1", c)] for c in ("c1", "c2", "c3", "c4")] == ["", "k2", "k1", "k1, k2"]
    crit = json.loads(rows[3]["criteria"])  # (m1, c4)
    assert crit["k1"] == {"score": 0.0, "passed": False, "error": None}


def test_an_exported_row_keeps_its_latency_and_the_time_it_waited_apart(tmp_path: Path) -> None:
    # one row answered after a 1 s back-off: 12 ms its own time, 1000 ms waited; a cached one
    # made no request (NULL)
    con = _warehouse(tmp_path)
    _timed_answer(con, "m", "c1", latency=12.0, queued=1000.0)
    _timed_answer(con, "m", "c2", latency=12.0, queued=None, cached=True)
    rows = queries.run_query(con, "export_cases", run_id="r").to_pylist()
    assert [(r["latency_ms"], r["queued_ms"]) for r in rows] == [(12.0, 1000.0), (12.0, None)]
