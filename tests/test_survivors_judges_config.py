"""A config's `judges:` as the loader reads them (evalwh.config.loader): the default scale, a
scale that cannot hold a score, and the folder a judge model's relative files resolve in.

Written from mutants that survived the mutation run (docs/testing.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evalwh.config.loader import load_config
from evalwh.errors import ConfigError

CONFIG = """\
name: judged
models:
  - id: m
    provider: mock
variants:
  - id: v
    messages: [{role: user, content: "{{ q }}"}]
cases:
  - id: c1
    vars: {q: hi}
scorecard:
  - name: same
    type: exact
judges:
  - id: j
    rubric: Is it right?
    model: {id: jm, provider: mock}
"""


def load(tmp_path: Path, extra: str = "") -> object:
    path = tmp_path / "sub" / "eval.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(CONFIG + extra, encoding="utf-8")
    return load_config(path)


def test_a_judge_without_a_scale_scores_from_0_to_1_and_resolves_files_in_the_configs_folder(
    tmp_path: Path,
) -> None:
    judge = load(tmp_path).judges[0]  # type: ignore[attr-defined]
    assert judge.scale == (0.0, 1.0)
    # a judge model's relative files (a command provider's script, an image) are read from the
    # config's folder, as the answering models' are, not from wherever evalwh was started
    assert judge.model.root == tmp_path / "sub"
    assert judge.model.where == "judges[0].model"


@pytest.mark.parametrize("scale", ["{min: 3, max: 3}", "{min: 5, max: 1}"])
def test_a_scale_whose_max_is_not_above_its_min_is_a_config_error(
    tmp_path: Path, scale: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, f"    scale: {scale}\n")
    error = info.value
    assert error.message == "the scale's max must be above its min"
    assert (error.file, error.where, error.fix) == (
        str(tmp_path / "sub" / "eval.yaml"),
        "judges[0].scale",
        "e.g. scale: {min: 1, max: 5}",
    )


def test_a_scale_of_one_to_five_is_kept(tmp_path: Path) -> None:
    judge = load(tmp_path, "    scale: {min: 1, max: 5}\n").judges[0]  # type: ignore[attr-defined]
    assert judge.scale == (1.0, 5.0)
