"""What a tool accepts as arguments: the names and types its input schema publishes, nothing
else (an unknown argument is refused), plus the integers, numbers and booleans that MCP
clients send as strings (MCP Inspector's CLI sends ``limit=2`` as ``"2"``). A string becomes
the value only when it parses exactly: ``"2"`` is 2 and ``"true"`` is true, but ``"2.5"`` is
no integer, ``"yes"`` no boolean and ``" 2"`` neither; those are refused naming the argument.
"""

from __future__ import annotations

import re
import types
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Union, get_args, get_origin

if TYPE_CHECKING:
    from pydantic import BaseModel

INTEGER = re.compile(r"-?[0-9]+")
NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
BOOLEANS = {"true": True, "false": False}
WORDS = {bool: "a boolean (true or false)", int: "an integer", float: "a number"}


def scalar_kind(annotation: Any) -> type | None:
    """``bool``, ``int`` or ``float`` when an argument of this type may come as a string
    (``int | None`` counts as ``int``); None for every other type."""
    if get_origin(annotation) in (Union, types.UnionType):
        kinds = {scalar_kind(a) for a in get_args(annotation) if a is not type(None)}
        return kinds.pop() if len(kinds) == 1 else None
    return annotation if annotation in (bool, int, float) else None


def from_string(name: str, text: str, kind: type) -> bool | int | float:
    """The value ``text`` spells exactly, as ``kind``; ValueError naming ``name`` otherwise."""
    if kind is bool and text in BOOLEANS:
        return BOOLEANS[text]
    if kind is int and INTEGER.fullmatch(text):
        return int(text)
    if kind is float and NUMBER.fullmatch(text):
        return float(text)
    raise ValueError(f"argument {name!r} must be {WORDS[kind]}, got the string {text!r}")


def coerce_strings(arguments: Any, kinds: Mapping[str, type]) -> Any:
    """``arguments`` with each string given for a boolean, integer or number argument
    replaced by the value it spells; everything else as it came (validation follows)."""
    if not isinstance(arguments, Mapping):
        return arguments
    return {
        key: from_string(key, value, kinds[key])
        if isinstance(value, str) and key in kinds
        else value
        for key, value in arguments.items()
    }


def strict_model(base: type[BaseModel]) -> type[BaseModel]:
    """``base`` (a tool's argument model) refusing unknown arguments and coercing nothing
    but the exact strings above: validation is pydantic's strict mode after
    :func:`coerce_strings`."""
    from pydantic import ConfigDict, model_validator

    kinds = {
        field.alias or name: kind
        for name, field in base.model_fields.items()
        if (kind := scalar_kind(field.annotation)) is not None
    }

    def exact_strings(cls: type, data: Any) -> Any:
        return coerce_strings(data, kinds)

    namespace: dict[str, Any] = {
        "model_config": ConfigDict(**{**base.model_config, "extra": "forbid", "strict": True}),
        "exact_strings": model_validator(mode="before")(classmethod(exact_strings)),  # type: ignore[arg-type]
    }
    model: type[BaseModel] = type(base.__name__, (base,), namespace)
    return model
