"""Compiling and rendering prompt templates (evalwh/config/prompts.py): the plain-substitution
fast path gives what Jinja gives, literal text included; a template naming a private attribute
is refused at load and a sandbox violation at render says what, where (the template's line)
and how to fix it; a syntax error says how to write it; an undefined variable or a missing
case file names the file, the place and what the case has; a template failing on one case's
data names the case; and the check on what a template prints ends on values that hold
themselves. Templates and their sandbox: docs/prompts.md, docs/security.md."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import jinja2
import pytest

from evalwh.config.attachments import (
    load,
)
from evalwh.config.loader import load_config
from evalwh.config.model import Case, Variant
from evalwh.config.prompts import (
    CompiledVariant,
    _defined,
    compile_template,
    environment,
    messages_from_config,
    sandbox_error,
)
from evalwh.errors import ConfigError
from tests.builders import BASE, ROWS_CONFIG, expect_error
from tests.conftest import write
from tests.fakes import media

SANDBOX_FIX_TEXT = (
    "templates render in a sandbox: use the case's vars and Jinja's filters; names starting "
    "with '_' and Python internals are not reachable (docs/security.md)"
)


def _first_variant(content: str) -> Variant:
    messages = messages_from_config([{"role": "user", "content": content}])
    return Variant(id="v", messages=messages, source="/cfg/eval.yaml", where="variants[0]")


def test_a_template_naming_a_private_attribute_is_refused_with_the_sandbox_fix() -> None:
    """Refused when the config is read: the line, the file, the place and the fix."""
    with pytest.raises(ConfigError) as caught:
        CompiledVariant(_first_variant("hello\n{{ question.__class__ }}"))
    error = caught.value
    assert error.message == (
        "template sandbox violation: access to '__class__' is not allowed (line 2 of the template)"
    )
    assert error.file == "/cfg/eval.yaml"
    assert error.where == "variants[0].messages[0].content[0]"
    assert error.fix == SANDBOX_FIX_TEXT
    assert str(error).endswith(f"\n  fix: {SANDBOX_FIX_TEXT}")


def test_a_sandbox_violation_at_render_carries_the_sandbox_fix() -> None:
    variant = _first_variant("{{ q|attr(n) }}")
    with pytest.raises(ConfigError) as caught:
        CompiledVariant(variant).render(Case(id="c1", vars={"q": "a", "n": "__class__"}))
    assert caught.value.fix == SANDBOX_FIX_TEXT
    assert caught.value.message.endswith("(case 'c1') is not allowed (line 1 of the template)")


@pytest.mark.parametrize("line", [None, 0])
def test_a_sandbox_violation_without_a_template_line_names_none(line: int | None) -> None:
    """No line known: the message ends at 'is not allowed', with no '(line ...)' or filler."""
    error = sandbox_error("access to '_x'", line, file="/cfg/eval.yaml", where="variants[0]")
    assert error.message == "template sandbox violation: access to '_x' is not allowed"
    assert str(error) == (
        "/cfg/eval.yaml: variants[0]: template sandbox violation: access to '_x' is not "
        f"allowed\n  fix: {SANDBOX_FIX_TEXT}"
    )


def _variant(content: list[dict[str, str]] | str) -> Variant:
    messages = messages_from_config([{"role": "user", "content": content}])
    return Variant(id="v", messages=messages, source="/cfg/eval.yaml", where="variants[1]")


def test_sandbox_error_at_render_names_the_template_line() -> None:
    """An attribute name computed from case data that the sandbox refuses is reported with
    the line of the template it is on."""
    variant = _variant("first line\n{{ q|attr(n) }}\nthird")
    case = Case(id="c1", vars={"q": "a", "n": "__class__"})
    with pytest.raises(ConfigError) as caught:
        CompiledVariant(variant).render(case)
    error = caught.value
    assert "(line 2 of the template)" in error.message
    assert error.file == "/cfg/eval.yaml"
    assert error.where == "variants[1].messages[0].content[0]"


def test_undefined_variable_names_the_file_place_and_the_vars_the_case_has() -> None:
    variant = _variant([{"text": "hello"}, {"text": "{{ questoin }}"}])
    case = Case(id="c1", vars={"question": "q", "answer": "a"}, source="eval.yaml cases[0]")
    with pytest.raises(ConfigError) as caught:
        CompiledVariant(variant).render(case)
    error = caught.value
    assert error.message.startswith("undefined template variable for case 'c1': ")
    assert error.file == "/cfg/eval.yaml"
    assert error.where == "variants[1].messages[0].content[1]"
    assert error.fix == (
        "fix the spelling or add the variable to the case's vars (eval.yaml cases[0]); "
        "available: answer, question"
    )
    bare = Case(id="c2", source="eval.yaml cases[1]")
    with pytest.raises(ConfigError) as caught:
        CompiledVariant(variant).render(bare)
    assert caught.value.fix is not None
    assert caught.value.fix.endswith("; available: (none)")


def test_missing_case_file_in_a_binary_part_names_the_files_the_case_has(tmp_path: Path) -> None:
    png = tmp_path / "a.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 32)
    photo, scan = load(png, "photo"), load(png, "scan")
    variant = _variant([{"image": "{{ files.nope }}"}])
    case = Case(id="c1", files={"scan": scan, "photo": photo}, source="cases.jsonl:2")
    with pytest.raises(ConfigError) as caught:
        CompiledVariant(variant).render(case)
    error = caught.value
    assert error.message.startswith("case 'c1' has no such file: ")
    assert error.file == "/cfg/eval.yaml"
    assert error.where == "variants[1].messages[0].content[0]"
    assert error.fix == "name one of the case's files (cases.jsonl:2): photo, scan"
    with pytest.raises(ConfigError) as caught:
        CompiledVariant(variant).render(Case(id="c2", source="cases.jsonl:3"))
    assert caught.value.fix == "name one of the case's files (cases.jsonl:3): (none)"


def test_literal_text_beside_a_name_stays_text_even_when_it_spells_a_name() -> None:
    # the fast path's plan keeps literal pieces as text: the "q" before {{ q }} is not looked
    # up, though the context holds a "q"
    template = compile_template("q{{ q }}", file="e.yaml", where="t")
    assert template.render({"q": "x"}) == "qx"
    mixed = compile_template("q{{ q }}, n={{ n }}.", file="e.yaml", where="t")
    assert mixed.render({"q": "x", "n": 3}) == "qx, n=3."


def test_a_template_failing_on_a_cases_data_names_the_case_and_the_place(tmp_path: Path) -> None:
    text = ROWS_CONFIG.replace('content: "{{ q }}"', 'content: "{{ 10 // n }}"').replace(
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


PLAIN_OR_NOT = [
    "Hi {{ name }}!",
    "{{q}}",
    "{{\tq\n}}\n",
    'json {"a": {{ v }}} and a{ lone brace',
    "{ {{x}} }}}",
    "{{ x }}{{ y }}",
    "",
    # not plain: Jinja's own path
    "{{ true }}",
    "{{ none }}",
    "{{ not }}",
    "{{- x }}",
    "{{ x -}}",
    "{{ x|upper }}",
    "{{ x.y }}",
    "{{ x[0] }}",
    "{# note #}x",
    "{% if x %}y{% endif %}",
    "{{{ x }}",
    "a\r\nb {{ x }}",
    "{{ \u00e9 }}",
]


def test_a_plain_template_is_recognised_without_jinja_as_jinja_parses_it() -> None:
    # a template recognised as plain has exactly the plan Jinja's parse gives; anything else
    # (constants, operators, whitespace control, filters, tags, comments, CR, non-ASCII
    # names) is left to Jinja
    from evalwh.config.prompts import _plan_of, plain_plan

    recognised = [t for t in PLAIN_OR_NOT if plain_plan(t) is not None]
    assert recognised == PLAIN_OR_NOT[:7]
    for text in recognised:
        assert plain_plan(text) == _plan_of(text), text


def test_a_plain_template_renders_as_jinja_and_falls_back_to_it_for_a_missing_name() -> None:
    from evalwh.config.prompts import PlainTemplate, environment

    template = compile_template("Hi {{ name }}, {{ n }}!", file="e.yaml", where="t")
    assert isinstance(template, PlainTemplate)
    jinja = environment().from_string("Hi {{ name }}, {{ n }}!")
    for context in ({"name": "Ann", "n": 3}, {"name": ["a", 1], "n": None}):
        assert template.render(context) == jinja.render(context)
    assert template.render(name="kw", n=1) == "Hi kw, 1!"  # keyword arguments: Jinja's path
    with pytest.raises(jinja2.UndefinedError):  # StrictUndefined, as any template
        template.render({"name": "Ann"})


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


REPO = Path(__file__).resolve().parents[2]


def test_plain_values_in_containers_pass_unchanged() -> None:
    value = [1, "a", None, 2.5, {"k": (2, 3), "j": [True]}]
    assert _defined(value) is value
    assert environment().from_string("{{ xs }}").render(xs=[1, 2]) == "[1, 2]"


def test_an_undefined_value_inside_a_printed_mapping_is_an_error() -> None:
    template = environment().from_string("{{ {'k': [q.nope]} }}")
    with pytest.raises(jinja2.UndefinedError, match="has no attribute 'nope'"):
        template.render(q={"a": 1})


def test_a_container_that_holds_itself_is_walked_once() -> None:
    # data handed to the Python API may hold itself; the walk must end (it runs in a child so
    # that a walk that does not end is stopped)
    script = (
        "from evalwh.config.prompts import _defined\n"
        "a = [1, {'k': None}]\n"
        "a.append(a)\n"
        "a[1]['k'] = a\n"
        "print(_defined(a) is a)\n"
    )
    # cwd: in mutmut's stats pass the child records its calls too, which reads mutmut's
    # config from the working folder (the tests run in a temporary one)
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True, text=True, timeout=15, cwd=REPO, check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "True\n"), done.stderr


def test_undefined_template_variable(tmp_path: Path) -> None:
    cfg = write(tmp_path / "eval.yaml", BASE.replace("{{ question }}", "{{ questoin }}"))
    message = expect_error(cfg, "variants[0].messages[0].content[0]", "questoin", "case 'c1'")
    assert "available: question" in message


FIX_TEMPLATE = (
    'a template names a file of the case: - image: "{{ files.photo }}" (give the case files:, '
    "a file:// column or a dir: source); a literal path next to the config needs no braces"
)


def eval_yaml(tmp_path: Path, parts: list[str], case: str) -> Path:
    folder = tmp_path / "media"
    folder.mkdir(exist_ok=True)
    (folder / "dog.png").write_bytes(media.png(4, 3))
    (folder / "contract.pdf").write_bytes(media.pdf())
    (folder / "hello.wav").write_bytes(media.wav(1.0))
    return write(
        tmp_path / "eval.yaml",
        "models:\n  - {id: m, provider: mock, mock: {default: ok}}\n"
        "variants:\n  - id: v\n    messages:\n      - role: user\n        content:\n"
        + "".join(f"          - {p}\n" for p in parts)
        + f"cases:\n  - {case}\n"
        "scorecard:\n  - {name: ok, type: contains, value: ok}\n",
    )


TWO_FILES = "{id: c1, files: {photo: media/dog.png, doc: media/contract.pdf}}"


def render(tmp_path: Path, parts: list[str], case: str = TWO_FILES) -> list[dict[str, Any]]:
    loaded = load_config(eval_yaml(tmp_path, parts, case))
    return CompiledVariant(loaded.variants[0]).render(loaded.cases[0])


def refused(tmp_path: Path, parts: list[str], case: str = TWO_FILES) -> tuple[Any, ...]:
    """The config error a user sees: message, file, place and fix."""
    with pytest.raises(ConfigError) as info:
        render(tmp_path, parts, case)
    error = info.value
    return error.message, error.file, error.where, error.fix


@pytest.mark.parametrize("url", ["http://example.com/a.png", "https://example.com/a.png"])
def test_an_http_or_https_image_is_sent_as_its_url_not_read_as_a_file(
    tmp_path: Path, url: str
) -> None:
    assert render(tmp_path, ["text: look", f"image: {url}"])[0]["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image", "url": url},
    ]


def test_a_reference_to_a_missing_case_file_names_the_files_the_case_has(tmp_path: Path) -> None:
    assert refused(tmp_path, ["text: hi", 'image: "attachment://scan"']) == (
        "case 'c1' has no file 'scan'",
        str(tmp_path / "eval.yaml"),
        "variants[0].messages[0].content[1]",
        "add it to the case's files (eval.yaml cases[0]); the case has: doc, photo",
    )


def test_a_reference_in_a_case_without_files_says_it_has_no_files(tmp_path: Path) -> None:
    assert refused(tmp_path, ['image: "attachment://scan"'], "{id: c1}") == (
        "case 'c1' has no file 'scan'",
        str(tmp_path / "eval.yaml"),
        "variants[0].messages[0].content[0]",
        "add it to the case's files (eval.yaml cases[0]); the case has: no files",
    )


def test_a_template_rendering_nothing_says_nothing(tmp_path: Path) -> None:
    assert refused(tmp_path, ['image: "{{ vars.p }}"'], "{id: c1, vars: {p: ''}}") == (
        "the image part rendered nothing for case 'c1', not a file of the case",
        str(tmp_path / "eval.yaml"),
        "variants[0].messages[0].content[0]",
        FIX_TEMPLATE,
    )


def test_a_template_rendering_a_path_quotes_it(tmp_path: Path) -> None:
    case = "{id: c1, vars: {p: media/dog.png}}"
    assert refused(tmp_path, ["text: hi", 'audio: "{{ vars.p }}"'], case) == (
        "the audio part rendered 'media/dog.png' for case 'c1', not a file of the case",
        str(tmp_path / "eval.yaml"),
        "variants[0].messages[0].content[1]",
        FIX_TEMPLATE,
    )


def test_a_long_rendered_value_is_quoted_to_80_characters(tmp_path: Path) -> None:
    value = "y" * 80 + "Z" * 20
    message = refused(tmp_path, ['image: "{{ vars.p }}"'], f"{{id: c1, vars: {{p: {value}}}}}")[0]
    assert message == f"the image part rendered '{'y' * 80}' for case 'c1', not a file of the case"


def test_an_unreadable_literal_path_names_the_part_it_came_from(tmp_path: Path) -> None:
    message, file, where, _ = refused(tmp_path, ["text: hi", "image: media/gone.png"])
    assert message.startswith(f"cannot read the attached file {tmp_path / 'media' / 'gone.png'}")
    assert (file, where) == (str(tmp_path / "eval.yaml"), "variants[0].messages[0].content[1]")


@pytest.mark.parametrize(
    ("part", "message", "use"),
    [
        (
            'image: "{{ files.doc }}"',
            "the image part of case 'c1' names contract.pdf, which is application/pdf (from its "
            "content), not an image",
            "file",
        ),
        (
            'audio: "{{ files.photo }}"',
            "the audio part of case 'c1' names dog.png, which is image/png (from its content), "
            "not an audio",
            "image",
        ),
        (
            'file: "{{ files.photo }}"',
            "the file part of case 'c1' names dog.png, which is image/png (from its content), "
            "not a file",
            "image",
        ),
    ],
)
def test_a_file_of_the_wrong_kind_says_a_or_an_and_which_part_to_use(
    tmp_path: Path, part: str, message: str, use: str
) -> None:
    assert refused(tmp_path, ["text: hi", part]) == (
        message,
        str(tmp_path / "eval.yaml"),
        "variants[0].messages[0].content[1]",
        f"use a `- {use}:` part for it, or attach the right file",
    )


@pytest.mark.timeout(30)
def test_fifo_as_a_prompt_part_is_refused_naming_the_part(tmp_path: Path) -> None:
    eval_yaml(tmp_path, ["text: hi"], TWO_FILES)  # makes media/
    os.mkfifo(tmp_path / "media" / "pipe.png")  # nobody writes: a read would wait forever
    message, file, where, _ = refused(tmp_path, ["text: hi", "image: media/pipe.png"])
    assert message == (
        f"cannot read the attached file {tmp_path / 'media' / 'pipe.png'}: "
        "it is a FIFO (named pipe), not a regular file"
    )
    assert (file, where) == (str(tmp_path / "eval.yaml"), "variants[0].messages[0].content[1]")
