"""examples/mcp/.mcp.json, the `mcpServers` entry Claude Code, Claude Desktop and Cursor read,
started as those clients start it: its command and args, its env over the client's, in the
project folder (Claude Code, Cursor) or elsewhere with EVALWH_MCP_ROOT naming the project
(Claude Desktop); then driven by the MCP SDK's client."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.conftest import ROOT

EXAMPLE = ROOT / "examples" / "mcp"


def entry() -> dict[str, Any]:
    servers: dict[str, dict[str, Any]] = json.loads(
        (EXAMPLE / ".mcp.json").read_text(encoding="utf-8")
    )["mcpServers"]
    assert list(servers) == ["evalwh"]
    return servers["evalwh"]


def started(cwd: Path, **env: str) -> StdioServerParameters:
    """The entry as a client starts it, with evalwh installed on PATH (this test's venv)."""
    config = entry()
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    assert shutil.which(config["command"], path=path), f"{config['command']} is not on PATH"
    return StdioServerParameters(
        command=config["command"],
        args=config["args"],
        cwd=cwd,
        env={
            "PATH": path,
            "EVALWH_CONFIG_DIR": os.environ["EVALWH_CONFIG_DIR"],
            **config["env"],
            **env,
        },
    )


async def data(session: ClientSession, name: str, args: dict[str, Any]) -> Any:
    result = await session.call_tool(name, args)
    assert not result.is_error, result.content
    return result.structured_content


def test_the_example_config_starts_the_server_as_clients_do(tmp_path: Path) -> None:
    project = tmp_path / "my-evals"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".evalwh"))
    config = entry()
    assert config["args"][-1] == "mcp" and "--allow-code" not in config["args"]
    assert config["env"] == {"EVALWH_MCP_MAX_COST": "0.50", "EVALWH_MCP_MAX_COST_CEILING": "5.00"}

    async def go() -> None:
        # Claude Code and Cursor: the server starts in the project, which is its root
        async with (
            stdio_client(started(project)) as (read, write),
            ClientSession(read, write) as s,
        ):
            await s.initialize()
            run = await data(s, "run_eval", {"config_path": "eval.yaml", "label": "first"})
            assert run["status"] == "completed" and run["cap_usd"] == 0.5  # the env's cap
            assert (run["totals"]["passed"], run["totals"]["failed"]) == (1, 1)
            failing = await data(s, "get_run", {"run": "first", "detail": "failures"})
            assert [c["case_id"] for c in failing["cases"]] == ["canada"]
        assert (project / ".evalwh" / "warehouse.duckdb").is_file()

        # Claude Desktop: started outside any project; EVALWH_MCP_ROOT names it
        elsewhere = tmp_path / "desktop"
        elsewhere.mkdir()
        async with (
            stdio_client(started(elsewhere, EVALWH_MCP_ROOT=str(project))) as (read, write),
            ClientSession(read, write) as s,
        ):
            await s.initialize()
            runs = await data(s, "list_runs", {"limit": "5"})
            assert [r["label"] for r in runs["runs"]] == ["first"]
        assert not (elsewhere / ".evalwh").exists()

    asyncio.run(go())
