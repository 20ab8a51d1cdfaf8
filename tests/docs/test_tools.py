"""docs/tools.md and examples/tools/ run as written: the example needs no key and no network."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import evalwh
from tests.builders import stored
from tests.conftest import ROOT

EXAMPLE = ROOT / "examples" / "tools" / "eval.yaml"


def test_the_tools_example_runs_with_no_key_and_stores_each_loops_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    result = evalwh.run_eval(EXAMPLE, output_dir=tmp_path / "out")
    assert (result.status, result.exit_code) == ("completed", 0)
    rows = {
        r["case_id"]: r
        for r in stored(
            tmp_path / "out",
            "SELECT case_id, output, passed, finish_reason, error_kind, attempts, tool_calls "
            "FROM cases",
        )
    }
    # a wrong argument name, corrected after the tool's error: three requests
    assert (rows["paris"]["passed"], rows["paris"]["attempts"]) == (True, 3)
    assert rows["paris"]["output"] == "18 °C and clear"
    # two calls in one answer, then the answer: two requests
    assert (rows["warmer"]["passed"], rows["warmer"]["attempts"]) == (True, 2)
    # the model that never stops calling is stopped by max_turns (3), a stored outcome
    looping = rows["looping"]
    assert (looping["finish_reason"], looping["error_kind"], looping["attempts"]) == (
        "turn_limit",
        "turn_limit",
        3,
    )
    assert json.loads(looping["tool_calls"])[0]["arguments"] == {"city": "Atlantis"}
    # the trajectory scorers: paris called the tool with a city (its first call had none)
    scores = {
        (r["case_id"], r["criterion"]): (r["score"], r["passed"])
        for r in stored(tmp_path / "out", "SELECT case_id, criterion, score, passed FROM scores")
    }
    assert scores[("paris", "asked-the-tool")] == (1.0, True)
    assert scores[("paris", "valid-arguments")] == (0.5, False)  # 1 of 2 calls fit
    assert scores[("warmer", "valid-arguments")] == (1.0, True)


def test_the_which_tool_failed_most_query_of_docs_tools_md_answers_in_one_query(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import re

    from tests.conftest import run_cli

    page = (ROOT / "docs" / "tools.md").read_text(encoding="utf-8")
    (command,) = re.findall(r'^evalwh sql "(.+)"$', page, re.M)
    evalwh.run_eval(EXAMPLE, output_dir=tmp_path / "out")
    result = run_cli("sql", command, "--format", "json", "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    # the example's calls: paris 2 (one with a wrong argument name), warmer 2, looping 2
    # (Atlantis: the mock tool's error; the third answer's call is never run)
    answer = json.loads(result.stdout)
    assert answer["rows"] == [
        {"tool_name": "get_weather", "calls": 6, "failed": 3, "bad_arguments": 1}
    ], answer
