"""The python scorer's options, pinned where mutation testing found them loose
(docs/testing.md): each bad ``options`` or ``timeout_s`` is a config error at its option, with
the fix, before any worker starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalwh.config.model import Criterion
from evalwh.errors import ConfigError
from evalwh.scoring.python import python_scorer


@pytest.mark.parametrize(
    ("options", "option", "message", "fix"),
    [
        (
            {"options": ["word", "ab"]},
            "options",
            "'options' must be a mapping, got ['word', 'ab']",
            "write `options:` followed by keyword arguments for the function",
        ),
        *[
            (
                {"timeout_s": bad},
                "timeout_s",
                f"'timeout_s' must be a positive number of seconds, got {bad!r}",
                "write e.g. `timeout_s: 30`",
            )
            for bad in ("30", True, 0, -1.5)
        ],
    ],
)
def test_a_bad_option_is_refused_at_its_place_with_the_fix(
    tmp_path: Path, options: dict[str, Any], option: str, message: str, fix: str
) -> None:
    spec = Criterion(
        name="k", type="python", options={"function": "s.py:f", **options}, where="scorecard[3]"
    )
    with pytest.raises(ConfigError) as caught:
        python_scorer(spec, tmp_path, "eval.yaml")
    error = caught.value
    assert (error.file, error.where, error.message, error.fix) == (
        "eval.yaml",
        f"scorecard[3].{option}",
        f"criterion 'k' (python): {message}",
        fix,
    )


@pytest.mark.parametrize("timeout", [0.5, 1, 30])
def test_any_positive_timeout_is_taken_as_given(tmp_path: Path, timeout: float) -> None:
    # a fraction of a second is a positive number of seconds too (only <= 0 is refused)
    (tmp_path / "s.py").write_text("def f(output, **_):\n    return 1.0\n", encoding="utf-8")
    spec = Criterion(name="k", type="python", options={"function": "s.py:f", "timeout_s": timeout})
    worker = python_scorer(spec, tmp_path, "eval.yaml")
    try:
        assert worker.timeout_s == timeout
    finally:
        worker.close()
