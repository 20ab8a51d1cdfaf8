"""Exec checks through the whole pipeline (scoring, engine, pairwise, warehouse): stored beside
the answer as a required criterion of weight 0, never cached, a timed-out check fails its case
with the reason in its score row, and an answer whose check failed cannot win a pairwise
comparison against one whose check passed. The checks themselves:
tests/scoring/test_checks.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pytest

import evalwh
from tests.conftest import write

pytestmark = pytest.mark.skipif(os.name == "nt", reason="exec checks need a POSIX shell")


CONFIG = """\
models:
  - id: good
    provider: mock
    mock: {default: "print({{ vars.n }} * 2)"}
  - id: bad
    provider: mock
    mock: {default: "print({{ vars.n }} + 1)"}
variants:
  - id: v
    messages: [{role: user, content: "Write Python that prints {{ n }} doubled."}]
cases:
  - id: two
    vars: {n: 2}
    check:
      setup: 'printf "%s\\n" "$ANSWER_TEXT" > prog.py'
      run: 'test "$(python3 prog.py)" = "$((CASE_N * 2))"'
      timeout_s: 20
  - id: three
    vars: {n: 3}
    check: 'test "$(python3 "$ANSWER")" = "6"'
  - id: plain
    vars: {n: 5}
    expected: "print(5 * 2)"
judges:
  - id: j
    model: {id: j, provider: mock, mock: {default: '{"winner": "A"}'}}
scorecard:
  - {name: has-print, type: contains, value: print}
pairwise:
  - {name: good-vs-bad, judge: j, baseline: {model: bad}, candidate: {model: good}}
"""


def test_checks_are_stored_fail_the_case_and_decide_pairs(tmp_path: Path) -> None:
    cfg = write(tmp_path / "eval.yaml", CONFIG)
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    db = tmp_path / "out" / "warehouse.duckdb"
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            "SELECT model, case_id, passed, check_passed, check_exit_code FROM cases ORDER BY model, case_id"
        ).fetchall()
        pairs = con.execute(
            "SELECT case_id, verdict, eligible, excluded_reason FROM pairs ORDER BY case_id"
        ).fetchall()
        check_rows = con.execute(
            "SELECT model, case_id, scorer, score, passed, weight, required, details, error "
            "FROM scores WHERE criterion = 'check' ORDER BY model, case_id"
        ).fetchall()
    assert rows == [
        ("bad", "plain", True, None, None),
        ("bad", "three", False, False, 1),
        ("bad", "two", False, False, 1),
        ("good", "plain", True, None, None),
        ("good", "three", True, True, 0),
        ("good", "two", True, True, 0),
    ]
    # a check is a required criterion of weight 0: it decides passing, not the score
    assert check_rows == [
        ("bad", "three", "exec-check", 0.0, False, 0.0, True, '{"exit_code": 1}', None),
        ("bad", "two", "exec-check", 0.0, False, 0.0, True, '{"exit_code": 1}', None),
        ("good", "three", "exec-check", 1.0, True, 0.0, True, '{"exit_code": 0}', None),
        ("good", "two", "exec-check", 1.0, True, 0.0, True, '{"exit_code": 0}', None),
    ]
    # the judge always says "A" (position bias): without checks every pair would be a flip/tie
    assert pairs[1:] == [
        ("three", "candidate", False, "baseline: its exec check failed"),
        ("two", "candidate", False, "baseline: its exec check failed"),
    ]
    assert pairs[0][:3] == ("plain", "tie", True)
    assert result.totals["n_passed"] == 4


def test_checks_are_never_cached(tmp_path: Path) -> None:
    marker = tmp_path / "ran.log"
    cfg = write(
        tmp_path / "eval.yaml", CONFIG.replace("check: 'test", f"check: 'echo x >> {marker}; test")
    )
    evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    again = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert again.stats["requests"] == 0  # answers (and judge verdicts) came from the cache
    assert marker.read_text().count("x") == 4  # case `three` x 2 models, in both runs


def test_a_check_that_times_out_fails_its_case_and_its_score_row_says_why(
    tmp_path: Path,
) -> None:
    cfg = write(
        tmp_path / "eval.yaml",
        """\
models:
  - {id: m, provider: mock, mock: {default: "anything"}}
variants:
  - id: v
    messages: [{role: user, content: "{{ q }}"}]
cases:
  - id: slow
    vars: {q: one}
    check: {run: "sleep 30", timeout_s: 0.5}
scorecard:
  - {name: any, type: contains, value: any}
""",
    )
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    with duckdb.connect(str(tmp_path / "out" / "warehouse.duckdb"), read_only=True) as con:
        row = con.execute(
            "SELECT score, passed, error FROM scores WHERE criterion = 'check'"
        ).fetchone()
    assert row == (0.0, False, "timed out after 0.5 s")
    assert result.totals["n_passed"] == 0
