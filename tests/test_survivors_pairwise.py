"""Tests that kill mutants mutmut found alive in evalwh/engine/pairwise.py: the `require:`
eligibility rule, the verdicts of pairs decided without the judge (with the reason stored in
`pairs.excluded_reason`), and what a judged pair stores (question shown to the judge, cost,
flip flag, timestamp). One mock run feeds every test; each names the behaviour it pins."""

from __future__ import annotations

import os
import time
from typing import Any

import duckdb
import pytest

import evalwh
from evalwh.engine.pairwise import _ok
from tests.conftest import write

# base / cand answer with their case's vars; criteria alpha and beta look for those words.
# The judge names the answer holding "gamma" only when the prompt shows the question (QMARK);
# without it, it calls both orders a tie.
CONFIG = """\
models:
  - id: base
    provider: mock
    mock: {default: "{{ vars.base }}"}
  - id: cand
    provider: mock
    mock: {default: "{{ vars.cand }}"}
variants:
  - id: v
    messages: [{role: user, content: "QMARK {{ q }}"}]
cases:
  - {id: c1-base-fails-alpha, vars: {q: one, base: "beta", cand: "alpha beta"}}
  - {id: c2-cand-fails-both, vars: {q: two, base: "alpha beta", cand: "delta"}}
  - {id: c3-both-fail, vars: {q: three, base: "alpha", cand: "delta"}}
  - {id: c4-both-pass, vars: {q: four, base: "alpha beta", cand: "alpha beta gamma"}}
judges:
  - id: j
    model:
      id: j
      provider: mock
      mock:
        default: >-
          {% set a = prompt.split("Answer A:")[1].split("Answer B:")[0] %}{"winner":
          "{{ ('A' if 'gamma' in a else 'B') if 'QMARK' in prompt else 'tie' }}",
          "rationale": "r"}
scorecard:
  - {name: alpha, type: contains, value: alpha, required: false}
  - {name: beta, type: contains, value: beta, required: false}
pairwise:
  - name: cmp
    judge: j
    baseline: {model: base}
    candidate: {model: cand}
    require: [alpha, beta]
"""

pytestmark = pytest.mark.skipif(os.name == "nt", reason="time.tzset is POSIX-only")

# A zone 14 hours ahead of UTC: a local clock read as UTC would be far off.
FAR_ZONE = "Pacific/Kiritimati"


Rows = dict[str, dict[str, Any]]


def _set_tz(zone: str | None) -> None:
    if zone is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = zone
    time.tzset()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Rows, tuple[float, float]]:
    """Run the config once (in a local zone far from UTC); the pairs rows by case id, and the
    wall-clock window the run ran in."""
    tmp = tmp_path_factory.mktemp("pairwise")
    cfg = write(tmp / "eval.yaml", CONFIG)
    old_tz = os.environ.get("TZ")
    _set_tz(FAR_ZONE)
    try:
        before = time.time()
        evalwh.run_eval(cfg, output_dir=tmp / "out")
        after = time.time()
    finally:
        _set_tz(old_tz)
    with duckdb.connect(str(tmp / "out" / "warehouse.duckdb"), read_only=True) as con:
        cursor = con.execute(
            "SELECT case_id, verdict, verdict_ab, verdict_ba, flipped, eligible, "
            "excluded_reason, baseline_ok, candidate_ok, error, cost_usd, "
            "epoch(created_at) AS created_s FROM pairs"
        )
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]
    return {str(r["case_id"]): r for r in rows}, (before, after)


@pytest.fixture
def pairs(run: tuple[Rows, tuple[float, float]]) -> Rows:
    return run[0]


def test_every_case_makes_one_pair(pairs: Rows) -> None:
    assert sorted(pairs) == [
        "c1-base-fails-alpha",
        "c2-cand-fails-both",
        "c3-both-fail",
        "c4-both-pass",
    ]


def test_a_baseline_missing_a_required_criterion_loses_to_a_passing_candidate_unjudged(
    pairs: Rows,
) -> None:
    """verdict candidate, not judged (no per-order verdicts), reason names the criterion."""
    row = pairs["c1-base-fails-alpha"]
    assert row["verdict"] == "candidate"
    assert (row["verdict_ab"], row["verdict_ba"]) == (None, None)
    assert row["excluded_reason"] == "baseline: failed required criterion alpha"
    assert (row["eligible"], row["baseline_ok"], row["candidate_ok"]) == (False, False, True)


def test_a_candidate_missing_required_criteria_loses_with_all_of_them_comma_joined(
    pairs: Rows,
) -> None:
    """verdict baseline; the reason lists every missing criterion, in `require` order."""
    row = pairs["c2-cand-fails-both"]
    assert row["verdict"] == "baseline"
    assert (row["verdict_ab"], row["verdict_ba"]) == (None, None)
    assert row["excluded_reason"] == "candidate: failed required criterion alpha, beta"
    assert (row["eligible"], row["baseline_ok"], row["candidate_ok"]) == (False, True, False)


def test_two_ineligible_sides_tie_with_both_reasons_joined_by_a_semicolon(
    pairs: Rows,
) -> None:
    row = pairs["c3-both-fail"]
    assert row["verdict"] == "tie"
    assert row["excluded_reason"] == (
        "baseline: failed required criterion beta; candidate: failed required criterion alpha, beta"
    )
    assert (row["eligible"], row["baseline_ok"], row["candidate_ok"]) == (False, False, False)


def test_pairs_decided_without_the_judge_are_not_flips_and_cost_nothing(
    pairs: Rows,
) -> None:
    for case in ("c1-base-fails-alpha", "c2-cand-fails-both", "c3-both-fail"):
        row = pairs[case]
        assert row["flipped"] is False, case
        assert row["cost_usd"] is None, case
        assert row["error"] is None, case


def test_the_judge_sees_the_question_and_a_consistent_verdict_is_not_a_flip(
    pairs: Rows,
) -> None:
    """Both sides passed `require`: judged in both orders; the mock judge picks the better
    answer only when the prompt holds the question text, so `candidate` proves it saw it."""
    row = pairs["c4-both-pass"]
    assert (row["verdict_ab"], row["verdict_ba"]) == ("candidate", "candidate")
    assert row["verdict"] == "candidate"
    assert row["flipped"] is False
    assert (row["eligible"], row["excluded_reason"], row["error"]) == (True, None, None)


def test_a_judged_pair_with_an_unpriced_judge_costs_zero(
    pairs: Rows,
) -> None:
    assert pairs["c4-both-pass"]["cost_usd"] == 0.0


def test_pairs_are_stamped_with_the_true_utc_time_whatever_the_local_zone(
    run: tuple[Rows, tuple[float, float]],
) -> None:
    """The run ran with TZ 14 hours ahead of UTC; created_at is still the real instant."""
    pairs, (before, after) = run
    for case, row in pairs.items():
        assert before - 1 <= row["created_s"] <= after + 1, case


def test_ok_lists_every_missing_required_criterion_in_require_order() -> None:
    row = {"error": None, "check_passed": None, "criteria_passed": ["b"]}
    assert _ok(row, ("c", "b", "a")) == (False, "failed required criterion c, a")
    assert _ok(row, ("b",)) == (True, None)
    assert _ok(row, ()) == (True, None)
