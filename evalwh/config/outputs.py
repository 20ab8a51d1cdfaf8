"""Structured outputs: a variant (``output_schema:``) or a ``json-schema`` criterion
(``request:``) asks the model for JSON that fits a schema.

The request is either *native* (the provider's own structured-output feature: OpenAI
``response_format: {type: json_schema}``, Anthropic a forced tool call, and for a provider
that declares ``structured_output = True`` whatever it maps the schema to) or *prompted* (an
instruction with the schema is appended to the last user message). ``mode: auto`` (the
default) is native where the provider can, prompted elsewhere; ``native`` refuses a model whose
provider cannot; ``prompted`` always prompts. Which one a cell used is recorded with the
``json-schema`` criterion's score (``details.mode``), so the schema pass rate says which.

    variants:
      - id: extract
        messages: [...]
        output_schema:
          schema: {type: object, properties: {name: {type: string}}, required: [name]}
          mode: auto          # auto | native | prompted
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalwh.errors import ConfigError

if TYPE_CHECKING:
    from evalwh.config.model import Criterion, Variant

MODES = ("auto", "native", "prompted")
DEFAULT_NAME = "answer"
PROMPT = (
    "Reply with only a JSON value (no prose, no code fences) that is valid against this "
    "JSON Schema:\n{schema}"
)


@dataclass(frozen=True)
class OutputSpec:
    """The JSON a request asks for: its schema, the requested mode, a name for the provider
    (OpenAI's schema name, Anthropic's tool name) and OpenAI's ``strict``."""

    schema: dict[str, Any]
    mode: str = "auto"
    name: str = DEFAULT_NAME
    strict: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"schema": self.schema, "mode": self.mode, "name": self.name, "strict": self.strict}

    def digest_text(self) -> str:
        """What the request hash covers (the schema and the requested mode)."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    def mode_for(self, provider_class: Any) -> str:
        """``native`` or ``prompted`` for a model of this provider class."""
        native = bool(getattr(provider_class, "structured_output", False))
        return "native" if native and self.mode != "prompted" else "prompted"

    def instruction(self) -> str:
        return PROMPT.format(schema=json.dumps(self.schema, sort_keys=True))


def prompted_messages(messages: list[dict[str, Any]], spec: OutputSpec) -> list[dict[str, Any]]:
    """``messages`` with the schema instruction appended to the last user message (a new
    user message when there is none)."""
    out = [dict(m) for m in messages]
    part = {"type": "text", "text": "\n\n" + spec.instruction()}
    for message in reversed(out):
        if message["role"] == "user":
            message["content"] = [*message["content"], part]
            return out
    return [*out, {"role": "user", "content": [{"type": "text", "text": spec.instruction()}]}]


def parse_output_spec(
    raw: dict[str, Any], where: str, file: str, *, schema: Any = None
) -> OutputSpec:
    """An :class:`OutputSpec` from config input (``schema`` given when read from a file)."""
    schema = raw.get("schema") if schema is None else schema
    if not isinstance(schema, dict):
        raise ConfigError(
            f"the output schema must be a JSON Schema object, got {type(schema).__name__}",
            file=file,
            where=f"{where}.schema",
            fix="write `schema: {type: object, properties: {...}}` or give `schema_file:`",
        )
    mode = str(raw.get("mode", "auto"))
    if mode not in MODES:
        raise ConfigError(
            f"unknown mode '{mode}'",
            file=file,
            where=f"{where}.mode",
            fix=f"use one of: {', '.join(MODES)}",
        )
    return OutputSpec(
        schema=schema,
        mode=mode,
        name=str(raw.get("name") or DEFAULT_NAME),
        strict=bool(raw.get("strict", True)),
    )


def read_schema_file(name: Any, root: Path, where: str, file: str) -> Any:
    """A JSON or YAML schema file, relative to the config's folder (bounded YAML reader): the
    one reader of schema files, for a variant's ``output_schema`` and a json-schema
    criterion's ``schema_file`` alike; every refusal names ``file`` and ``where``."""
    from evalwh.boundary import readable

    path = readable(root / str(name), where)
    if not path.is_file():
        raise ConfigError(
            f"schema file not found: {path}",
            file=file,
            where=where,
            fix="check the path; it is relative to the config file's folder",
        )
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"cannot read schema file {path}: {exc}",
            file=file,
            where=where,
            fix="make the schema file a readable UTF-8 JSON or YAML file",
        ) from None
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"schema file {path} is not valid JSON: {exc.msg} "
                f"(line {exc.lineno}, column {exc.colno})",
                file=file,
                where=where,
                fix="fix the JSON syntax of the schema file",
            ) from None
    from evalwh.config.yamlpos import parse_yaml

    data, _node = parse_yaml(text, str(path))  # its errors name the schema file and line
    return data


def attach_outputs(
    data: dict[str, Any], variants: list[Variant], criteria: list[Criterion], path: Path
) -> list[Variant]:
    """Variants with their :class:`OutputSpec`: their own ``output_schema``, else the one a
    ``json-schema`` criterion asks for with ``request:`` (at most one criterion may)."""
    file, root = str(path), path.parent
    asking = [c for c in criteria if c.type == "json-schema" and c.options.get("request")]
    if len(asking) > 1:
        raise ConfigError(
            "more than one json-schema criterion has `request:`",
            file=file,
            where=asking[1].where + ".request",
            fix="ask for one schema per run (or give the variants their own output_schema)",
        )
    shared = None
    if asking:
        c = asking[0]
        schema = _given_schema(c.options, root, c.where, file)
        shared = parse_output_spec(
            {"mode": c.options["request"]}, f"{c.where}.request", file, schema=schema
        )
    out = []
    for i, (raw, variant) in enumerate(zip(data["variants"], variants, strict=True)):
        spec = shared
        own = raw.get("output_schema")
        if own is not None:
            where = f"variants[{i}].output_schema"
            spec = parse_output_spec(own, where, file, schema=_given_schema(own, root, where, file))
        out.append(replace(variant, output=spec))
    return out


def _given_schema(raw: dict[str, Any], root: Path, where: str, file: str) -> Any:
    """The schema ``schema_file:`` names, else the one written inline under ``schema:`` (the
    config schema lets a place give exactly one of them)."""
    if "schema_file" in raw:
        return read_schema_file(raw["schema_file"], root, f"{where}.schema_file", file)
    return raw.get("schema")
