"""sql/errors.sql: a run's errors grouped by message, most frequent first, against hand-computed
fixtures: each warehouse is built by hand, row by row, and the expected numbers are worked out in
the comments.
"""

from __future__ import annotations

from pathlib import Path

from evalwh.warehouse import queries
from tests.builders import fill_run_keys
from tests.sql.conftest import _warehouse


def test_errors_group_by_message_most_frequent_first(tmp_path: Path) -> None:
    # run r: 'HTTP 500' on c1..c6 (model m, six cases: five examples shown), 'timeout' on c7,
    # and 'bad key' on c8 and c9 (models m2, m1); c10 answered. Run s: errors that do not count.
    con = _warehouse(tmp_path)
    rows = [("r", f"c{i}", "m", "HTTP 500", "server") for i in range(1, 7)]
    rows += [("r", "c7", "m", "timeout", "timeout"), ("r", "c10", "m", None, None)]
    rows += [("r", "c8", "m2", "bad key", "auth"), ("r", "c9", "m1", "bad key", "auth")]
    rows += [("s", "c1", "m", "timeout", "timeout"), ("s", "c2", "m", "timeout", "timeout")]
    for run, case, model, error, kind in rows:
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, error, error_kind, "
            "cached, request_hash, attempts, passed, score, created_at) "
            "VALUES (?, 'v', ?, ?, 0, ?, ?, false, 'x', 1, false, 0, now())",
            [run, model, case, error, kind],
        )
        fill_run_keys(con)
    got = [
        (r["error"], r["error_kind"], r["n"], r["examples"])
        for r in queries.run_query(con, "errors", run_id="r").to_pylist()
    ]
    assert got == [
        ("HTTP 500", "server", 6, [f"c{i} v × m" for i in range(1, 6)]),
        ("bad key", "auth", 2, ["c8 v × m2", "c9 v × m1"]),
        ("timeout", "timeout", 1, ["c7 v × m"]),
    ]
