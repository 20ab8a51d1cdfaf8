"""Tools a model may call, and the bounds of a cell's model-tool loop (docs/tools.md).

::

    tools:
      - name: get_weather
        description: The current weather in a city.
        parameters: {type: object, properties: {city: {type: string}}, required: [city]}
        mock:                                   # or python: module:function, or command: [...]
          - when: {args: {city: Paris}}
            result: {temp_c: 18}
          - error: unknown city
    variants:
      - id: agent
        messages: [...]
        tools: [get_weather]
        tool_choice: auto                       # auto | required | none | {name: get_weather}
        loop: {max_turns: 4, max_tool_calls: 6}

A variant that names tools turns each of its cells into a loop (evalwh.engine.toolloop):
the model answers, its tool calls run, their results go back, until a final answer or a
bound. The tools' definitions are part of every request's hash.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalwh.config.childmemory import DEFAULT_MEMORY_MB
from evalwh.errors import ConfigError

if TYPE_CHECKING:
    from evalwh.config.model import Variant

DEFAULT_TOOL_TIMEOUT_S = 30.0
CHOICES = ("auto", "required", "none")


@dataclass(frozen=True)
class ToolSpec:
    """One tool: what the model is told (name, description, parameters) and how it runs
    (``kind`` mock / python / command, ``impl`` its rules, target or argv)."""

    name: str
    description: str
    parameters: dict[str, Any]
    kind: str
    impl: Any
    timeout_s: float = DEFAULT_TOOL_TIMEOUT_S
    memory_mb: int = DEFAULT_MEMORY_MB  # python and command tools (evalwh.config.childmemory)
    pass_env: tuple[str, ...] = ()
    max_output_bytes: int | None = None
    where: str = ""
    root: Path | None = None

    def definition(self) -> dict[str, Any]:
        """What a provider sends of it: name, description, parameters."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


@dataclass(frozen=True)
class LoopLimits:
    """Bounds of one cell's loop; ``None``: not bounded that way."""

    max_turns: int = 8
    max_tool_calls: int = 16
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    deadline_s: float | None = None


@dataclass(frozen=True)
class ToolUse:
    """What a variant offers: its tools, the tool choice, the loop's bounds."""

    tools: tuple[ToolSpec, ...]
    choice: Any = "auto"  # "auto" | "required" | "none" | {"name": ...}
    limits: LoopLimits = field(default_factory=LoopLimits)

    def digest_text(self) -> str:
        """What the request hash covers: every definition and the tool choice (not the
        implementations: a result changes the transcript, which is hashed anyway)."""
        return json.dumps(
            {"tools": [t.definition() for t in self.tools], "choice": self.choice},
            sort_keys=True,
            separators=(",", ":"),
        )

    def by_name(self) -> dict[str, ToolSpec]:
        return {t.name: t for t in self.tools}


def parse_tools(data: dict[str, Any], file: str, root: Path) -> dict[str, ToolSpec]:
    """The top-level ``tools:`` by name; each ``parameters`` must be a valid JSON Schema
    (jsonschema, ~50 ms to import, only when there are tools)."""
    out: dict[str, ToolSpec] = {}
    if not data.get("tools"):
        return out
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    for i, raw in enumerate(data.get("tools") or []):
        where = f"tools[{i}]"
        name = raw["name"]
        if name in out:
            raise ConfigError(
                f"duplicate tool name '{name}'",
                file=file,
                where=f"{where}.name",
                fix="give every tool a unique name",
            )
        try:
            Draft202012Validator.check_schema(raw["parameters"])
        except SchemaError as exc:
            raise ConfigError(
                f"tool '{name}': parameters is not a valid JSON Schema: {exc.message}",
                file=file,
                where=f"{where}.parameters",
                fix="write a JSON Schema, e.g. {type: object, properties: {q: {type: string}}}",
            ) from None
        if raw["parameters"].get("type", "object") != "object":
            raise ConfigError(
                f"tool '{name}': parameters must describe an object (the call's arguments)",
                file=file,
                where=f"{where}.parameters.type",
                fix="use type: object with the arguments as properties",
            )
        kind = next(k for k in ("mock", "python", "command") if k in raw)
        out[name] = ToolSpec(
            name=name,
            description=str(raw.get("description") or ""),
            parameters=raw["parameters"],
            kind=kind,
            impl=raw[kind],
            timeout_s=float(raw.get("timeout_s", DEFAULT_TOOL_TIMEOUT_S)),
            memory_mb=int(raw.get("memory_mb", DEFAULT_MEMORY_MB)),
            pass_env=tuple(raw.get("pass_env") or ()),
            max_output_bytes=raw.get("max_output_bytes"),
            where=where,
            root=root,
        )
    return out


def attach_tools(data: dict[str, Any], variants: list[Variant], path: Path) -> list[Variant]:
    """Variants with their :class:`ToolUse` when they name tools (unknown names refused)."""
    file = str(path)
    tools = parse_tools(data, file, path.parent)
    out = []
    for i, (raw, variant) in enumerate(zip(data["variants"], variants, strict=True)):
        names = raw.get("tools")
        where = f"variants[{i}]"
        if not names:
            for key in ("tool_choice", "loop"):
                if key in raw:
                    raise ConfigError(
                        f"`{key}` without `tools`",
                        file=file,
                        where=f"{where}.{key}",
                        fix="name the tools this variant offers with tools: [...]",
                    )
            out.append(variant)
            continue
        chosen = []
        for j, name in enumerate(names):
            if name not in tools:
                raise ConfigError(
                    f"unknown tool '{name}'",
                    file=file,
                    where=f"{where}.tools[{j}]",
                    fix=f"define it under `tools:` (known: {', '.join(sorted(tools)) or 'none'})",
                )
            chosen.append(tools[name])
        choice = raw.get("tool_choice", "auto")
        if isinstance(choice, dict) and choice["name"] not in names:
            raise ConfigError(
                f"tool_choice names '{choice['name']}', which this variant does not offer",
                file=file,
                where=f"{where}.tool_choice.name",
                fix=f"name one of: {', '.join(names)}",
            )
        if variant.output is not None and variant.output.mode != "prompted":
            raise ConfigError(
                "a variant with tools asks for JSON by schema by prompt only",
                file=file,
                where=f"{where}.output_schema",
                fix="set output_schema.mode: prompted",
            )
        limits = LoopLimits(**(raw.get("loop") or {}))
        out.append(replace(variant, tools=ToolUse(tuple(chosen), choice, limits)))
    return out
