"""sql/summary.sql: the matrix of cells (counts, latency percentiles, tokens, costs, rates on cases
with Wilson intervals; also checked against statsmodels' Wilson interval with summary, run_totals,
criteria and slice side by side), against hand-computed fixtures: each warehouse is built by hand,
row by row, and the expected numbers are worked out in the comments."""

from __future__ import annotations

import math
import random
from pathlib import Path

import duckdb
import pytest

from evalwh.warehouse import queries
from evalwh.warehouse.store import Warehouse
from tests.builders import fill_run_keys, gate_rules, rows_of, warehouse_with
from tests.sql.conftest import (
    _Z,
    _row,
    _timed_answer,
    _warehouse,
    case_rate_interval,
    statsmodels_wilson,
)


def test_summary_matrix_by_hand(tmp_path: Path) -> None:
    # Cell v × m1 of run r, five cases (passed, error, cached, latency, tokens in/out, cost):
    #   c1 pass      -       100  10/1  0.25     c2 pass  cached   200  20/2  0.5
    #   c3 fail  'boom'      300  none  none     c4 fail  -        400  30/3  0.25
    #   c5 pass      -      1000  40/4  0.5
    # n 5, passed 3, errors 1, cached 1; latency p50 300, p95 880 (linear between 400 and
    # 1000: 400 + 0.8 * 600); tokens 100/10; cost without the cached row 1.0, with it 1.5.
    # Cell v × m2: one case without tokens or cost -> 0, not NULL. Run s does not count.
    con = _warehouse(tmp_path)
    rows = [
        ("r", "m1", "c1", True, None, False, 100, 10, 1, 0.25),
        ("r", "m1", "c2", True, None, True, 200, 20, 2, 0.5),
        ("r", "m1", "c3", False, "boom", False, 300, None, None, None),
        ("r", "m1", "c4", False, None, False, 400, 30, 3, 0.25),
        ("r", "m1", "c5", True, None, False, 1000, 40, 4, 0.5),
        ("r", "m2", "c1", True, None, False, 50, None, None, None),
        ("s", "m1", "c1", False, "x", True, 1, 1, 1, 1.0),
    ]
    # cell v × m3: 11 of 11 pass, where the unclamped Wilson upper bound is 1 + 2^-52
    rows += [("r", "m3", f"c{i}", True, None, False, 10, 1, 1, 0.0) for i in range(11)]
    for run, model, case, passed, error, cached, latency, tin, tout, cost in rows:
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, error, cached, "
            "request_hash, attempts, passed, score, latency_ms, input_tokens, output_tokens, "
            "cost_usd, created_at) VALUES (?, 'v', ?, ?, 0, ?, ?, 'x', 1, ?, ?, ?, ?, ?, ?, now())",
            [run, model, case, error, cached, passed, float(passed), latency, tin, tout, cost],
        )
        fill_run_keys(con)
    m1, m2, m3 = queries.run_query(con, "summary", run_id="r").to_pylist()
    assert (m3["model"], m3["n_cases"], m3["pass_rate_hi"]) == ("m3", 11, 1.0)
    assert (m1["model"], m1["n"], m1["n_passed"], m1["n_errors"], m1["n_cached"]) == (
        "m1",
        5,
        3,
        1,
        1,
    )
    assert m1["pass_rate"] == 0.6 and m1["mean_score"] == pytest.approx(0.6)
    assert (m1["p50_latency_ms"], m1["p95_latency_ms"]) == (300, pytest.approx(880))
    assert (m1["input_tokens"], m1["output_tokens"]) == (100, 10)
    assert (m1["cost_usd"], m1["cost_uncached_usd"]) == (1.0, 1.5)
    assert (m2["model"], m2["n"], m2["input_tokens"], m2["output_tokens"]) == ("m2", 1, 0, 0)
    assert (m2["cost_usd"], m2["cost_uncached_usd"]) == (0, 0)


