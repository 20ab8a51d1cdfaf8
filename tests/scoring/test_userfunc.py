"""Loading and calling a user's function (evalwh/scoring/userfunc.py), as the python scorer's
worker does: a file scorer's own module name, the config errors of a malformed ``function``
option and of a module or file that fails to import, options passed only when given, and the
conversion of what the function returns into a score or a named error.

The `function` option's errors point at their place (criterion_at builds a python
criterion at a given place, blank for none) and say what to fix.
"""

from __future__ import annotations

import hashlib
import math
import re
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from evalwh.config.model import Case, Criterion
from evalwh.errors import ConfigError
from evalwh.scoring.base import ScoreResult
from evalwh.scoring.userfunc import RETURN_HINT, call_function, convert, load_function
from tests.conftest import write
from tests.scoring.test_pyworker import FILE, NAMED, SCORERS, criterion


def test_a_file_scorer_loads_under_its_own_module_name(tmp_path: Path) -> None:
    (tmp_path / "checks").mkdir()
    (tmp_path / "checks" / "my-scorer.py").write_text(SCORERS)
    fn, name = load_function(criterion("checks/my-scorer.py:is_yes"), tmp_path, FILE)
    assert name == "checks/my-scorer.py:is_yes"
    assert fn.__module__.startswith("_evalwh_scorer_my_scorer_")
    assert fn("yes", Case(id="a")) is True
    assert str(tmp_path) not in sys.path and str(tmp_path / "checks") not in sys.path


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "no_colon",
            "'function' must look like module:function or path/to/file.py:function, got 'no_colon'",
        ),
        (":fn", "'function' ':fn' lacks a module or a function name"),
        ("mod:", "'function' 'mod:' lacks a module or a function name"),
    ],
)
def test_a_malformed_function_option_is_named(tmp_path: Path, spec: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_function(criterion(spec), tmp_path, FILE)
    assert info.value.message == NAMED + message
    assert info.value.where == "scorecard[2].function"


def test_a_function_option_that_is_not_a_string_is_named(tmp_path: Path) -> None:
    crit = Criterion(name="py", type="python", options={"function": 3}, where="scorecard[0]")
    with pytest.raises(ConfigError, match="got 3"):
        load_function(crit, tmp_path, FILE)


def test_import_errors_of_modules_and_files_name_the_cause(tmp_path: Path) -> None:
    (tmp_path / "broken_mod.py").write_text("import json\nraise RuntimeError('no model')\n")
    with pytest.raises(ConfigError) as info:
        load_function(criterion("broken_mod:fn"), tmp_path, FILE)
    assert (
        info.value.message == NAMED + "importing module 'broken_mod' failed: RuntimeError: no model"
    )
    assert info.value.fix == "fix the error in the scorer module"
    sys.modules.pop("broken_mod", None)
    with pytest.raises(ConfigError) as info:
        load_function(criterion("absent_mod_q:fn"), tmp_path, FILE)
    assert info.value.message.startswith(NAMED + "cannot import module 'absent_mod_q': ")
    assert f"({tmp_path})" in info.value.fix
    (tmp_path / "bad.py").write_text("raise RuntimeError('at import')\n")
    with pytest.raises(ConfigError) as info:
        load_function(criterion("bad.py:fn"), tmp_path, FILE)
    path = (tmp_path / "bad.py").resolve()
    assert info.value.message == NAMED + f"importing {path} failed: RuntimeError: at import"
    assert info.value.fix == f"fix the error in the scorer file (run `python {path}` to see it)"
    with pytest.raises(ConfigError) as info:
        load_function(criterion("gone.py:fn"), tmp_path, FILE)
    assert (
        info.value.message == NAMED + f"python file not found: {(tmp_path / 'gone.py').resolve()}"
    )
    assert info.value.fix == "check the path; it is relative to the config file's folder"


def test_call_function_passes_options_only_when_given() -> None:
    seen: list[Any] = []

    def fn(output: str, case: Case, **kwargs: Any) -> float:
        seen.append(kwargs)
        return 0.25

    assert call_function(fn, "m:fn", None, "o", Case(id="a")) == ScoreResult(0.25)
    assert call_function(fn, "m:fn", {}, "o", Case(id="a")) == ScoreResult(0.25)
    assert call_function(fn, "m:fn", {"k": 1}, "o", Case(id="a")) == ScoreResult(0.25)
    assert seen == [{}, {}, {"k": 1}]


def bad(message: str) -> ScoreResult:
    return ScoreResult(0.0, passed=False, error=f"python scorer m:f: {message}")


class Opaque:
    def __repr__(self) -> str:
        return "Opaque()"


@pytest.mark.parametrize(
    ("returned", "expected"),
    [
        (True, ScoreResult(1.0, passed=True)),
        (False, ScoreResult(0.0, passed=False)),
        (0, ScoreResult(0.0)),
        (1, ScoreResult(1.0)),
        (0.0, ScoreResult(0.0)),
        (1.0, ScoreResult(1.0)),
        (0.25, ScoreResult(0.25)),
        (1.0000001, bad("returned score 1.0000001, outside [0, 1]")),
        (-0.0001, bad("returned score -0.0001, outside [0, 1]")),
        (math.nan, bad("returned score nan, outside [0, 1]")),
        ("great", bad("returned str; " + RETURN_HINT)),
        (None, bad("returned NoneType; " + RETURN_HINT)),
        (
            {"passed": True},
            bad("returned a dict without 'score' (keys: ['passed']); " + RETURN_HINT),
        ),
        ({"score": "x"}, bad("score must be a number, got str 'x'")),
        ({"score": 2}, bad("returned score 2, outside [0, 1]")),
        ({"score": True}, ScoreResult(1.0)),
        ({"score": 1, "passed": "yes"}, bad("'passed' must be true, false or None, got 'yes'")),
        ({"score": 1, "passed": None}, ScoreResult(1.0)),
        ({"score": 0.5, "passed": False}, ScoreResult(0.5, passed=False)),
        ({"score": 1, "details": [1]}, bad("details must be a dict, got list")),
        ({"score": 1, "details": None}, ScoreResult(1.0)),
        (
            {"score": 1, "details": {"a": 1}, "n": 2, "rationale": 7},
            ScoreResult(1.0, details={"a": 1, "n": 2}, rationale="7"),
        ),
        ({"score": 0.5, "why": "short"}, ScoreResult(0.5, details={"why": "short"})),
        ({"score": 0.5, "rationale": None}, ScoreResult(0.5)),
        (ScoreResult(0.5, details={"k": "v"}), ScoreResult(0.5, details={"k": "v"})),
        (ScoreResult(1.5), bad("returned score 1.5, outside [0, 1]")),
        (ScoreResult("x"), bad("score must be a number, got str 'x'")),  # type: ignore[arg-type]
        (ScoreResult(0.5, details=[1]), bad("details must be a dict, got list")),  # type: ignore[arg-type]
    ],
)
def test_what_a_function_returns_becomes_a_score_or_a_named_error(
    returned: Any, expected: ScoreResult
) -> None:
    assert convert("m:f", returned) == expected


def test_details_that_are_not_json_are_an_error_wherever_they_come_from() -> None:
    nested = convert("m:f", {"score": 1, "details": {"o": Opaque()}})
    extra = convert("m:f", {"score": 1, "o": Opaque()})
    result = convert("m:f", ScoreResult(1.0, details={"o": Opaque()}))
    for converted in (nested, extra, result):
        assert (converted.score, converted.passed) == (0.0, False)
        assert converted.error is not None
        assert converted.error.startswith("python scorer m:f: details are not JSON-serialisable: ")
        assert "Opaque" in converted.error


def criterion_at(function: str, where: str = "scorecard[2]") -> Criterion:
    return Criterion(name="py", type="python", options={"function": function}, where=where)


def load_error(spec: str, root: Path, where: str = "scorecard[2]") -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_function(criterion_at(spec, where), root, FILE)
    return info.value


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def test_a_missing_scorer_file_names_the_config_file_and_the_function_option(
    tmp_path: Path,
) -> None:
    error = load_error("gone.py:fn", tmp_path)
    assert error.message == NAMED + f"python file not found: {(tmp_path / 'gone.py').resolve()}"
    assert (error.file, error.where) == (FILE, "scorecard[2].function")


def test_a_file_python_cannot_load_as_a_module_names_the_place_and_the_fix(
    tmp_path: Path,
) -> None:
    write(tmp_path / "sub" / "scorer.txt", "def fn(output, case):\n    return 1\n")
    error = load_error("sub/scorer.txt:fn", tmp_path)
    path = (tmp_path / "sub" / "scorer.txt").resolve()
    assert error.message == NAMED + f"cannot load {path} as a Python module"
    assert (error.file, error.where) == (FILE, "scorecard[2].function")
    assert error.fix == "point `function` at a .py file: path/to/file.py:function"


def test_a_scorer_file_that_fails_to_import_names_the_place(tmp_path: Path) -> None:
    write(tmp_path / "bad.py", "raise RuntimeError('at import')\n")
    error = load_error("bad.py:fn", tmp_path)
    assert (error.file, error.where) == (FILE, "scorecard[2].function")


def test_a_scorer_file_that_drops_itself_from_sys_modules_and_fails_is_a_config_error(
    tmp_path: Path,
) -> None:
    write(tmp_path / "gone.py", "import sys\ndel sys.modules[__name__]\nraise ValueError('boom')\n")
    error = load_error("gone.py:fn", tmp_path)
    path = (tmp_path / "gone.py").resolve()
    assert error.message == NAMED + f"importing {path} failed: ValueError: boom"


def test_a_scorer_file_loads_under_a_module_name_of_its_stem_and_path_digest(
    tmp_path: Path,
) -> None:
    """The module's ``__name__`` (seen in a scorer's own logging) names the file and the
    first 10 hex digits of its path's SHA-1, then a counter."""
    write(tmp_path / "checks" / "my-scorer.py", "def fn(output, case):\n    return 1\n")
    fn, _ = load_function(criterion_at("checks/my-scorer.py:fn"), tmp_path, FILE)
    path = (tmp_path / "checks" / "my-scorer.py").resolve()
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    assert re.fullmatch(rf"_evalwh_scorer_my_scorer_{digest}_\d+", fn.__module__)


def test_a_scorer_file_imports_modules_beside_it_and_at_the_config_folder(
    tmp_path: Path,
) -> None:
    beside, top = unique("beside"), unique("top")
    write(tmp_path / "sub" / f"{beside}.py", "VALUE = 'b'\n")
    write(tmp_path / f"{top}.py", "VALUE = 't'\n")
    write(
        tmp_path / "sub" / "scorer.py",
        f"import {beside}\nimport {top}\n\n"
        f"def fn(output, case):\n    return output == {beside}.VALUE + {top}.VALUE\n",
    )
    try:
        fn, _ = load_function(criterion_at("sub/scorer.py:fn"), tmp_path, FILE)
        assert fn("bt", Case(id="a")) is True
    finally:
        sys.modules.pop(beside, None)
        sys.modules.pop(top, None)


def test_module_import_errors_name_the_place_and_the_full_fix(tmp_path: Path) -> None:
    missing = unique("absent_mod")
    error = load_error(f"{missing}:fn", tmp_path)
    assert (error.file, error.where) == (FILE, "scorecard[2].function")
    assert error.fix == (
        f"check the module name; it is imported with the config's folder ({tmp_path}) on "
        "sys.path, or use path/to/file.py:function"
    )
    broken = unique("broken_mod")
    write(tmp_path / f"{broken}.py", "raise RuntimeError('no model')\n")
    try:
        error = load_error(f"{broken}:fn", tmp_path)
    finally:
        sys.modules.pop(broken, None)
    assert error.message == NAMED + f"importing module '{broken}' failed: RuntimeError: no model"
    assert (error.file, error.where) == (FILE, "scorecard[2].function")


@pytest.mark.parametrize("target", ["sub/scorer", "sub\\scorer"])
def test_a_target_with_a_slash_or_backslash_is_a_file_not_a_module(
    tmp_path: Path, target: str
) -> None:
    error = load_error(f"{target}:fn", tmp_path)
    assert error.message == NAMED + f"python file not found: {(tmp_path / target).resolve()}"


def test_a_scorer_path_with_a_colon_splits_at_the_last_colon(tmp_path: Path) -> None:
    write(tmp_path / "a:b" / "scorer.py", "def fn(output, case):\n    return True\n")
    fn, name = load_function(criterion_at("a:b/scorer.py:fn"), tmp_path, FILE)
    assert name == "a:b/scorer.py:fn" and fn("x", Case(id="a")) is True


def test_a_function_without_a_module_names_the_file_and_the_fix(tmp_path: Path) -> None:
    error = load_error(":fn", tmp_path)
    assert error.file == FILE
    assert error.fix == "write e.g. `function: scorers:check_answer`"


NESTED = """\
class ns:
    @staticmethod
    def check(output, case):
        return output == "ok"


VALUE = 3
"""


def test_a_dotted_function_name_reaches_a_nested_attribute(tmp_path: Path) -> None:
    write(tmp_path / "nested.py", NESTED)
    fn, _ = load_function(criterion_at("nested.py:ns.check"), tmp_path, FILE)
    assert fn("ok", Case(id="a")) is True


def test_a_missing_dotted_function_suggests_defining_its_last_part(tmp_path: Path) -> None:
    write(tmp_path / "nested.py", NESTED)
    error = load_error("nested.py:ns.missing", tmp_path)
    assert error.message == NAMED + "'nested.py' has no attribute 'ns.missing'"
    assert error.fix == "define `def missing(output, case): ...` in nested.py, or fix the name"


def test_a_function_that_is_not_callable_names_the_place_and_the_fix(tmp_path: Path) -> None:
    write(tmp_path / "nested.py", NESTED)
    error = load_error("nested.py:VALUE", tmp_path)
    assert error.message == NAMED + "'nested.py:VALUE' is a int, not a function"
    assert (error.file, error.where) == (FILE, "scorecard[2].function")
    assert error.fix == "point `function` at a function taking (output, case)"


def test_a_criterion_without_a_place_names_the_bare_option(tmp_path: Path) -> None:
    error = load_error("no_colon", tmp_path, where="")
    assert error.where == "function"


def test_a_function_with_options_gets_the_case(tmp_path: Path) -> None:
    def fn(output: str, case: Case, **kwargs: Any) -> bool:
        return case.id == kwargs["want"]

    assert call_function(fn, "m:fn", {"want": "a"}, "o", Case(id="a")) == ScoreResult(
        1.0, passed=True
    )
