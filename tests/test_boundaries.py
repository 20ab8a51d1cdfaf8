"""Every threshold comparison at exactly its limit: a value on the limit passes, one step past it
fails. Without these, ``>=`` written as ``>`` (or ``<=`` as ``<``) survives the whole suite.

The fixture runs use binary fractions (0.5, 0.25, 0.125) so that "exactly on the limit" is exact
in floating point, whatever tolerance the comparison allows.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from evalwh.analysis.gate import judge
from evalwh.config.model import Case, Criterion
from evalwh.scoring.base import ScoreResult
from evalwh.scoring.scorecard import Scorecard
from evalwh.warehouse.connect import write_connection
from evalwh.warehouse.store import Warehouse

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
STEP = 0.01  # "one step past the limit": far above any float tolerance


def _scorecard(threshold: float, score: float) -> bool:
    crit = Criterion(name="c", type="x", threshold=threshold)
    card = Scorecard([crit], [lambda output, case: ScoreResult(score)])
    case = Case(id="k", vars={}, expected=None)
    return card.score("out", case).passed


@pytest.mark.parametrize("threshold", [0.0, 0.25, 0.5, 0.7, 1.0])
def test_a_score_exactly_at_its_criterion_threshold_passes(threshold: float) -> None:
    assert _scorecard(threshold, threshold) is True
    if threshold > 0:
        assert _scorecard(threshold, threshold - STEP) is False


# -- the absolute gate: sql/gate.sql via the thresholds of a config ---------------------------
# Run G, one criterion 'k1' mirroring the verdict plus 'k2' (score 0.5, passing half the time):
#   cell v × m1: c1 pass 1.0 | c2 pass 0.5 | c3 fail 0.5 | c4 error (fail, 0.0)
#   cell v × m2: c1 pass 1.0 | c2 pass 1.0 | c3 pass 1.0 | c4 pass 1.0
# run: pass rate 6/8 = 0.75, mean score 6/8 = 0.75, error rate 1/8 = 0.125,
#      cost 8 x 0.0625 = 0.5 (cached rows are free: none here)
# cell v × m1: pass rate 0.5, score 0.5, error rate 0.25, cost 0.25
# criterion k1: pass rate 0.75, score 0.75; k2: pass rate 0.5, score 0.5
ROWS = [
    ("m1", "c1", True, 1.0, None),
    ("m1", "c2", True, 0.5, None),
    ("m1", "c3", False, 0.5, None),
    ("m1", "c4", False, 0.0, "HTTP 500"),
    ("m2", "c1", True, 1.0, None),
    ("m2", "c2", True, 1.0, None),
    ("m2", "c3", True, 1.0, None),
    ("m2", "c4", True, 1.0, None),
]


def add_run(con: Any, run_id: str, rows: list[tuple[str, str, bool, float, str | None]]) -> None:
    con.execute(
        "INSERT INTO runs (run_id, label, suite, status, config_hash, dataset_hash, "
        "n_planned, started_at, evalwh_version) VALUES (?, ?, 's', 'completed', 'h', 'd', ?, ?, 't')",
        [run_id, run_id, len(rows), NOW],
    )
    for i, (model, case_id, passed, score, error) in enumerate(rows):
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, metadata, error, "
            "latency_ms, cost_usd, cached, request_hash, attempts, score, passed, created_at) "
            "VALUES (?, 'v', ?, ?, 0, '{}', ?, 100, 0.0625, false, 'x', 1, ?, ?, ?)",
            [run_id, model, case_id, error, score, passed, NOW],
        )
        for criterion, c_passed, c_score in (("k1", passed, score), ("k2", i % 2 == 0, 0.5)):
            con.execute(
                "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, scorer, "
                "score, passed, weight, required) VALUES (?, 'v', ?, ?, 0, ?, 'x', ?, ?, 1, true)",
                [run_id, model, case_id, criterion, c_score, c_passed],
            )


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    path = tmp_path_factory.mktemp("boundaries") / "w.duckdb"
    # Regression pair: baseline A, run B. Cell v × m1 only; per case (pass, score):
    #   A: c1 (1, 1.0) c2 (1, 1.0) c3 (1, 1.0) c4 (0, 0.5)
    #   B: c1 (1, 1.0) c2 (1, 0.5) c3 (0, 0.5) c4 (0, 0.5)
    # pass-rate drop 0.75 - 0.5 = 0.25, score drop 0.875 - 0.625 = 0.25; criterion k1 the same.
    base = [("m1", "c1", True, 1.0, None), ("m1", "c2", True, 1.0, None)]
    base += [("m1", "c3", True, 1.0, None), ("m1", "c4", False, 0.5, None)]
    run = [("m1", "c1", True, 1.0, None), ("m1", "c2", True, 0.5, None)]
    run += [("m1", "c3", False, 0.5, None), ("m1", "c4", False, 0.5, None)]
    with write_connection(path) as con:
        add_run(con, "G", ROWS)
        add_run(con, "A", base)
        add_run(con, "B", run)
    return Warehouse(path)


def _verdicts(store: Warehouse, run_id: str, thresholds: dict[str, Any], **kw: Any) -> list[Any]:
    result = judge(store, run_id, {"thresholds": thresholds}, **kw)
    return [(r["metric"], r["target"], r["value"], r["passed"]) for r in result.rules]


# (threshold block, target, value on the limit, direction of "past the limit")
ABSOLUTE = [
    ("min_pass_rate", 0.75, -1),
    ("min_score", 0.75, -1),
    ("max_error_rate", 0.125, +1),
    ("max_cost_usd", 0.5, +1),
]


@pytest.mark.parametrize(("key", "value", "past"), ABSOLUTE)
def test_run_rules_pass_exactly_on_their_limit(
    store: Warehouse, key: str, value: float, past: int
) -> None:
    ((_, target, got, passed),) = _verdicts(store, "G", {key: value})
    assert (target, got, passed) == ("run", pytest.approx(value), True)
    ((_, _, _, passed),) = _verdicts(store, "G", {key: value - past * STEP})
    assert passed is False, f"{key} {value - past * STEP} should fail on {value}"
    ((_, _, _, passed),) = _verdicts(store, "G", {key: value + past * STEP})
    assert passed is True


@pytest.mark.parametrize(
    ("key", "value", "past", "m2_past"),
    [
        ("min_pass_rate", 0.5, -1, True),
        ("min_score", 0.5, -1, True),
        ("max_error_rate", 0.25, +1, True),
        ("max_cost_usd", 0.25, +1, False),  # both cells cost 0.25: both sit on the limit
    ],
)
def test_per_cell_rules_pass_exactly_on_their_limit(
    store: Warehouse, key: str, value: float, past: int, m2_past: bool
) -> None:
    rows = {t: (got, ok) for _, t, got, ok in _verdicts(store, "G", {"per_cell": {key: value}})}
    # the worse cell sits on the limit and passes; the other cell passes too
    assert rows["v × m1"] == (pytest.approx(value), True)
    assert rows["v × m2"][1] is True
    rows = {
        t: ok for _, t, _, ok in _verdicts(store, "G", {"per_cell": {key: value - past * STEP}})
    }
    assert rows == {"v × m1": False, "v × m2": m2_past}


@pytest.mark.parametrize(
    ("name", "key", "value"),
    [("k1", "min_pass_rate", 0.75), ("k1", "min_score", 0.75), ("k2", "min_pass_rate", 0.5)],
)
def test_per_criterion_rules_pass_exactly_on_their_limit(
    store: Warehouse, name: str, key: str, value: float
) -> None:
    ((_, target, got, passed),) = _verdicts(store, "G", {"criteria": {name: {key: value}}})
    assert (target, got, passed) == (name, pytest.approx(value), True)
    ((_, _, _, passed),) = _verdicts(store, "G", {"criteria": {name: {key: value + STEP}}})
    assert passed is False


def test_the_criterion_error_rate_rule_passes_on_its_limit(store: Warehouse) -> None:
    # no scorer errored: 0 errors; a limit of 0 is met exactly
    rule = {"criteria": {"k1": {"max_error_rate": 0.0}}}
    ((_, _, got, passed),) = _verdicts(store, "G", rule)
    assert (got, passed) == (0.0, True)


def _regression(store: Warehouse, block: dict[str, Any]) -> dict[tuple[str, str], Any]:
    result = judge(store, "B", {"thresholds": {"regression": block}}, baseline="A")
    rows = [r for r in result.rules if r["kind"] == "regression"]
    return {(r["metric"], r["target"]): (r["value"], r["passed"]) for r in rows}


@pytest.mark.parametrize("metric", ["pass_rate", "score"])
def test_a_drop_exactly_at_max_drop_passes(store: Warehouse, metric: str) -> None:
    key = f"max_drop_{metric}"
    on = _regression(store, {key: 0.25})
    assert on == {(f"{metric}_drop", "run"): (pytest.approx(0.25), True)}
    past = _regression(store, {key: 0.25 - STEP})
    assert past[(f"{metric}_drop", "run")][1] is False
    # the same at cell and criterion level
    on = _regression(store, {"per_cell": {key: 0.25}, "criteria": {"k1": {key: 0.25}}})
    assert on == {
        (f"{metric}_drop", "v × m1"): (pytest.approx(0.25), True),
        (f"{metric}_drop", "k1"): (pytest.approx(0.25), True),
    }
    past = _regression(
        store, {"per_cell": {key: 0.25 - STEP}, "criteria": {"k1": {key: 0.25 - STEP}}}
    )
    assert [ok for _, ok in past.values()] == [False, False]


def test_gate_rules_reach_the_sql_as_documented_operators() -> None:
    from evalwh.analysis.thresholds import threshold_rules

    rules = threshold_rules(
        {"min_pass_rate": 0.5, "min_score": 0.5, "max_error_rate": 0.1, "max_cost_usd": 2}
    )
    assert [(r["metric"], r["op"], r["limit"]) for r in rules] == [
        ("pass_rate", ">=", 0.5),
        ("score", ">=", 0.5),
        ("error_rate", "<=", 0.1),
        ("cost_usd", "<=", 2.0),
    ]
    assert json.loads(json.dumps(rules)) == rules


def test_cached_rows_cost_nothing_in_the_cost_rule(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    with write_connection(path) as con:
        add_run(con, "C", ROWS[:2])
        con.execute("UPDATE cases SET cached = true WHERE case_id = 'c1'")
    ((_, _, got, passed),) = _verdicts(Warehouse(path), "C", {"max_cost_usd": 0.0625})
    assert (got, passed) == (pytest.approx(0.0625), True)


def test_a_regression_drop_interval_is_the_delta_interval_negated(store: Warehouse) -> None:
    # bug: a sign of drop_lo / drop_hi flipped (0 + x for 0 - x) or 1 - x. Per case B - A:
    # pass [0, 0, -1, 0]: delta -0.25, sd 0.5, se 0.25, t(0.975, 3) = 3.18245: the interval
    # [-1.045 -> clamped -1, 0.5456], so the drop's is [-0.5456, 1]; score [0, -0.5, -0.5, 0]:
    # delta -0.25, se sqrt(1/12) / 2, interval [-0.7093, 0.2093], the drop's [-0.2093, 0.7093].
    t3 = 3.182446305284263
    block = {"max_drop_pass_rate": 0.5, "max_drop_score": 0.5}
    result = judge(store, "B", {"thresholds": {"regression": block}}, baseline="A")
    rows = {r["metric"]: r for r in result.rules if r["kind"] == "regression"}
    half = {"pass_rate": t3 * 0.25, "score": t3 * math.sqrt(1 / 12) / 2}
    assert rows["pass_rate_drop"]["drop_lo"] == pytest.approx(-(-0.25 + half["pass_rate"]))
    assert rows["pass_rate_drop"]["drop_hi"] == 1.0
    assert rows["score_drop"]["drop_lo"] == pytest.approx(-(-0.25 + half["score"]))
    assert rows["score_drop"]["drop_hi"] == pytest.approx(0.25 + half["score"])