def test_the_p95_of_the_time_requests_waited_is_apart_from_latency(tmp_path: Path) -> None:
    # Cell v x m1: queued 0, 0, 0, 1000 ms and a cached answer (NULL: no request) -> p95 of
    # the four waits, linear between the 3rd and 4th: 0 + 0.85 * 1000 = 850; the latencies
    # (10 ms each) are untouched by it. Cell v x m2: only cached answers -> NULL.
    con = _warehouse(tmp_path)
    rows = [("m1", f"c{i}", q, q is None) for i, q in enumerate([0.0, 0.0, 0.0, 1000.0, None])]
    rows += [("m2", "c1", None, True)]
    for model, case, queued, cached in rows:
        _timed_answer(con, model, case, latency=10.0, queued=queued, cached=cached)
    m1, m2 = queries.run_query(con, "summary", run_id="r").to_pylist()
    assert (m1["p95_queued_ms"], m1["p95_latency_ms"]) == (pytest.approx(850.0), 10.0)
    assert m2["p95_queued_ms"] is None


def test_summary_averages_repeats_per_case_and_gives_the_wilson_interval_on_cases(
    tmp_path: Path,
) -> None:
    # Run r, cell a x z: c1 pass then fail, c2 pass, c3 fail -> n 4, 3 cases, rate
    # (1/2 + 1 + 0) / 3 = 0.5, a fractional case: the CLT interval 0.5 -/+ t(2) 0.5 / sqrt(3),
    # clamped to [0, 1]. Cell b x a: c1 pass -> Wilson [1 / (1 + z^2), 1] on 1 case.
    # Run s: another case of a x z (not counted).
    con = _warehouse(tmp_path)
    _row(con, "r", variant="a", model="z")
    _row(con, "r", variant="a", model="z", repeat=1, passed=False)
    _row(con, "r", variant="a", model="z", case_id="c2")
    _row(con, "r", variant="a", model="z", case_id="c3", passed=False)
    _row(con, "r", variant="b", model="a")
    _row(con, "s", variant="a", model="z", case_id="c9")
    for i in range(11):  # 11 passed cases: the upper end rounds above 1, kept at 1
        _row(con, "r", variant="c", model="a", case_id=f"x{i}")
    az, ba, ca = queries.run_query(con, "summary", run_id="r").to_pylist()
    assert (ca["n_cases"], ca["pass_rate"], ca["pass_rate_hi"]) == (11, 1.0, 1.0)
    assert [(r["variant"], r["model"], r["n"], r["n_cases"], r["n_passed"]) for r in (az, ba)] == [
        ("a", "z", 4, 3, 2),
        ("b", "a", 1, 1, 1),
    ]
    assert az["pass_rate"] == 0.5
    assert (az["pass_rate_lo"], az["pass_rate_hi"]) == case_rate_interval([0.5, 1, 0]) == (0, 1)
    assert (ba["pass_rate"], ba["pass_rate_hi"]) == (1.0, 1.0)
    assert math.isclose(ba["pass_rate_lo"], 1 / (1 + _Z * _Z))


@pytest.mark.parametrize(("k", "n"), [(0, 1), (1, 1), (0, 7), (7, 7), (3, 12), (1, 2), (19, 40)])
def test_wilson_intervals_match_statsmodels_and_stay_in_0_1(tmp_path, k, n):
    store = warehouse_with(tmp_path, {"R": rows_of({f"c{i}": [int(i < k)] for i in range(n)})})
    lo, hi = statsmodels_wilson(k, n)
    for name in ("summary", "run_totals"):
        (row,) = store.query(name, run_id="R").to_pylist()
        assert row["pass_rate_lo"] == pytest.approx(lo, abs=1e-12)
        assert row["pass_rate_hi"] == pytest.approx(hi, abs=1e-12)
        assert 0.0 <= row["pass_rate_lo"] <= row["pass_rate_hi"] <= 1.0  # no -5e-17 at 0/n
    k1 = next(r for r in store.query("criteria", run_id="R").to_pylist() if r["criterion"] == "k1")
    assert (k1["pass_rate_lo"], k1["pass_rate_hi"]) == pytest.approx((lo, hi), abs=1e-12)
    assert k1["pass_rate_lo"] >= 0.0 and k1["pass_rate_hi"] <= 1.0
    overall = store.query("slice", run_id="R", keys=[]).to_pylist()[0]
    assert (overall["pass_rate_lo"], overall["pass_rate_hi"]) == pytest.approx((lo, hi), abs=1e-12)


