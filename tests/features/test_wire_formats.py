"""What lands in ``cases`` for each documented provider reply (tests/fixtures/wire/).

A run of one case against the fake server replaying the reply: the stored answer, why it
ended, the refusal, tool calls, reasoning, every token kind, the cost, and whether the cell
passes (its one criterion passes any non-empty answer). The replies are also checked against
the official SDKs' response models, so a fixture cannot drift from the API's shape.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import evalwh
from tests.builders import stored
from tests.conftest import run_cli, write
from tests.fakes.servers import WIRE, FakeLLMServer, wire

# USD per million tokens, given in the config so the costs below are plain arithmetic
PRICES = {
    "anthropic": "{input_per_mtok: 3, output_per_mtok: 15, cache_read_per_mtok: 0.3, cache_write_per_mtok: 3.75}",
    "openai": "{input_per_mtok: 1.1, output_per_mtok: 4.4, cache_read_per_mtok: 0.55}",
    "gemini": "{input_per_mtok: 0.3, output_per_mtok: 2.5, cache_read_per_mtok: 0.075}",
}
PROVIDERS = {"anthropic": "anthropic", "openai": "openai", "gemini": "google"}
MODELS = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4o", "gemini": "gemini-2.5-flash"}

COLUMNS = (
    "output, finish_reason, refusal, tool_calls, reasoning, input_tokens, output_tokens, "
    "reasoning_tokens, cache_read_tokens, cache_write_tokens, cost_usd, passed, error_kind, "
    "error, extra"
)


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(name, "test-key")


def run_one(
    tmp_path: Path, server: FakeLLMServer, provider: str, fixture: str, more: str = ""
) -> dict[str, Any]:
    """Run one case whose request the server answers with the fixture (``more``: lines added
    to the model entry); its stored row."""
    url = server.openai_url if provider == "openai" else server.url
    server.script(wire(provider, fixture))
    cfg = write(
        tmp_path / "eval.yaml",
        f"""\
models:
  - id: m
    provider: {PROVIDERS[provider]}
    model: {MODELS[provider]}
    base_url: '{url}'
    max_retries: 0
    price: {PRICES[provider]}
{more}
variants:
  - {{id: v, messages: [{{role: user, content: "{{{{ q }}}}"}}]}}
cases:
  - {{id: c1, vars: {{q: question}}}}
scorecard:
  - {{name: answered, type: regex, pattern: "."}}
