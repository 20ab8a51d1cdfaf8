"""The MCP tools (evalwh/mcp/tools.py) called as plain functions: what each returns and what it
refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalwh.errors import UsageError
from evalwh.mcp import tools
from evalwh.mcp.agent import Agent
from tests.builders import needs_anthropic_key


def test_the_mcp_tool_writes_the_page_inside_the_root_only(hostile: dict[str, Any]) -> None:
    from evalwh.mcp import tools

    root = hostile["root"]
    agent = Agent(root=root, output_dir=root / ".evalwh", cwd=root)
    result = tools.write_report(agent, hostile["run_id"])
    page = Path(result["path"])
    assert page == root / ".evalwh" / "reports" / f"{hostile['run_id']}.html"
    assert result["bytes"] == page.stat().st_size and "evalwh-data" in page.read_text()
    other = tools.write_report(agent, "latest", against=hostile["run_id"], path="cmp.html")
    assert other["path"] == str(root / "cmp.html") and "compare" in (root / "cmp.html").read_text()
    for bad in ("../outside.html", str(root.parent / "x.html"), "page.txt"):
        with pytest.raises(UsageError):
            tools.write_report(agent, hostile["run_id"], path=bad)
    assert not (root.parent / "outside.html").exists()


def test_progress_throttle_sends_first_last_and_a_bounded_number():
    throttle = tools.ProgressThrottle(steps=10)
    sent = [done for done in range(1, 1001) if throttle.due(done, 1000)]
    assert sent[0] == 1 and sent[-1] == 1000
    assert len(sent) <= 12
    small = tools.ProgressThrottle(steps=20)
    assert [d for d in range(1, 4) if small.due(d, 3)] == [1, 2, 3]


def test_progress_of_a_run_of_unknown_size() -> None:
    from evalwh.mcp.tools import ProgressThrottle

    throttle = ProgressThrottle()
    due = [n for n in range(1, 3001) if throttle.due(n, 0)]
    assert due == [1, 1000, 2000, 3000]  # not one notification per cell
    known = ProgressThrottle(steps=4)
    assert [n for n in range(1, 9) if known.due(n, 8)] == [1, 2, 4, 6, 8]


def test_run_eval_refuses_a_model_without_its_key_as_data_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from evalwh.mcp.server import answer

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    root = tmp_path / "root"
    root.mkdir()
    needs_anthropic_key(root)
    agent = Agent(root=root, output_dir=root / ".evalwh", cwd=root)
    result = answer(lambda: tools.run_eval(agent, "eval.yaml"))
    assert result.is_error
    data = json.loads(result.content[0].text)
    assert data["error"] == "ConfigError" and "needs ANTHROPIC_API_KEY" in data["message"]
    assert data["missing"] == [
        {
            "model": "claude",
            "provider": "anthropic",
            "names": ["ANTHROPIC_API_KEY"],
            "where": "models[0]",
            "line": 2,
            "column": 5,
        }
    ]
    assert not (root / ".evalwh").exists()  # nothing was written


def _tools_project(tmp_path: Path, implementation: str) -> Path:
    """examples/tools copied under an MCP root, its tool's implementation replaced."""
    import shutil

    import yaml

    root = tmp_path / "root"
    shutil.copytree(Path(__file__).parents[2] / "examples" / "tools", root)
    data = yaml.safe_load((root / "eval.yaml").read_text())
    tool = data["tools"][0]
    if implementation == "python":
        (root / "weather.py").write_text(
            "from pathlib import Path\n\n"
            "def get_weather(city):\n"
            "    (Path(__file__).parent / 'ran').write_text(city)\n"
            "    return {'temp_c': 18, 'sky': 'clear'}\n"
        )
        del tool["mock"]
        tool["python"] = "weather.py:get_weather"
    (root / "eval.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return root


def test_run_eval_runs_a_tool_eval_with_mock_tools_and_stores_its_transcripts(
    tmp_path: Path,
) -> None:
    import duckdb

    root = _tools_project(tmp_path, "mock")
    agent = Agent(root=root, output_dir=root / ".evalwh", cwd=root)
    brief = tools.run_eval(agent, "eval.yaml")
    with duckdb.connect(str(root / ".evalwh" / "warehouse.duckdb"), read_only=True) as db:
        calls = db.execute(
            "SELECT count(*) FROM turns WHERE run_id = ? AND role = 'tool'", [brief["run_id"]]
        ).fetchone()
    assert calls is not None and calls[0] > 0


def test_run_eval_refuses_a_python_tool_without_allow_code_and_runs_nothing(
    tmp_path: Path,
) -> None:
    """An MCP client may not make the server run code through a tool of a config it wrote:
    a python tool is code, refused unless the server was started with --allow-code."""
    from evalwh.boundary import ConfinementError

    root = _tools_project(tmp_path, "python")
    agent = Agent(root=root, output_dir=root / ".evalwh", cwd=root)
    with pytest.raises(ConfinementError, match=r"tools\[0\]\.python: .* runs code"):
        tools.run_eval(agent, "eval.yaml")
    assert not (root / "ran").exists() and not (root / ".evalwh" / "warehouse.duckdb").exists()
    allowed = Agent(root=root, output_dir=root / ".evalwh", cwd=root, allow_code=True)
    tools.run_eval(allowed, "eval.yaml", cases=["paris"])
    assert (root / "ran").read_text() == "Paris"
