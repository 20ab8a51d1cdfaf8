"""The agent-facing core without a server: the cost cap (evalwh.engine.budget), root confinement,
truncation, paging and the summaries of evalwh.mcp.briefs, over real runs of the examples."""

from __future__ import annotations

import json
import math
import os
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path

import pytest

from evalwh import api
from evalwh.engine.budget import CostCapError, mcp_cost_cap, over_cap
from evalwh.errors import CostRefusedError, UsageError
from evalwh.mcp import briefs, shaping, tools
from evalwh.mcp.agent import Agent, confine, mcp_root

ROOT = Path(__file__).resolve().parent.parent
PAIRWISE = ROOT / "examples" / "pairwise"


# -- budget ---------------------------------------------------------------------------------


def test_cap_defaults_to_one_dollar_without_a_config_limit():
    assert mcp_cost_cap(None, None, {}) == 1.0


def test_cap_is_the_smaller_of_the_config_limit_and_the_mcp_default():
    assert mcp_cost_cap(None, 0.25, {}) == 0.25
    assert mcp_cost_cap(None, 3.0, {}) == 1.0
    assert mcp_cost_cap(None, 3.0, {"EVALWH_MCP_MAX_COST": "2"}) == 2.0
    assert mcp_cost_cap(None, 0.5, {"EVALWH_MCP_MAX_COST": "2"}) == 0.5


def test_the_default_never_exceeds_the_ceiling():
    env = {"EVALWH_MCP_MAX_COST": "9", "EVALWH_MCP_MAX_COST_CEILING": "4"}
    assert mcp_cost_cap(None, None, env) == 4.0


def test_a_request_within_the_ceiling_is_the_cap():
    assert mcp_cost_cap(3.0, 0.1, {}) == 3.0
    assert mcp_cost_cap(5.0, None, {}) == 5.0
    assert mcp_cost_cap(0.0, None, {}) == 0.0


def test_a_request_above_the_ceiling_is_refused_not_trimmed():
    with pytest.raises(CostCapError) as info:
        mcp_cost_cap(5.01, None, {})
    assert isinstance(info.value, CostRefusedError)
    assert info.value.exit_code == 4
    data = info.value.to_dict()
    assert data["refused"] is True
    assert data["ceiling_usd"] == 5.0
    assert data["cap_usd"] is None
    assert data["spent_usd"] == 0.0
    assert "EVALWH_MCP_MAX_COST_CEILING" in data["reason"] and "not trimmed" in data["reason"]
    assert mcp_cost_cap(20.0, None, {"EVALWH_MCP_MAX_COST_CEILING": "25"}) == 20.0


@pytest.mark.parametrize(
    ("env", "requested"),
    [
        ({"EVALWH_MCP_MAX_COST": "lots"}, None),
        ({"EVALWH_MCP_MAX_COST_CEILING": "-1"}, None),
        ({"EVALWH_MCP_MAX_COST_CEILING": "inf"}, None),
        ({}, -1.0),
        ({}, math.nan),
    ],
)
def test_bad_amounts_are_usage_errors(env, requested):
    with pytest.raises(UsageError):
        mcp_cost_cap(requested, None, env)


def test_over_cap_carries_the_numbers():
    over_cap({"cost_usd": 0.5, "calls": 10}, 0.5, {})  # equal is allowed
    with pytest.raises(CostCapError) as info:
        over_cap({"cost_usd": 0.75, "calls": 10}, 0.5, {})
    data = info.value.to_dict()
    assert (data["estimate_usd"], data["cap_usd"], data["calls"]) == (0.75, 0.5, 10)
    assert "nothing was called" in data["reason"]


# -- plain data, truncation, throttling ----------------------------------------------------


def test_plain_makes_json_ready_data():
    when = datetime(2026, 1, 2, 3, 4, tzinfo=timezone.utc)
    data = shaping.plain(
        {"t": when, "d": Decimal("1.5"), "nan": math.nan, "p": Path("/x"), "s": {2, 1}, "b": b"ab"}
    )
    assert data == {
        "t": "2026-01-02T03:04:00+00:00",
        "d": 1.5,
        "nan": None,
        "p": "/x",
        "s": [1, 2],
        "b": "<2 bytes>",
    }
    json.dumps(data)


def test_num_keeps_four_significant_digits():
    assert shaping.num(0.123456) == 0.1235
    assert shaping.num(8.7e-05) == 8.7e-05
    assert shaping.num(Decimal("1279")) == 1279
    assert shaping.num("218") == 218
    assert shaping.num(None) is None


def test_clip_marks_the_cut_and_the_full_length():
    assert shaping.clip("short", 10) == "short"
    cut = shaping.clip("x" * 50, 10)
    assert cut == "x" * 10 + "…[truncated: 10 of 50 chars]"


def test_clip_tree_records_every_cut_field():
    lengths: dict[str, int] = {}
    out = shaping.clip_tree(
        {"output": "a" * 30, "messages": [{"content": [{"text": "b" * 40}]}], "n": 3},
        20,
        cut=lengths,
    )
    assert lengths == {"output": 30, "messages[0].content[0].text": 40}
    assert out["output"].startswith("a" * 20) and "of 30 chars" in out["output"]
    assert out["n"] == 3


def test_progress_throttle_sends_first_last_and_a_bounded_number():
    throttle = tools.ProgressThrottle(steps=10)
    sent = [done for done in range(1, 1001) if throttle.due(done, 1000)]
    assert sent[0] == 1 and sent[-1] == 1000
    assert len(sent) <= 12
    small = tools.ProgressThrottle(steps=20)
    assert [d for d in range(1, 4) if small.due(d, 3)] == [1, 2, 3]


# -- root -----------------------------------------------------------------------------------


def test_root_from_env_or_working_folder(tmp_path):
    assert mcp_root({}, tmp_path) == tmp_path.resolve()
    (tmp_path / "sub").mkdir()
    assert mcp_root({"EVALWH_MCP_ROOT": "sub"}, tmp_path) == (tmp_path / "sub").resolve()
    with pytest.raises(UsageError, match="EVALWH_MCP_ROOT"):
        mcp_root({"EVALWH_MCP_ROOT": str(tmp_path / "missing")}, tmp_path)


def test_confine_keeps_paths_inside_the_root(tmp_path):
    root = (tmp_path / "root").resolve()
    (root / "evals").mkdir(parents=True)
    assert confine("evals/eval.yaml", root) == root / "evals" / "eval.yaml"
    assert confine(root / "evals", root) == root / "evals"
    for outside in ("../secret.yaml", "/etc/passwd", "evals/../../x.yaml"):
        with pytest.raises(UsageError, match="outside the server's root"):
            confine(outside, root)


def test_confine_follows_symlinks_out_of_the_root(tmp_path):
    root = (tmp_path / "root").resolve()
    root.mkdir()
    elsewhere = tmp_path / "elsewhere.yaml"
    elsewhere.write_text("name: x\n", encoding="utf-8")
    os.symlink(elsewhere, root / "link.yaml")
    with pytest.raises(UsageError, match="outside"):
        confine("link.yaml", root)


# -- over real runs -------------------------------------------------------------------------


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
    summary = tools.get_run(agent, "latest")
    assert summary["headline_eligible"] is False and summary["flags"] == brief["flags"]
    flags = briefs.judging_for(agent.view(), brief["run_id"])
    assert flags is not None and flags["headline_eligible"] is False
