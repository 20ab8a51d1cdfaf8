"""Compiling and rendering a prompt (evalwh.config.prompts): the plain-substitution fast path
gives what Jinja gives, literal text included; a template naming a private attribute is
refused at load, a syntax error says how to write it, and a template that fails on one case's
data is refused naming the case, the template's place and what to check.

Written from mutants that survived the mutation run (docs/testing.md). Templates and their
sandbox are described in docs/prompts.md and docs/security.md.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from evalwh.config.loader import load_config
from evalwh.config.prompts import CompiledVariant, _defined, compile_template
from evalwh.errors import ConfigError
from tests.test_survivors_run_row import CONFIG


def test_literal_text_beside_a_name_stays_text_even_when_it_spells_a_name() -> None:
    # the fast path's plan keeps literal pieces as text: the "q" before {{ q }} is not looked
    # up, though the context holds a "q"
    template = compile_template("q{{ q }}", file="e.yaml", where="t")
    assert template.render({"q": "x"}) == "qx"
    mixed = compile_template("q{{ q }}, n={{ n }}.", file="e.yaml", where="t")
    assert mixed.render({"q": "x", "n": 3}) == "qx, n=3."


def test_a_template_failing_on_a_cases_data_names_the_case_and_the_place(tmp_path: Path) -> None:
    text = CONFIG.replace('content: "{{ q }}"', 'content: "{{ 10 // n }}"').replace(
        "{id: c1, vars: {q: one}}", "{id: c1, vars: {q: one, n: 0}}"
    )
    (tmp_path / "eval.yaml").write_text(text, encoding="utf-8")
    config = load_config(tmp_path / "eval.yaml")
    variant = CompiledVariant(config.variants[0])
    with pytest.raises(ConfigError) as refused:
        variant.render(config.cases[0])
    error = refused.value
    assert error.message == (
        "template failed for case 'c1': ZeroDivisionError: integer division or modulo by zero"
    )
    assert (error.file, error.where) == (
        config.variants[0].source,
        "variants[0].messages[0].content[0]",
    )
    assert error.fix == f"check the template against the case's vars ({config.cases[0].source})"


@pytest.mark.parametrize(
    "text",
    [
        '{{ q | attr("__class__") }}',  # the attr filter names the attribute as a string
        "{{ q.__class__ }}",
        "{{ q['__globals__'] }}",
    ],
)
def test_a_template_naming_a_private_attribute_is_refused_before_any_case(text: str) -> None:
    # the sandbox would refuse it at render time; naming it literally is refused at load
    with pytest.raises(ConfigError) as refused:
        compile_template(f"line one\n{text}", file="e.yaml", where="variants[0]")
    error = refused.value
    assert error.message.startswith("template sandbox violation: access to '__")
    assert error.message.endswith("is not allowed (line 2 of the template)")
    assert (error.file, error.where) == ("e.yaml", "variants[0]")


def test_a_template_with_a_syntax_error_says_how_jinja_wants_it() -> None:
    with pytest.raises(ConfigError) as refused:
        compile_template("{{ q ", file="e.yaml", where="variants[0]")
    error = refused.value
    assert error.message.startswith("template syntax error: ")
    assert (error.file, error.where, error.fix) == (
        "e.yaml", "variants[0]", "fix the Jinja2 syntax: {{ variable }}, {% if %}...{% endif %}",
    )  # fmt: skip


def test_a_plain_template_keeps_its_plan_for_the_fast_path() -> None:
    template = compile_template("Hi {{ name }}!", file="e.yaml", where="t")
    assert template._plan == ((False, "Hi "), (True, "name"), (False, "!"))  # type: ignore[attr-defined]
    assert compile_template("{{ name | upper }}", file="e.yaml", where="t")._plan is None  # type: ignore[attr-defined]


def test_an_underscore_string_elsewhere_is_only_text() -> None:
    # only attribute access is checked: a filter's argument or a computed index is data
    for text in ('{{ q | default("_none") }}', "{{ items[n] }}", '{{ q ~ "_x" }}'):
        compile_template(text, file="e.yaml", where="t")


def test_a_printed_value_that_holds_itself_is_walked_once() -> None:
    # the undefined-value check walks lists and mappings; a value reached twice (a YAML alias
    # of its own anchor) is walked once, so the check ends
    looped: list[object] = [1]
    looped.append(looped)
    shared = {"a": looped, "b": looped}
    done: list[object] = []
    walker = threading.Thread(target=lambda: done.append(_defined(shared)), daemon=True)
    walker.start()
    walker.join(timeout=10)
    assert done == [shared]
