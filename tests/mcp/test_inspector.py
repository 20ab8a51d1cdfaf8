"""`evalwh mcp` driven by MCP Inspector's CLI (npm @modelcontextprotocol/inspector), a generic
client that sends what is typed after --tool-arg as strings: it lists the tools and calls
every read tool with string-typed integers, each answer checked against the tool's
outputSchema. .ci/run installs the CLI into a cache folder when npm is present and names it in
EVALWH_MCP_INSPECTOR; without it the test skips saying so, and fails under
EVALWH_REQUIRE_SYSTEM_PARTS=1 (CI)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalwh.mcp import TOOLS
from tests.conftest import ROOT

pytestmark = pytest.mark.e2e

# read at import: the autouse fixture `isolated` clears every EVALWH_ variable for the test
INSPECTOR = os.environ.get("EVALWH_MCP_INSPECTOR")
REQUIRE = os.environ.get("EVALWH_REQUIRE_SYSTEM_PARTS") == "1"
READS = ("get_run", "get_case_result", "compare_runs", "list_runs", "render_prompt", "query")


def inspector_cli() -> str:
    """The Inspector's launcher, or a skip saying why (a failure under
    EVALWH_REQUIRE_SYSTEM_PARTS=1)."""
    path = INSPECTOR
    reason = None
    if shutil.which("node") is None:
        reason = "no node for MCP Inspector's CLI"
    elif not path or not Path(path).is_file():
        reason = (
            "MCP Inspector's CLI is not installed: .ci/run installs "
            "@modelcontextprotocol/inspector into a cache folder when npm is present and sets "
            f"EVALWH_MCP_INSPECTOR (now {path!r})"
        )
    if reason is not None:
        if REQUIRE:
            pytest.fail(f"{reason}; EVALWH_REQUIRE_SYSTEM_PARTS=1 requires it")
        pytest.skip(reason)
    assert path is not None
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """examples/mcp with one stored run labelled 'first' (france passes, canada fails)."""
    root = tmp_path / "project"
    shutil.copytree(ROOT / "examples" / "mcp", root, ignore=shutil.ignore_patterns(".evalwh"))
    subprocess.run(
        [sys.executable, "-m", "evalwh.cli.main", "run", "eval.yaml", "-q", "--label", "first"],
        cwd=root,
        check=True,
        capture_output=True,
    )
    return root


def test_inspector_lists_the_tools_and_calls_every_read_tool_with_strings(project: Path) -> None:
    from jsonschema import Draft202012Validator

    cli = inspector_cli()

    def inspect(*args: str) -> Any:
        """One Inspector CLI call against a fresh server started in the project; its JSON."""
        done = subprocess.run(
            [
                cli,
                "--cli",
                "-e",
                f"EVALWH_CONFIG_DIR={os.environ['EVALWH_CONFIG_DIR']}",
                "-e",
                f"EVALWH_MCP_ROOT={project}",
                sys.executable,
                "-m",
                "evalwh.cli.main",
                "mcp",
                *args,
            ],
            cwd=project,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    tools = {t["name"]: t for t in inspect("--method", "tools/list")["tools"]}
    assert sorted(tools) == sorted(TOOLS)
    for name, tool in tools.items():
        hints = tool["annotations"]
        assert {"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} <= set(hints)
        assert hints["readOnlyHint"] is (name in READS), name
        assert tool["outputSchema"]["type"] == "object", name

    def call(name: str, **args: str) -> Any:
        pairs = [f"{key}={value}" for key, value in args.items()]
        result = inspect("--method", "tools/call", "--tool-name", name, "--tool-arg", *pairs)
        if result.get("isError"):  # arguments the SDK refused: text only
            return True, result["content"][0]["text"]
        data = result["structuredContent"]
        assert json.loads(result["content"][0]["text"]) == data
        Draft202012Validator(tools[name]["outputSchema"]).validate(data)
        return False, data

    answers = {
        "list_runs": call("list_runs", limit="2"),
        "get_run": call("get_run", run="first", detail="failures", page="1", page_size="5"),
        "get_case_result": call(
            "get_case_result",
            run="first",
            variant="terse",
            model="mock",
            case_id="canada",
            repeat="0",
            max_chars="4",
        ),
        "compare_runs": call("compare_runs", a="first", b="latest", movers="3"),
        "render_prompt": call(
            "render_prompt",
            config_path="eval.yaml",
            variant="terse",
            case_id="france",
            max_chars="50",
        ),
        "query": call("query", sql="SELECT case_id FROM cases ORDER BY case_id", limit="1"),
    }
    assert set(answers) == set(READS)
    assert not any(failed for failed, _ in answers.values()), answers
    data = {name: answer for name, (_, answer) in answers.items()}
    assert [r["label"] for r in data["list_runs"]["runs"]] == ["first"]
    assert (data["get_run"]["page_size"], data["get_run"]["total"]) == (5, 1)
    assert data["get_run"]["cases"][0]["case_id"] == "canada"
    assert data["get_case_result"]["output"] == "Toro…[truncated: 4 of 7 chars]"
    assert data["compare_runs"]["overall"]["n"] == 2
    assert data["render_prompt"]["messages"][0]["content"][0]["text"].startswith("What is")
    assert data["query"] == {
        "columns": ["case_id"],
        "rows": [["canada"]],
        "row_count": 1,
        "truncated": True,
    }

    failed, refused = call("list_runs", limit="2.5")
    assert failed and "argument 'limit' must be an integer, got the string '2.5'" in refused
