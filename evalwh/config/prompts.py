"""Prompt templating: Jinja2 with StrictUndefined over ordered, typed message parts.

Every template evalwh renders (prompts, mock replies, judge prompts) comes from the one
:func:`environment`: Jinja2's ``ImmutableSandboxedEnvironment`` with ``StrictUndefined``. A
template cannot reach Python internals (``{{ cycler.__init__.__globals__.os }}``) or mutate
the data it is given; an attempt is a ConfigError (exit 2) naming the file, the place and
the line in the template, found when the template is compiled (validate, dry run, run, MCP
``render_prompt``), or, for an attribute name computed from data, when it renders.

A variant's messages are compiled once; rendering a case gives JSON-ready messages::

    [{"role": "user", "content": [{"type": "text", "text": "..."}]}]

Template context: every case var at top level, ``vars`` (the same mapping) and
``case`` (``case.id``, ``case.metadata``). The expected answer is deliberately not in the
context, so a prompt cannot leak it by accident; put it in ``vars`` when a prompt needs it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
import jinja2.meta
import jinja2.sandbox
from jinja2.exceptions import SecurityError

from evalwh.config.model import Case, Message, Variant
from evalwh.errors import ConfigError

Rendered = list[dict[str, Any]]


class Template(jinja2.Template):
    """A Jinja2 template that renders plain substitutions without Jinja's runtime.

    A template made only of literal text and ``{{ name }}`` expressions (the common prompt
    shape) keeps a *plan*: literal pieces and variable names. Rendering it with a dict that
    holds every name joins the pieces, each value through ``str()``, which is exactly what
    Jinja's compiled code yields for such a template (no autoescape, no finalize). Anything
    else (a missing name, a global, keyword arguments, a template with filters, tags or
    attribute access) takes Jinja's own path, so errors and semantics stay Jinja's.
    """

    _plan: tuple[tuple[bool, str], ...] | None = None

    def render(self, *args: Any, **kwargs: Any) -> str:
        plan = self._plan
        if plan is not None and not kwargs and len(args) == 1 and type(args[0]) is dict:
            context = args[0]
            out = []
            for is_name, text in plan:
                if not is_name:
                    out.append(text)
                    continue
                value = context.get(text, _MISSING)
                if value is _MISSING:
                    break  # a global or an undefined name: Jinja decides
                out.append(value if type(value) is str else str(value))
            else:
                return "".join(out)
        return super().render(*args, **kwargs)


_MISSING = object()


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
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        auto_reload=False,
    )
    env.template_class = Template
    return env


def compile_template(text: str, *, file: str, where: str) -> jinja2.Template:
    try:
        template = environment().from_string(text)
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
    if isinstance(template, Template):
        template._plan = _plan_of(text)
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


def template_variables(text: str) -> set[str]:
    """Top-level names a template reads (for cheap checks before rendering)."""
    return set(jinja2.meta.find_undeclared_variables(environment().parse(text)))


@dataclass(frozen=True)
class _PartTemplate:
    data: dict[str, Any]  # the part without its text
    template: jinja2.Template | None
    static: str | None


class CompiledVariant:
    """A variant ready to render many cases quickly (templates parsed once)."""

    def __init__(self, variant: Variant) -> None:
        self.variant = variant
        self._digest: str | None = None
        self._messages: list[tuple[str, list[_PartTemplate]]] = []
        for i, message in enumerate(variant.messages):
            parts = []
            for j, part in enumerate(message.content):
                data = part.to_dict()
                text = data.pop("text", None)
                if text is not None and ("{" in text):
                    where = f"{variant.where}.messages[{i}].content[{j}]"
                    tpl = compile_template(text, file=variant.source, where=where)
                    parts.append(_PartTemplate(data, tpl, None))
                else:
                    parts.append(_PartTemplate(data, None, text))
            self._messages.append((message.role, parts))

    def attachment_digest(self, root: Path) -> str:
        """One hash over the contents of every file part (image, audio ...) of this variant,
        and its output schema when it asks for JSON by schema.

        Files are read once per variant; a missing file is a validation error.
        """
        if self._digest is None:
            h = hashlib.sha256()
            for i, message in enumerate(self.variant.messages):
                for j, part in enumerate(message.content):
                    if part.path is None:
                        continue
                    path = (root / part.path).resolve()
                    try:
                        h.update(path.read_bytes())
                    except OSError as exc:
                        raise ConfigError(
                            f"cannot read the attached file {path}: {exc.strerror}",
                            file=self.variant.source,
                            where=f"{self.variant.where}.messages[{i}].content[{j}].path",
                            fix="check the path; it is relative to the config file's folder",
                        ) from None
                    h.update(b"\x00")
            if self.variant.output is not None:  # JSON by schema: part of the request
                h.update(b"output\x00" + self.variant.output.digest_text().encode())
            self._digest = h.hexdigest() if h.digest() != hashlib.sha256().digest() else ""
        return self._digest

    def render(self, case: Case) -> Rendered:
        context = context_for(case)
        out: Rendered = []
        for i, (role, parts) in enumerate(self._messages):
            content = []
            for j, part in enumerate(parts):
                item = dict(part.data)
                if part.template is not None:
                    try:
                        item["text"] = part.template.render(context)
                    except SecurityError as exc:
                        raise sandbox_error(
                            f"{exc} (case '{case.id}')",
                            _template_line(exc),
                            file=self.variant.source,
                            where=f"{self.variant.where}.messages[{i}].content[{j}]",
                        ) from None
                    except jinja2.UndefinedError as exc:
                        raise _undefined(exc, self.variant, case, i, j) from None
                    except Exception as exc:  # a filter or method failing on this case's data
                        raise ConfigError(
                            f"template failed for case '{case.id}': {type(exc).__name__}: {exc}",
                            file=self.variant.source,
                            where=f"{self.variant.where}.messages[{i}].content[{j}]",
                            fix=f"check the template against the case's vars ({case.source})",
                        ) from None
                elif part.static is not None:
                    item["text"] = part.static
                content.append(item)
            out.append({"role": role, "content": content})
        return out


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
    return {**case.vars, "vars": case.vars, "case": {"id": case.id, "metadata": case.metadata}}


def _undefined(exc: Exception, variant: Variant, case: Case, i: int, j: int) -> ConfigError:
    available = ", ".join(sorted(case.vars)) or "(none)"
    return ConfigError(
        f"undefined template variable for case '{case.id}': {exc}",
        file=variant.source,
        where=f"{variant.where}.messages[{i}].content[{j}]",
        fix=f"fix the spelling or add the variable to the case's vars ({case.source}); "
        f"available: {available}",
    )


def render_all(variants: Sequence[Variant], cases: Sequence[Case]) -> int:
    """Render every variant for every case (validation); return how many prompts rendered."""
    compiled = [CompiledVariant(v) for v in variants]
    for cv in compiled:
        for case in cases:
            cv.render(case)
    return len(compiled) * len(cases)


def messages_from_config(raw: Sequence[dict[str, Any]]) -> tuple[Message, ...]:
    from evalwh.config.model import Part

    messages = []
    for m in raw:
        content = m["content"]
        if isinstance(content, str):
            parts: tuple[Part, ...] = (Part(type="text", text=content),)
        else:
            parts = tuple(Part(**p) for p in content)
        messages.append(Message(role=m["role"], content=parts))
    return tuple(messages)
