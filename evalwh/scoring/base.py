"""Scorer registry: a criterion type names a factory that builds a scoring function.

A factory has the signature ``(criterion, root, file) -> ScorerFn``. It checks the criterion's
options once, at build time (raising :class:`~evalwh.errors.ConfigError` that names the option),
and returns a function ``(output, case) -> ScoreResult`` that does only the per-case work.

Built-in types are listed in :data:`SCORERS` as import paths, imported only when used;
third-party packages add an ``evalwh.scorers`` entry point (name -> ``"module:factory"``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, cast

from evalwh.config.model import Case, Criterion
from evalwh.errors import ConfigError


@dataclass
class ScoreResult:
    """What a scorer returns for one output."""

    score: float  # in [0, 1]
    passed: bool | None = None  # None: decided by score >= criterion.threshold
    details: dict[str, Any] | None = None  # JSON-serialisable
    rationale: str | None = None
    error: str | None = None  # the scorer itself failed: score 0, passed False


ScorerFn = Callable[[str, Case], ScoreResult]
ScorerFactory = Callable[[Criterion, Path, str], ScorerFn]

SCORERS: dict[str, str] = {
    "exact": "evalwh.scoring.builtin:exact",
    "contains": "evalwh.scoring.builtin:contains",
    "not-contains": "evalwh.scoring.builtin:not_contains",
    "regex": "evalwh.scoring.builtin:regex",
    "json-valid": "evalwh.scoring.builtin:json_valid",
    "json-schema": "evalwh.scoring.builtin:json_schema",
    "python": "evalwh.scoring.python:python_scorer",
    "bleu": "evalwh.scoring.similarity:bleu",
    "rouge-l": "evalwh.scoring.similarity:rouge_l_scorer",
    "semantic": "evalwh.scoring.similarity:semantic",
    "llm-judge": "evalwh.scoring.judge:judge_criterion",
    "tool-called": "evalwh.scoring.trajectory:tool_called",
    "tool-not-called": "evalwh.scoring.trajectory:tool_not_called",
    "tool-order": "evalwh.scoring.trajectory:tool_order",
    "max-tool-calls": "evalwh.scoring.trajectory:max_tool_calls",
    "args-valid": "evalwh.scoring.trajectory:args_valid",
}

ENTRY_POINT_GROUP = "evalwh.scorers"


@lru_cache(maxsize=1)
def available() -> dict[str, str]:
    """Criterion type -> "module:factory", built-ins first, then entry points."""
    found = dict(SCORERS)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep.value)
    return found


def option_where(criterion: Criterion, option: str) -> str:
    """The config path of one of a criterion's options, e.g. ``scorecard[0].pattern``."""
    return f"{criterion.where}.{option}" if criterion.where else option


def option_error(
    criterion: Criterion, file: str | None, option: str, message: str, fix: str
) -> ConfigError:
    """A ConfigError about one option of ``criterion`` (the caller raises it)."""
    return ConfigError(
        f"criterion '{criterion.name}' ({criterion.type}): {message}",
        file=file,
        where=option_where(criterion, option),
        fix=fix,
    )


def scorer_factory(criterion: Criterion, file: str | None = None) -> ScorerFactory:
    """Import the factory registered for ``criterion.type`` (a built-in type reads no entry
    points: scanning every installed package's metadata costs ~5-20 ms)."""
    target = SCORERS.get(criterion.type) or available().get(criterion.type)
    if target is None:
        registry = available()
        import difflib

        close = difflib.get_close_matches(criterion.type, list(registry), n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise option_error(
            criterion,
            file,
            "type",
            f"unknown scorer type '{criterion.type}'",
            f"{hint}use one of: {', '.join(sorted(registry))}, or install the package that "
            "provides it",
        )
    module_name, _, attr = target.partition(":")
    try:
        factory: Any = getattr(importlib.import_module(module_name), attr)
    except Exception as exc:
        raise option_error(
            criterion,
            file,
            "type",
            f"cannot load scorer '{criterion.type}' from {target}: {type(exc).__name__}: {exc}",
            "reinstall the package that registers this scorer (entry point group "
            f"'{ENTRY_POINT_GROUP}')",
        ) from None
    return cast(ScorerFactory, factory)


def build_scorer(criterion: Criterion, root: Path, file: str) -> ScorerFn:
    """Check ``criterion``'s options and return its scoring function.

    ``root`` is the config's folder (relative paths in options resolve against it) and
    ``file`` the config file named in errors.
    """
    return scorer_factory(criterion, file)(criterion, Path(root), file)
