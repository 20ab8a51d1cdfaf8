"""Loading and calling a user's Python function, and converting what it returns.

``function`` is ``module:function`` (imported with the config's folder on ``sys.path``) or
``path/to/file.py:function`` (relative to the config's folder, loaded under a unique module
name). The result may be a bool (1/0), a number in [0, 1], a dict with ``score`` and optional
``passed``/``details``/``rationale`` (other keys are kept in details), or a ScoreResult.

Shared by the ``python`` scorer's worker process (evalwh.scoring.pyworker) and the embedders
of the ``semantic`` scorer (evalwh.scoring.similarity).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import inspect
import itertools
import json
import math
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from evalwh.config.model import Case, Criterion
from evalwh.scoring.base import ScoreResult, option_error

_counter = itertools.count(1)
DICT_KEYS = ("score", "passed", "details", "rationale")
RETURN_HINT = "return a bool, a number in [0, 1], a dict with 'score', or a ScoreResult"


@contextlib.contextmanager
def _on_sys_path(*folders: Path) -> Iterator[None]:
    added = [str(f) for f in folders if str(f) not in sys.path]
    for folder in reversed(added):
        sys.path.insert(0, folder)
    try:
        yield
    finally:
        for folder in added:
            with contextlib.suppress(ValueError):
                sys.path.remove(folder)


def _looks_like_file(target: str) -> bool:
    return target.endswith(".py") or "/" in target or "\\" in target


def _load_file(criterion: Criterion, root: Path, file: str, target: str) -> Any:
    path = (root / target).resolve()
    if not path.is_file():
        raise option_error(
            criterion,
            file,
            "function",
            f"python file not found: {path}",
            "check the path; it is relative to the config file's folder",
        )
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    stem = "".join(c if c.isalnum() else "_" for c in path.stem)
    module_name = f"_evalwh_scorer_{stem}_{digest}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise option_error(
            criterion,
            file,
            "function",
            f"cannot load {path} as a Python module",
            "point `function` at a .py file: path/to/file.py:function",
        )
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        with _on_sys_path(path.parent, root):
            spec.loader.exec_module(module)
    except BaseException as exc:
        sys.modules.pop(module_name, None)
        if not isinstance(exc, Exception) or isinstance(exc, MemoryError):
            raise  # out of memory is the worker's to report (evalwh.scoring.pyworker)
        raise option_error(
            criterion,
            file,
            "function",
            f"importing {path} failed: {type(exc).__name__}: {exc}",
            "fix the error in the scorer file (run `python " + str(path) + "` to see it)",
        ) from None
    return module


def _load_module(criterion: Criterion, root: Path, file: str, target: str) -> Any:
    try:
        with _on_sys_path(root):
            return importlib.import_module(target)
    except ModuleNotFoundError as exc:
        raise option_error(
            criterion,
            file,
            "function",
            f"cannot import module '{target}': {exc}",
            f"check the module name; it is imported with the config's folder ({root}) on "
            "sys.path, or use path/to/file.py:function",
        ) from None
    except MemoryError:
        raise  # the worker's to report (evalwh.scoring.pyworker)
    except Exception as exc:
        raise option_error(
            criterion,
            file,
            "function",
            f"importing module '{target}' failed: {type(exc).__name__}: {exc}",
            "fix the error in the scorer module",
        ) from None


def load_function(criterion: Criterion, root: Path, file: str) -> tuple[Callable[..., Any], str]:
    """Import the criterion's ``function``; return it and its display name."""
    spec = criterion.options.get("function")
    if not isinstance(spec, str) or ":" not in spec:
        raise option_error(
            criterion,
            file,
            "function",
            f"'function' must look like module:function or path/to/file.py:function, got {spec!r}",
            "write e.g. `function: scorers:check_answer` or `function: scorers.py:check_answer`",
        )
    target, _, attr = spec.rpartition(":")
    if not target or not attr:
        raise option_error(
            criterion,
            file,
            "function",
            f"'function' {spec!r} lacks a module or a function name",
            "write e.g. `function: scorers:check_answer`",
        )
    if _looks_like_file(target):
        module = _load_file(criterion, root, file, target)
    else:
        module = _load_module(criterion, root, file, target)
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise option_error(
                criterion,
                file,
                "function",
                f"'{target}' has no attribute '{attr}'",
                f"define `def {attr.split('.')[-1]}(output, case): ...` in {target}, "
                "or fix the name",
            ) from None
    if not callable(obj):
        raise option_error(
            criterion,
            file,
            "function",
            f"'{spec}' is a {type(obj).__name__}, not a function",
            "point `function` at a function taking (output, case)",
        )
    return obj, spec


