"""evalwh/mcp/outputs.py: every tool has an outputSchema that is valid JSON Schema, the answers
docs/mcp.md shows fit them, and an answer missing a key it always has does not.
(tests/mcp/test_server.py checks real answers over stdio against the published schemas.)"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from jsonschema import Draft202012Validator, ValidationError

from evalwh.mcp import TOOLS
from evalwh.mcp.outputs import OUTPUT_SCHEMAS
from tests.conftest import ROOT


def test_every_tool_has_a_valid_object_schema() -> None:
    assert set(OUTPUT_SCHEMAS) == set(TOOLS)
    for name, schema in OUTPUT_SCHEMAS.items():
        Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object", name  # MCP: an outputSchema describes an object


def doc_answers() -> dict[str, Any]:
    """The first JSON block under each tool's heading in docs/mcp.md."""
    text = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    found = {}
    for part in re.split(r"^### ", text, flags=re.M)[1:]:
        name = part.split("\n", 1)[0].strip()
        block = re.search(r"^```json\n(.*?)^```", part, re.M | re.S)
        if name in OUTPUT_SCHEMAS and block:
            found[name] = json.loads(block.group(1))
    return found


def test_the_answers_docs_mcp_md_shows_fit_their_schemas() -> None:
    answers = doc_answers()
    assert set(answers) == set(TOOLS)
    for name, answer in answers.items():
        Draft202012Validator(OUTPUT_SCHEMAS[name]).validate(answer)


@pytest.mark.parametrize(
    ("tool", "key"),
    [("run_eval", "run_id"), ("list_runs", "more"), ("query", "rows"), ("get_run", "cases")],
)
def test_an_answer_without_a_key_it_always_has_does_not_fit(tool: str, key: str) -> None:
    answer = dict(doc_answers()[tool])
    del answer[key]
    with pytest.raises(ValidationError):
        Draft202012Validator(OUTPUT_SCHEMAS[tool]).validate(answer)


def test_nullable_keys_are_any_of_one_type_each() -> None:
    """A `type` list (["string", "null"]) is valid JSON Schema, but clients that map tool
    schemas onto a one-type dialect (Gemini's function declarations) refuse or drop it."""

    def types(node: Any) -> list[Any]:
        if isinstance(node, dict):
            own = [node["type"]] if "type" in node else []
            return own + [t for value in node.values() for t in types(value)]
        if isinstance(node, list):
            return [t for value in node for t in types(value)]
        return []

    found = types(OUTPUT_SCHEMAS)
    assert found and all(isinstance(t, str) for t in found), [
        t for t in found if not isinstance(t, str)
    ]
    assert {"anyOf": [{"type": "string"}, {"type": "null"}]} in OUTPUT_SCHEMAS["run_eval"][
        "properties"
    ].values()
