"""The python scorer (evalwh/scoring/python.py): a user's function named as
``module:function`` or ``path/to/file.py:function``, called in its worker process. What it may
return (bool, number, dict, ScoreResult) and the error results of anything else, options passed
as keyword arguments, and the config errors of a module, file or function that cannot be loaded
and of bad ``options``, ``timeout_s`` or ``memory_mb`` (refused at their option, with the fix, before any
worker starts). The ``helper_module`` fixture (tests/scoring/conftest.py) gives the scorers.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from evalwh.config.model import Case, Criterion
from evalwh.errors import ConfigError
from evalwh.scoring import (
    ScoreResult,
    build_scorecard,
    build_scorer,
)
from evalwh.scoring.python import python_scorer
from tests.scoring.conftest import HELPERS
from tests.scoring.test_base import FILE, build_error, crit, run


def py(function: str, **options) -> Criterion:
    return crit("python", function=function, **options)


def test_python_file_path_returning_bool(tmp_path: Path):
    (tmp_path / "scorers").mkdir()
    (tmp_path / "scorers" / "checks.py").write_text(HELPERS)
    c = py("scorers/checks.py:is_yes")
    yes = run(c, " Yes ", root=tmp_path)
    assert (yes.score, yes.passed) == (1.0, True)
    no = run(c, "no", root=tmp_path)
    assert (no.score, no.passed) == (0.0, False)


def test_python_module_function_returning_float(tmp_path: Path, helper_module: str):
    result = run(py(f"{helper_module}:half"), "x", root=tmp_path)
    assert result.score == 0.5
    assert result.passed is None
    assert result.error is None
    assert str(tmp_path) not in sys.path  # the config folder was on sys.path only to import


def test_python_dict_result(tmp_path: Path, helper_module: str):
    case = Case(id="a", metadata={"topic": "geo"})
    result = run(py(f"{helper_module}:graded"), "abcd", case, root=tmp_path)
    assert result.score == 0.8
    assert result.passed is False
    assert result.details == {"length": 4, "note": "geo"}
    assert result.rationale == "too long"


def test_python_score_result_passes_through(tmp_path: Path, helper_module: str):
    result = run(py(f"{helper_module}:result"), "x", Case(id="a", expected="E"), root=tmp_path)
    assert result == ScoreResult(0.25, details={"expected": "E"})


def test_python_out_of_range_score_is_an_error(tmp_path: Path, helper_module: str):
    result = run(py(f"{helper_module}:too_big"), "x", root=tmp_path)
    assert result.score == 0.0
    assert result.passed is False
    assert "1.5" in result.error
    assert f"{helper_module}:too_big" in result.error
    assert "outside [0, 1]" in result.error


def test_python_bad_return_type_is_an_error(tmp_path: Path, helper_module: str):
    result = run(py(f"{helper_module}:wrong_type"), "x", root=tmp_path)
    assert result.score == 0.0
    assert f"python scorer {helper_module}:wrong_type: returned str;" in result.error
    missing = run(py(f"{helper_module}:no_score"), "x", root=tmp_path)
    assert "without 'score'" in missing.error


def test_python_options_are_keyword_arguments(tmp_path: Path, helper_module: str):
    c = py(f"{helper_module}:with_options", options={"word": "ab", "minimum": 2})
    assert run(c, "ab ab", root=tmp_path).score == 1.0
    assert run(c, "ab", root=tmp_path).score == 0.0


def test_python_raising_scorer_is_an_error_result_from_its_worker(
    tmp_path: Path, helper_module: str
):
    fn = build_scorer(py(f"{helper_module}:boom"), tmp_path, FILE)
    assert fn("x", Case(id="a")).error == "ValueError: boom on a"  # raised in the worker
    card = build_scorecard([py(f"{helper_module}:boom")], tmp_path, FILE)
    row = card.score("x", Case(id="a")).criteria[0]
    assert row.error == "ValueError: boom on a"
    assert (row.score, row.passed) == (0.0, False)


def test_unimportable_module_is_a_config_error(tmp_path: Path):
    err = build_error(py("no_such_module_xyz:fn"), root=tmp_path)
    assert err.where == "scorecard[0].function"
    assert "cannot import module 'no_such_module_xyz'" in err.message
    assert str(tmp_path) in err.fix


def test_missing_function_and_not_callable_are_config_errors(tmp_path: Path, helper_module: str):
    err = build_error(py(f"{helper_module}:nope"), root=tmp_path)
    assert err.where == "scorecard[0].function"
    assert f"'{helper_module}' has no attribute 'nope'" in err.message
    assert err.fix
    err = build_error(py(f"{helper_module}:NOT_CALLABLE"), root=tmp_path)
    assert "is a int, not a function" in err.message


def test_missing_scorer_file_and_broken_file_are_config_errors(tmp_path: Path):
    err = build_error(py("missing.py:fn"), root=tmp_path)
    assert err.where == "scorecard[0].function"
    assert "python file not found" in err.message
    (tmp_path / "broken.py").write_text("def fn(:\n")
    err = build_error(py("broken.py:fn"), root=tmp_path)
    assert "SyntaxError" in err.message
    assert not [m for m in sys.modules if m.startswith("_evalwh_scorer_broken")]


def test_function_without_colon_is_a_config_error():
    err = build_error(py("just_a_name"))
    assert err.where == "scorecard[0].function"
    assert "module:function" in err.message


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
        *[
            (
                {"memory_mb": bad},
                "memory_mb",
                f"'memory_mb' must be a whole number of MiB above 0, got {bad!r}",
                "write e.g. `memory_mb: 4096` (the default is 2048)",
            )
            for bad in ("2048", True, 0, 1.5)
        ],
        *[
            (
                {"pass_env": bad},
                "pass_env",
                f"'pass_env' must be a list of environment variable names, got {bad!r}",
                "write e.g. `pass_env: [HF_TOKEN]` (the variables the function reads)",
            )
            for bad in ("HF_TOKEN", ["NOT A NAME"], [3])
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


def test_a_python_criterions_memory_mb_bounds_its_worker(tmp_path: Path) -> None:
    (tmp_path / "s.py").write_text("def f(output, **_):\n    return 1.0\n", encoding="utf-8")
    for options, bound in (({}, 2048), ({"memory_mb": 512}, 512)):
        spec = Criterion(name="k", type="python", options={"function": "s.py:f", **options})
        worker = python_scorer(spec, tmp_path, "eval.yaml")
        try:
            assert worker.memory_mb == bound
        finally:
            worker.close()


def test_a_python_criterion_passes_the_variables_it_names_to_its_function(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CORP_CRED", "corp-cred-value-0002")
    monkeypatch.setenv("OTHER_CRED", "other-cred-value-0002")
    (tmp_path / "s.py").write_text(
        "import os\n"
        "def f(output, case):\n"
        "    return {'score': 1.0, 'details': {k: os.environ.get(k) for k in"
        " ('CORP_CRED', 'OTHER_CRED')}}\n",
        encoding="utf-8",
    )
    spec = Criterion(
        name="k", type="python", options={"function": "s.py:f", "pass_env": ["CORP_CRED"]}
    )
    worker = python_scorer(spec, tmp_path, "eval.yaml")
    try:
        details = worker("x", Case(id="a")).details
    finally:
        worker.close()
    assert details == {"CORP_CRED": "corp-cred-value-0002", "OTHER_CRED": None}
