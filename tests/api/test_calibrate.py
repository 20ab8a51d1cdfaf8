"""`evalwh calibrate` (evalwh/api/calibrate.py): each judge runs the labelled cases in a run of its
own; the ranking by agreement with the human labels, kappa per task and metadata slice (``--by``,
``--within``), and each judge's slices counting its own run only.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.builders import ORDINAL, ordinal_config, quadratic_kappa
from tests.conftest import run_cli


def test_calibrate_ranks_judges_by_agreement(pairwise_example: Path, tmp_path: Path) -> None:
    result = run_cli("calibrate", str(pairwise_example), "--json", "-q", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    ranking = [(r["rank"], r["judge"]) for r in data["ranking"] if r["kind"] == "pairwise"]
    assert ranking == [(1, "fair"), (2, "referee")]  # the position-biased judge agrees less
    fair, referee = (r for r in data["ranking"] if r["kind"] == "pairwise")
    assert fair["kappa"] > referee["kappa"] and fair["flip_rate"] == 0 and referee["flip_rate"] > 0
    listed = json.loads(run_cli("--json", "list", cwd=tmp_path).stdout)["runs"]
    assert {r["label"] for r in listed} == {"calibrate:fair", "calibrate:referee"}
    unknown = run_cli("calibrate", str(pairwise_example), "--judge", "nobody", cwd=tmp_path)
    assert unknown.returncode == 2 and "unknown judge(s) nobody" in unknown.stderr


def test_calibrate_prints_kappa_per_task_and_slice(tmp_path: Path) -> None:
    cfg = ordinal_config(tmp_path)
    from evalwh.api import calibrate

    data = calibrate(cfg, output_dir=tmp_path / "out", by="topic", within=0)
    [row] = data["ranking"]
    assert row["kind"] == "pointwise" and row["target"] == "judged"
    assert row["within"] == 0 and row["within_agreement"] == pytest.approx(3 / 6)  # = exact
    by_slice = {r["slice"]: r for r in data["slices"]}
    assert set(by_slice) == {"x", "y"}
    for topic in ("x", "y"):
        pairs = [(h, j) for _, h, j, t in ORDINAL if t == topic]
        assert by_slice[topic]["weighted_kappa"] == pytest.approx(quadratic_kappa(pairs))
        assert by_slice[topic]["n_numeric"] == 3
        # --within 0 reaches the slices too: within agreement is exact agreement
        assert by_slice[topic]["within"] == 0
        assert by_slice[topic]["within_agreement"] == by_slice[topic]["exact_agreement"]
    done = run_cli(
        "calibrate", str(cfg), "--by", "topic", "--within", "2", "-q", "-o", str(tmp_path / "o2")
    )
    assert done.returncode == 0, done.stderr
    assert "kappa per task and topic" in done.stdout
    assert "weighted kappa 0.61" in done.stdout and "within 2 100.0%" in done.stdout


def test_calibrating_two_judges_slices_each_ones_own_pairs_and_flags_each_against_the_floor(
    pairwise_example: Path, tmp_path: Path
) -> None:
    # a floor of 0.5 lies between the two judges' kappas (fair 0.54, referee 0.40)
    pairwise_example.write_text(
        pairwise_example.read_text().replace("min_kappa: 0.6", "min_kappa: 0.5")
    )
    from evalwh.api import calibrate

    data = calibrate(pairwise_example, output_dir=tmp_path / "out", by="difficulty")
    ranking = {r["judge"]: r for r in data["ranking"]}
    assert ranking["fair"]["calibrated"] is True and ranking["referee"]["calibrated"] is False
    for judge, row in ranking.items():
        mine = [s for s in data["slices"] if s["judge"] == judge and s["kind"] == "pairwise"]
        # the judges' runs share one warehouse: each judge's slices count its own run only
        assert {s["slice"] for s in mine} == {"easy", "hard"}
        assert sum(s["n"] for s in mine) == row["n_labels"] == 24


def test_calibrate_uses_the_labels_imported_into_a_run_of_the_suite(
    pairwise_example: Path, tmp_path: Path
) -> None:
    """The bug it names: labels stored with `evalwh labels import` were ignored without a word
    (they live with the run they were imported into, not in the config calibrate reads).
    Now calibrate says it found none, then uses them once they are stored, and says whose."""
    import duckdb
    import yaml

    out = str(tmp_path / "out")
    assert run_cli("-o", out, "run", str(pairwise_example), "-q").returncode == 0

    def calibrate() -> dict[str, object]:
        done = run_cli("-o", out, "--json", "calibrate", str(pairwise_example), "-j", "fair")
        assert done.returncode == 0, done.stderr
        return dict(json.loads(done.stdout))

    before = calibrate()
    assert before["labels"] == {
        "config": 24,
        "imported": 0,
        "imported_from": None,
        "left_out": 0,
        "note": "no labels stored with any run of suite 'pairwise' by `evalwh labels import` or "
        "the viewer: only the config's 24 label(s) count",
    }
    assert not [r for r in before["ranking"] if r["kind"] == "pointwise"]  # type: ignore[attr-defined]
    with duckdb.connect(f"{out}/warehouse.duckdb", read_only=True) as con:
        run_id, *_ = con.execute("SELECT min(run_id) FROM runs").fetchone()  # type: ignore[misc]
        exact = con.execute(
            "SELECT case_id, variant, model, passed FROM scores "
            "WHERE criterion = 'exact' AND run_id = ?",
            [run_id],
        ).fetchall()
    entries = [
        {
            "case": c,
            "criterion": "judged",
            "variant": v,
            "model": m,
            "label": "pass" if ok else "fail",
        }
        for c, v, m, ok in exact
    ]
    file = tmp_path / "answers.yaml"
    file.write_text(yaml.safe_dump({"labels": entries}), encoding="utf-8")
    assert run_cli("-o", out, "labels", "import", str(file), run_id).returncode == 0
    after = calibrate()
    labels = after["labels"]
    assert (labels["imported"], labels["imported_from"]) == (48, run_id)  # type: ignore[index]
    (point,) = [r for r in after["ranking"] if r["kind"] == "pointwise"]  # type: ignore[attr-defined]
    assert (point["n_labels"], point["kappa"], point["flags"]) == (48, 1.0, [])
    assert point["label_units"] == "48 answer label(s)"
