"""Statistics over repeated samples of a case (evalwh/analysis/repeats.py over sql/repeats.sql and
flaky.sql): pass@k and pass^k against math.comb, the flaky cases and their spread, and the report
of a run without repeats."""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from evalwh.analysis import repeats
from evalwh.analysis.repeats import repeats_report
from evalwh.warehouse.store import Warehouse


def test_pass_at_k_and_pass_hat_k_match_math_comb(store: Warehouse) -> None:
    samples = {"x1": (5, 0), "x2": (5, 2), "x3": (5, 5), "x4": (5, 3), "y": (3, 1)}
    rows = {r["k"]: r for r in store.query("repeats", run_id="R").to_pylist() if r["variant"]}
    assert sorted(rows) == [1, 2, 3, 4, 5]
    for k, row in rows.items():
        cases = [(n, c) for n, c in samples.values() if n >= k]
        at_k = statistics.mean(1 - math.comb(n - c, k) / math.comb(n, k) for n, c in cases)
        hat_k = statistics.mean(math.comb(c, k) / math.comb(n, k) for n, c in cases)
        assert row["n_cases"] == len(cases)
        # k 1..3 take y (3 samples) with the x cases (5): the fewest and most repeats
        assert (row["min_repeats"], row["max_repeats"]) == (min(cases)[0], max(cases)[0])
        assert row["pass_at_k"] == pytest.approx(at_k, abs=1e-12)
        assert row["pass_hat_k"] == pytest.approx(hat_k, abs=1e-12)
    assert rows[1]["pass_at_k"] == pytest.approx(7 / 15)  # k=1: the mean of per-case pass rates
    assert rows[1]["n_flaky"] == 3  # x2, x4, y


def test_flaky_cases_and_their_spread(store: Warehouse) -> None:
    flaky = {r["case_id"]: r for r in store.query("flaky", run_id="R").to_pylist()}
    assert set(flaky) == {"x2", "x4", "y"}
    x2 = flaky["x2"]
    assert (x2["n"], x2["n_passed"]) == (5, 2)
    assert x2["passed_by_repeat"] == [True, False, True, False, False]
    assert x2["score_sd"] == pytest.approx(statistics.stdev([0.9, 0.1, 0.9, 0.1, 0.1]))
    assert (x2["pass_rate"], x2["n_errors"], x2["min_score"], x2["max_score"]) == (0.4, 0, 0.1, 0.9)
    assert x2["mean_score"] == pytest.approx(0.42)
    # closest to a coin flip first: x2 (2/5) and x4 (3/5) tie on that and on sd, then y (1/3)
    assert [r["case_id"] for r in store.query("flaky", run_id="R").to_pylist()] == ["x2", "x4", "y"]
    spread = store.query("repeats", run_id="R").to_pylist()[0]
    assert spread["variant"] is None  # the overall row comes first
    per_case = [
        statistics.stdev(s)
        for s in ([0.1] * 5, [0.9, 0.1, 0.9, 0.1, 0.1], [0.9] * 5, [0.9, 0.9, 0.1, 0.9, 0.1])
    ] + [statistics.stdev([0.9, 0.1, 0.1])]
    assert spread["mean_score_sd"] == pytest.approx(statistics.mean(per_case))


def test_the_repeats_report_of_a_run_without_answers_is_zero_repeats_and_empty_lists(
    empty_warehouse: Path,
) -> None:
    assert repeats_report(Warehouse(empty_warehouse), "no-such-run") == {
        "repeats": 0,
        "stats": [],
        "flaky": [],
    }


def test_repeat_statistics_and_flaky_cases_are_asked_of_the_run_given() -> None:
    asked: list[tuple[str, dict[str, Any]]] = []
    store = SimpleNamespace(query=lambda name, **params: asked.append((name, params)))
    repeats.repeat_stats(store, "r-1")
    repeats.flaky_cases(store, "r-1")
    assert asked == [("repeats", {"run_id": "r-1"}), ("flaky", {"run_id": "r-1"})]
