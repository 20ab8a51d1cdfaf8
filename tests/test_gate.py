"""The gate: a planted regression versus the pinned baseline makes `evalwh run` exit 1 and say
why (with n); an improvement exits 0; `evalwh gate` judges stored runs the same way;
`--baseline` overrides the pin; `significant_only` needs the interval to exclude 0."""

from __future__ import annotations

import json
import logging
import shutil
import statistics
import subprocess
from pathlib import Path
from typing import Any

import duckdb
import pytest

import evalwh
from evalwh.analysis.baselines import set_baseline
from evalwh.analysis.gate import judge, log_notes, regression_rules
from evalwh.analysis.judging import report
from evalwh.analysis.runinfo import snapshot
from evalwh.warehouse.connect import write_connection
from evalwh.warehouse.store import Warehouse
from tests.conftest import ROOT, run_cli
from tests.inprocess import evalwh_inprocess
from tests.test_boundaries import ROWS, add_run

TERSE_RULE = '          rate: 0.3\n          reply: "The answer is {{ expected }}."'
REGRESSION = """\
  regression:
    max_drop_pass_rate: 0.02
    per_cell: {max_drop_pass_rate: 0.5}
    criteria: {correct: {max_drop_score: 0.5}}
"""


def variant_of(config: Path, name: str, terse_rate: float) -> Path:
    """A copy of the quickstart config whose mock-small answers terse prompts in the wrong
    format for ``terse_rate`` of the cases, with regression thresholds."""
    text = config.read_text()
    assert TERSE_RULE in text
    text = text.replace(TERSE_RULE, TERSE_RULE.replace("0.3", str(terse_rate)))
    target = config.with_name(f"{name}.yaml")
    target.write_text(text.rstrip("\n") + "\n" + REGRESSION)
    return target


def pass_vector(db: Path, run_id: str) -> dict[tuple[str, str, str, int], int]:
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            "SELECT variant, model, case_id, repeat, passed::INT FROM cases WHERE run_id = ?",
            [run_id],
        ).fetchall()
    return {tuple(r[:4]): r[4] for r in rows}  # type: ignore[misc]


