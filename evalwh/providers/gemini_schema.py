"""A JSON Schema as the Gemini API's ``responseSchema``: the API's ``Schema`` object (a subset
of OpenAPI 3.0, https://ai.google.dev/api/caching#Schema), not JSON Schema itself.

The google provider asks for JSON by schema natively with ``generationConfig.responseMimeType:
application/json`` and ``generationConfig.responseSchema``. The API refuses a field its
``Schema`` does not have (``additionalProperties``, ``$ref``, ``const`` ...) with HTTP 400,
and its ``type`` is one of the enum names ``STRING``, ``NUMBER``, ``INTEGER``, ``BOOLEAN``,
``ARRAY``, ``OBJECT``, ``NULL``; so the schema is translated:

- ``type`` upper-cased; a list of types with ``"null"`` in it becomes the other type with
  ``nullable: true``, several other types an ``anyOf`` with one schema per type;
- ``properties``, ``items`` and ``anyOf`` (``oneOf`` too, sent as ``anyOf``) translated in
  turn, ``propertyOrdering`` set to the order the properties are written in (unless given);
  a local ``$ref`` (``#/$defs/NAME``, ``#/definitions/NAME``) is replaced by what it names;
- ``const`` becomes a one-value ``enum``; an ``enum`` is sent when all its values are strings;
- the fields the API's ``Schema`` has are sent as they are; every other keyword is left out.

What is left out still counts: the ``json-schema`` criterion checks each answer against the
whole schema, so an answer that only the looser request allowed fails there. A schema that
cannot be translated (a ``$ref`` to nowhere, a recursive one, an unknown type) is a
ConfigError at validation, naming the variant.
"""

from __future__ import annotations

from typing import Any

from evalwh.errors import ConfigError

# The fields of the API's Schema that take the JSON value as it is.
KEPT = (
    "format",
    "title",
    "description",
    "nullable",
    "required",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "default",
    "example",
    "propertyOrdering",
)
TYPES = ("string", "number", "integer", "boolean", "array", "object", "null")
MAX_DEPTH = 32  # nesting (and $ref expansion) deeper than this is refused, not followed


class _Refused(Exception):
    """Why a schema cannot be sent (turned into a ConfigError with its place)."""


def response_schema(
    schema: dict[str, Any], *, file: str | None = None, where: str | None = None
) -> dict[str, Any]:
    """``schema`` (a JSON Schema object) as the Gemini API's ``Schema``."""
    try:
        return _translate(schema, schema, 0)
    except _Refused as exc:
        raise ConfigError(
            f"the output schema cannot be sent as Gemini's responseSchema: {exc}",
            file=file,
            where=where,
            fix="simplify the schema, or ask for it by prompt (mode: prompted)",
        ) from None


def _translate(node: Any, root: dict[str, Any], depth: int) -> dict[str, Any]:
    if depth > MAX_DEPTH:
        raise _Refused(f"it nests deeper than {MAX_DEPTH} levels (or a $ref is recursive)")
    if not isinstance(node, dict):
        return {}  # `true`: any value, nothing the API can state
    if isinstance(node.get("$ref"), str):
        return _translate(_resolve(node["$ref"], root), root, depth + 1)
    kind = node.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        nullable = {"nullable": True} if len(kinds) < len(kind) else {}
        if len(kinds) > 1:
            rest = {k: v for k, v in node.items() if k != "type"}
            each = [_translate({**rest, "type": k}, root, depth + 1) for k in kinds]
            return {"anyOf": each, **nullable}
        return {
            **_translate({**node, "type": kinds[0] if kinds else "null"}, root, depth + 1),
            **nullable,
        }
    out: dict[str, Any] = {k: node[k] for k in KEPT if k in node}
    if kind is not None:
        if kind not in TYPES:
            raise _Refused(f"type {kind!r} is not a JSON Schema type")
        out["type"] = kind.upper()
    if isinstance(node.get("properties"), dict):
        properties = node["properties"]
        out["properties"] = {k: _translate(v, root, depth + 1) for k, v in properties.items()}
        out.setdefault("propertyOrdering", list(properties))
    if "items" in node:
        out["items"] = _translate(node["items"], root, depth + 1)
    either = node.get("anyOf", node.get("oneOf"))
    if isinstance(either, list):
        out["anyOf"] = [_translate(sub, root, depth + 1) for sub in either]
    values = [node["const"]] if "const" in node else node.get("enum")
    if isinstance(values, list) and values and all(isinstance(v, str) for v in values):
        out["enum"] = values
        out.setdefault("type", "STRING")
    return out


def _resolve(ref: str, root: dict[str, Any]) -> Any:
    for table in ("$defs", "definitions"):
        prefix = f"#/{table}/"
        defs = root.get(table)
        if ref.startswith(prefix) and isinstance(defs, dict) and ref[len(prefix) :] in defs:
            return defs[ref[len(prefix) :]]
    raise _Refused(f"its $ref {ref!r} names nothing under $defs or definitions")