def test_identical_repeats_give_the_interval_of_one_sample(tmp_path):
    rng = random.Random(7)
    once = {f"c{i}": [rng.random() < 0.6] for i in range(20)}
    thrice = {case: ps * 3 for case, ps in once.items()}
    store = warehouse_with(tmp_path, {"ONE": rows_of(once), "THREE": rows_of(thrice)})
    for name in ("summary", "run_totals", "criteria"):
        a, b = store.query(name, run_id="ONE").to_pylist(), store.query(name, run_id="THREE")
        for x, y in zip(a, b.to_pylist(), strict=True):
            assert y["n"] == 3 * x["n"] and y["n_cases"] == x["n_cases"] == 20
            for key in ("pass_rate", "pass_rate_lo", "pass_rate_hi"):
                assert y[key] == pytest.approx(x[key], abs=1e-15), (name, key)
    gate_one = store.query(
        "gate", run_id="ONE", rules=gate_rules("pass_rate", ">=", 0.5), tolerance=0
    )
    gate_three = store.query(
        "gate", run_id="THREE", rules=gate_rules("pass_rate", ">=", 0.5), tolerance=0
    )
    assert gate_one.to_pylist()[0]["n"] == gate_three.to_pylist()[0]["n"] == 20


def test_unequal_repeats_average_each_case_first(tmp_path):
    # case means 0, 1/3, 1, 0.5, 1: the rate is their mean, the interval the CLT one on 5 cases
    passes = {"a": [0, 0, 0], "b": [1, 0, 0], "c": [1, 1, 1], "d": [1, 0], "e": [1]}
    store = warehouse_with(tmp_path, {"R": rows_of(passes)})
    (row,) = store.query("summary", run_id="R").to_pylist()
    means = [sum(p) / len(p) for p in passes.values()]
    p = sum(means) / len(means)
    assert row["n"] == 12 and row["n_cases"] == 5 and row["pass_rate"] == pytest.approx(p)
    assert (row["pass_rate_lo"], row["pass_rate_hi"]) == pytest.approx(case_rate_interval(means))
    assert row["pass_rate_lo"] > 0  # not clamped at this end


def test_summary_matches_a_hand_count(quickstart_runs: tuple[Path, list[str]]) -> None:
    out, (run_a, _) = quickstart_runs
    wh = Warehouse(out / "warehouse.duckdb")
    summary = {(r["variant"], r["model"]): r for r in wh.query("summary", run_id=run_a).to_pylist()}
    with duckdb.connect(str(out / "warehouse.duckdb"), read_only=True) as con:
        counts = con.execute(
            "SELECT variant, model, count(*), sum(passed::int) FROM cases WHERE run_id = ? GROUP BY ALL",
            [run_a],
        ).fetchall()
    for variant, model, n, passed in counts:
        row = summary[(variant, model)]
        assert (row["n"], row["n_passed"]) == (n, passed)
        p = passed / n
        z = 1.959963984540054
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * (p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5 / (1 + z * z / n)
        assert row["pass_rate_lo"] == pytest.approx(centre - half)
        assert row["pass_rate_hi"] == pytest.approx(centre + half)


def test_wilson_interval_against_a_reference_value() -> None:
    # Wilson 95% interval for 3 of 12, computed by hand from Wilson (1927): 0.08894 .. 0.53231.
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE cases AS SELECT 'r' AS run_id, 0 AS run_key, 'v' AS variant, 'm' AS model, "
        "'c' || i AS case_id, i < 3 AS passed, "
        "NULL::VARCHAR AS error, false AS cached, 1.0 AS score, 10.0 AS latency_ms, "
        "NULL::DOUBLE AS queued_ms, 1 AS input_tokens, 1 AS output_tokens, 0.0 AS cost_usd "
        "FROM range(12) t(i)"
    )
    row = queries.run_query(con, "summary", run_id="r").to_pylist()[0]
    assert row["pass_rate_lo"] == pytest.approx(0.08894, abs=1e-5)
    assert row["pass_rate_hi"] == pytest.approx(0.53231, abs=1e-5)
