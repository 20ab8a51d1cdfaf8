"""Prompt templating: Jinja2 with StrictUndefined over ordered, typed message parts.

Every template evalwh renders (prompts, mock replies, judge prompts) comes from the one
:func:`environment`: Jinja2's ``ImmutableSandboxedEnvironment`` with ``StrictUndefined``. A
template cannot reach Python internals (``{{ cycler.__init__.__globals__.os }}``) or mutate
the data it is given; an attempt is a ConfigError (exit 2) naming the file, the place and
the line in the template, found when the template is compiled (validate, dry run, run, MCP
``render_prompt``), or, for an attribute name computed from data, when it renders.

A variant's messages are compiled once; rendering a case gives JSON-ready messages::

    [{"role": "user", "content": [{"type": "text", "text": "..."}]}]

A binary part (``- image: "{{ files.photo }}"``) renders to the file's identity, never its
bytes: ``{"type": "image", "name": "photo", "sha256": ..., "media_type": "image/png",
"bytes": 1234}`` (see :mod:`evalwh.config.attachments`); a URL stays ``{"url": ...}``.

Template context: every case var at top level, ``vars`` (the same mapping),
``case`` (``case.id``, ``case.metadata``) and, when the case has files, ``files`` (name ->
reference). The expected answer is deliberately not in the
context, so a prompt cannot leak it by accident; put it in ``vars`` when a prompt needs it.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from evalwh.config.attachments import KINDS, REF_PREFIX, is_url, load
from evalwh.config.model import Case, Message, Part, Variant
from evalwh.errors import ConfigError

if TYPE_CHECKING:
    import jinja2

Rendered = list[dict[str, Any]]
Plan = tuple[tuple[bool, str], ...]  # literal pieces (False, text) and names (True, name)


class CompiledTemplate(Protocol):
    """What :func:`compile_template` returns: a Jinja template, or a :class:`PlainTemplate`."""

    def render(self, *args: Any, **kwargs: Any) -> str: ...


def _fill(plan: Plan, context: dict[str, Any]) -> str | None:
    """A plain template's text: its pieces joined, each value through ``str()``, which is
    exactly what Jinja's compiled code yields for such a template (no autoescape;
    :func:`_defined` returns case data unchanged). None when a name is not in ``context`` (a
    global or an undefined name: Jinja decides)."""
    out = []
    for is_name, text in plan:
        if not is_name:
            out.append(text)
            continue
        value = context.get(text, _MISSING)
        if value is _MISSING:
            return None
        out.append(value if type(value) is str else str(value))
    return "".join(out)


_MISSING = object()


class PlainTemplate:
    """A template made only of literal text and ``{{ name }}`` (the common prompt shape),
    recognised without Jinja (:func:`plain_plan`): a run whose templates are all plain never
    imports Jinja (~50 ms at start-up). Rendering with a dict that holds every name joins the
    plan's pieces (:func:`_fill`); anything else (a missing name, a global, keyword arguments)
    takes Jinja's own path, compiled on first need, so errors and semantics stay Jinja's."""

    __slots__ = ("_jinja", "_plan", "source")

    def __init__(self, source: str, plan: Plan) -> None:
        self.source = source
        self._plan = plan
        self._jinja: jinja2.Template | None = None

    def render(self, *args: Any, **kwargs: Any) -> str:
        if not kwargs and len(args) == 1 and type(args[0]) is dict:
            text = _fill(self._plan, args[0])
            if text is not None:
                return text
        if self._jinja is None:
            self._jinja = environment().from_string(self.source)
        return self._jinja.render(*args, **kwargs)


# One piece of a plain template: text holding no `{{`, `{%`, `{#` (nor a carriage return,
# which Jinja normalises), or `{{ name }}` without whitespace control. Names Jinja reads as
# constants or operators are not names.
_PIECE = re.compile(r"((?:[^{\r]|\{(?![{%#]))+)|\{\{[ \t\n]*([A-Za-z_][A-Za-z0-9_]*)[ \t\n]*\}\}")
_NOT_NAMES = frozenset(
    {"true", "false", "none", "True", "False", "None", "and", "or", "not", "in", "is", "if"}
    | {"else"}
)


def plain_plan(text: str) -> Plan | None:
    """The plan of a template made only of text and ``{{ name }}``, read without Jinja (the
    same plan Jinja's parse gives, :func:`_plan_of`); None for anything else."""
    plan: list[tuple[bool, str]] = []
    end = 0
    for match in _PIECE.finditer(text):
        if match.start() != end:
            return None
        end = match.end()
        data, name = match.groups()
        if name is None:
            plan.append((False, data))
        elif name in _NOT_NAMES:
            return None
        else:
            plan.append((True, name))
    return tuple(plan) if end == len(text) else None


def is_sandbox_violation(exc: BaseException) -> bool:
    """Whether ``exc`` is Jinja's SecurityError (without importing Jinja when no template
    of Jinja's has run)."""
    if "jinja2" not in sys.modules:
        return False
    from jinja2.exceptions import SecurityError

    return isinstance(exc, SecurityError)


def is_undefined(exc: BaseException) -> bool:
    """Whether ``exc`` is Jinja's UndefinedError (see :func:`is_sandbox_violation`)."""
    if "jinja2" not in sys.modules:
        return False
    from jinja2.exceptions import UndefinedError

    return isinstance(exc, UndefinedError)


def _plan_of(source: str) -> tuple[tuple[bool, str], ...] | None:
    """Literal pieces and names of a template made only of text and ``{{ name }}``."""
    from jinja2 import nodes

    plan: list[tuple[bool, str]] = []
    for node in environment().parse(source).body:
        if not isinstance(node, nodes.Output):
            return None
        for child in node.nodes:
            if isinstance(child, nodes.TemplateData):
                plan.append((False, child.data))
            elif isinstance(child, nodes.Name) and child.ctx == "load":
                plan.append((True, child.name))
            else:
                return None
    return tuple(plan)


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The one template environment: sandboxed, immutable, StrictUndefined."""
    import jinja2.sandbox

    class Template(jinja2.Template):
        """A Jinja2 template that renders plain substitutions without Jinja's runtime: a
        template Jinja parses to only text and ``{{ name }}`` keeps its plan (:func:`_fill`)."""

        _plan: Plan | None = None

        def render(self, *args: Any, **kwargs: Any) -> str:
            plan = self._plan
            if plan is not None and not kwargs and len(args) == 1 and type(args[0]) is dict:
                text = _fill(plan, args[0])
                if text is not None:
                    return text
            return super().render(*args, **kwargs)

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        undefined=jinja2.StrictUndefined,
        finalize=_defined,
        autoescape=False,
        keep_trailing_newline=True,
        auto_reload=False,
    )
    env.template_class = Template
    return env


def _defined(value: Any) -> Any:
    """What ``{{ ... }}`` prints, checked: a list or mapping that holds an undefined value
    (``{{ xs | map(attribute="nmae") | list }}``, or an unsafe ``__class__``) raises that
    value's own error, as a bare undefined value does; Jinja printed it as ``[Undefined]``.
    Anything else passes unchanged (case data never holds an undefined value, so the fast
    path of :class:`Template` stays equal to this)."""
    if not isinstance(value, (list, tuple, dict)):
        return value
    import jinja2

    stack: list[Any] = [value]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if isinstance(item, jinja2.Undefined):
            str(item)  # StrictUndefined: raises UndefinedError, or the sandbox's SecurityError
        elif isinstance(item, (list, tuple, dict)) and id(item) not in seen:
            seen.add(id(item))
            stack.extend(item.values() if isinstance(item, dict) else item)
    return value


def compile_template(
    text: str, *, file: str, where: str, env: jinja2.Environment | None = None
) -> CompiledTemplate:
    """``text`` compiled in :func:`environment` (or ``env``, an overlay of it: a regex
    pattern's escapes every value); syntax errors and sandbox violations are ConfigErrors.
    A plain template (:func:`plain_plan`) is a :class:`PlainTemplate`, compiled by Jinja only
    if a render needs Jinja."""
    plan = plain_plan(text) if env is None else None  # an overlay's finalize needs Jinja
    if plan is not None:
        return PlainTemplate(text, plan)
    import jinja2

    try:
        template = (env or environment()).from_string(text)
    except jinja2.TemplateSyntaxError as exc:
        raise ConfigError(
            f"template syntax error: {exc.message} (line {exc.lineno} of the template)",
            file=file,
            where=where,
            fix="fix the Jinja2 syntax: {{ variable }}, {% if %}...{% endif %}",
        ) from None
    unsafe = _unsafe_access(environment().parse(text))
    if unsafe is not None:
        name, line = unsafe
        raise sandbox_error(f"access to '{name}'", line, file=file, where=where)
    if env is None:  # an overlay's finalize needs Jinja
        template._plan = _plan_of(text)  # type: ignore[attr-defined]  # environment()'s class
    return template


SANDBOX_FIX = (
    "templates render in a sandbox: use the case's vars and Jinja's filters; names starting "
    "with '_' and Python internals are not reachable (docs/security.md)"
)


def sandbox_error(what: str, line: int | None, *, file: str, where: str) -> ConfigError:
    """The ConfigError for a template that tried to leave the sandbox."""
    at = f" (line {line} of the template)" if line else ""
    return ConfigError(
        f"template sandbox violation: {what} is not allowed{at}",
        file=file,
        where=where,
        fix=SANDBOX_FIX,
    )


def _unsafe_access(tree: Any) -> tuple[str, int] | None:
    """The first attribute the sandbox refuses that a template names literally, and its line:
    ``x.__class__``, ``x['__globals__']``, ``x|attr('_y')``."""
    from jinja2 import nodes

    for node in tree.find_all((nodes.Getattr, nodes.Getitem, nodes.Filter)):
        name = None
        if isinstance(node, nodes.Getattr):
            name = node.attr
        elif isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const):
            name = node.arg.value
        elif isinstance(node, nodes.Filter) and node.name == "attr" and node.args:
            arg = node.args[0]
            name = arg.value if isinstance(arg, nodes.Const) else None
        if isinstance(name, str) and name.startswith("_"):
            return name, node.lineno
    return None


@dataclass(frozen=True)
class _PartTemplate:
    data: dict[str, Any]  # the part without its text (or its file's source)
    template: CompiledTemplate | None
    static: str | None
    binary: bool = False  # image, file, audio, video: renders to a file reference


class CompiledVariant:
    """A variant ready to render many cases quickly (templates parsed once)."""

    def __init__(self, variant: Variant) -> None:
        self.variant = variant
        self._messages: list[tuple[str, list[_PartTemplate]]] = []
        for i, message in enumerate(variant.messages):
            parts = []
            for j, part in enumerate(message.content):
                data = part.to_dict()
                binary = part.type in KINDS
                text = data.pop("source" if binary else "text", None)
                if binary and text is None:
                    text = data.pop("path", None)  # the explicit form: {type: image, path: ...}
                if text is not None and ("{" in text):
                    where = f"{variant.where}.messages[{i}].content[{j}]"
                    tpl = compile_template(text, file=variant.source, where=where)
                    parts.append(_PartTemplate(data, tpl, None, binary))
                else:
                    parts.append(_PartTemplate(data, None, text, binary))
            self._messages.append((message.role, parts))

    def render(self, case: Case) -> Rendered:
        context = context_for(case)
        out: Rendered = []
        for i, (role, parts) in enumerate(self._messages):
            content = []
            for j, part in enumerate(parts):
                item = dict(part.data)
                value = part.static
                if part.template is not None:
                    try:
                        value = part.template.render(context)
                    except Exception as exc:
                        raise self._failed(exc, case, i, j, part.binary) from None
                if part.binary and value is not None:
                    templated = part.template is not None
                    item = self._binary(item, value.strip(), case, i, j, templated)
                elif value is not None:
                    item["text"] = value
                content.append(item)
            out.append({"role": role, "content": content})
        return out

    def _failed(self, exc: Exception, case: Case, i: int, j: int, binary: bool) -> ConfigError:
        """A part's template failing for a case: a sandbox violation, an undefined name, or a
        filter or method failing on this case's data."""
        where = f"{self.variant.where}.messages[{i}].content[{j}]"
        if is_sandbox_violation(exc):
            return sandbox_error(
                f"{exc} (case '{case.id}')",
                _template_line(exc),
                file=self.variant.source,
                where=where,
            )
        if is_undefined(exc):
            return _undefined(exc, self.variant, case, i, j, binary)
        return ConfigError(
            f"template failed for case '{case.id}': {type(exc).__name__}: {exc}",
            file=self.variant.source,
            where=where,
            fix=f"check the template against the case's vars ({case.source})",
        )

    def _binary(
        self, item: dict[str, Any], value: str, case: Case, i: int, j: int, templated: bool
    ) -> dict[str, Any]:
        """The rendered part of a file: its hash and type (a URL stays a URL). A template
        must name a case file (or a URL): a path computed from case data could reach any
        file, so only a prompt's literal paths are read as paths."""
        kind = item["type"]
        where = f"{self.variant.where}.messages[{i}].content[{j}]"
        if is_url(value):
            return {**item, "url": value}
        if value.startswith(REF_PREFIX):
            name = value[len(REF_PREFIX) :]
            found = case.files.get(name)
            if found is None:
                raise ConfigError(
                    f"case '{case.id}' has no file '{name}'",
                    file=self.variant.source,
                    where=where,
                    fix=f"add it to the case's files ({case.source}); the case has: "
                    f"{', '.join(sorted(case.files)) or 'no files'}",
                )
        elif templated or not value:
            shown = f"'{value[:80]}'" if value else "nothing"
            raise ConfigError(
                f"the {kind} part rendered {shown} for case '{case.id}', not a file of the case",
                file=self.variant.source,
                where=where,
                fix='a template names a file of the case: - image: "{{ files.photo }}" (give '
                "the case files:, a file:// column or a dir: source); a literal path next to "
                "the config needs no braces",
            )
        else:  # a path of the prompt's own, relative to the config's folder
            root = self.variant.root or Path.cwd()
            found = load(
                (root / value).resolve(), Path(value).name, file=self.variant.source, where=where
            )
        stated = item.get("media_type")
        if stated and found.media_type == "application/octet-stream":
            found = replace(found, media_type=str(stated))  # the content did not tell
        if found.kind != kind:
            use = found.kind
            raise ConfigError(
                f"the {kind} part of case '{case.id}' names {found.path.name}, which is "
                f"{found.media_type} (from its content), not a{'n' if kind[0] in 'aeiou' else ''} "
                f"{kind}",
                file=self.variant.source,
                where=where,
                fix=f"use a `- {use}:` part for it, or attach the right file",
            )
        return found.part(kind)


def _template_line(exc: BaseException) -> int | None:
    """The template line a rendering error was raised at (from the traceback)."""
    tb = exc.__traceback__
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def context_for(case: Case) -> dict[str, Any]:
    context = {
        **case.vars,
        "vars": case.vars,
        "case": {"id": case.id, "metadata": case.metadata},
    }
    if case.files:  # references, never the bytes: a binary part resolves them
        context["files"] = {name: f"{REF_PREFIX}{name}" for name in case.files}
    return context


def _undefined(
    exc: Exception, variant: Variant, case: Case, i: int, j: int, binary: bool = False
) -> ConfigError:
    if binary:  # a file part: name the case's files, not its vars
        files = ", ".join(sorted(case.files)) or "(none)"
        return ConfigError(
            f"case '{case.id}' has no such file: {exc}",
            file=variant.source,
            where=f"{variant.where}.messages[{i}].content[{j}]",
            fix=f"name one of the case's files ({case.source}): {files}",
        )
    available = ", ".join(sorted(case.vars)) or "(none)"
    return ConfigError(
        f"undefined template variable for case '{case.id}': {exc}",
        file=variant.source,
        where=f"{variant.where}.messages[{i}].content[{j}]",
        fix=f"fix the spelling or add the variable to the case's vars ({case.source}); "
        f"available: {available}",
    )


def messages_from_config(raw: Sequence[dict[str, Any]]) -> tuple[Message, ...]:
    """Typed messages from config data: a string, or a list of parts, each either explicit
    (``{type: image, path: ...}``) or short (``{text: ...}``, ``{image: "{{ files.x }}"}``)."""
    from evalwh.config.model import Part

    messages = []
    for m in raw:
        content = m["content"]
        if isinstance(content, str):
            parts: tuple[Part, ...] = (Part(type="text", text=content),)
        else:
            parts = tuple(_part(p) for p in content)
        messages.append(Message(role=m["role"], content=parts))
    return tuple(messages)


def _part(raw: dict[str, Any]) -> Part:
    from evalwh.config.model import Part

    if "type" in raw:
        return Part(**raw)
    (kind, value), *_ = raw.items()  # the schema allows exactly one key
    if kind == "text":
        return Part(type="text", text=str(value))
    return Part(type=kind, source=str(value))
