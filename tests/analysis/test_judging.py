"""Judge calibration in a stored run's report (evalwh/analysis/judging.py): calibration comes first
and an uncalibrated win rate is flagged (and fails the gate with ``on_below_floor: fail``); each
floor flags below it and not at it; numeric pointwise labels get exact, within-N agreement and a
weighted kappa (checked against a textbook computation).
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

import evalwh
from tests.builders import ORDINAL, ordinal_config, quadratic_kappa
from tests.conftest import run_cli


def test_pairwise_example_prints_calibration_first_and_flags_the_win_rate(
    pairwise_example: Path, tmp_path: Path
) -> None:
    result = run_cli("run", str(pairwise_example), "-q", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.index("calibration: kappa") < out.index("win rate:")
    assert "UNCALIBRATED" in out.split("win rate:")[1].splitlines()[0]
    data = json.loads(run_cli("--json", "show", "latest", cwd=tmp_path).stdout)
    comparison = data["pairwise"]["comparisons"][0]
    assert comparison["headline_eligible"] is False
    assert any(f.startswith("UNCALIBRATED") for f in comparison["flags"])
    assert comparison["n"] + comparison["n_excluded"] == comparison["n_pairs"] == 24
    with duckdb.connect(str(tmp_path / ".evalwh" / "warehouse.duckdb"), read_only=True) as con:
        orders = con.execute(
            "SELECT count(*) FROM pairs WHERE verdict_ab IS NOT NULL AND verdict_ba IS NOT NULL"
        ).fetchone()
        judged = con.execute(
            "SELECT count(*), count(judge_model) FROM scores WHERE criterion = 'judged'"
        ).fetchone()
    assert orders == (24,) and judged == (48, 48)


def test_on_below_floor_fail_fails_the_gate(pairwise_example: Path, tmp_path: Path) -> None:
    pairwise_example.write_text(
        pairwise_example.read_text().replace("on_below_floor: flag", "on_below_floor: fail")
    )
    result = run_cli("run", str(pairwise_example), "-q", cwd=tmp_path)
    assert result.returncode == 1
    assert "FAIL kappa >= 0.6 for pairwise large-vs-small" in result.stdout


def test_numeric_labels_get_exact_within_n_and_weighted_kappa(tmp_path: Path) -> None:
    cfg = ordinal_config(tmp_path)
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    [point] = result.pairwise["pointwise"]
    assert point["n_numeric"] == 6 and point["n_labels"] == 0 and point["kappa"] is None
    assert point["exact_agreement"] == pytest.approx(3 / 6)
    assert point["within"] == 1 and point["within_agreement"] == pytest.approx(4 / 6)
    expected = quadratic_kappa([(h, j) for _, h, j, _ in ORDINAL])
    assert point["weighted_kappa"] == pytest.approx(expected) and 0.6 < expected < 0.62
    # a perfect judge has weighted kappa 1; within 2 counts the two off-by-two answers
    cfg2 = ordinal_config(tmp_path / "w2", "calibration: {within: 2}\n")
    [point2] = evalwh.run_eval(cfg2, output_dir=tmp_path / "out2").pairwise["pointwise"]
    assert point2["within"] == 2 and point2["within_agreement"] == 1.0


def test_calibration_by_a_key_reads_the_pointwise_labels_once_for_overall_and_slices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One pass of sql/calibration_pointwise.sql gives the overall rows and each slice's
    (it ran twice, a third of the calibration's time on the 100M-row warehouse); the overall
    rows are those of a report without slices, each slice's counts add up to them."""
    from evalwh.analysis.judging import report
    from evalwh.warehouse import store as store_module
    from evalwh.warehouse.store import Warehouse
    from tests.builders import ORDINAL

    result = evalwh.run_eval(ordinal_config(tmp_path), output_dir=tmp_path / "out")
    store = Warehouse(tmp_path / "out" / "warehouse.duckdb")
    plain = report(store, result.run_id)
    sent: list[str] = []
    real = store_module.run_query
    monkeypatch.setattr(
        store_module, "run_query", lambda con, name, **p: sent.append(name) or real(con, name, **p)
    )
    sliced = report(store, result.run_id, by="topic")
    assert sent.count("calibration_pointwise") == 1
    assert sliced["pointwise"] == plain["pointwise"]
    topics = sorted({t for *_, t in ORDINAL})
    assert [p["slice"] for p in sliced["pointwise_slices"]] == topics
    assert sum(p["n_numeric"] for p in sliced["pointwise_slices"]) == 6


def test_calibration_weights_linear_gives_the_linear_weighted_kappa(tmp_path: Path) -> None:
    """``calibration.weights: linear`` (Cohen 1968's absolute-difference weights) replaces the
    quadratic default for numeric labels; the report says which weights it used."""
    from sklearn.metrics import cohen_kappa_score

    cfg = ordinal_config(tmp_path, "calibration: {weights: linear}\n")
    [point] = evalwh.run_eval(cfg, output_dir=tmp_path / "out").pairwise["pointwise"]
    humans, judges = [h for _, h, _, _ in ORDINAL], [j for _, _, j, _ in ORDINAL]
    linear = cohen_kappa_score(humans, judges, weights="linear")
    assert point["weights"] == "linear" and point["weighted_kappa"] == pytest.approx(linear)
    assert linear != pytest.approx(quadratic_kappa(list(zip(humans, judges, strict=True))))


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        # exactly at both floors: a headline
        ({"kappa": 0.6, "n_labels": 20, "flip_flagged": False}, []),
        (
            {"kappa": 0.59, "n_labels": 19, "flip_flagged": True, "flip_rate": 0.35},
            [
                "UNCALIBRATED: kappa 0.59 below the floor 0.6",
                "LOW-N: 19 label(s), fewer than 20",
                "FLIPPY: flip rate 0.35 above 0.3",
            ],
        ),
        (
            {"kappa": None, "n_labels": 0, "flip_flagged": False},
            [
                "UNCALIBRATED: kappa undefined (n_labels=0)",
                "LOW-N: 0 label(s), fewer than 20",
            ],
        ),
    ],
)
def test_a_comparison_is_flagged_below_each_floor_and_not_at_it(
    row: dict[str, object], expected: list[str]
) -> None:
    from evalwh.analysis.judging import flags

    cal = {"min_kappa": 0.6, "min_labels": 20, "max_flip_rate": 0.3}
    assert flags(row, cal) == expected


def test_a_calibration_gate_row_passes_when_the_comparison_is_headline_eligible() -> None:
    from evalwh.analysis.judging import calibration_rules

    data = {
        "calibration": {"on_below_floor": "fail", "min_kappa": 0.6},
        "comparisons": [
            {"comparison": "a", "kappa": 0.8, "n_labels": 30, "headline_eligible": True},
            {"comparison": "b", "kappa": 0.2, "n_labels": 30, "headline_eligible": False},
        ],
    }
    assert [(r["target"], r["passed"]) for r in calibration_rules(data)] == [
        ("a", True),
        ("b", False),
    ]
