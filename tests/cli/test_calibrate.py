"""`evalwh calibrate`'s rendering (evalwh/cli/calibrate.py): the ranking table of judges over
labelled cases, its numbers checked against the fixture's labels worked out here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.builders import ORDINAL, ordinal_config, quadratic_kappa
from tests.inprocess import evalwh_inprocess


def test_the_ranking_of_numeric_labels_shows_their_n_and_weighted_kappa(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # bug: a criterion with numeric labels only was ranked "kappa undefined" on "0" labels,
    # though it has 6 labels and is ranked by its weighted kappa and within-N agreement
    config = ordinal_config(tmp_path)
    pairs = [(h, j) for _, h, j, _ in ORDINAL]
    weighted = f"{quadratic_kappa(pairs):.2f}"
    within = sum(abs(h - j) <= 1 for h, j in pairs) / len(pairs)
    code, out, err = evalwh_inprocess(capsys, "calibrate", str(config), "-o", str(tmp_path / "o"))
    assert code == 0, err
    (row,) = [line for line in out.splitlines() if "pointwise" in line]
    cells = [c.strip() for c in re.split(r"[│┃]", row)[1:-1]]
    assert cells[:9] == [
        "1",
        "pointwise",
        "judged",
        "j",
        f"{weighted} weighted",
        "",
        f"{within:.1%} within 1",
        "–",
        str(len(ORDINAL)),
    ]
    assert "undefined" not in out