""",
    )
    evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    (row,) = stored(tmp_path / "out", f"SELECT {COLUMNS} FROM cases")
    for key in ("tool_calls", "extra"):
        row[key] = json.loads(row[key]) if row[key] is not None else None
    return row


def cost(
    tokens_in: int, tokens_out: int, price_in: float, price_out: float, **cached: float
) -> float:
    return (tokens_in * price_in + tokens_out * price_out + sum(cached.values())) / 1e6


# (provider, fixture, the stored row's columns that tell: output ... passed, error_kind)
EXPECTED: list[tuple[str, str, dict[str, Any]]] = [
    (
        "anthropic",
        "plain",
        {
            "output": '{"items":[{"product_name":"Green Tea","price":5.50,"quantity":2},'
            '{"product_name":"Coffee","price":3.00,"quantity":1}],"total":14.0}',
            "finish_reason": "stop",
            "input_tokens": 406,
            "output_tokens": 50,
            "cost_usd": cost(406, 50, 3, 15),
            "passed": True,
            "error_kind": None,
            "extra": {"stop_reason": "end_turn"},
        },
    ),
    (
        "anthropic",
        "max_tokens",
        {
            "output": "I'll create a comprehensive tax guide for someone with multiple W2s and save "
            "it in a file called taxes.txt. Let me do that for you now.",
            "finish_reason": "length",
            "tool_calls": [
                {
                    "name": "make_file",
                    "arguments": {
                        "filename": "taxes.txt",
                        "lines_of_text": [
                            "# COMPREHENSIVE TAX GUIDE FOR INDIVIDUALS WITH MULTIPLE W-2s",
                            "",
                            "## INTRODUCTION",
                            "",
                        ],
                    },
                    "id": "toolu_01EKqbqmZrGRXy18eN7m9kvY",
                }
            ],
            "input_tokens": 450,
            "output_tokens": 124,
            "cost_usd": cost(450, 124, 3, 15),  # what a cut answer cost is kept
            "passed": False,
            "error_kind": "truncated",
        },
    ),
    (
        "anthropic",
        "refusal",
        {
            "output": None,  # never an empty answer
            "finish_reason": "refusal",
            "refusal": "This request was refused due to policy.",
            "input_tokens": 20,
            "output_tokens": 0,
            "passed": False,
            "error_kind": "refusal",
            "error": "refused: This request was refused due to policy.",
        },
    ),
    (
        "anthropic",
        "tool_use",
        {
            "output": "I'll check the current weather in Paris for you.",  # the text before it
            "finish_reason": "tool_calls",
            "tool_calls": [
                {
                    "name": "get_weather",
                    "arguments": {"location": "Paris"},
                    "id": "toolu_01NRLabsLyVHZPKxbKvkfSMn",
                }
            ],
            "input_tokens": 377,
            "output_tokens": 65,
            "passed": True,
            "error_kind": None,
        },
    ),
    (
        "anthropic",
        "thinking",
        {
            "output": "The square root of 144 is 12.",
            "finish_reason": "stop",
            "reasoning": "To find the square root of 144, I need a number that multiplied by "
            "itself gives 144. 12 x 12 = 144.",
            "output_tokens": 62,  # thinking included, as billed
            "cost_usd": cost(45, 62, 3, 15),
            "passed": True,
        },
    ),
    (
        "anthropic",
        "cache_write",
        {
            "input_tokens": 21 + 188086,
            "cache_write_tokens": 188086,
            "cache_read_tokens": 0,
            "cost_usd": cost(21, 393, 3, 15, written=188086 * 3.75),
            "passed": True,
        },
    ),
    (
        "anthropic",
        "cache_read",
        {
            "input_tokens": 21 + 188086,
            "cache_read_tokens": 188086,
            "cache_write_tokens": 0,
            "cost_usd": cost(21, 393, 3, 15, read=188086 * 0.3),
            "passed": True,
        },
    ),
    (
        "openai",
        "plain",
        {
            "finish_reason": "stop",
            "input_tokens": 14,
            "output_tokens": 37,
            "reasoning_tokens": None,  # 0 reported: none used
            "cost_usd": cost(14, 37, 1.1, 4.4),
            "passed": True,
            "extra": {"finish_reason": "stop"},
        },
    ),
    (
        "openai",
        "length",
        {
            "output": '{"',
            "finish_reason": "length",
            "passed": False,
            "error_kind": "truncated",
            "cost_usd": cost(79, 1, 1.1, 4.4),
        },
    ),
    (
        "openai",
        "refusal",
        {
            "output": None,
            "finish_reason": "refusal",
            "refusal": "I'm very sorry, but I can't assist with that.",
            "passed": False,
            "error_kind": "refusal",
            "extra": {"finish_reason": "stop"},
        },
    ),
    (
        "openai",
        "tool_call",
        {
            "output": "",  # content null: no text, the call is in tool_calls
            "finish_reason": "tool_calls",
            "tool_calls": [
                {
                    "name": "GetWeatherArgs",
                    "arguments": {"city": "Edinburgh", "country": "UK", "units": "c"},
                    "id": "call_Y6qJ7ofLgOrBnMD5WbVAeiRV",
                }
            ],
            "passed": False,  # an empty text answer, scored as such
            "error_kind": None,
        },
    ),
    (
        "openai",
        "tool_calls",
        {
            "finish_reason": "tool_calls",
            "tool_calls": [
                {
                    "name": "GetWeatherArgs",
                    "arguments": {"city": "Edinburgh", "country": "GB", "units": "c"},
                    "id": "call_fdNz3vOBKYgOIpMdWotB9MjY",
                },
                {
                    "name": "get_stock_price",
                    "arguments": {"ticker": "AAPL", "exchange": "NASDAQ"},
                    "id": "call_h1DWI1POMJLb0KwIyQHWXD4p",
                },
            ],
        },
    ),
    (
        "openai",
        "reasoning_cached",
        {
            "output": "The answer is 42.",
            "input_tokens": 2006,
            "output_tokens": 300,
            "reasoning_tokens": 192,
            "cache_read_tokens": 1920,
            "cost_usd": cost(86, 300, 1.1, 4.4, read=1920 * 0.55),
            "passed": True,
        },
    ),
    (
        "gemini",
        "plain",
        {
            "output": "A red square on a white background.",
            "finish_reason": "stop",
            "cost_usd": cost(265, 9, 0.3, 2.5),
            "passed": True,
        },
    ),
    (
        "gemini",
        "max_tokens",
        {
            "output": "Once upon a time, in a land far away, there lived a",
            "finish_reason": "length",
            "passed": False,
            "error_kind": "truncated",
            "extra": {"finish_reason": "MAX_TOKENS", "model_version": "gemini-2.0-flash"},
        },
    ),
    (
        "gemini",
        "safety",
        {
            "output": None,
            "finish_reason": "content_filter",
            "passed": False,
            "error_kind": "content_filter",
            "error": "blocked by the provider's safety filter (finish_reason: SAFETY)",
            "input_tokens": 14,
        },
    ),
    (
        "gemini",
        "recitation",
        {
            "output": "It was the best of times, it was the worst of times,",
            "finish_reason": "content_filter",
            "passed": False,
            "error_kind": "content_filter",
            "error": "blocked by the provider's safety filter (finish_reason: RECITATION)",
        },
    ),
    (
        "gemini",
        "blocked_prompt",
        {
            "output": None,
            "finish_reason": "content_filter",
            "passed": False,
            "error_kind": "content_filter",
            "error": "blocked by the provider's safety filter (block_reason: SAFETY)",
        },
    ),
    (
        "gemini",
        "function_call",
        {
            "output": "",
            "finish_reason": "tool_calls",
            "tool_calls": [
                {"name": "get_current_weather", "arguments": {"location": "Boston, MA"}}
            ],
            "error_kind": None,
        },
    ),
    (
        "gemini",
        "thinking",
        {
            "output": "Red.",
            "reasoning": "The user asks for the colour; the image is uniformly red.",
            "reasoning_tokens": 41,
            "output_tokens": 43,  # 2 answer + 41 thinking, billed as output
            "cost_usd": cost(290, 43, 0.3, 2.5),
            "passed": True,
        },
    ),
    (
        "gemini",
        "cached",
        {
            "input_tokens": 323396,
            "cache_read_tokens": 323383,
            "cost_usd": cost(13, 9, 0.3, 2.5, read=323383 * 0.075),
            "passed": True,
        },
    ),
    (
        "anthropic",
        "overloaded_529",
        {
            "output": None,
            "finish_reason": None,
            "error_kind": "server",
            "error": "anthropic: HTTP 529: overloaded_error: Overloaded",
            "passed": False,
        },
    ),
    (
        "openai",
        "overloaded_503",
        {
            "error_kind": "server",
            "error": "openai: HTTP 503: server_error: The engine is currently overloaded, please "
            "try again later",
        },
    ),
    (
        "openai",
        "rate_limited_429",
        {"error_kind": "rate_limit", "passed": False},
    ),
    (
        "gemini",
        "overloaded_503",
        {
            "error_kind": "server",
            "error": "google: HTTP 503: UNAVAILABLE: The model is overloaded. Please try again later.",
        },
    ),
]


@pytest.mark.parametrize(
    ("provider", "fixture", "expected"),
    EXPECTED,
    ids=[f"{p}-{f}" for p, f, _ in EXPECTED],
)
def test_a_documented_reply_is_stored_as_the_model_gave_it(
    tmp_path: Path, server: FakeLLMServer, provider: str, fixture: str, expected: dict[str, Any]
) -> None:
    row = run_one(tmp_path, server, provider, fixture)
    got = {key: row[key] for key in expected}
    if "cost_usd" in expected:
        assert got.pop("cost_usd") == pytest.approx(expected["cost_usd"], abs=1e-12)
        expected = {k: v for k, v in expected.items() if k != "cost_usd"}
    assert got == expected


def test_every_fixture_has_a_stored_row_test_and_a_readme_line() -> None:
    files = {(p.parent.name, p.stem) for p in WIRE.glob("*/*.json")}
    assert files == {(p, f) for p, f, _ in EXPECTED}
    readme = (WIRE / "README.md").read_text()
    for provider, fixture in files:
        assert f"{fixture}.json" in readme, (provider, fixture)


@pytest.mark.parametrize("fixture", sorted(p.stem for p in (WIRE / "anthropic").glob("*.json")))
def test_the_anthropic_replies_are_the_sdks_shapes(fixture: str) -> None:
    from anthropic.types import Message
    from anthropic.types.shared import ErrorResponse

    body = json.loads((WIRE / "anthropic" / f"{fixture}.json").read_text())
    model = ErrorResponse if body.get("type") == "error" else Message
    assert model.model_validate(body).model_dump(exclude_unset=True) == body


@pytest.mark.parametrize("fixture", sorted(p.stem for p in (WIRE / "openai").glob("*.json")))
def test_the_openai_replies_are_the_sdks_shapes(fixture: str) -> None:
    from openai.types.chat import ChatCompletion
    from openai.types.shared import ErrorObject

    body = json.loads((WIRE / "openai" / f"{fixture}.json").read_text())
    if "error" in body:
        assert (
            ErrorObject.model_validate(body["error"]).model_dump(exclude_unset=True)
            == body["error"]
        )
    else:
        assert ChatCompletion.model_validate(body).model_dump(exclude_unset=True) == body


def test_a_runs_finish_reasons_are_shown_on_every_surface(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    """One answer truncated, one refused, one plain: the run summary, `evalwh show` (text and
    JSON), the HTML report (and so the viewer, which renders it), the MCP brief, the Markdown
    comment and the JSON export all say so, with the cell's n."""
    from evalwh.api.view import WarehouseView
    from evalwh.mcp.briefs import run_brief, show_brief
    from evalwh.reports.exports import document, markdown
    from evalwh.reports.html import render_run
    from evalwh.warehouse.store import Warehouse

    server.script(wire("openai", "length"), wire("openai", "refusal"), wire("openai", "plain"))
    cfg = write(
        tmp_path / "eval.yaml",
        f"""\
settings: {{concurrency: 1}}
models:
  - {{id: m, provider: openai, model: gpt-4o, base_url: '{server.openai_url}', max_retries: 0}}
variants:
  - {{id: v, messages: [{{role: user, content: "{{{{ q }}}}"}}]}}
cases:
  - {{id: c1, vars: {{q: one}}}}
  - {{id: c2, vars: {{q: two}}}}
  - {{id: c3, vars: {{q: three}}}}
scorecard:
  - {{name: answered, type: regex, pattern: "."}}
""",
    )
    out = tmp_path / ".evalwh"
    result = evalwh.run_eval(cfg, output_dir=out)
    line = "v × m: 1 truncated, 1 refused (of 3 answers)"
    assert [(r["n"], r["n_truncated"], r["n_refused"]) for r in result.endings] == [(3, 1, 1)]
    assert run_brief(result)["endings"][0]["text"] == "1 truncated, 1 refused (of 3 answers)"
    shown = run_cli("show", result.run_id, cwd=tmp_path)
    assert shown.returncode == 0 and line in shown.stdout
    as_json = json.loads(run_cli("--json", "show", result.run_id, cwd=tmp_path).stdout)
    assert as_json["endings"][0]["n_truncated"] == 1
    view = WarehouseView(out / "warehouse.duckdb")
    assert show_brief(view.show(result.run_id))["endings"][0]["refused"] == 1
    store = Warehouse(out / "warehouse.duckdb")
    assert "v × m: 1 truncated, 1 refused (of 3 answers)" in render_run(store, result.run_id)
    assert f"- {line}" in markdown(store, result.run_id)
    exported = {r["case_id"]: r for r in document(store, result.run_id)["cases"]}
    assert {k: r["finish_reason"] for k, r in exported.items()} == {
        "c1": "length",
        "c2": "refusal",
        "c3": "stop",
    }
    assert exported["c2"]["refusal"] == "I'm very sorry, but I can't assist with that."


def test_a_cached_truncated_answer_fails_as_the_one_first_received(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    first = run_one(tmp_path, server, "openai", "length")
    again = stored_again(tmp_path)
    assert server.count == 1  # the second run asked nothing: the answer came from the cache
    for row in (first, again):
        assert (row["finish_reason"], row["error_kind"], row["passed"]) == (
            "length",
            "truncated",
            False,
        )


def stored_again(tmp_path: Path) -> dict[str, Any]:
    """The same config run again in the same folder: the latest run's row."""
    evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out")
    rows = stored(
        tmp_path / "out",
        f"SELECT {COLUMNS}, cached FROM cases ORDER BY created_at DESC LIMIT 1",
    )
    return rows[0]


def test_on_truncated_score_scores_a_cut_answer_as_given(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    row = run_one(tmp_path, server, "openai", "length", more="    on_truncated: score")
    got = {k: row[k] for k in ("output", "finish_reason", "error", "passed")}
    assert got == {"output": '{"', "finish_reason": "length", "error": None, "passed": True}
