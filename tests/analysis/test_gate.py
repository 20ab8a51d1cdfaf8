"""The gate (evalwh/analysis/gate.py ``judge()``): absolute thresholds through sql/gate.sql and
regression versus a baseline through sql/compare.sql and gate_regression.sql, verdict by verdict on
stored runs.

Every threshold comparison is pinned at exactly its limit: a value on the limit passes, one step
past it fails (without these, ``>=`` written as ``>`` survives). The fixture runs use binary
fractions (0.5, 0.25, 0.125) so that "exactly on the limit" is exact in floating point, whatever
tolerance the comparison allows. Also here: which baseline is sought, the notes of a skipped or
pointless regression check, ``significant_only``, the cluster key of the intervals, the calibration
floor as a gate rule, and the shared tolerance at the minimum score.
"""

from __future__ import annotations

import logging
import math
import shutil
from pathlib import Path
from typing import Any

import pytest

import evalwh
from evalwh.analysis.baselines import set_baseline
from evalwh.analysis.compare import deltas
from evalwh.analysis.gate import judge, log_notes, regression_rules
from evalwh.analysis.judging import report
from evalwh.analysis.runinfo import snapshot
from evalwh.warehouse.connect import write_connection
from evalwh.warehouse.store import Warehouse
from tests.analysis.conftest import paired_runs
from tests.builders import ROWS, STEP, add_run, gate_rules, warehouse_with
from tests.conftest import ROOT


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


