"""Importing labels (evalwh/reports/labels.py, `evalwh labels import`): pairwise and pointwise
labels are stored with their run and change its calibration; bad files are refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import run_cli
from tests.report_runs import pairwise_copy


def test_labels_import_changes_the_stored_calibration(hostile: dict[str, Any]) -> None:
    view, run_id = hostile["view"], hostile["run_id"]
    before = view.judging(run_id)["comparisons"][0]
    stored = {
        lb["case"]: lb["prefer"] for lb in yaml.safe_load(hostile["config"].read_text())["labels"]
    }
    flipped = {"A": "B", "B": "A", "tie": "B"}
    entries = [
        {"case": c, "comparison": "large-vs-small", "prefer": flipped[stored[c]]}
        for c in ("q01", "q02", "q03")
    ]
    file = hostile["root"] / "labels.yaml"
    file.write_text(yaml.safe_dump({"labels": entries}), encoding="utf-8")
    result = view.import_labels(file, run_id)
    assert result == {"run_id": run_id, "file": str(file), "imported": 3, "replaced": 3}
    after = view.judging(run_id)["comparisons"][0]
    assert after["n_labels"] == before["n_labels"]
    assert after["agreement"] < before["agreement"]
    bad = hostile["root"] / "bad.yaml"
    bad.write_text("labels:\n  - {case: nope, prefer: A}\n  - {case: q01, prefer: maybe}\n")
    done = run_cli("-o", str(hostile["root"] / ".evalwh"), "labels", "import", str(bad), run_id)
    assert done.returncode == 2
    assert "bad.yaml" in done.stderr and "labels[1]" in done.stderr and "prefer" in done.stderr


def test_labels_import_stores_pointwise_labels_that_calibration_counts(
    hostile: dict[str, Any],
) -> None:
    """A downloaded pointwise labels file (one label per case x criterion) moves the stored
    pointwise calibration from no labels to exactly its own agreement; a second import of
    the same keys replaces, and a bad entry exits 2 naming the place and the fix."""
    view, run_id, root = hostile["view"], hostile["run_id"], hostile["root"]
    assert view.judging(run_id)["pointwise"] == []  # the example has no pointwise labels
    items = {i["case_id"]: i for i in view.query("point_list", run_id=run_id).to_pylist()}
    assert len(items) == 24 and {i["criterion"] for i in items.values()} == {"judged"}
    assert all(len(i["answers"]) == 2 for i in items.values())  # small and large, repeat 0
    mine = {"q01": "pass", "q02": "fail", "q03": "fail"}
    file = root / "point-labels.yaml"
    entries = [{"case": c, "criterion": "judged", "label": x} for c, x in mine.items()]
    file.write_text(yaml.safe_dump({"labels": entries}), encoding="utf-8")
    assert view.import_labels(file, run_id)["imported"] == 3
    (row,) = view.judging(run_id)["pointwise"]
    agree = sum(items[c]["judge_passed"] == (x == "pass") for c, x in mine.items())
    assert (row["criterion"], row["n_labels"]) == ("judged", 3)
    assert row["agreement"] == pytest.approx(agree / 3)
    assert view.import_labels(file, run_id)["replaced"] == 3  # same keys: replaced, not added
    assert view.judging(run_id)["pointwise"][0]["n_labels"] == 3
    stored = view.query("point_list", run_id=run_id).to_pylist()
    assert {i["case_id"]: json.loads(i["human"]) for i in stored if i["human"]} == mine
    for text, says in (
        ("labels:\n  - {case: q01, criterion: judged, label: passs}\n", "did you mean 'pass'"),
        ("labels:\n  - {case: q01, criterion: judge, label: pass}\n", "did you mean 'judged'"),
        ("labels:\n  - {case: q01, label: 2}\n", "outside the judge's scale 0..1"),
        ("labels:\n  - {case: nope, label: pass}\n", "unknown case 'nope'"),
    ):
        bad = root / "bad-point.yaml"
        bad.write_text(text, encoding="utf-8")
        done = run_cli("-o", str(root / ".evalwh"), "labels", "import", str(bad), run_id)
        assert done.returncode == 2, text
        assert "bad-point.yaml" in done.stderr and "labels[0]" in done.stderr, done.stderr
        assert says in done.stderr, done.stderr
    mine_after = view.query("point_list", run_id=run_id).to_pylist()
    assert sum(1 for i in mine_after if i["human"]) == 3  # nothing stored by a bad file


def test_pointwise_labels_of_a_numeric_judge_take_its_scale_and_no_more(
    tmp_path: Path,
) -> None:
    """A 1..5 judge: its criterion's items offer 1..5 in the page, and the loader accepts a
    label at exactly each end of the scale and refuses one just outside it."""
    from evalwh.config.loader import load_config
    from evalwh.errors import ConfigError
    from evalwh.reports.labels import judge_scales

    config = pairwise_copy(tmp_path)
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["judges"][0]["scale"] = {"min": 1, "max": 5}
    assert judge_scales(data, {"judged"}) == {"judged": (1.0, 5.0)}
    assert judge_scales(
        {"judges": [{"id": "j"}], "scorecard": [{"name": "c", "judge": "j"}]}, {"c"}
    ) == {
        "c": (0.0, 1.0)  # a judge without a scale grades pass/fail
    }
    for value, ok in ((1, True), (5, True), (0.9, False), (5.1, False)):
        data["labels"] = [{"case": "q01", "criterion": "judged", "label": value}]
        config.write_text(yaml.safe_dump(data), encoding="utf-8")
        if ok:
            assert load_config(config).point_labels[0].label == value
        else:
            with pytest.raises(ConfigError, match=r"outside the judge's scale 1\.\.5"):
                load_config(config)


def test_labels_of_each_answer_calibrate_the_judge_that_per_case_labels_failed(
    pairwise_example: Path, tmp_path: Path
) -> None:
    """The issue's case: the example's judge agrees with exact match on all 48 answers. Labels
    of each case "pass only if every answer is right" gave kappa 0.11, UNCALIBRATED (a label
    of the case is compared with the judge's majority over its two answers, and the report
    now says so); a label of each answer, compared with the judge's verdict on that answer,
    gives kappa 1, calibrated. The per-case file still imports, with its old meaning."""
    import duckdb

    from evalwh.api.view import WarehouseView
    from evalwh.reports.html import render_run

    out = tmp_path / "out"
    done = run_cli("-o", str(out), "run", str(pairwise_example), "-q")
    assert done.returncode == 0, done.stderr
    with duckdb.connect(str(out / "warehouse.duckdb"), read_only=True) as con:
        exact = con.execute(
            "SELECT case_id, variant, model, repeat, passed FROM scores "
            "WHERE criterion = 'exact' ORDER BY ALL"
        ).fetchall()
        judge = con.execute(
            "SELECT case_id, variant, model, repeat, passed FROM scores "
            "WHERE criterion = 'judged' ORDER BY ALL"
        ).fetchall()
    assert exact == judge and len(exact) == 48  # the judge agrees with exact match
    every = {c: all(ok for c2, *_, ok in exact if c2 == c) for c, *_ in exact}
    per_case = [{"case": c, "criterion": "judged", "label": "pass" if ok else "fail"}
                for c, ok in every.items()]  # fmt: skip
    per_answer = [
        {"case": c, "criterion": "judged", "variant": v, "model": m, "repeat": r,
         "label": "pass" if ok else "fail"}
        for c, v, m, r, ok in exact
    ]  # fmt: skip
    view = WarehouseView(out / "warehouse.duckdb")
    run_id = view.resolve("latest")

    def calibration(entries: list[dict[str, Any]], name: str) -> dict[str, Any]:
        file = tmp_path / name
        file.write_text(yaml.safe_dump({"labels": entries}), encoding="utf-8")
        done = run_cli("-o", str(out), "labels", "import", str(file))
        assert done.returncode == 0, done.stderr
        return view.judging(run_id)

    cased = calibration(per_case, "per-case.yaml")
    (p,) = cased["pointwise"]
    assert (p["n_labels"], f"{p['kappa']:.2f}") == (24, "0.11")
    assert p["label_units"] == "24 per-case label(s) (judged against the majority of 2 answers)"
    assert cased["flags"]["criterion:judged"] == ["UNCALIBRATED: kappa 0.11 below the floor 0.6"]
    assert p["label_units"] in render_run(view.store, run_id)

    answered = calibration(per_answer, "per-answer.yaml")
    (p,) = answered["pointwise"]
    assert (p["n_labels"], p["n_answer_labels"], p["n_case_labels"]) == (48, 48, 0)
    assert p["kappa"] == 1.0 and p["agreement"] == 1.0
    assert "criterion:judged" not in answered["flags"]  # calibrated: 48 labels, kappa 1
    page = render_run(view.store, run_id)
    assert "48 answer label(s)" in page
    stored = view.query("point_list", run_id=run_id).to_pylist()
    assert all(a["human"] is not None for i in stored for a in i["answers"])
    assert all(i["human"] is not None for i in stored)  # the per-case labels are kept
