"""A tool loop's transcript shaped for the pages (evalwh/reports/transcripts.py): the summary
line, each step's heading, figures, pretty-printed arguments and results, errors in words,
texts cut with their full length said, and a page's bounds on steps; then the file report
embedding the transcripts of the cases it shows (inert data, none for a no-look run)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from evalwh.reports import transcripts
from evalwh.reports.transcripts import page_key, shape, step, summary
from tests.report_runs import SCRIPT, TOOL_ERROR, TOOL_RESULT

DATA = re.compile(r'<script type="application/json" id="evalwh-data">(.*?)</script>', re.S)


def row(role: str, **values: Any) -> dict[str, Any]:
    """A row of sql/transcripts.sql: a step of a cell of 4 steps, 2 turns, 2 calls, 1 error."""
    stored = ("content", "tool_name", "call_id", "arguments", "result", "error", "args_valid")
    figures = ("latency_ms", "input_tokens", "output_tokens", "cost_usd", "cached")
    base = dict.fromkeys((*stored, *figures, "finish_reason"))
    return {
        **base,
        "role": role,
        "turn": 0,
        "n_steps": 4,
        "n_turns": 2,
        "n_calls": 2,
        "n_errors": 1,
        **values,
    }


def test_the_summary_counts_turns_calls_and_errors_in_words() -> None:
    assert summary(3, 2, 1) == "Transcript — 3 turns, 2 tool calls (1 error)"
    assert summary(1, 1, 0) == "Transcript — 1 turn, 1 tool call (0 errors)"
    assert summary(1, 0, 0) == "Transcript — 1 turn, 0 tool calls (0 errors)"


def test_a_model_step_shows_its_text_its_calls_pretty_printed_and_its_figures() -> None:
    calls = [{"id": "call_0_0", "name": "get_weather", "arguments": {"city": "Paris"}}]
    got = step(
        row(
            "assistant",
            turn=1,
            content="Let me look.",
            arguments=json.dumps(calls),
            latency_ms=812.25,
            input_tokens=28,
            output_tokens=19,
            cost_usd=0.00012,
            cached=True,
            finish_reason="tool_calls",
        )
    )
    assert got == {
        "role": "assistant",
        "head": "model · turn 2",
        "figures": "812.2 ms · tokens 28 in / 19 out · cost $0.0001 · from the cache · "
        "finish tool_calls",
        "text": {"t": "Let me look."},
        "calls": [
            {"name": "get_weather", "id": "call_0_0", "args": {"t": '{\n  "city": "Paris"\n}'}}
        ],
    }
    # nothing stored: no figures, no text, no calls
    assert step(row("assistant")) == {
        "role": "assistant",
        "head": "model · turn 1",
        "figures": "",
        "calls": [],
    }


def test_a_tool_step_shows_its_arguments_and_its_result_or_its_error_in_words() -> None:
    ok = step(
        row(
            "tool",
            tool_name="get_weather",
            call_id="c1",
            arguments='{"city": "Rome"}',
            result='{"temp_c": 24}',
            content='{"temp_c": 24}',
            args_valid=True,
            latency_ms=0.04,
        )
    )
    assert ok == {
        "role": "tool",
        "head": "tool get_weather (c1) · turn 1",
        "figures": "0.0 ms",
        "args": {"t": '{\n  "city": "Rome"\n}'},
        "bad_args": False,
        "result": {"t": '{\n  "temp_c": 24\n}'},
    }
    bad = step(
        row(
            "tool",
            tool_name="get_weather",
            arguments='{"town": "Rome"}',
            error="invalid arguments for get_weather: 'city' is a required property",
            content="invalid arguments for get_weather: 'city' is a required property",
            args_valid=False,
        )
    )
    assert bad["bad_args"] is True and "result" not in bad
    assert bad["error"] == {"t": "invalid arguments for get_weather: 'city' is a required property"}
    # a tool that answered text, not JSON: its text is the result
    text = step(row("tool", tool_name="t", result=None, content="plain words"))
    assert text["result"] == {"t": "plain words"} and "error" not in text


def test_a_long_text_is_cut_and_says_its_full_length() -> None:
    got = step(row("assistant", content="x" * 5000), limit=300)
    assert got["text"] == {"t": "x" * 300, "note": "(5,000 characters; the first 300 shown)"}
    assert transcripts.text_limit(1) == transcripts.MAX_TEXT
    assert transcripts.text_limit(10**9) == transcripts.MIN_TEXT


def test_a_cell_shows_its_first_steps_and_counts_the_rest() -> None:
    rows = [row("assistant"), row("tool", tool_name="t"), row("assistant", turn=1)]
    whole = shape(rows)
    assert whole["summary"] == "Transcript — 2 turns, 2 tool calls (1 error)"
    # the query gave 3 of the cell's 4 steps (its MAX_STEPS), this page has room for 2
    assert [s["role"] for s in shape(rows, room=2)["steps"]] == ["assistant", "tool"]
    assert shape(rows, room=2)["more"] == (
        "2 more steps not shown (evalwh sql over the turns table has them all)"
    )
    assert whole["more"].startswith("1 more step not shown")
    none = shape(rows, room=0)
    assert none["steps"] == [] and "this page holds no more transcript steps" in none["more"]


# -- the report's embedded transcripts -----------------------------------------------------
def embedded(page: str) -> dict[str, Any]:
    match = DATA.search(page)
    assert match
    return json.loads(match.group(1))  # type: ignore[no-any-return]


def test_the_report_embeds_each_shown_cells_transcript_as_inert_data(
    tool_runs: dict[str, Any],
) -> None:
    # attack: a tool's result and error holding </details>, <script> and <img onerror>; the
    # page holds them only escaped inside its JSON data, which report.js sets as textContent
    page = tool_runs["page"]
    for raw in (TOOL_RESULT, TOOL_ERROR, SCRIPT, "</details><img", "</details></li>"):
        assert raw not in page
    data = embedded(page)
    key = "\u0000".join(("agent", "scripted-agent", "paris", "0"))
    paris = data["transcripts"][key]
    assert paris["summary"] == "Transcript — 3 turns, 2 tool calls (1 error)"
    assert [s["role"] for s in paris["steps"]] == [
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    assert paris["steps"][1]["bad_args"] is True
    assert "'city' is a required property" in paris["steps"][1]["error"]["t"]
    warmer = data["transcripts"][key.replace("paris", "warmer")]
    assert json.loads(warmer["steps"][2]["result"]["t"])["sky"] == TOOL_RESULT  # whole, as data
    looping = data["transcripts"][key.replace("paris", "looping")]
    assert TOOL_ERROR in looping["steps"][1]["error"]["t"]


def test_a_no_look_runs_report_has_no_transcript(tool_runs: dict[str, Any]) -> None:
    # the same loops ran (their cells are stored), but no step of them: the page draws none
    from evalwh.reports.html import cases_data

    data = cases_data(tool_runs["view"].store, tool_runs["no_look_id"])
    assert [r["c"] for r in data["rows"]] == ["looping", "paris", "warmer"]
    assert data["transcripts"] == {}


def test_a_report_page_embeds_at_most_its_budget_of_steps(
    tool_runs: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the page's cells in order (failures first: looping, then paris, warmer) share 6 steps
    from evalwh.reports.html import cases_data

    monkeypatch.setattr(transcripts, "STEP_BUDGET", 6)
    data = cases_data(tool_runs["view"].store, tool_runs["run_id"])
    shown = [
        len(data["transcripts"][page_key(("r", r["v"], r["m"], r["c"], r["r"]))]["steps"])
        for r in data["rows"]
    ]
    assert [r["c"] for r in data["rows"]] == ["looping", "paris", "warmer"]
    assert shown == [5, 1, 0]
    last = data["transcripts"][page_key(("r", "agent", "scripted-agent", "warmer", 0))]
    assert last["summary"] == "Transcript — 2 turns, 2 tool calls (0 errors)"
    assert "this page holds no more transcript steps" in last["more"]
