"""JSON Schema translated to the Gemini API's Schema (evalwh/providers/gemini_schema.py):
keyword by keyword, types lists and anyOf branch by branch, $ref resolved, and the nesting
limit and recursion refused."""

from __future__ import annotations

from typing import Any

import pytest

from evalwh.errors import ConfigError
from evalwh.providers.gemini_schema import MAX_DEPTH, response_schema


def test_response_schema_translates_json_schema_to_the_apis_schema() -> None:
    from evalwh.providers.gemini_schema import response_schema
    from tests.fakes.servers import _gemini_schema_problem

    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "name": {"type": ["string", "null"], "description": "who", "maxLength": 40},
            "age": {"type": ["integer", "string"]},
            "kind": {"const": "person"},
            "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}, "minItems": 1},
            "size": {"enum": [1, 2]},
            "where": {"oneOf": [{"type": "string"}, {"$ref": "#/definitions/point"}]},
            "nothing": {"type": "null"},
            "free": True,
        },
        "required": ["name"],
        "$defs": {"tag": {"type": "string", "enum": ["a", "b"], "not": {"const": "c"}}},
        "definitions": {"point": {"type": "object", "properties": {"x": {"type": "number"}}}},
    }
    asked = response_schema(schema)
    assert asked == {
        "type": "OBJECT",
        "required": ["name"],
        "propertyOrdering": ["name", "age", "kind", "tags", "size", "where", "nothing", "free"],
        "properties": {
            "name": {"type": "STRING", "description": "who", "maxLength": 40, "nullable": True},
            "age": {"anyOf": [{"type": "INTEGER"}, {"type": "STRING"}]},
            "kind": {"type": "STRING", "enum": ["person"]},
            "tags": {
                "type": "ARRAY",
                "minItems": 1,
                "items": {"type": "STRING", "enum": ["a", "b"]},
            },
            "size": {},  # numbers are not an enum the API takes: left to the criterion
            "where": {
                "anyOf": [
                    {"type": "STRING"},
                    {
                        "type": "OBJECT",
                        "properties": {"x": {"type": "NUMBER"}},
                        "propertyOrdering": ["x"],
                    },
                ]
            },
            "nothing": {"type": "NULL"},
            "free": {},
        },
    }
    assert _gemini_schema_problem(asked, "response_schema") is None  # the fake API takes it
    assert response_schema({"type": ["null", "string"], "propertyOrdering": ["b", "a"]}) == {
        "type": "STRING",
        "nullable": True,
        "propertyOrdering": ["b", "a"],
    }
    assert response_schema({"type": ["integer", "null", "string"]}) == {
        "anyOf": [{"type": "INTEGER"}, {"type": "STRING"}],
        "nullable": True,
    }
    assert response_schema({"type": ["null"]}) == {"type": "NULL", "nullable": True}


def test_any_of_is_translated_branch_by_branch() -> None:
    schema = {"anyOf": [{"type": "string"}, {"type": "integer"}], "oneOf": [{"type": "boolean"}]}
    assert response_schema(schema) == {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]}


def test_a_list_of_types_keeps_the_other_keywords_in_each_branch() -> None:
    schema = {"type": ["string", "integer", "null"], "description": "an id"}
    assert response_schema(schema) == {
        "anyOf": [
            {"type": "STRING", "description": "an id"},
            {"type": "INTEGER", "description": "an id"},
        ],
        "nullable": True,
    }


def test_response_schema_nests_up_to_its_limit_and_refuses_beyond() -> None:
    from evalwh.providers.gemini_schema import MAX_DEPTH, response_schema

    def nested(levels: int) -> dict[str, Any]:
        node: dict[str, Any] = {"type": "string"}
        for _ in range(levels):
            node = {"type": "array", "items": node}
        return node

    deepest = response_schema(nested(MAX_DEPTH))
    for _ in range(MAX_DEPTH):
        deepest = deepest["items"]
    assert deepest == {"type": "STRING"}
    with pytest.raises(ConfigError, match=f"deeper than {MAX_DEPTH} levels"):
        response_schema(nested(MAX_DEPTH + 1))


LEAVES = {
    "$ref": {"$ref": "#/$defs/s"},
    "several types": {"type": ["string", "integer"]},
    "type or null": {"type": ["string", "null"]},
    "properties": {"type": "object", "properties": {"a": {"type": "string"}}},
    "anyOf": {"anyOf": [{"type": "string"}]},
}


def nested(levels: int, leaf: dict[str, Any]) -> dict[str, Any]:
    node = leaf
    for _ in range(levels):
        node = {"type": "array", "items": node}
    return {**node, "$defs": {"s": {"type": "string"}}}


@pytest.mark.parametrize("leaf", LEAVES.values(), ids=list(LEAVES))
def test_each_nesting_keyword_counts_one_level_toward_the_limit(leaf: dict[str, Any]) -> None:
    response_schema(nested(MAX_DEPTH - 1, leaf))  # its inner schema sits at the limit
    with pytest.raises(ConfigError, match=f"deeper than {MAX_DEPTH} levels"):
        response_schema(nested(MAX_DEPTH, leaf))


def test_a_schema_recursive_through_any_of_is_refused() -> None:
    schema = {"$defs": {"n": {"anyOf": [{"$ref": "#/$defs/n"}]}}, "$ref": "#/$defs/n"}
    with pytest.raises(ConfigError, match="recursive"):
        response_schema(schema)
