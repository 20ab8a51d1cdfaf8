"""sql/case_history.sql: one case's answers across runs, newest runs first, against hand-computed
fixtures: each warehouse is built by hand, row by row, and the expected numbers are worked out in
the comments.
"""

from __future__ import annotations

from pathlib import Path

from evalwh.warehouse import queries
from tests.builders import fill_run_keys
from tests.sql.conftest import _runs, _warehouse


def test_case_history_counts_each_runs_answers_of_one_case_newest_runs_first(
    tmp_path: Path,
) -> None:
    # Case k in runs r0 (oldest), r1 and r2 (newest); limit 2 keeps r2 and r1. r1 holds two
    # answers of k in cell v x m: (pass, score 0.5, 100 ms, "o0") and (fail, 1.0, 300 ms,
    # error, "o1") -> n 2, n_passed 1, pass rate 0.5, mean score 0.75, 1 error, 200 ms, the
    # first repeat's output "o0". r2 (no-look) holds two answers of k and one of case j (not
    # counted). r0 is past the limit (the limit counts runs, not answers: r2's two answers
    # must not use it up).
    con = _warehouse(tmp_path)
    _runs(con, [("r0", "s", "2026-01-01 00:00:00+00", None)])
    _runs(con, [("r1", "s", "2026-01-01 00:00:01+00", None)])
    _runs(con, [("r2", "s", "2026-01-01 00:00:02+00", None)])
    con.execute("UPDATE runs SET no_look = (run_id = 'r2')")
    answers = [
        ("r0", "k", 0, True, 1.0, 50, None, "old"),
        ("r1", "k", 1, False, 1.0, 300, "boom", "o1"),
        ("r1", "k", 0, True, 0.5, 100, None, "o0"),
        ("r2", "k", 0, True, 1.0, 80, None, None),
        ("r2", "k", 1, True, 1.0, 80, None, None),
        ("r2", "j", 0, False, 0.0, 999, "x", None),
    ]
    for run, case, repeat, passed, score, latency, error, output in answers:
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, cached, request_hash, "
            "attempts, passed, score, latency_ms, error, output, created_at) "
            "VALUES (?, 'v', 'm', ?, ?, false, 'h', 1, ?, ?, ?, ?, ?, now())",
            [run, case, repeat, passed, score, latency, error, output],
        )
        fill_run_keys(con)
    rows = queries.run_query(con, "case_history", case_id="k", limit=2).to_pylist()
    got = [
        (r["run_id"], r["n"], r["n_passed"], r["n_errors"], r["output"], r["no_look"]) for r in rows
    ]
    assert got == [("r2", 2, 2, 0, None, True), ("r1", 2, 1, 1, "o0", False)]
    r1 = rows[1]
    assert (r1["pass_rate"], r1["mean_score"], r1["latency_ms"]) == (0.5, 0.75, 200.0)
    assert (r1["suite"], r1["variant"], r1["model"]) == ("s", "v", "m")


def test_case_history_reads_the_cases_table_once(tmp_path: Path) -> None:
    """A case_id filter skips no row group (case ids share their first 8 bytes and rows are
    stored in run order), so each scan of cases reads the whole table: the query scans it once
    for the case's rows and picks the newest runs from those."""
    import json

    con = _warehouse(tmp_path)
    _runs(con, [("r0", "s", "2026-01-01 00:00:00+00", None)])
    con.execute(
        "INSERT INTO cases (run_id, run_key, variant, model, case_id, repeat, cached, "
        "request_hash, attempts, passed, created_at) "
        "SELECT 'r0', 0, 'v', 'm', 'c' || i, 0, false, 'h', 1, true, now() FROM range(3) t(i)"
    )
    con.execute(queries.macros())
    (row,) = con.execute(
        "EXPLAIN (FORMAT json) " + queries.get("case_history").sql, {"case_id": "c1", "limit": 5}
    ).fetchall()

    def tables(nodes: list[dict]) -> list[str]:
        found = []
        for node in nodes:
            if node.get("name") == "SEQ_SCAN":
                found.append(node["extra_info"]["Table"].split(".")[-1])
            found += tables(node.get("children", []))
        return found

    assert tables(json.loads(row[1])).count("cases") == 1
