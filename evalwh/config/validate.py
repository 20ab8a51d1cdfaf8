"""JSON Schema validation of eval.yaml with errors that name the line, the key and the fix."""

from __future__ import annotations

import difflib
import json
import re
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

from evalwh.config.verdicts import digest, known_valid, remember_valid
from evalwh.config.yamlpos import format_path, key_location, locate
from evalwh.errors import ConfigError

SCHEMA_DOC = "docs/configuration.md"
UNKNOWN_KEY_VALIDATORS = ("additionalProperties", "unevaluatedProperties")


@lru_cache(maxsize=1)
def _schema_text() -> str:
    return resources.files("evalwh.config").joinpath("eval.schema.json").read_text("utf-8")


@lru_cache(maxsize=1)
def eval_schema() -> dict[str, Any]:
    """The JSON Schema of eval.yaml shipped inside the package."""
    schema: dict[str, Any] = json.loads(_schema_text())
    return schema


@lru_cache(maxsize=4)
def _validator(definition: str | None) -> Any:
    from jsonschema import Draft202012Validator

    schema = eval_schema()
    if definition:
        schema = {"$ref": f"#/$defs/{definition}", "$defs": schema["$defs"]}
    return Draft202012Validator(schema)


def validate_document(
    data: Any, node: yaml.Node | None, file: str, *, definition: str | None = None
) -> None:
    """Raise ConfigError for the most relevant schema violation in ``data``, if any (a
    document this schema already passed, in any process, is known valid: config/verdicts.py)."""
    key = digest(_schema_text(), definition, data)
    if key is not None and known_valid(key):
        return
    from jsonschema.exceptions import best_match

    validator = _validator(definition)
    errors = list(validator.iter_errors(data))
    error = best_match(errors)
    if error is not None and error.validator in UNKNOWN_KEY_VALIDATORS:
        # a known key whose value failed a conditional block (`request: bogus`, or both
        # `schema` and `schema_file`, under a json-schema criterion) is "unevaluated" too:
        # the block's own error, at that place or below it, says what is wrong
        unexpected, allowed = _unexpected_keys(error)
        if unexpected and set(unexpected) <= set(allowed):
            path = list(error.absolute_path)
            own = [
                e
                for e in errors
                if list(e.absolute_path)[: len(path)] == path
                and e.validator not in UNKNOWN_KEY_VALIDATORS
            ]
            error = best_match(own) or error
    if error is None:
        if key is not None:
            remember_valid(key)
        return
    raise _to_config_error(error, node, file)


def _unexpected_keys(error: Any) -> tuple[list[str], list[str]]:
    """The keys an unknown-key error names, and the keys allowed where it stands."""
    # the keys as jsonschema quotes them: 'key', or "key's" when it holds an apostrophe
    quoted = re.findall(r"'([^']+)'|\"([^\"]+)\"", error.message)
    return [single or double for single, double in quoted], _allowed_keys(error)


def _allowed_keys(error: Any) -> list[str]:
    schema = error.schema if isinstance(error.schema, dict) else {}
    keys = list(schema.get("properties", {}))
    for block in schema.get("allOf", []):
        cond, then = block.get("if"), block.get("then", {})
        if cond is not None and _validator_for(cond).is_valid(error.instance):
            keys += list(then.get("properties", {}))
    for name in ("then", "else"):
        keys += list(schema.get(name, {}).get("properties", {}))
    return sorted({k for k in keys})


def _validator_for(schema: dict[str, Any]) -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema)


def _to_config_error(error: Any, node: yaml.Node | None, file: str) -> ConfigError:
    path = list(error.absolute_path)
    where = format_path(path)
    line, column = locate(node, path)
    if error.validator in UNKNOWN_KEY_VALIDATORS:
        unexpected, allowed = _unexpected_keys(error)
        extra = [k for k in unexpected if k not in allowed] or unexpected
        key = extra[0] if extra else "?"
        line, column = key_location(node, path, key)
        close = difflib.get_close_matches(key, allowed, n=1)
        fix = f"did you mean '{close[0]}'? " if close else ""
        fix += f"allowed keys here: {', '.join(allowed)}" if allowed else "remove it"
        return ConfigError(
            f"unknown key '{key}'", file=file, where=where, line=line, column=column, fix=fix
        )
    if error.validator == "required":
        missing = re.findall(r"'([^']+)'", error.message)
        return ConfigError(
            f"missing required key '{missing[0] if missing else error.message}'",
            file=file,
            where=where,
            line=line,
            column=column,
            fix=f"add it (see {SCHEMA_DOC})",
        )
    if error.validator == "oneOf" and isinstance(error.schema, dict):
        options = [s.get("required") for s in error.schema.get("oneOf", []) if "required" in s]
        if options and all(len(o) == 1 for o in options):
            names = " or ".join(f"'{o[0]}'" for o in options)
            return ConfigError(
                f"needs exactly one of {names}",
                file=file,
                where=where,
                line=line,
                column=column,
                fix=f"give either {names}, not both and not neither",
            )
    if error.validator == "enum":
        choices = ", ".join(json.dumps(c) for c in error.validator_value)
        close = difflib.get_close_matches(
            str(error.instance), [str(c) for c in error.validator_value], n=1
        )
        hint = f"did you mean '{close[0]}'? " if close else ""
        return ConfigError(
            f"{json.dumps(error.instance)} is not allowed",
            file=file,
            where=where,
            line=line,
            column=column,
            fix=f"{hint}use one of: {choices}",
        )
    if error.validator == "type":
        expected = error.validator_value
        return ConfigError(
            f"expected {expected if isinstance(expected, str) else ' or '.join(expected)}, "
            f"got {_kind(error.instance)}",
            file=file,
            where=where,
            line=line,
            column=column,
            fix=f"change the value's type (see {SCHEMA_DOC})",
        )
    return ConfigError(
        error.message, file=file, where=where, line=line, column=column, fix=f"see {SCHEMA_DOC}"
    )


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )
