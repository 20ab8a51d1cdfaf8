"""Criterion values as templates: ``value: "{{ expected }}"`` is rendered for each case.

A string option of a built-in scorer — ``value`` of exact, contains and not-contains,
``reference`` of bleu, rouge-l and semantic, ``pattern`` of regex — that holds ``{{``, ``{%`` or ``{#``
is a Jinja template, compiled once in the sandbox prompts render in
(:func:`evalwh.config.prompts.environment`) and rendered once per case, with what a prompt
sees (every var at top level, ``vars``, ``case``, ``files``) plus ``expected`` and
``metadata``. A value without those marks is used as written, as before::

    scorecard:
      - {name: answer, type: contains, value: "{{ expected }}"}
      - {name: unit, type: regex, pattern: "^{{ vars.amount }} (EUR|euros)$"}

Case data is data: a case's ``expected`` or vars holding ``{{ ... }}`` is inserted as text and
never rendered itself; only eval.yaml's own values are templates. In a regex pattern every
inserted value is escaped (``re.escape``), so case data matches literally and cannot change
the pattern (``1+1`` matches "1+1"; ``(a+)+$`` cannot backtrack catastrophically).

A template that fails for a case (an undefined name, a sandbox violation) is a ConfigError
naming the criterion, the option and the case: :func:`evalwh.engine.execute.check_config`
renders every case's values before a run starts, so validate and run refuse it up front.

:func:`foreign_templates` finds literal values written in another tool's template syntax
(``{var}`` of Python's str.format, ``${var}`` of JavaScript and shell), which evalwh would
compare as written; ``evalwh validate`` shows them as warnings with their line.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from evalwh.config.model import Case, Criterion
from evalwh.errors import ConfigError
from evalwh.scoring.base import option_error, option_where

if TYPE_CHECKING:
    import jinja2

    from evalwh.config.model import EvalConfig
    from evalwh.config.prompts import CompiledTemplate

MARKS = ("{{", "{%", "{#")
CACHE = 4096  # cases whose rendered values are kept (a case is scored once per cell)
# options of built-in scorers that are templates when they hold a mark
TEMPLATED = {
    "exact": "value",
    "contains": "value",
    "not-contains": "value",
    "bleu": "reference",
    "rouge-l": "reference",
    "semantic": "reference",
    "regex": "pattern",
}


def is_template(text: object) -> bool:
    """Whether an option's string is a template (holds ``{{``, ``{%`` or ``{#``)."""
    return isinstance(text, str) and any(mark in text for mark in MARKS)


def context(case: Case) -> dict[str, Any]:
    """What a criterion's template sees: a prompt's context plus ``expected`` (when the case
    has one) and ``metadata``."""
    from evalwh.config.prompts import context_for

    found = {**context_for(case), "metadata": case.metadata}
    if case.expected is not None:
        found["expected"] = case.expected
    return found


def _regex_literal(value: Any) -> str:
    from evalwh.config.prompts import environment

    finalize: Callable[[Any], Any] = environment().finalize  # type: ignore[assignment]
    return re.escape(str(finalize(value)))


@lru_cache(maxsize=1)
def _regex_environment() -> jinja2.Environment:
    """The prompts' sandbox, with every ``{{ ... }}`` output escaped for a regex."""
    from evalwh.config.prompts import environment

    return environment().overlay(finalize=_regex_literal)


