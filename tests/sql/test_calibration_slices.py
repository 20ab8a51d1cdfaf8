"""sql/calibration_slices.sql: pairwise agreement and kappa per metadata slice, against hand-computed
fixtures: each warehouse is built by hand, row by row, and the expected numbers are worked out in
the comments.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalwh.warehouse import queries
from tests.sql.conftest import _warehouse


def test_calibration_by_slice_matches_a_hand_computed_kappa(tmp_path: Path) -> None:
    # Comparison 'c', pairs labelled by a human, sliced by metadata 'lang':
    #   en: (human, judge) cand-cand 3, cand-base 1, base-base 2, base-cand 0 -> n 6, agree 5;
    #       human marginals cand 4 base 2, judge cand 3 base 3: chance = (4*3 + 2*3) / 36 = 0.5,
    #       kappa = (5/6 - 0.5) / (1 - 0.5) = 2/3
    #   fr: cand-cand 2 -> n 2, agree 2, chance (2*2) / 4 = 1: kappa undefined (NULL)
    #   no 'lang': base-cand 1 -> slice '(none)', n 1, agree 0, chance 0, kappa 0
    # Not counted: an ineligible pair, an unlabelled pair, a label of another run.
    con = _warehouse(tmp_path)
    rows = (
        [("en", "candidate", "candidate")] * 3
        + [("en", "candidate", "baseline")]
        + [("en", "baseline", "baseline")] * 2
        + [("fr", "candidate", "candidate")] * 2
        + [(None, "baseline", "candidate")]
    )

    def pair(case: str, lang: str | None, verdict: str, eligible: bool = True) -> None:
        con.execute(
            "INSERT INTO pairs (run_id, comparison, case_id, repeat, baseline_variant, "
            "baseline_model, candidate_variant, candidate_model, judge, judge_model, verdict, "
            "flipped, eligible, baseline_ok, candidate_ok, metadata, created_at) VALUES "
            "('r', 'c', ?, 0, 'v', 'a', 'v', 'b', 'j', 'jm', ?, false, ?, true, true, ?, now())",
            [case, verdict, eligible, json.dumps({"lang": lang} if lang else {})],
        )

    def label(case: str, prefer: str, run: str = "r") -> None:
        con.execute(
            "INSERT INTO labels (run_id, kind, comparison, case_id, prefer, label, note) "
            "VALUES (?, 'pairwise', 'c', ?, ?, NULL, NULL)",
            [run, case, prefer],
        )

    for i, (lang, human, judge) in enumerate(rows):
        pair(f"k{i}", lang, judge)
        label(f"k{i}", human)
    pair("x1", "en", "candidate", eligible=False)
    label("x1", "baseline")
    pair("x2", "en", "candidate")  # unlabelled
    label("x2", "baseline", run="other")
    got = {
        r["slice"]: r
        for r in queries.run_query(con, "calibration_slices", run_id="r", key="lang").to_pylist()
    }
    assert sorted(got) == ["(none)", "en", "fr"]
    en, fr, none = got["en"], got["fr"], got["(none)"]
    assert (en["comparison"], en["n"]) == ("c", 6)
    assert en["agreement"] == pytest.approx(5 / 6)
    assert en["kappa"] == pytest.approx(2 / 3)
    assert (fr["n"], fr["agreement"], fr["kappa"]) == (2, 1.0, None)
    assert (none["n"], none["agreement"]) == (1, 0.0)
    assert none["kappa"] == pytest.approx(0.0)
