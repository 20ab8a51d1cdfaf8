"""Trajectory scorers (evalwh/scoring/trajectory.py): tool-called, tool-not-called, tool-order,
max-tool-calls and args-valid over a cell's tool calls, through the scorecard as a run scores."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalwh.config.model import Case, Criterion
from evalwh.errors import ConfigError
from evalwh.scoring import build_scorecard


def call(name: str, valid: bool | None = True, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments, "turn": 0, "args_valid": valid}


CALLS = [
    call("search", q="paris weather"),
    call("search", False, town="Paris"),
    call("fetch", url="https://example.org"),
    call("answer", None),  # never ran: the loop stopped
]


def scored(calls: list[dict[str, Any]] | None, **options: Any) -> tuple[float, bool, Any]:
    kind = options.pop("type")
    criterion = Criterion("c", kind, options=options, threshold=options.pop("threshold", 0.5))
    card = build_scorecard([criterion], Path("."), "eval.yaml")
    (row,) = card.score("final", Case("c1"), None, calls).criteria
    assert row.error is None, row.error
    return row.score, row.passed, row.details


def test_tool_called_by_name_argument_subset_or_schema() -> None:
    assert scored(CALLS, type="tool-called", tool="search")[:2] == (1.0, True)
    assert scored(CALLS, type="tool-called", tool="delete")[:2] == (0.0, False)
    assert scored(CALLS, type="tool-called", tool="search", args={"town": "Paris"})[1] is True
    assert scored(CALLS, type="tool-called", tool="search", args={"town": "Rome"})[1] is False
    schema = {"type": "object", "required": ["q"]}
    found = scored(CALLS, type="tool-called", tool="search", args_schema=schema)
    assert found == (1.0, True, {"calls": 2, "matching": 1})
    assert scored(None, type="tool-called", tool="search")[1] is False  # no calls at all


def test_tool_not_called() -> None:
    assert scored(CALLS, type="tool-not-called", tool="delete")[:2] == (1.0, True)
    assert scored(CALLS, type="tool-not-called", tool="fetch")[:2] == (0.0, False)


@pytest.mark.parametrize(
    ("tools", "order", "passed"),
    [
        (["search", "fetch"], "subsequence", True),
        (["search", "answer"], "subsequence", True),  # a call between is fine
        (["fetch", "search"], "subsequence", False),  # wrong order
        (["search", "search", "fetch", "answer"], "exact", True),
        (["search", "fetch", "answer"], "exact", False),  # one search missing
    ],
)
def test_tool_order(tools: list[str], order: str, passed: bool) -> None:
    assert scored(CALLS, type="tool-order", tools=tools, order=order)[1] is passed


def test_max_tool_calls_counts_every_call_made() -> None:
    assert scored(CALLS, type="max-tool-calls", max=4)[:2] == (1.0, True)
    assert scored(CALLS, type="max-tool-calls", max=3)[:2] == (0.0, False)


def test_args_valid_is_the_share_of_checked_calls_that_fit() -> None:
    # 3 checked (the call that never ran is not), 2 fit
    score, passed, details = scored(CALLS, type="args-valid", threshold=1.0)
    assert (score, passed, details) == (pytest.approx(2 / 3), False, {"checked": 3, "valid": 2})
    assert scored(None, type="args-valid")[:2] == (1.0, True)


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"type": "tool-called"}, "needs `tool`"),
        ({"type": "tool-order", "tools": []}, "needs `tools`"),
        ({"type": "max-tool-calls", "max": -1}, "`max` must be a whole number"),
        ({"type": "tool-called", "tool": "x", "args_schema": {"type": 3}}, "not a valid JSON"),
    ],
)
def test_bad_options_are_config_errors(options: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        scored(CALLS, **options)
