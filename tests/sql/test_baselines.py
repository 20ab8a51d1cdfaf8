"""sql/baselines.sql: every pinned name with its run's pass rate, n and n_cases (cases apart from
answers), against hand-computed fixtures: each warehouse is built by hand, row by row, and the
expected numbers are worked out in the comments.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evalwh.warehouse import queries
from tests.builders import fill_run_keys
from tests.sql.conftest import _warehouse


def test_baselines_carry_their_runs_pass_rate_and_n(tmp_path: Path) -> None:
    # 'prod' -> run r: 3 of 4 cases pass -> n 4, n_passed 3, pass rate 0.75
    # 'empty' -> run e with no case rows -> n 0, pass rate NULL (not a division by zero)
    con = _warehouse(tmp_path)
    for run in ("r", "e"):
        con.execute(
            "INSERT INTO runs (run_id, label, suite, status, config_hash, dataset_hash, "
            "n_planned, started_at, evalwh_version) "
            "VALUES (?, ?, 's', 'completed', 'h', 'd', 4, now(), 't')",
            [run, f"label-{run}"],
        )
    for i, passed in enumerate((True, True, False, True)):
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, cached, request_hash, "
            "attempts, score, passed, created_at) "
            "VALUES ('r', 'v', 'm', ?, 0, false, 'x', 1, 0, ?, now())",
            [f"c{i}", passed],
        )
        fill_run_keys(con)
    con.execute("INSERT INTO baselines VALUES ('prod', 'r', now()), ('empty', 'e', now())")
    rows = queries.run_query(con, "baselines").to_pylist()
    got = [
        (r["name"], r["run_id"], r["label"], r["n"], r["n_passed"], r["pass_rate"]) for r in rows
    ]
    assert got == [("empty", "e", "label-e", 0, 0, None), ("prod", "r", "label-r", 4, 3, 0.75)]


def test_baselines_count_cases_apart_from_answers_and_only_the_pinned_run(
    tmp_path: Path,
) -> None:
    # bugs: the semi join on `<>` (one pinned run then counts nothing of its own), n_cases off
    # by one, an empty run's n_cases 1.
    # run r (pinned): cases c0 (repeats pass, fail), c1 (pass, pass), c2 (fail, fail):
    #   n 6 answers, n_passed 3, n_cases 3, pass rate mean(0.5, 1, 0) = 0.5.
    # run u (not pinned) has cases of its own; run e (pinned alone in a second store) has none.
    con = _warehouse(tmp_path)
    for run in ("r", "u", "e"):
        con.execute(
            "INSERT INTO runs (run_id, label, suite, status, config_hash, dataset_hash, "
            "n_planned, started_at, evalwh_version) "
            "VALUES (?, ?, 's', 'completed', 'h', 'd', 6, now(), 't')",
            [run, f"label-{run}"],
        )
    answers = [("c0", 0, True), ("c0", 1, False), ("c1", 0, True), ("c1", 1, True)]
    answers += [("c2", 0, False), ("c2", 1, False)]
    for run in ("r", "u"):
        for case, repeat, passed in answers if run == "r" else answers[:2]:
            con.execute(
                "INSERT INTO cases (run_id, variant, model, case_id, repeat, cached, "
                "request_hash, attempts, score, passed, created_at) "
                "VALUES (?, 'v', 'm', ?, ?, false, 'x', 1, 0, ?, now())",
                [run, case, repeat, passed],
            )
            fill_run_keys(con)
    con.execute("INSERT INTO baselines VALUES ('prod', 'r', now())")
    (row,) = queries.run_query(con, "baselines").to_pylist()
    assert (row["name"], row["n"], row["n_passed"], row["n_cases"]) == ("prod", 6, 3, 3)
    assert row["pass_rate"] == pytest.approx(0.5)
    con.execute("DELETE FROM baselines")
    con.execute("INSERT INTO baselines VALUES ('empty', 'e', now())")
    (row,) = queries.run_query(con, "baselines").to_pylist()
    assert (row["n"], row["n_passed"], row["n_cases"], row["pass_rate"]) == (0, 0, 0, None)