def test_significant_only_and_rule_building(quickstart: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    base = evalwh.run_eval(quickstart, output_dir=out)
    text = quickstart.read_text().replace(
        'reply: "Let me work through it.\\nAnswer: {{ expected }}"',
        'reply: "Let me work through it.\\nAnswer: {{ vars.distractor }}"',
    )
    assert text != quickstart.read_text()
    broken = quickstart.with_name("broken.yaml")
    broken.write_text(text)
    # mock-large x reasoned now fails every case: a drop of 1.0 with sd 0, a clear drop;
    run = evalwh.run_eval(broken, output_dir=out)
    store = Warehouse(out / "warehouse.duckdb")

    def verdicts(**regression: object) -> dict[tuple[str, str], dict[str, object]]:
        config = {"thresholds": {"regression": regression}}
        result = judge(store, run.run_id, config, baseline=base.run_id)
        return {(r["scope"], r["target"]): r for r in result.rules if r["kind"] == "regression"}

    loose = verdicts(
        max_drop_pass_rate=0.1, significant_only=True, per_cell={"max_drop_pass_rate": 0.5}
    )
    cell = loose[("cell", "reasoned × mock-large")]
    assert cell["value"] == pytest.approx(1.0) and cell["significant"] and not cell["passed"]
    overall = loose[("run", "run")]
    assert overall["value"] == pytest.approx(0.25) and overall["significant"]
    assert not overall["passed"]
    strict = verdicts(max_drop_pass_rate=0.3)
    assert strict[("run", "run")]["passed"]  # a drop of 0.25 is within 0.3

    # one broken case of 12 in a cell: a drop of 1/12 over a 0.05 limit, but only noise
    one = quickstart.read_text().replace(
        "      rules:\n        - when: {variant: reasoned}\n",
        '      rules:\n        - when: {case: geo-1, variant: reasoned}\n          reply: "Answer: Lyon"\n'
        "        - when: {variant: reasoned}\n",
        1,
    )
    noisy_config = quickstart.with_name("one.yaml")
    noisy_config.write_text(one)
    noisy = evalwh.run_eval(noisy_config, output_dir=out)
    cell_rule = {"max_drop_pass_rate": 0.05}
    for significant_only, passed in ((True, True), (False, False)):
        config = {
            "thresholds": {
                "regression": {"per_cell": cell_rule, "significant_only": significant_only}
            }
        }
        result = judge(store, noisy.run_id, config, baseline=base.run_id)
        (row,) = [r for r in result.rules if r["target"] == "reasoned × mock-large"]
        assert row["value"] == pytest.approx(1 / 12) and row["n"] == 12
        assert not row["significant"] and row["passed"] is passed

    rules = regression_rules(
        {"regression": {"max_drop_score": 0.1, "significant_only": True, "criteria": {"x": {}}}}
    )
    assert rules == [
        {"scope": "run", "target": "run", "metric": "score", "limit": 0.1, "significant_only": True}
    ]


# The keys only a regression verdict fills, empty (None) on every other verdict.
NOT_REGRESSION = {
    "baseline": None,
    "baseline_value": None,
    "run_value": None,
    "drop_lo": None,
    "drop_hi": None,
    "p_value": None,
    "significant": None,
    "significant_only": None,
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    """Run G of tests.builders.ROWS (pass rate 6/8); baseline A passes all 4 cases of cell v × m1,
    run B passes 2 of them (a pass-rate drop of 0.5)."""
    path = tmp_path_factory.mktemp("gate") / "w.duckdb"
    with write_connection(path) as con:
        add_run(con, "G", ROWS)
        add_run(con, "A", [("m1", case, True, 1.0, None) for _, case, *_ in ROWS[4:]])
        add_run(con, "B", ROWS[:4])
    return Warehouse(path)


def test_an_absolute_verdict_is_a_whole_row_and_no_baseline_is_sought(runs: Warehouse) -> None:
    # bugs: the verdict's kind misspelt (`evalwh gate --json` readers filter on it); a missing
    # baseline reported as "" instead of null; with no regression limit and no --baseline,
    # a baseline looked up all the same (a "regression thresholds skipped" note for nothing)
    result = judge(runs, "G", {"thresholds": {"min_pass_rate": 0.5}})
    assert result.to_dict() == {
        "run_id": "G",
        "baseline_id": None,
        "passed": True,
        "rules": [
            {
                "kind": "absolute",
                "scope": "run",
                "target": "run",
                "metric": "pass_rate",
                "op": ">=",
                "limit": 0.5,
                "value": 0.75,
                "n": 8,
                "passed": True,
                **NOT_REGRESSION,
            }
        ],
        "notes": [],
    }


def test_a_baseline_given_without_regression_limits_says_nothing_was_judged(
    runs: Warehouse,
) -> None:
    result = judge(runs, "B", {"thresholds": {"min_pass_rate": 0.5}}, baseline="A")
    assert result.baseline_id == "A"
    assert [(r["kind"], r["value"], r["passed"]) for r in result.rules] == [("absolute", 0.5, True)]
    assert result.notes == [
        "baseline A given, but thresholds.regression sets no limit: nothing was judged against it"
    ]


def test_regression_verdicts_follow_the_absolute_ones(runs: Warehouse) -> None:
    # bug: the regression verdicts replace the absolute ones instead of joining them, so a
    # run under its min_pass_rate passes the gate as soon as a regression limit is set
    thresholds = {"min_pass_rate": 0.75, "regression": {"max_drop_pass_rate": 0.1}}
    result = judge(runs, "B", {"thresholds": thresholds}, baseline="A")
    assert [(r["kind"], r["metric"], r["value"], r["baseline"]) for r in result.rules] == [
        ("absolute", "pass_rate", 0.5, None),
        ("regression", "pass_rate_drop", 0.5, "A"),
    ]
    assert result.passed is False and result.failed == result.rules
    assert result.notes == []


def test_a_judge_below_its_calibration_floor_fails_the_gate_only_when_told_to(
    tmp_path: Path,
) -> None:
    # bug: the gate reads the wrong key (or none) of `pairwise` / `calibration.on_below_floor`,
    # so an uncalibrated judge's win rate passes a gate set to fail it, or fails one set to flag
    example = ROOT / "examples" / "pairwise"
    shutil.copytree(example, tmp_path / "pairwise", ignore=shutil.ignore_patterns(".evalwh"))
    run = evalwh.run_eval(tmp_path / "pairwise" / "eval.yaml", output_dir=tmp_path / "out")
    store = Warehouse(tmp_path / "out" / "warehouse.duckdb")
    config = snapshot(store, run.run_id)
    assert config["calibration"]["on_below_floor"] == "flag"
    assert judge(store, run.run_id, config).rules == []  # flagged in the report, not gated
    (comparison,) = report(store, run.run_id, config)["comparisons"]
    assert comparison["kappa"] < 0.6 and comparison["n_labels"] == 24

    config["calibration"]["on_below_floor"] = "fail"
    config["thresholds"] = {"max_error_rate": 0.0}  # an absolute rule: it stays, first
    result = judge(store, run.run_id, config)
    assert [(r["kind"], r["metric"], r["passed"]) for r in result.rules[:1]] == [
        ("absolute", "error_rate", True)
    ]
    assert result.rules[1:] == [
        {
            "kind": "calibration",
            "scope": "pairwise",
            "target": "large-vs-small",
            "metric": "kappa",
            "op": ">=",
            "limit": 0.6,
            "value": comparison["kappa"],
            "n": 24,
            "passed": False,
            **NOT_REGRESSION,
        }
    ]
    assert result.passed is False
    del config["pairwise"]  # a config without pairwise judging has no judge to calibrate
    assert [r["kind"] for r in judge(store, run.run_id, config).rules] == ["absolute"]


def _unresolved(store: Warehouse, config: dict[str, Any]) -> tuple[str | None, list[Any], Any]:
    """The baseline id, the (kind, passed, message) of each verdict, and the notes."""
    result = judge(store, "B", config)
    verdicts = [(r["kind"], r["passed"], r.get("message")) for r in result.rules]
    return result.baseline_id, verdicts, result.notes


def test_the_baseline_is_the_pin_named_in_the_config_of_the_same_suite(tmp_path: Path) -> None:
    # bugs: `regression.baseline` not read (the default pin used whatever the config names),
    # or a pin of another suite compared with; a baseline that cannot be resolved fails the
    # gate by default (it passed unchecked), saying which baseline and why, and with
    # `on_missing_baseline: pass` the gate passes with a note saying the same
    path = tmp_path / "w.duckdb"
    with write_connection(path) as con:
        add_run(con, "A", [("m1", case, True, 1.0, None) for _, case, *_ in ROWS[4:]])
        add_run(con, "B", ROWS[:4])
        add_run(con, "O", ROWS[:4])
        con.execute("UPDATE runs SET suite = 'other' WHERE run_id = 'O'")
    store = Warehouse(path)
    named = {"thresholds": {"regression": {"baseline": "prod", "max_drop_pass_rate": 0.1}}}
    default = {"thresholds": {"regression": {"max_drop_pass_rate": 0.1}}}
    lenient = {
        "thresholds": {"regression": {"max_drop_pass_rate": 0.1, "on_missing_baseline": "pass"}}
    }
    tail = "; limits not judged (on_missing_baseline: pass skips them)"
    no_prod = "no baseline pinned as 'prod' (pin one with `evalwh baseline set RUN --name prod`)"
    no_default = "no baseline pinned as 'baseline' (pin one with `evalwh baseline set RUN`)"
    assert _unresolved(store, named) == (
        None,
        [("baseline", False, f"regression baseline 'prod' could not be resolved: {no_prod}{tail}")],
        [],
    )
    assert not judge(store, "B", named).passed
    assert _unresolved(store, default) == (
        None,
        [
            (
                "baseline",
                False,
                f"regression baseline 'baseline' could not be resolved: {no_default}{tail}",
            )
        ],
        [],
    )
    skipped = "regression thresholds skipped (on_missing_baseline: pass): "
    assert _unresolved(store, lenient) == (None, [], [skipped + no_default])
    assert judge(store, "B", lenient).passed
    # the key says only what a missing baseline does: `fail` is the default spelt out
    explicit = {
        "thresholds": {
            "regression": {**default["thresholds"]["regression"], "on_missing_baseline": "fail"}
        }
    }
    assert _unresolved(store, explicit) == _unresolved(store, default)

    set_baseline(store, "A", "prod")
    result = judge(store, "B", named)
    assert result.baseline_id == "A" and result.notes == []
    assert [(r["kind"], r["value"], r["passed"]) for r in result.rules] == [
        ("regression", 0.5, False)
    ]
    assert judge(store, "B", default).baseline_id is None  # "baseline" itself is not pinned

    set_baseline(store, "O", "prod")
    other = (
        "the baseline 'prod' is run O of suite 'other', not 's' (pass --baseline to use it anyway)"
    )
    assert _unresolved(store, named) == (
        None,
        [("baseline", False, f"regression baseline 'prod' could not be resolved: {other}{tail}")],
        [],
    )
    named["thresholds"]["regression"]["on_missing_baseline"] = "pass"
    assert _unresolved(store, named) == (None, [], [skipped + other])


def test_regression_intervals_follow_the_configs_cluster_key(tmp_path: Path) -> None:
    # bugs: `analysis.cluster` not passed on (cells of one cluster counted as independent,
    # an interval too narrow: significant_only then fails runs on noise), or a missing key
    # made an error instead of a note. Per case B - A (pass): [0, 0, -1, -1], mean -0.5;
    # unclustered: se sqrt(1/3) / 2, t(0.975, 3) = 3.18245, the drop's interval [-0.4187, 1];
    # clustered by g (c1, c2 | c3, c4): cluster means [0, -1], t(0.975, 1) = 12.706: [-1, 1].
    path = tmp_path / "w.duckdb"
    with write_connection(path) as con:
        add_run(con, "A", [("m1", case, True, 1.0, None) for _, case, *_ in ROWS[4:]])
        add_run(con, "B", ROWS[:4])
        con.execute(
            "UPDATE cases SET metadata = CASE WHEN case_id IN ('c1', 'c2') "
            """THEN '{"g": "x"}' ELSE '{"g": "y"}' END"""
        )
    store = Warehouse(path)
    half = 3.182446305284263 * (1 / 3) ** 0.5 / 2

    def drop(cluster: str | None) -> tuple[list[Any], list[str]]:
        config: dict[str, Any] = {"thresholds": {"regression": {"max_drop_pass_rate": 0.1}}}
        if cluster:
            config["analysis"] = {"cluster": cluster}
        result = judge(store, "B", config, baseline="A")
        (row,) = result.rules
        return [row["value"], row["drop_lo"], row["drop_hi"], row["passed"]], result.notes

    assert drop(None) == ([0.5, pytest.approx(-(-0.5 + half)), 1.0, False], [])
    assert drop("g") == ([0.5, -1.0, 1.0, False], [])
    assert drop("nope") == (
        drop(None)[0],
        [
            "cluster key 'nope' is in no case's metadata (use a metadata key, or 'case_id' to "
            "cluster the cells of a case); every case is its own cluster"
        ],
    )


def test_a_run_judged_against_itself_says_every_drop_is_zero(
    runs: Warehouse, caplog: pytest.LogCaptureFixture
) -> None:
    thresholds = {"regression": {"max_drop_pass_rate": 0.1}}
    result = judge(runs, "B", {"thresholds": thresholds}, baseline="B")
    assert [(r["value"], r["drop_lo"], r["drop_hi"]) for r in result.rules] == [(0.0, 0.0, 0.0)]
    assert result.notes == ["the baseline is this run itself: every drop is 0"]
    with caplog.at_level(logging.WARNING, logger="evalwh.analysis.thresholds"):
        log_notes(result)  # how `evalwh run` and `evalwh gate` show the notes
    assert caplog.messages == ["the baseline is this run itself: every drop is 0"]


def test_three_answers_of_exactly_the_minimum_score_pass_the_gate(tmp_path):
    rows = [{"case_id": f"c{i}", "passed": True, "score": 0.7} for i in range(3)]
    store = warehouse_with(tmp_path, {"R": rows})
    result = judge(store, "R", {"thresholds": {"min_score": 0.7}})
    (rule,) = [r for r in result.rules if r["metric"] == "score"]
    assert rule["value"] != 0.7  # 0.6999999999999998 in binary floating point
    assert rule["passed"] and result.passed
    # and without the shared tolerance the same comparison fails: the test can fail
    raw = store.query("gate", run_id="R", rules=gate_rules("score", ">=", 0.7), tolerance=0.0)
    assert raw.to_pylist()[0]["passed"] is False


def test_every_case_broken_is_a_drop_without_spread_and_fails_significant_only(tmp_path):
    # Three cases broken of three: every difference is -1, so the standard error is 0, the
    # interval [-1, -1] and the p of the infinite t 0: worse, and significant_only fails (the
    # exact sign test gave 0.25 beside that interval, and passed). Three of three unchanged:
    # p 1, same, and the gate passes.
    store = paired_runs(
        tmp_path, {f"c{i}": [1] for i in range(3)}, {f"c{i}": [0] for i in range(3)}
    )
    run = next(r for r in deltas(store, "A", "B").to_pylist() if r["scope"] == "run")
    assert (run["pass_rate_p"], run["pass_rate_lo"], run["pass_rate_hi"]) == (0.0, -1, -1)
    assert run["verdict"] == "worse"
    config = {
        "thresholds": {
            "regression": {
                "max_drop_pass_rate": 0.1,
                "max_drop_score": 0.1,
                "significant_only": True,
            }
        }
    }
    result = judge(store, "B", config, baseline="A")
    drops = [r for r in result.rules if r["kind"] == "regression"]
    assert drops and all(not r["passed"] and r["significant"] for r in drops)
    assert all(r["p_value"] == 0.0 for r in drops)
    same = judge(store, "A", config, baseline="A")
    kept = [r for r in same.rules if r["kind"] == "regression"]
    assert kept and all(r["passed"] and r["p_value"] == 1.0 for r in kept)
