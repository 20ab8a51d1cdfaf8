"""`evalwh mcp` (evalwh/mcp/server.py) driven over stdio by the SDK's own client, as an agent
would use it: list the tools, run the quickstart, page the failures, compare with the
baseline, query read-only; and the refusals (writing SQL, a path outside the root, a cost over
the ceiling or the cap) while the server keeps serving."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from evalwh.mcp import TOOLS

ROOT = Path(__file__).resolve().parents[2]


QUICKSTART = ROOT / "examples" / "quickstart"


Call = Callable[..., Awaitable[Any]]

LONG_CONFIG = """\
name: long
models:
  - id: chatty
    provider: mock
    mock:
      default: "{{ 'lorem ipsum ' * 400 }}"
variants:
  - id: plain
    messages:
      - role: user
        content: "{{ question }}"
cases:
  - id: c1
    vars: {question: Say a lot}
    expected: lorem
scorecard:
  - name: says-lorem
    type: contains
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The server's root: a copy of the quickstart and a config with a very long answer."""
    root = tmp_path / "project"
    shutil.copytree(QUICKSTART, root / "quickstart", ignore=shutil.ignore_patterns(".evalwh"))
    (root / "long").mkdir()
    (root / "long" / "eval.yaml").write_text(LONG_CONFIG, encoding="utf-8")
    (tmp_path / "outside.yaml").write_text(LONG_CONFIG, encoding="utf-8")
    return root


