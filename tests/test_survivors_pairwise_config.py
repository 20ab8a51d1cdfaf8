"""The `pairwise:` entries of a config as the loader reads them
(evalwh.config.loader._comparisons): the comparison it builds, and each refusal with its
line, place and fix.

Written from mutants that survived the mutation run (docs/testing.md). Pairwise judging is
described in docs/scoring.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evalwh.config.loader import load_config
from evalwh.config.model import Side
from evalwh.errors import ConfigError
from tests.test_survivors_run_row import CONFIG

BASE = CONFIG.replace(
    "  - {id: m, provider: mock, mock: {default: hi}}",
    "  - {id: m, provider: mock, mock: {default: hi}}\n  - {id: n, provider: mock}",
) + (
    "  - {name: alpha, type: contains, value: a}\n"
    "judges:\n  - {id: j, model: {id: jm, provider: mock}}\n  - {id: k, model: {id: km, provider: mock}}\n"
    "pairwise:\n"
)
GOOD = "  - {name: cmp, judge: j, baseline: {model: m}, candidate: {model: n, variant: v}, require: [has]}\n"


def load(tmp_path: Path, pairwise: str) -> object:
    (tmp_path / "eval.yaml").write_text(BASE + pairwise, encoding="utf-8")
    return load_config(tmp_path / "eval.yaml")


def test_a_comparison_keeps_its_judge_sides_and_required_criteria(tmp_path: Path) -> None:
    config = load(tmp_path, GOOD)
    (cmp,) = config.pairwise  # type: ignore[attr-defined]
    assert (cmp.name, cmp.judge, cmp.baseline, cmp.candidate, cmp.require) == (
        "cmp", "j", Side(model="m", variant=None), Side(model="n", variant="v"), ("has",),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("entry", "message", "where", "fix"),
    [
        (GOOD.replace("judge: j", "judge: nobody"), "unknown judge 'nobody'",
         "pairwise[0].judge", "define it under `judges:` (known: j, k)"),
        (GOOD.replace("{model: m}", "{model: ghost}"), "unknown model 'ghost'",
         "pairwise[0].baseline.model", "use one of: m, n"),
        (GOOD.replace("variant: v}", "variant: w}"), "unknown variant 'w'",
         "pairwise[0].candidate.variant", "use one of: v"),
        (GOOD.replace("{model: n, variant: v}", "{model: m}"),
         "baseline and candidate are the same side", "pairwise[0]",
         "compare two different models or variants"),
        (GOOD.replace("require: [has]", "require: [has, nope]"), "unknown criterion 'nope'",
         "pairwise[0].require", "use scorecard criterion names: alpha, has"),
        (GOOD + GOOD, "duplicate pairwise name", "pairwise", "give each a unique name"),
    ],
)  # fmt: skip
def test_a_bad_pairwise_entry_is_refused_at_its_line(
    tmp_path: Path, entry: str, message: str, where: str, fix: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        load(tmp_path, entry)
    error = refused.value
    assert (error.message, error.where, error.fix) == (message, where, fix)
    assert error.file == str(tmp_path / "eval.yaml")
    assert error.line is not None and error.line > BASE.count("\n") - 2