def test_planted_regression_fails_the_run_and_an_improvement_passes(
    quickstart: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        """Commands other than `run` in this process (fast)."""
        code, stdout, stderr = evalwh_inprocess(capsys, *args)
        return subprocess.CompletedProcess(args, code, stdout, stderr)

    base = evalwh.run_eval(quickstart, output_dir=out, label="base")
    assert cli("baseline", "set", "base", "-o", str(out)).returncode == 0

    worse = run_cli("run", str(variant_of(quickstart, "worse", 0.7)), "-o", str(out), "-l", "w")
    assert worse.returncode == 1, worse.stderr
    # the reason, by how much, with n: computed here from the two runs' rows
    db = out / "warehouse.duckdb"
    a, b = pass_vector(db, base.run_id), pass_vector(db, evalwh.open_warehouse(db).resolve("w"))
    drop = -statistics.mean(b[k] - a[k] for k in a)
    assert drop > 0.02
    line = f"FAIL pass_rate_drop <= 0.02 vs baseline {base.run_id} for run: {drop:.4g} (n=48)"
    assert line in worse.stdout and f"off by {drop - 0.02:.4g}" in worse.stdout, worse.stdout

    gate = cli("gate", "w", "-o", str(out))
    assert gate.returncode == 1
    assert f"pass_rate_drop <= 0.02 vs baseline {base.run_id} for run: {drop:.4g} (n=48)" in (
        gate.stdout
    )
    assert cli("gate", "base", "-o", str(out)).returncode == 0

    better = run_cli("run", str(variant_of(quickstart, "better", 0.0)), "-o", str(out), "-l", "b")
    assert better.returncode == 0, better.stdout + better.stderr
    data = json.loads(cli("gate", "b", "--json", "-o", str(out)).stdout)
    regression = [r for r in data["rules"] if r["kind"] == "regression"]
    assert data["passed"] and data["baseline_id"] == base.run_id
    assert {r["scope"] for r in regression} == {"run", "cell", "criterion"}
    run_rule = next(r for r in regression if r["scope"] == "run")
    assert run_rule["value"] < 0 and run_rule["n"] == 48  # a negative drop: it improved

    # --baseline overrides the pin: the original config is a regression versus "b"
    again = run_cli("run", str(variant_of(quickstart, "same", 0.3)), "-o", str(out), "-q")
    assert again.returncode == 0, again.stdout  # versus the pinned base: no drop at all
    override = run_cli(
        "run", str(variant_of(quickstart, "same", 0.3)), "-o", str(out), "--baseline", "b"
    )
    assert override.returncode == 1 and "FAIL pass_rate_drop <= 0.02 vs baseline" in override.stdout

    # without a pinned baseline the regression rules are skipped, with a note
    assert cli("baseline", "remove", "-o", str(out)).returncode == 0
    skipped = cli("gate", "w", "-o", str(out))
    assert skipped.returncode == 0, skipped.stdout
    assert "regression thresholds skipped: no baseline pinned as 'baseline'" in skipped.stderr


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


def test_run_with_an_unknown_baseline_is_a_usage_error(quickstart: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    evalwh.run_eval(quickstart, output_dir=out)
    result = run_cli("run", str(quickstart), "-o", str(out), "--baseline", "nope")
    assert result.returncode == 2 and "no run matches 'nope'" in result.stderr
    assert len(evalwh.open_warehouse(out / "warehouse.duckdb").runs()) == 1  # nothing ran
    no_pin = run_cli("show", "baseline", "-o", str(out))
    assert no_pin.returncode == 2 and "no baseline is pinned yet" in no_pin.stderr


# -- judge()'s result, verdict by verdict: stored runs, no eval run ----------------------------
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
    """Run G of test_boundaries (pass rate 6/8); baseline A passes all 4 cases of cell v × m1,
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


def test_the_baseline_is_the_pin_named_in_the_config_of_the_same_suite(tmp_path: Path) -> None:
    # bugs: `regression.baseline` not read (the default pin used whatever the config names),
    # or a pin of another suite compared with; each skip says why and how to fix it
    path = tmp_path / "w.duckdb"
    with write_connection(path) as con:
        add_run(con, "A", [("m1", case, True, 1.0, None) for _, case, *_ in ROWS[4:]])
        add_run(con, "B", ROWS[:4])
        add_run(con, "O", ROWS[:4])
        con.execute("UPDATE runs SET suite = 'other' WHERE run_id = 'O'")
    store = Warehouse(path)
    named = {"thresholds": {"regression": {"baseline": "prod", "max_drop_pass_rate": 0.1}}}
    default = {"thresholds": {"regression": {"max_drop_pass_rate": 0.1}}}
    skipped = "regression thresholds skipped: "
    result = judge(store, "B", named)
    assert (result.baseline_id, result.rules) == (None, [])
    assert result.notes == [
        skipped
        + "no baseline pinned as 'prod' (pin one with `evalwh baseline set RUN --name prod`)"
    ]
    assert judge(store, "B", default).notes == [
        skipped + "no baseline pinned as 'baseline' (pin one with `evalwh baseline set RUN`)"
    ]

    set_baseline(store, "A", "prod")
    result = judge(store, "B", named)
    assert result.baseline_id == "A" and result.notes == []
    assert [(r["kind"], r["value"], r["passed"]) for r in result.rules] == [
        ("regression", 0.5, False)
    ]
    assert judge(store, "B", default).baseline_id is None  # "baseline" itself is not pinned

    set_baseline(store, "O", "prod")
    result = judge(store, "B", named)
    assert (result.baseline_id, result.rules) == (None, [])
    assert result.notes == [
        skipped + "the baseline 'prod' is run O of suite 'other', not 's' "
        "(pass --baseline to use it anyway)"
    ]


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