def _bad(name: str, message: str) -> ScoreResult:
    return ScoreResult(0.0, passed=False, error=f"python scorer {name}: {message}")


def _check_score(value: Any) -> str | None:
    """Why ``value`` is not a usable score (None when it is)."""
    if isinstance(value, bool):
        return None
    if not isinstance(value, (int, float)):
        return f"score must be a number, got {type(value).__name__} {value!r}"
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        return f"returned score {value!r}, outside [0, 1]"
    return None


def _check_details(details: Any) -> str | None:
    if details is None:
        return None
    if not isinstance(details, dict):
        return f"details must be a dict, got {type(details).__name__}"
    try:
        json.dumps(details)
    except (TypeError, ValueError) as exc:
        return f"details are not JSON-serialisable: {exc}"
    return None


def convert(name: str, result: Any) -> ScoreResult:
    """Turn what a python scorer returned into a ScoreResult (an error result if unusable)."""
    if isinstance(result, bool):
        return ScoreResult(1.0 if result else 0.0, passed=result)
    if isinstance(result, (int, float)):
        problem = _check_score(result)
        return _bad(name, problem) if problem else ScoreResult(float(result))
    if isinstance(result, ScoreResult):
        problem = _check_score(result.score) or _check_details(result.details)
        return _bad(name, problem) if problem else result
    if isinstance(result, dict):
        if "score" not in result:
            return _bad(
                name, f"returned a dict without 'score' (keys: {sorted(result)}); " + RETURN_HINT
            )
        value = result["score"]
        problem = _check_score(value)
        if problem:
            return _bad(name, problem)
        passed = result.get("passed")
        if passed is not None and not isinstance(passed, bool):
            return _bad(name, f"'passed' must be true, false or None, got {passed!r}")
        details = result.get("details")
        problem = _check_details(details)
        if problem:
            return _bad(name, problem)
        extra = {k: v for k, v in result.items() if k not in DICT_KEYS}
        if extra:
            details = {**(details or {}), **extra}
            problem = _check_details(details)
            if problem:
                return _bad(name, problem)
        rationale = result.get("rationale")
        return ScoreResult(
            float(value),
            passed=passed,
            details=details,
            rationale=None if rationale is None else str(rationale),
        )
    return _bad(name, f"returned {type(result).__name__}; " + RETURN_HINT)


def takes_transcript(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` has a parameter named ``transcript`` that can be passed by keyword (a
    python scorer that wants the cell's tool loop, evalwh.scoring.transcript); ``**kwargs``
    alone does not count: such a function gets its options only, as before."""
    try:
        parameters = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        return False
    found = parameters.get("transcript")
    return found is not None and found.kind in (
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.KEYWORD_ONLY,
    )


def call_function(
    fn: Callable[..., Any],
    name: str,
    kwargs: dict[str, Any] | None,
    output: str,
    case: Case,
    transcript: list[dict[str, Any]] | None = None,
) -> ScoreResult:
    """One call of a user function, its result converted (runs inside the worker);
    ``transcript`` is passed by keyword when it is not None."""
    extra = dict(kwargs or {})
    if transcript is not None:
        extra["transcript"] = transcript
    return convert(name, fn(output, case, **extra))