@asynccontextmanager
async def server(root: Path, **env: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "evalwh.cli.main", "mcp", "--allow-code"],  # the quickstart has a python scorer
        cwd=root,
        env={
            "EVALWH_MCP_ROOT": str(root),
            "EVALWH_CONFIG_DIR": os.environ["EVALWH_CONFIG_DIR"],
            **env,
        },
    )
    with (root.parent / "server.log").open("a", encoding="utf-8") as log:
        async with (
            stdio_client(params, errlog=log) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()  # a hang is bounded by pytest-timeout, not a clock here
            yield session


async def call(session: ClientSession, name: str, args: dict[str, Any], **kw: Any) -> Any:
    """The tool's data, or the error's data (with ``_error`` set)."""
    result = await session.call_tool(name, args, **kw)
    data = result.structured_content
    assert data is not None, result.content
    assert json.loads(result.content[0].text) == data, "text and structured content differ"
    if result.is_error:
        return {**data, "_error": True}
    return data


def test_an_agent_session_over_stdio(project: Path) -> None:
    async def go() -> None:
        async with server(project) as s:
            listed = (await s.list_tools()).tools
            assert sorted(t.name for t in listed) == sorted(TOOLS)
            for tool in listed:
                assert tool.description and len(tool.description) > 30, tool.name
                assert tool.input_schema["type"] == "object"
            schema = {t.name: t.input_schema for t in listed}
            assert {"config_path", "models", "max_cost_usd", "no_cache"} <= set(
                schema["run_eval"]["properties"]
            )
            assert schema["get_run"]["properties"]["detail"]["enum"] == [
                "summary",
                "failures",
                "full",
            ]

            progress: list[tuple[float, float | None, str | None]] = []

            async def on_progress(done: float, total: float | None, message: str | None) -> None:
                progress.append((done, total, message))

            first = await call(
                s,
                "run_eval",
                {"config_path": "quickstart/eval.yaml", "label": "first"},
                progress_callback=on_progress,
            )
            assert "_error" not in first, first
            assert first["status"] == "completed" and first["label"] == "first"
            assert first["totals"]["n"] == 48 and first["failures"] == 15
            assert len(first["matrix"]) == 4 and all("ci95" in c for c in first["matrix"])
            assert first["cap_usd"] == 1.0 and first["cost_usd"] > 0
            assert first["headline_eligible"] is True and first["flags"] == []
            # the client runs progress callbacks as tasks of their own: wait for the last one
            # (no wall-clock limit here: pytest-timeout bounds the test)
            while not (progress and progress[-1][:2] == (48, 48)):
                await asyncio.sleep(0.01)
            assert progress and progress[-1][:2] == (48, 48)
            assert 2 <= len(progress) <= 22
            text = json.dumps(first)
            assert "Hmm. It is" not in text and "Answer:" not in text  # no raw outputs

            page1 = await call(s, "get_run", {"run": "first", "detail": "failures"})
            assert (page1["total"], page1["pages"], page1["next_page"]) == (15, 2, 2)
            assert len(page1["cases"]) == 10 and all("output" not in c for c in page1["cases"])
            page2 = await call(
                s, "get_run", {"run": "first", "detail": "failures", "page": page1["next_page"]}
            )
            assert len(page2["cases"]) == 5 and page2["next_page"] is None
            seen = {(c["variant"], c["model"], c["case_id"]) for c in page1["cases"]}
            assert not seen & {(c["variant"], c["model"], c["case_id"]) for c in page2["cases"]}
            summary = await call(s, "get_run", {"run": "first"})
            assert summary["run"]["run_id"] == first["run_id"] and summary["criteria"]

            pinned = await call(s, "set_baseline", {"run": "first"})
            assert pinned["run_id"] == first["run_id"]
            second = await call(
                s,
                "run_eval",
                {"config_path": "quickstart", "models": ["mock-small"], "no_cache": True},
            )
            compared = await call(s, "compare_runs", {"a": "baseline", "b": second["run_id"]})
            assert compared["a"]["run_id"] == first["run_id"]
            assert compared["b"]["run_id"] == second["run_id"]
            assert compared["overall"]["n"] == 24
            assert set(compared["overall"]["pass_rate"]) == {"a", "b", "delta", "ci95", "p"}

            runs = await call(s, "list_runs", {"limit": 1})
            assert [r["run_id"] for r in runs["runs"]] == [second["run_id"]] and runs["more"]
            assert runs["baselines"] == {"baseline": first["run_id"]}

            rows = await call(s, "query", {"sql": "SELECT case_id, output FROM cases", "limit": 3})
            assert rows["columns"] == ["case_id", "output"]
            assert rows["row_count"] == 3 and rows["truncated"] is True
            count = await call(s, "query", {"sql": "SELECT count(*) AS n FROM runs"})
            assert count["rows"] == [[2]] and count["truncated"] is False

            prompt = await call(
                s,
                "render_prompt",
                {"config_path": "quickstart/eval.yaml", "variant": "terse", "case_id": "geo-1"},
            )
            assert prompt["messages"][1]["content"][0]["text"] == "What is the capital of France?"

            long_run = await call(s, "run_eval", {"config_path": "long/eval.yaml"})
            assert "lorem" not in json.dumps(long_run)
            cell = await call(
                s,
                "get_case_result",
                {"run": long_run["run_id"], "variant": "plain", "model": "chatty", "case_id": "c1"},
            )
            full = len("lorem ipsum " * 400)
            assert cell["truncated"]["output"] == full
            assert cell["output"].endswith(f"…[truncated: 2000 of {full} chars]")
            wider = await call(
                s,
                "get_case_result",
                {
                    "run": long_run["run_id"],
                    "variant": "plain",
                    "model": "chatty",
                    "case_id": "c1",
                    "max_chars": 10_000,
                },
            )
            assert len(wider["output"]) == full and wider["truncated"] == {}

    asyncio.run(go())


def test_refusals_leave_the_server_serving(project: Path) -> None:
    async def go() -> None:
        async with server(project) as s:
            baseline = await call(s, "run_eval", {"config_path": "quickstart"})
            n_runs = len((await call(s, "list_runs", {}))["runs"])

            async def still_serving() -> None:
                runs = await call(s, "list_runs", {})
                assert len(runs["runs"]) == n_runs, "a refusal wrote a run"
                assert runs["runs"][0]["run_id"] == baseline["run_id"]

            for sql, word in (
                ("INSERT INTO baselines VALUES ('x', 'y', now())", "INSERT"),
                ("ATTACH 'other.duckdb' AS other", "ATTACH"),
                ("COPY cases TO 'leak.csv'", "COPY"),
                ("DROP TABLE runs", "DROP"),
            ):
                refused = await call(s, "query", {"sql": sql})
                assert refused["_error"] and "read-only" in refused["message"], refused
                assert word in refused["message"]
                await still_serving()
            files = await call(s, "query", {"sql": "SELECT * FROM read_csv('/etc/passwd')"})
            assert files["_error"] and "disabled" in files["message"]
            assert not (project / "leak.csv").exists() and not (project / "other.duckdb").exists()

            for path in ("../outside.yaml", str(project.parent / "outside.yaml"), "/etc/passwd"):
                outside = await call(s, "run_eval", {"config_path": path})
                assert outside["_error"] and "outside the server's root" in outside["message"]
                assert "EVALWH_MCP_ROOT" in outside["message"]
                await still_serving()
            prompt = await call(
                s,
                "render_prompt",
                {"config_path": "../outside.yaml", "variant": "plain", "case_id": "c1"},
            )
            assert prompt["_error"] and "outside" in prompt["message"]

            ceiling = await call(s, "run_eval", {"config_path": "quickstart", "max_cost_usd": 50})
            assert ceiling["_error"] and ceiling["refused"] is True
            assert ceiling["error"] == "CostRefusedError"
            assert ceiling["ceiling_usd"] == 5.0 and "not trimmed" in ceiling["reason"]
            await still_serving()

            over = await call(
                s,
                "run_eval",
                {"config_path": "quickstart", "max_cost_usd": 0.001, "no_cache": True},
            )
            assert over["_error"] and over["refused"] is True
            assert over["cap_usd"] == 0.001 and over["estimate_usd"] > 0.001
            assert over["calls"] == 48 and over["spent_usd"] == 0.0
            assert "nothing was called or written" in over["reason"]
            await still_serving()

            missing = await call(s, "get_run", {"run": "no-such-run"})
            assert missing["_error"] and missing["error"] == "RunNotFoundError"
            bad_page = await s.call_tool("get_run", {"detail": "failures", "page": 0})
            assert bad_page.is_error
            await still_serving()

    asyncio.run(go())


def test_the_default_cap_comes_from_the_environment(project: Path) -> None:
    async def go() -> None:
        async with server(project, EVALWH_MCP_MAX_COST="0.0001") as s:
            over = await call(s, "run_eval", {"config_path": "quickstart"})
            assert over["_error"] and over["cap_usd"] == 0.0001
            assert (await call(s, "list_runs", {}))["runs"] == []

    asyncio.run(go())


# every tool's four hints: (readOnly, destructive, idempotent, openWorld)
HINTS = {
    "run_eval": (False, False, False, True),  # adds a run, calls providers, each call a new run
    "set_baseline": (False, True, True, False),  # replaces the pin of that name
    "write_report": (False, True, True, False),  # overwrites the .html file at its path
    **{
        name: (True, False, True, False)
        for name in ("get_run", "get_case_result", "compare_runs", "list_runs", "render_prompt")
    },
    "query": (True, False, True, False),
}


def test_clients_may_send_numbers_as_strings_and_every_answer_fits_its_output_schema(
    project: Path,
) -> None:
    """What MCP Inspector's CLI (0.15) and other generic clients send: integers and booleans
    as strings. Each read tool takes them; every answer's structuredContent validates against
    the tool's published outputSchema (checked here with jsonschema, besides the SDK client's
    own check); a string that does not spell the type exactly is refused, not rounded."""
    from jsonschema import Draft202012Validator

    async def go() -> None:
        async with server(project) as s:
            listed = {t.name: t for t in (await s.list_tools()).tools}
            assert set(listed) == set(TOOLS) == set(HINTS)
            for name, tool in listed.items():
                hints = tool.annotations
                assert hints is not None, name
                assert (
                    hints.read_only_hint,
                    hints.destructive_hint,
                    hints.idempotent_hint,
                    hints.open_world_hint,
                ) == HINTS[name], name
                assert tool.output_schema is not None and tool.output_schema["type"] == "object"
                Draft202012Validator.check_schema(tool.output_schema)
                assert tool.input_schema["additionalProperties"] is False, name
            seen: set[str] = set()

            async def fits(name: str, args: dict[str, Any]) -> Any:
                data = await call(s, name, args)
                assert "_error" not in data, (name, data)
                Draft202012Validator(listed[name].output_schema).validate(data)
                seen.add(name)
                return data

            run = await fits(
                "run_eval",
                {"config_path": "long/eval.yaml", "no_cache": "true", "max_cost_usd": "0.5"},
            )
            assert run["cap_usd"] == 0.5 and run["requests"] == 1  # no_cache: the call was sent
            run_id = run["run_id"]
            await fits("get_run", {"run": run_id})
            page = await fits("get_run", {"detail": "full", "page": "1", "page_size": "5"})
            assert (page["page"], page["page_size"], page["total"]) == (1, 5, 1)
            cell = await fits(
                "get_case_result",
                {
                    "run": run_id,
                    "variant": "plain",
                    "model": "chatty",
                    "case_id": "c1",
                    "repeat": "0",
                    "max_chars": "100",
                },
            )
            assert cell["output"].endswith("…[truncated: 100 of 4800 chars]")
            moved = await fits("compare_runs", {"a": run_id, "b": run_id, "movers": "3"})
            assert moved["overall"]["n"] == 1
            runs = await fits("list_runs", {"limit": "2"})
            assert [r["run_id"] for r in runs["runs"]] == [run_id]
            rendered = await fits(
                "render_prompt",
                {"config_path": "long", "variant": "plain", "case_id": "c1", "max_chars": "4"},
            )
            assert rendered["messages"][0]["content"][0]["text"].startswith("Say …[truncated")
            rows = await fits("query", {"sql": "SELECT 1 AS one UNION ALL SELECT 2", "limit": "1"})
            assert rows["rows"] == [[1]] and rows["truncated"] is True
            await fits("set_baseline", {"run": run_id})
            page_written = await fits("write_report", {"run": "baseline"})
            assert Path(page_written["path"]).is_file()
            assert seen == set(TOOLS)

            for name, args, says in (
                ("list_runs", {"limit": "2.5"}, "argument 'limit' must be an integer"),
                ("list_runs", {"limit": "two"}, "argument 'limit' must be an integer"),
                ("list_runs", {"limit": " 2"}, "argument 'limit' must be an integer"),
                ("list_runs", {"limit": True}, "valid integer"),
                ("list_runs", {"limit": "0"}, "greater than or equal to 1"),
                ("list_runs", {"limit": "2", "extra": 1}, "Extra inputs are not permitted"),
                ("get_run", {"page": "1e3"}, "argument 'page' must be an integer"),
                (
                    "run_eval",
                    {"config_path": "long", "no_cache": "yes"},
                    "argument 'no_cache' must be a boolean (true or false)",
                ),
                ("run_eval", {"config_path": "long", "no_cache": "True"}, "must be a boolean"),
                ("run_eval", {"config_path": "long", "max_cost_usd": "0.5$"}, "must be a number"),
                (
                    "get_case_result",
                    {"run": 1, "variant": "v", "model": "m", "case_id": "c"},
                    "string",
                ),
            ):
                result = await s.call_tool(name, args)
                assert result.is_error, (name, args)
                assert says in result.content[0].text, (args, result.content[0].text)
            assert len((await call(s, "list_runs", {}))["runs"]) == 1  # the refusals ran nothing

    asyncio.run(go())
