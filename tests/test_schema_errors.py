"""How a JSON Schema violation becomes the config error a user reads (evalwh.config.validate):
each kind of violation against a small schema, with the message, place, line, column and fix
checked exactly. tests/test_config_errors.py checks the same through `evalwh run`."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from evalwh.config.validate import _to_config_error

KEYS = {"type": "object", "properties": {"id": {}, "max_concurrency": {}}}
TYPE_FIX = "change the value's type (see docs/configuration.md)"
SEE = "see docs/configuration.md"

CASES: dict[str, tuple[dict[str, Any], str, tuple[Any, ...]]] = {
    "unknown key, a close one allowed": (
        {**KEYS, "additionalProperties": False},
        "id: 1\nmax_concurency: 3\n",
        ("unknown key 'max_concurency'", "(top level)", 2, 1,
         "did you mean 'max_concurrency'? allowed keys here: id, max_concurrency"),
    ),
    "unknown key, none close": (
        {**KEYS, "additionalProperties": False},
        "id: 1\nzzz: 3\n",
        ("unknown key 'zzz'", "(top level)", 2, 1, "allowed keys here: id, max_concurrency"),
    ),
    "unknown key, no key allowed": (
        {"type": "object", "additionalProperties": False},
        "a: 1\n",
        ("unknown key 'a'", "(top level)", 1, 1, "remove it"),
    ),
    "unevaluated key that a then-branch names": (
        {
            "properties": {"type": {}},
            "if": {"properties": {"type": {"const": "x"}}},
            "then": {"properties": {"b": {}}},
            "unevaluatedProperties": False,
        },
        "type: y\nb: 1\n",
        ("unknown key 'b'", "(top level)", 2, 1, "did you mean 'b'? allowed keys here: b, type"),
    ),
    "unevaluated key beside an allOf branch that applies": (
        {
            "properties": {"type": {}},
            "allOf": [
                {"if": {"properties": {"type": {"const": "x"}}}, "then": {"properties": {"bb": {}}}}
            ],
            "unevaluatedProperties": False,
        },
        "type: x\ncc: 1\n",
        ("unknown key 'cc'", "(top level)", 2, 1, "allowed keys here: bb, type"),
    ),
    "unevaluated key beside an allOf branch that does not apply": (
        {
            "properties": {"type": {}},
            "allOf": [
                {"if": {"properties": {"type": {"const": "x"}}}, "then": {"properties": {"bb": {}}}}
            ],
            "unevaluatedProperties": False,
        },
        "type: y\ncc: 1\n",
        ("unknown key 'cc'", "(top level)", 2, 1, "allowed keys here: type"),
    ),
    "missing required key, nested": (
        {"properties": {"m": {"type": "array", "items": {"required": ["id"]}}}},
        "m:\n  - name: q\n",
        ("missing required key 'id'", "m[0]", 2, 5, "add it (see docs/configuration.md)"),
    ),
    "one of two keys, both given": (
        {"oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
        "a: 1\nb: 2\n",
        ("needs exactly one of 'a' or 'b'", "(top level)", 1, 1,
         "give either 'a' or 'b', not both and not neither"),
    ),
    "one of options that are not single keys": (
        {"oneOf": [{"required": ["a", "b"]}, {"required": ["c"]}]},
        "a: 1\nb: 2\nc: 3\n",
        ("{'a': 1, 'b': 2, 'c': 3} is valid under each of {'required': ['c']}, "
         "{'required': ['a', 'b']}", "(top level)", 1, 1, SEE),
    ),
    "one of types, the closest reported": (
        {"properties": {"v": {"oneOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]}}},
        "v: -1\n",
        ("-1 is less than the minimum of 0", "v", 1, 4, SEE),
    ),
    "enum, a close value": (
        {"properties": {"p": {"enum": ["openai", "anthropic"]}}},
        "p: opnai\n",
        ('"opnai" is not allowed', "p", 1, 4,
         "did you mean 'openai'? use one of: \"openai\", \"anthropic\""),
    ),
    "enum, none close": (
        {"properties": {"p": {"enum": ["openai", "anthropic"]}}},
        "p: zz\n",
        ('"zz" is not allowed', "p", 1, 4, 'use one of: "openai", "anthropic"'),
    ),
    "type": ({"properties": {"n": {"type": "integer"}}}, "n: x\n",
             ("expected integer, got a string", "n", 1, 4, TYPE_FIX)),
    "types": ({"properties": {"n": {"type": ["integer", "null"]}}}, "n: [1]\n",
              ("expected integer or null, got a list", "n", 1, 4, TYPE_FIX)),
    "a mapping": ({"properties": {"n": {"type": "string"}}}, "n: {a: 1}\n",
                  ("expected string, got a mapping", "n", 1, 4, TYPE_FIX)),
    "a boolean": ({"properties": {"n": {"type": "string"}}}, "n: true\n",
                  ("expected string, got a boolean", "n", 1, 4, TYPE_FIX)),
    "a float": ({"properties": {"n": {"type": "string"}}}, "n: 1.5\n",
                ("expected string, got float", "n", 1, 4, TYPE_FIX)),
    "null": ({"properties": {"n": {"type": "string"}}}, "n: null\n",
             ("expected string, got null", "n", 1, 4, TYPE_FIX)),
    "any other rule": ({"properties": {"n": {"minimum": 3}}}, "x: 0\nn: 1\n",
                       ("1 is less than the minimum of 3", "n", 2, 4, SEE)),
}  # fmt: skip


@pytest.mark.parametrize(("schema", "text", "expected"), CASES.values(), ids=list(CASES))
def test_each_violation_reads_as_a_config_error(
    schema: dict[str, Any], text: str, expected: tuple[Any, ...]
) -> None:
    error = best_match(Draft202012Validator(schema).iter_errors(yaml.safe_load(text)))
    found = _to_config_error(error, yaml.compose(text), "f.yaml")
    assert (found.message, found.where, found.line, found.column, found.fix) == expected
    assert found.file == "f.yaml"


def test_without_a_yaml_node_there_is_no_line() -> None:
    schema = {"properties": {"n": {"type": "integer"}}}
    error = best_match(Draft202012Validator(schema).iter_errors({"n": "x"}))
    found = _to_config_error(error, None, "f.yaml")
    assert (found.message, found.where, found.line, found.column) == (
        "expected integer, got a string", "n", None, None,
    )  # fmt: skip
