"""sql/criteria.sql: per-criterion pass rates, errors and Wilson intervals (repeats averaged per case
first), against hand-computed fixtures: each warehouse is built by hand, row by row, and the
expected numbers are worked out in the comments.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalwh.warehouse import queries
from tests.builders import fill_run_keys, wilson
from tests.sql.conftest import _answer, _warehouse


def test_criteria_summary_matches_hand_counts_and_wilson(tmp_path: Path) -> None:
    # run r: criterion 'a' 10 rows, 5 pass, 1 scorer error, scores 0.0 .. 0.9 (mean 0.45),
    #   weight 2, one row not required -> required false; Wilson 5/10: [0.2366, 0.7634]
    #   (the textbook value); criterion 'b' 4 rows, all pass, score 1: Wilson 4/4 lower bound
    #   n / (n + z^2) = 4 / 7.8415 = 0.5101, upper 1. Run s: rows that must not count.

    con = _warehouse(tmp_path)
    rows = [
        ("r", "a", i, i < 5, i / 10, "boom" if i == 9 else None, i != 3, 2.0) for i in range(10)
    ]
    rows += [("r", "b", i, True, 1.0, None, True, 1.0) for i in range(4)]
    # 'c': 11 of 11 pass, where the unclamped upper bound is 1 + 2^-52: clamped to exactly 1
    rows += [("r", "c", i, True, 1.0, None, True, 1.0) for i in range(11)]
    rows += [("s", "a", i, False, 0.0, "x", True, 1.0) for i in range(3)]
    for run, criterion, i, passed, score, error, required, weight in rows:
        con.execute(
            "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, scorer, "
            "score, passed, weight, required, error) "
            "VALUES (?, 'v', 'm', ?, 0, ?, 'exact', ?, ?, ?, ?, ?)",
            [run, f"c{i}", criterion, score, passed, weight, required, error],
        )
        fill_run_keys(con)
    got = {r["criterion"]: r for r in queries.run_query(con, "criteria", run_id="r").to_pylist()}
    a, b = got["a"], got["b"]
    assert sorted(got) == ["a", "b", "c"]
    assert (got["c"]["n_cases"], got["c"]["pass_rate"], got["c"]["pass_rate_hi"]) == (11, 1.0, 1.0)
    assert (a["scorer"], a["weight"], a["required"]) == ("exact", 2.0, False)
    assert (a["n"], a["n_passed"], a["n_errors"]) == (10, 5, 1)
    assert a["pass_rate"] == 0.5 and a["mean_score"] == pytest.approx(0.45)
    assert (a["pass_rate_lo"], a["pass_rate_hi"]) == (
        pytest.approx(0.2366, abs=1e-4),
        pytest.approx(0.7634, abs=1e-4),
    )
    assert (b["required"], b["n"], b["n_passed"], b["n_errors"]) == (True, 4, 4, 0)
    assert (b["pass_rate_lo"], b["pass_rate_hi"]) == pytest.approx(wilson(4, 4))
    assert b["pass_rate_lo"] == pytest.approx(4 / (4 + 1.959963984540054**2))
    assert b["pass_rate_hi"] == pytest.approx(1.0)


def test_criteria_and_gate_average_repeats_first_and_read_single_answers_as_cases(
    tmp_path: Path,
) -> None:
    # Run r, criterion k: c1 answered twice (pass, fail) -> 0.5; c2 once (pass) -> 1;
    # c3 only at repeat 1 (fail) -> 0. Per case: (0.5 + 1 + 0) / 3 = 0.5 over 3 cases (4
    # rows; 2 passed). Reading every row as a case would give 2/4 over 4, and dropping the
    # repeated cases 1/1 over 1.
    con = _warehouse(tmp_path)
    for case, repeat, ok in (("c1", 0, True), ("c1", 1, False), ("c2", 0, True), ("c3", 1, False)):
        _answer(con, "r", case, repeat, ok)
    (row,) = queries.run_query(con, "criteria", run_id="r").to_pylist()
    assert (row["n"], row["n_cases"], row["n_passed"]) == (4, 3, 2)
    assert row["pass_rate"] == pytest.approx(0.5)
    rule = {"scope": "criterion", "target": "*", "metric": "pass_rate", "op": ">=", "limit": 0.6}
    gate = queries.run_query(
        con, "gate", run_id="r", rules=json.dumps([rule]), tolerance=0.0
    ).to_pylist()
    assert [(g["target"], g["n"], g["passed"]) for g in gate] == [("k", 3, False)]
    assert gate[0]["value"] == pytest.approx(0.5)
    # a gate without criterion rules has no criterion rows (their scores are not read)
    run_rule = {**rule, "scope": "run", "target": "run"}
    gate = queries.run_query(
        con, "gate", run_id="r", rules=json.dumps([run_rule]), tolerance=0.0
    ).to_pylist()
    assert [(g["scope"], g["n"]) for g in gate] == [("run", 3)]
