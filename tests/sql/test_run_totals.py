"""sql/run_totals.sql: a run's totals (counts, rates on cases, Wilson interval, costs apart from the
cache and judges), against hand-computed fixtures: each warehouse is built by hand, row by row, and
the expected numbers are worked out in the comments.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from evalwh.warehouse import queries
from tests.builders import fill_run_keys
from tests.sql.conftest import (
    _Z,
    _answer,
    _judged,
    _pair_votes,
    _row,
    _warehouse,
    case_rate_interval,
)


def test_run_totals_by_hand_and_an_empty_run(tmp_path: Path) -> None:
    # bugs: another run's cases or pairs counted, the cached cost counted instead of the
    # rest, a sum over no rows given as 1, the pairs' judge cost subtracted, a case too many,
    # the Wilson interval with another z or any operator moved (statsmodels as the
    # reference), an interval for a run without answers. Run r: c1 answered twice (pass,
    # fail) -> 0.5, c2 pass, c3 fail (errored): pass rate (0.5 + 1 + 0) / 3 over 3 cases.
    from statsmodels.stats.proportion import proportion_confint

    con = _warehouse(tmp_path)
    for run, case, repeat, ok, cost, cached, tokens, judge in (
        ("r", "c1", 0, True, 0.25, False, 10, 0.0625),
        ("r", "c1", 1, False, 0.125, True, 20, None),
        ("r", "c2", 0, True, 0.5, False, 30, None),
        ("r", "c3", 0, False, None, False, None, None),
        ("s", "c4", 0, True, 8.0, False, 1000, 1.0),
    ):
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, metadata, cached, "
            "request_hash, attempts, passed, score, cost_usd, input_tokens, output_tokens, "
            "judge_cost_usd, error, created_at) "
            "VALUES (?, 'v', 'm', ?, ?, '{}', ?, 'h', 1, ?, ?, ?, ?, ?, ?, ?, now())",
            [run, case, repeat, cached, ok, float(ok), cost, tokens,
             None if tokens is None else tokens // 10, judge, None if tokens else "boom"],
        )  # fmt: skip
        fill_run_keys(con)
    _pair_votes(con, "p1", ["candidate"], "en")
    _pair_votes(con, "p2", ["candidate"], "en")
    con.execute("UPDATE pairs SET cost_usd = 0.03125")
    con.execute("UPDATE pairs SET run_id = 's', cost_usd = 2.0 WHERE case_id = 'p2'")
    (t,) = queries.run_query(con, "run_totals", run_id="r").to_pylist()
    assert (t["n"], t["n_cases"], t["n_passed"], t["n_errors"], t["n_cached"]) == (4, 3, 2, 1, 1)
    assert (t["pass_rate"], t["error_rate"], t["mean_score"]) == (0.5, 0.25, 0.5)
    # a fractional case (c1): the CLT interval on the case means, not Wilson's on 1.5 of 3
    assert (t["pass_rate_lo"], t["pass_rate_hi"]) == case_rate_interval([0.5, 1, 0])
    lo, hi = proportion_confint(1, 2, alpha=0.05, method="wilson")  # c1 and c2 of run r only
    _answer(con, "w", "c1", 0, True)
    _answer(con, "w", "c2", 0, False)
    (w,) = queries.run_query(con, "run_totals", run_id="w").to_pylist()
    assert (w["pass_rate_lo"], w["pass_rate_hi"]) == (pytest.approx(lo), pytest.approx(hi))
    assert (t["cost_usd"], t["cost_uncached_usd"]) == (0.75, 0.875)
    assert (t["input_tokens"], t["output_tokens"]) == (60, 6)
    assert t["judge_cost_usd"] == 0.0625 + 0.03125
    (empty,) = queries.run_query(con, "run_totals", run_id="none").to_pylist()
    assert (empty["n"], empty["n_cases"], empty["pass_rate"]) == (0, 0, None)
    assert (empty["pass_rate_lo"], empty["pass_rate_hi"]) == (None, None)
    sums = ("cost_usd", "cost_uncached_usd", "input_tokens", "output_tokens", "judge_cost_usd")
    assert [empty[k] for k in sums] == [0, 0, 0, 0, 0]
    (other,) = queries.run_query(con, "run_totals", run_id="s").to_pylist()
    assert (other["cost_usd"], other["judge_cost_usd"]) == (8.0, 3.0)
    # one case passed: Wilson [1 / (1 + z^2), 1]; 11 of 11: the upper bound clamped to exactly 1
    z2 = 1.959963984540054**2
    assert (other["n_cases"], other["pass_rate_lo"], other["pass_rate_hi"]) == (
        1,
        pytest.approx(1 / (1 + z2)),
        1.0,
    )
    for i in range(11):
        _answer(con, "all", f"c{i}", 0, True)
    (every,) = queries.run_query(con, "run_totals", run_id="all").to_pylist()
    assert (every["n_cases"], every["pass_rate_hi"]) == (11, 1.0)
    assert every["pass_rate_lo"] == pytest.approx(11 / (11 + z2))


def test_run_totals_by_hand_with_cached_errored_and_judged_answers(tmp_path: Path) -> None:
    # Run r: v x m c1 r0 pass (cost 0.5, tokens 10/20, judge 0.25, score 1); c1 r1 fail from
    # the cache (cost 0.5, tokens 10/20, score 0.5); c2 error (no cost, no tokens, score 0);
    # w x m c1 fail (cost 0.25, tokens 5/0, score 0.25). Pairs of r cost 1.0 + 0.5 (+ one
    # without a cost); a pair of run s costs 8.
    # n 4, passed 1, errors 1, cached 1; cases: v c1 1/2, v c2 0, w c1 0 -> p = 1/6 on 3;
    # score (1 + 0.5 + 0 + 0.25) / 4; cost not from the cache 0.75, with it 1.25; judges
    # 0.25 + 1.5. Run s (one answer) is not counted.
    con = _warehouse(tmp_path)
    _row(con, "r", cost_usd=0.5, input_tokens=10, output_tokens=20, judge_cost_usd=0.25)
    _row(
        con,
        "r",
        repeat=1,
        passed=False,
        cached=True,
        score=0.5,
        cost_usd=0.5,
        input_tokens=10,
        output_tokens=20,
    )
    _row(con, "r", case_id="c2", passed=False, score=0.0, error="boom")
    _row(con, "r", variant="w", passed=False, score=0.25, cost_usd=0.25, input_tokens=5)
    _row(con, "s", cost_usd=9.0, input_tokens=99, judge_cost_usd=9.0)
    for run, cost in (("r", 1.0), ("r", 0.5), ("r", None), ("s", 8.0)):
        _judged(con, "c", f"k{cost}", "tie", cost=cost)
        con.execute("UPDATE pairs SET run_id = ? WHERE case_id = ?", [run, f"k{cost}"])
    (t,) = queries.run_query(con, "run_totals", run_id="r").to_pylist()
    counts = ("n", "n_cases", "n_passed", "n_errors", "n_cached")
    assert [t[k] for k in counts] == [4, 3, 1, 1, 1]
    assert math.isclose(t["pass_rate"], 1 / 6)
    lo, hi = case_rate_interval([0.5, 0, 0])  # CLT: c1 is fractional
    assert math.isclose(t["pass_rate_lo"], lo) and math.isclose(t["pass_rate_hi"], hi)
    assert (t["error_rate"], t["mean_score"]) == (0.25, 1.75 / 4)
    assert (t["cost_usd"], t["cost_uncached_usd"], t["judge_cost_usd"]) == (0.75, 1.25, 1.75)
    assert (t["input_tokens"], t["output_tokens"]) == (25, 40)


def test_run_totals_of_an_empty_run_and_of_a_single_case(tmp_path: Path) -> None:
    # No answers: zeros, and no rates or interval (not 0 and 1). One passed case: the Wilson
    # interval on n 1 is [1 / (1 + z^2), 1]; an answer without costs or tokens sums to 0.
    con = _warehouse(tmp_path)
    (empty,) = queries.run_query(con, "run_totals", run_id="none").to_pylist()
    assert [empty[k] for k in ("n", "n_cases", "n_passed", "n_errors", "n_cached")] == [0] * 5
    nothing = ("pass_rate", "pass_rate_lo", "pass_rate_hi", "error_rate", "mean_score")
    assert [empty[k] for k in nothing] == [None] * 5
    zero = ("cost_usd", "cost_uncached_usd", "input_tokens", "output_tokens", "judge_cost_usd")
    assert [empty[k] for k in zero] == [0] * 5
    _row(con, "one")
    (one,) = queries.run_query(con, "run_totals", run_id="one").to_pylist()
    assert (one["n_cases"], one["pass_rate"], one["pass_rate_hi"]) == (1, 1.0, 1.0)
    assert math.isclose(one["pass_rate_lo"], 1 / (1 + _Z * _Z))
    assert [one[k] for k in zero] == [0] * 5
    # 11 passed cases: the interval's upper end rounds to 1.0000000000000002, kept at 1.
    for i in range(11):
        _row(con, "eleven", case_id=f"c{i}")
    (eleven,) = queries.run_query(con, "run_totals", run_id="eleven").to_pylist()
    assert (eleven["n_cases"], eleven["pass_rate"], eleven["pass_rate_hi"]) == (11, 1.0, 1.0)
