"""What an agent gets back over real runs of the examples, without a server: the run summary
(the matrix, no outputs), the cost caps, paging, drill-down, compare and query, a rendered
prompt, a judge run's calibration flags and a failed run's cause (evalwh/mcp/briefs.py
through the tools)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalwh import api
from evalwh.engine.budget import CostCapError
from evalwh.errors import UsageError
from evalwh.mcp import briefs, tools
from evalwh.mcp.agent import Agent
from tests.builders import needs_anthropic_key
from tests.fakes.servers import FakeLLMServer, error

ROOT = Path(__file__).resolve().parents[2]


PAIRWISE = ROOT / "examples" / "pairwise"


@pytest.fixture
def agent(quickstart: Path, isolated: Path) -> Agent:
    # the quickstart scores with a python scorer: code, allowed as `evalwh mcp --allow-code` does
    return Agent(root=quickstart.parent.parent.resolve(), env={}, cwd=isolated, allow_code=True)


def test_run_eval_summary_has_the_matrix_and_no_outputs(agent, quickstart):
    calls: list[tuple[int, int]] = []
    brief = tools.run_eval(
        agent, "quickstart/eval.yaml", progress=lambda d, t, r: calls.append((d, t))
    )
    assert calls[-1] == (48, 48)
    assert brief["status"] == "completed"
    assert len(brief["matrix"]) == 4
    cell = brief["matrix"][0]
    assert {"variant", "model", "n", "passed", "pass_rate", "ci95", "errors"} <= set(cell)
    # latency and, apart, the time requests waited to be sent (the mock never waits long)
    assert cell["p50_ms"] >= 0 and 0 <= cell["queued_p95_ms"] < 1000
    assert brief["totals"]["n"] == 48
    assert brief["failures"] == brief["totals"]["failed"] == 15
    assert brief["cap_usd"] == 1.0 and brief["estimate_usd"] > 0
    assert brief["headline_eligible"] is True and brief["flags"] == []
    assert brief["gate"]["passed"] is True
    text = json.dumps(brief)
    for output in ("Hmm. It is", "Let me work through it", "Answer:"):
        assert output not in text
    assert Path(agent.warehouse).exists()


def test_the_config_limit_and_the_mcp_default_cap_a_run(agent, quickstart):
    agent.env = {"EVALWH_MCP_MAX_COST": "0.001"}
    with pytest.raises(CostCapError) as info:
        tools.run_eval(agent, "quickstart/eval.yaml")
    data = info.value.to_dict()
    assert data["cap_usd"] == 0.001
    assert data["estimate_usd"] > 0.001 and data["calls"] == 48
    assert tools.list_runs(agent)["runs"] == []


def test_paging_drill_down_compare_and_query(agent, quickstart):
    first = tools.run_eval(agent, "quickstart")
    view = agent.view()
    page1 = tools.case_page(view, "latest", failures=True, page=1, page_size=10)
    page2 = tools.case_page(view, "latest", failures=True, page=2, page_size=10)
    assert (page1["total"], page1["pages"], page1["next_page"]) == (15, 2, 2)
    assert (len(page1["cases"]), len(page2["cases"]), page2["next_page"]) == (10, 5, None)
    assert all("output" not in c for c in page1["cases"] + page2["cases"])
    assert all(not c["passed"] for c in page1["cases"])
    full = tools.case_page(view, "latest", failures=False, page=1, page_size=3)
    assert full["total"] == 48 and "output" in full["cases"][0]
    beyond = tools.case_page(view, "latest", failures=True, page=9)
    assert beyond["cases"] == [] and beyond["next_page"] is None

    one = tools.case_brief(view, "latest", "reasoned", "mock-small", "geo-1")
    assert one["output"] == "Hmm. It is Paris, I think."
    assert one["truncated"] == {}
    assert one["messages"][0]["role"] == "system"
    assert one["attempts"] == 1 and one["latency_ms"] >= 0 and one["queued_ms"] >= 0
    with pytest.raises(UsageError, match="has no cell"):
        tools.case_brief(view, "latest", "nope", "mock-small", "geo-1")

    assert tools.set_baseline(agent, first["run_id"])["run_id"] == first["run_id"]
    tools.run_eval(agent, "quickstart", label="second")
    runs = tools.list_runs(agent, limit=1)
    assert len(runs["runs"]) == 1 and runs["more"] is True
    assert runs["baselines"] == {"baseline": first["run_id"]}
    compared = tools.compare_runs(agent, "baseline", "second")
    assert compared["a"]["run_id"] == first["run_id"]
    assert compared["overall"]["n"] == 48 and compared["overall"]["verdict"] == "same"
    assert set(compared["overall"]["pass_rate"]) == {"a", "b", "delta", "ci95", "p"}
    assert len(compared["cells"]) == 4 and "calibration" not in compared

    rows = tools.query(agent, "SELECT case_id FROM cases ORDER BY case_id", limit=5)
    assert rows["columns"] == ["case_id"] and rows["row_count"] == 5 and rows["truncated"]
    same = tools.query(agent, "SELECT 1 AS x, 2 AS x")
    assert same["rows"] == [[1, 2]]
    with pytest.raises(UsageError, match="read-only"):
        tools.query(agent, "DELETE FROM runs")


def test_render_prompt_calls_nothing(agent, quickstart):
    data = tools.render_prompt(agent, "quickstart/eval.yaml", "terse", "geo-1")
    assert data["messages"][1]["content"][0]["text"] == "What is the capital of France?"
    assert data["expected"] == "Paris" and data["truncated"] == {}
    assert not (agent.cwd / ".evalwh").exists()
    with pytest.raises(UsageError, match="no variant 'nope'"):
        api.render_prompt(quickstart, "nope", "geo-1")
    with pytest.raises(UsageError, match="no case 'nope'"):
        api.render_prompt(quickstart, "terse", "nope")


def test_judge_runs_carry_the_calibration_flags(isolated):
    agent = Agent(root=PAIRWISE.parent, env={}, cwd=isolated, allow_code=True)
    brief = tools.run_eval(agent, "pairwise/eval.yaml")
    assert brief["headline_eligible"] is False
    assert any("UNCALIBRATED" in flag for flag in brief["flags"])
    comparison = brief["judging"]["comparisons"][0]
    assert comparison["headline_eligible"] is False and comparison["n_labels"] == 24
    # wins 6, ties 17, loses 1: ties count half, the sign test of 6 against 1 decides
    won_tied_lost = [comparison[k] for k in ("cases_won", "cases_tied", "cases_lost")]
    assert won_tied_lost == [6, 17, 1] and comparison["n_cases"] == 24
    assert comparison["win_rate"] == round(14.5 / 24, 4) and comparison["win_rate_p"] == 0.125
    assert comparison["ci95"] == [0.477, 0.6448] and comparison["verdict"] == "within noise"
    summary = tools.get_run(agent, "latest")
    assert summary["headline_eligible"] is False and summary["flags"] == brief["flags"]
    flags = briefs.judging_for(agent.view(), brief["run_id"])
    assert flags is not None and flags["headline_eligible"] is False


def test_a_failed_run_says_its_cause_first(
    tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-a-key-the-server-refuses")
    server.default = error(401, "invalid x-api-key", error_type="authentication_error")
    root = tmp_path / "root"
    path = needs_anthropic_key(root)
    path.write_text(
        path.read_text().replace(
            "claude-sonnet-4-5}", f"claude-sonnet-4-5, base_url: '{server.url}'}}"
        )
    )
    agent = Agent(root=root, output_dir=root / ".evalwh", env={}, cwd=root)
    brief = tools.run_eval(agent, "eval.yaml")
    cause = "failed: the API key in ANTHROPIC_API_KEY was refused (HTTP 401): check its value"
    assert brief["status"] == "failed" and brief["next"][0].startswith(cause)
    shown = tools.get_run(agent, brief["run_id"])
    assert shown["next"][0] == brief["next"][0]