class CaseValues:
    """The strings of one option for each case: as written when none is a template, else
    rendered for the case (the last CACHE cases' values kept, so the cells of a case render
    once)."""

    def __init__(
        self,
        criterion: Criterion,
        file: str,
        option: str,
        values: list[str],
        *,
        regex: bool = False,
    ) -> None:
        from evalwh.config.prompts import compile_template

        self.criterion, self.file, self.option = criterion, file, option
        self.fixed: list[str] | None = None
        self._templates: list[tuple[str, CompiledTemplate | None]] = []
        self._cache: OrderedDict[int, tuple[Case, list[str]]] = OrderedDict()
        if not any(is_template(v) for v in values):
            self.fixed = list(values)
            return
        env = _regex_environment() if regex else None
        listed = isinstance(criterion.options.get(option), list)
        for i, text in enumerate(values):
            where = option_where(criterion, option) + (f"[{i}]" if listed else "")
            template = (
                compile_template(text, file=file, where=where, env=env)
                if is_template(text)
                else None
            )
            self._templates.append((text, template))

    def __call__(self, case: Case) -> list[str]:
        if self.fixed is not None:
            return self.fixed
        hit = self._cache.get(id(case))
        if hit is not None and hit[0] is case:
            return hit[1]
        found = self._render(case)
        self._cache[id(case)] = (case, found)
        if len(self._cache) > CACHE:
            self._cache.popitem(last=False)
        return found

    def _render(self, case: Case) -> list[str]:
        from evalwh.config.prompts import is_sandbox_violation, is_undefined

        values = context(case)
        out = []
        for text, template in self._templates:
            if template is None:
                out.append(text)
                continue
            try:
                out.append(template.render(values))
            except Exception as exc:
                if is_sandbox_violation(exc):
                    raise self._error(case, f"sandbox violation: {exc}") from None
                if is_undefined(exc):
                    has = "; the case has no expected value" if case.expected is None else ""
                    raise self._error(
                        case,
                        f"{exc}{has}",
                        fix=f"use a name the case has ({case.source}): {', '.join(sorted(values))}",
                    ) from None
                # a filter or method failing on this case's data
                raise self._error(case, f"{type(exc).__name__}: {exc}") from None
        return out

    def _error(self, case: Case, why: str, fix: str | None = None) -> ConfigError:
        return option_error(
            self.criterion,
            self.file,
            self.option,
            f"the {self.option} template failed for case '{case.id}': {why}",
            fix
            or f"check the template against the case's data ({case.source}); templates "
            "render in a sandbox (docs/scoring.md#values-are-templates)",
        )


# -- other tools' template syntax -----------------------------------------------------------
@dataclass(frozen=True)
class Habit:
    """A template syntax of another tool, which evalwh reads as literal text."""

    pattern: re.Pattern[str]
    tool: str


HABITS = (
    Habit(re.compile(r"\$\{\s*([A-Za-z_][\w.]*)\s*\}"), "JavaScript / shell ${...}"),
    Habit(
        re.compile(r"(?<![{$\\])\{([A-Za-z_][\w.]*)\}(?!\})"),
        "Python str.format {...}, as inspect_ai, OpenAI evals and LangChain write it",
    ),
)


@dataclass(frozen=True)
class TemplateWarning:
    """A literal criterion value that looks like another tool's template."""

    file: str
    where: str
    line: int | None
    column: int | None
    found: str
    name: str
    tool: str

    def __str__(self) -> str:
        at = self.file + "".join(f":{n}" for n in (self.line, self.column) if n is not None)
        return (
            f"{at}: {self.where}: '{self.found}' looks like a template of another tool "
            f"({self.tool}) and is compared as written; evalwh templates are Jinja: "
            f"write {{{{ {self.name} }}}}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "message": str(self)}


def foreign_templates(config: EvalConfig) -> list[TemplateWarning]:
    """The literal values of templated options (see TEMPLATED) that hold another tool's
    template syntax, each with its place in the config file."""
    from evalwh.config.yamlpos import locate, parse_path

    found: list[TemplateWarning] = []
    for criterion in config.scorecard:
        option = TEMPLATED.get(criterion.type)
        raw = criterion.options.get(option) if option else None
        values = raw if isinstance(raw, list) else [raw]
        for i, text in enumerate(values):
            if not isinstance(text, str) or is_template(text):
                continue
            where = option_where(criterion, str(option)) + (
                f"[{i}]" if isinstance(raw, list) else ""
            )
            for habit in HABITS:
                match = habit.pattern.search(text)
                if match is None:
                    continue
                line, column = locate(config.node, parse_path(where))
                found.append(
                    TemplateWarning(
                        str(config.path),
                        where,
                        line,
                        column,
                        match.group(0),
                        match.group(1),
                        habit.tool,
                    )
                )
                break
    return found
