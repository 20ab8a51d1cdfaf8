"""docs/mcp.md stays true: its JSON examples parse (the Claude Code and Desktop entries, a
refusal) and it documents every tool and setting."""

from __future__ import annotations

import json
import re

from evalwh.mcp import TOOLS
from tests.conftest import ROOT

DOC = ROOT / "docs" / "mcp.md"
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.M | re.S)


def doc_blocks(lang: str) -> list[str]:
    return [body for kind, body in FENCE.findall(DOC.read_text(encoding="utf-8")) if kind == lang]


def test_the_doc_json_examples_parse() -> None:
    found = [json.loads(body) for body in doc_blocks("json")]
    servers = [block for block in found if "mcpServers" in block]
    assert len(servers) == 2, "the Claude Code and Claude Desktop examples"
    # the first is examples/mcp/.mcp.json, which tests/mcp/test_client_config.py starts
    example = ROOT / "examples" / "mcp" / ".mcp.json"
    assert servers[0] == json.loads(example.read_text(encoding="utf-8"))
    for block in servers:
        entry = block["mcpServers"]["evalwh"]
        assert entry["command"].endswith("evalwh") and entry["args"] == ["mcp"]
    assert "EVALWH_MCP_ROOT" in servers[1]["mcpServers"]["evalwh"]["env"]
    assert any(block.get("refused") for block in found)


def test_the_doc_has_every_tool_and_setting() -> None:
    text = DOC.read_text(encoding="utf-8")
    for tool in TOOLS:
        assert re.search(rf"^### {tool}$", text, re.M), f"docs/mcp.md has no '### {tool}'"
    for name in ("EVALWH_MCP_ROOT", "EVALWH_MCP_MAX_COST", "EVALWH_MCP_MAX_COST_CEILING"):
        assert f"`{name}`" in text
    assert "uvx --from 'evalwh[mcp]' evalwh mcp" in text
    assert "uv run evalwh mcp" in text
