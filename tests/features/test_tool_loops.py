"""Tool loops against the fake server, in each provider's native wire format (docs/tools.md).

Each test scripts the fake server's model replies (tool calls as each API returns them, built
from its API reference: Anthropic ``tool_use`` blocks, OpenAI ``message.tool_calls``, Gemini
``functionCall`` parts) and checks what evalwh sent back (``tool_result`` blocks in a user turn,
``tool`` messages, ``functionResponse`` parts) and what it stored.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import evalwh
from tests.builders import stored
from tests.conftest import write
from tests.fakes.servers import Behavior, FakeLLMServer, RecordedRequest, raw, reply, server_error

APIS = ("anthropic", "openai", "gemini")
PROVIDERS = {"anthropic": "anthropic", "openai": "openai", "gemini": "google"}
MODELS = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4o", "gemini": "gemini-2.5-flash"}

WEATHER = """\
  - name: get_weather
    description: The current weather in a city.
    parameters:
      type: object
      properties: {city: {type: string}}
      required: [city]
      additionalProperties: false
    mock:
      - when: {args: {city: Paris}}
        result: {temp_c: 18}
      - when: {args: {city: Rome}}
        result: {temp_c: 24}
"""


KEY_NAMES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY")


def _run_with_keys(cfg: Path, out: Path, keys: dict[str, str]) -> None:
    """tests.features.test_journal's child run, with the API keys the test set."""
    import os

    from tests.features.test_journal import _run

    os.environ.update(keys)
    _run(cfg, out)


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEY_NAMES:
        monkeypatch.setenv(name, "test-key")


def calls(api: str, *wanted: tuple[str, dict[str, Any]]) -> Behavior:
    """A reply that calls tools, as ``api`` returns one."""
    if api == "anthropic":
        return raw(
            200,
            {
                "id": "msg_tools",
                "type": "message",
                "role": "assistant",
                "model": MODELS[api],
                "content": [
                    {"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": args}
                    for i, (name, args) in enumerate(wanted)
                ],
                "stop_reason": "tool_use",
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 5},
            },
        )
    if api == "openai":
        return raw(
            200,
            {
                "id": "chatcmpl-tools",
                "object": "chat.completion",
                "created": 0,
                "model": MODELS[api],
                "choices": [
                    {
                        "index": 0,
                        "message": {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [
                                {
                                    "id": f"call_{i}",
                                    "type": "function",
                                    "function": {"name": name, "arguments": json.dumps(args)},
                                }
                                for i, (name, args) in enumerate(wanted)
                            ],
                        },
                        "finish_reason": "tool_calls",
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            },
        )
    return raw(
        200,
        {
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [{"functionCall": {"name": n, "args": a}} for n, a in wanted],
                    },
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": 10,
                "candidatesTokenCount": 5,
                "totalTokenCount": 15,
            },
        },
    )


def results_sent(api: str, req: RecordedRequest) -> list[tuple[Any, str, bool]]:
    """The tool results a request carries back, in the native format: (the call it answers,
    the result's text, whether it is an error)."""
    body = req.body
    if api == "anthropic":
        last = body["messages"][-1]
        assert last["role"] == "user"
        return [
            (b["tool_use_id"], b["content"], bool(b.get("is_error")))
            for b in last["content"]
            if b["type"] == "tool_result"
        ]
    if api == "openai":
        tail = []
        for m in reversed(body["messages"]):
            if m["role"] != "tool":
                break
            # the API has no error flag: an error is the text evalwh writes for one
            text = m["content"]
            error = text.startswith(("invalid arguments", "unknown tool")) or " failed: " in text
            tail.append((m["tool_call_id"], text, error))
        return tail[::-1]
    last = body["contents"][-1]
    assert last["role"] == "user"
    out = []
    for part in last["parts"]:
        response = part["functionResponse"]
        error = "error" in response["response"]
        value = response["response"]["error" if error else "result"]
        out.append(
            (response["name"], value if isinstance(value, str) else json.dumps(value), error)
        )
    return out


def tools_offered(api: str, req: RecordedRequest) -> list[str]:
    body = req.body
    if api == "anthropic":
        assert all("input_schema" in t for t in body["tools"])
        return [t["name"] for t in body["tools"]]
    if api == "openai":
        assert all(t["type"] == "function" for t in body["tools"])
        return [t["function"]["name"] for t in body["tools"]]
    (group,) = body["tools"]
    return [d["name"] for d in group["functionDeclarations"]]


def config(
    tmp_path: Path, server: FakeLLMServer, api: str, *, tools: str = WEATHER, loop: str = ""
) -> Path:
    url = server.openai_url if api == "openai" else server.url
    names = [line.split(":", 1)[1].strip() for line in tools.splitlines() if "- name:" in line]
    return write(
        tmp_path / "eval.yaml",
        f"""\
tools:
{tools}
models:
  - id: m
    provider: {PROVIDERS[api]}
    model: {MODELS[api]}
    base_url: '{url}'
    max_retries: 0
    price: {{input_per_mtok: 1, output_per_mtok: 2}}
variants:
  - id: v
    messages: [{{role: user, content: "Weather?"}}]
    tools: [{", ".join(names)}]
    {loop}
cases:
  - {{id: c1}}
scorecard:
  - {{name: answered, type: contains, value: "sunny"}}
""",
    )


def row(tmp_path: Path) -> dict[str, Any]:
    (found,) = stored(
        tmp_path / "out",
        "SELECT output, finish_reason, tool_calls, error, error_kind, passed, input_tokens, "
        "output_tokens, cost_usd FROM cases",
    )
    return found


@pytest.mark.parametrize("api", APIS)
def test_one_tool_call_goes_back_in_the_native_format_and_the_final_answer_is_stored(
    tmp_path: Path, server: FakeLLMServer, api: str
) -> None:
    server.script(calls(api, ("get_weather", {"city": "Paris"})), reply("sunny, 18 C"))
    evalwh.run_eval(config(tmp_path, server, api), output_dir=tmp_path / "out")
    first, second = server.requests
    assert tools_offered(api, first) == tools_offered(api, second) == ["get_weather"]
    ((answered, text, is_error),) = results_sent(api, second)
    assert (json.loads(text), is_error) == ({"temp_c": 18}, False)
    assert answered == {"anthropic": "toolu_0", "openai": "call_0", "gemini": "get_weather"}[api]
    found = row(tmp_path)
    assert (found["output"], found["finish_reason"], found["passed"]) == (
        "sunny, 18 C",
        "stop",
        True,
    )
    # both turns' tokens and their cost: 10 + prompt of the second turn in, 5 + answer out
    assert found["input_tokens"] > 10 and found["output_tokens"] > 5
    assert found["cost_usd"] == pytest.approx(
        (found["input_tokens"] * 1 + found["output_tokens"] * 2) / 1e6
    )
    # the transcript: the call, its result, the final answer; the turns' tokens sum to the cell's
    turns = stored(
        tmp_path / "out",
        "SELECT seq, turn, role, content, tool_name, call_id, arguments, result, error, "
        "args_valid, input_tokens, output_tokens, finish_reason FROM turns ORDER BY seq",
    )
    assert [(t["seq"], t["turn"], t["role"], t["tool_name"]) for t in turns] == [
        (0, 0, "assistant", None),
        (1, 0, "tool", "get_weather"),
        (2, 1, "assistant", None),
    ]
    call, result, final = turns
    assert json.loads(call["arguments"])[0]["arguments"] == {"city": "Paris"}
    assert call["finish_reason"] == "tool_calls" and final["finish_reason"] == "stop"
    assert (json.loads(result["result"]), result["error"], result["args_valid"]) == (
        {"temp_c": 18},
        None,
        True,
    )
    assert (
        result["call_id"] == {"anthropic": "toolu_0", "openai": "call_0", "gemini": "call_0_0"}[api]
    )
    assert final["content"] == "sunny, 18 C"
    assert call["input_tokens"] + final["input_tokens"] == found["input_tokens"]
    assert call["output_tokens"] + final["output_tokens"] == found["output_tokens"]


@pytest.mark.parametrize("api", APIS)
def test_two_calls_of_one_answer_run_concurrently_and_go_back_in_one_turn(
    tmp_path: Path, server: FakeLLMServer, api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalwh.engine.tools import ToolBox

    started: list[str] = []
    both = asyncio.Event()
    real = ToolBox.run

    async def run(self: ToolBox, tools: Any, name: Any, arguments: Any) -> Any:
        started.append(arguments["city"])
        if len(started) == 2:
            both.set()
        # each call waits until the other has started: run one after the other, they would
        # wait forever (the timeout fails the test instead)
        await asyncio.wait_for(both.wait(), timeout=30)
        return await real(self, tools, name, arguments)

    monkeypatch.setattr(ToolBox, "run", run)
    server.script(
        calls(api, ("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})),
        reply("sunny everywhere"),
    )
    evalwh.run_eval(config(tmp_path, server, api), output_dir=tmp_path / "out")
    sent = results_sent(api, server.requests[1])
    assert [json.loads(text) for _, text, _ in sent] == [{"temp_c": 18}, {"temp_c": 24}]
    assert row(tmp_path)["output"] == "sunny everywhere"


@pytest.mark.parametrize("api", APIS)
def test_a_call_with_invalid_arguments_goes_back_as_the_tools_error_and_the_model_corrects_it(
    tmp_path: Path, server: FakeLLMServer, api: str
) -> None:
    server.script(
        calls(api, ("get_weather", {"town": "Paris"})),  # the schema wants city, nothing else
        calls(api, ("get_weather", {"city": "Paris"})),
        reply("sunny"),
    )
    evalwh.run_eval(config(tmp_path, server, api), output_dir=tmp_path / "out")
    assert server.count == 3
    ((_, refused, is_error),) = results_sent(api, server.requests[1])
    assert is_error and "invalid arguments for get_weather" in refused and "city" in refused
    ((_, text, is_error),) = results_sent(api, server.requests[2])
    assert (json.loads(text), is_error) == ({"temp_c": 18}, False)
    assert row(tmp_path)["passed"] is True


@pytest.mark.parametrize("api", APIS)
def test_a_loop_stopped_by_max_turns_is_a_stored_outcome(
    tmp_path: Path, server: FakeLLMServer, api: str
) -> None:
    server.default = calls(api, ("get_weather", {"city": "Paris"}))  # it never stops calling
    cfg = config(tmp_path, server, api, loop="loop: {max_turns: 2}")
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert server.count == 2  # no third request
    found = row(tmp_path)
    assert (found["finish_reason"], found["error_kind"], found["passed"]) == (
        "turn_limit",
        "turn_limit",
        False,
    )
    assert "max_turns (2)" in found["error"]
    assert json.loads(found["tool_calls"])[0]["name"] == "get_weather"
    # a run of nothing but errored cells is `failed` (max_error_rate), yet it ran to its end
    assert result.status == "failed" and result.run_id


PYTHON_TOOLS = """\
  - name: lookup
    description: Looks a key up.
    parameters: {type: object, properties: {key: {type: string}}, required: [key]}
    python: "tools.py:lookup"
    timeout_s: 1
"""


@pytest.mark.parametrize("api", APIS)
def test_a_tool_that_raises_answers_the_model_with_its_error(
    tmp_path: Path, server: FakeLLMServer, api: str
) -> None:
    write(tmp_path / "tools.py", "def lookup(key):\n    raise KeyError(key)\n")
    server.script(calls(api, ("lookup", {"key": "k1"})), reply("sunny anyway"))
    evalwh.run_eval(config(tmp_path, server, api, tools=PYTHON_TOOLS), output_dir=tmp_path / "out")
    ((_, text, is_error),) = results_sent(api, server.requests[1])
    assert is_error and text == "lookup failed: KeyError: 'k1'"
    assert row(tmp_path)["passed"] is True


@pytest.mark.parametrize("api", APIS)
def test_a_tool_that_hangs_is_killed_at_its_timeout(
    tmp_path: Path, server: FakeLLMServer, api: str
) -> None:
    # blocks forever: only the kill at timeout_s (1 s) ends the call
    write(
        tmp_path / "tools.py",
        "import threading\n\ndef lookup(key):\n    threading.Event().wait()\n",
    )
    server.script(calls(api, ("lookup", {"key": "k1"})), reply("sunny anyway"))
    evalwh.run_eval(config(tmp_path, server, api, tools=PYTHON_TOOLS), output_dir=tmp_path / "out")
    ((_, text, is_error),) = results_sent(api, server.requests[1])
    assert is_error and text == "lookup failed: timed out after 1 s and was stopped"


@pytest.mark.parametrize("api", APIS)
def test_retrying_a_failed_loop_does_not_repeat_its_finished_turns(
    tmp_path: Path, server: FakeLLMServer, api: str
) -> None:
    server.script(calls(api, ("get_weather", {"city": "Paris"})), server_error(400))
    cfg = config(tmp_path, server, api)
    first = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert row(tmp_path)["error_kind"] is not None and server.count == 2
    server.reset()
    server.script(reply("sunny"))
    evalwh.run_eval(cfg, output_dir=tmp_path / "out", retry_errors=first.run_id)
    # the first turn came from the response cache: only the failed turn was sent again
    assert server.count == 1
    assert results_sent(api, server.requests[0])[0][2] is False
    assert row(tmp_path)["output"] == "sunny"


MOCK_LOOP = """\
tools:
  - name: lookup
    description: Looks a key up.
    parameters: {type: object, properties: {key: {type: string}}, required: [key]}
    python: "lookup.py:lookup"
models:
  - id: m
    provider: mock
    mock:
      default: "the answer echoes {{ 'sk-ant-api03-' ~ 'B' * 30 }}"
      rules:
        - when: {turn: 0}
          tool_calls: [{name: lookup, arguments: {key: k1}}]
variants:
  - {id: v, messages: [{role: user, content: "hi"}], tools: [lookup]}
cases:
  - {id: c1}
scorecard:
  - {name: echoes, type: contains, value: echoes}
"""
# the tool returns a key: in the transcript it is model and tool output, redacted as answers are
LOOKUP = "def lookup(key):\n    return {'value': 'sk-ant-api03-' + 'A' * 30}\n"


def loop_config(tmp_path: Path, more: str = "") -> Path:
    write(tmp_path / "lookup.py", LOOKUP)
    return write(tmp_path / "eval.yaml", MOCK_LOOP + more)


def test_a_transcript_is_stored_redacted_and_exported_beside_its_cell(tmp_path: Path) -> None:
    # attack: a model or a tool echoing a key into the transcript; it is stored as ***
    cfg = loop_config(tmp_path)
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    turns = stored(tmp_path / "out", "SELECT * FROM turns ORDER BY seq")
    assert [t["role"] for t in turns] == ["assistant", "tool", "assistant"]
    text = json.dumps(turns, default=str)
    assert "sk-ant-" not in text and "***" in text
    exported = tmp_path / "out" / "exports" / "turns" / f"run_id={result.run_id}" / "turns.parquet"
    import duckdb

    rows = duckdb.sql(f"SELECT role, result FROM '{exported}' ORDER BY seq").fetchall()
    assert [r[0] for r in rows] == ["assistant", "tool", "assistant"]
    assert "***" in rows[1][1]


def test_a_transcript_is_stored_as_written_with_redact_outputs_false(tmp_path: Path) -> None:
    cfg = loop_config(tmp_path, "privacy: {redact_outputs: false}\n")
    evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    texts = stored(tmp_path / "out", "SELECT content, result FROM turns ORDER BY seq")
    assert "sk-ant-api03-AAAA" in texts[1]["result"] and "sk-ant-api03-BBBB" in texts[2]["content"]


def test_a_no_look_run_stores_no_transcript(tmp_path: Path) -> None:
    cfg = loop_config(tmp_path, "privacy: {no_look: true}\n")
    evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert stored(tmp_path / "out", "SELECT count(*) AS n FROM turns") == [{"n": 0}]
    (cell,) = stored(tmp_path / "out", "SELECT passed, attempts FROM cases")
    assert cell == {"passed": True, "attempts": 2}  # the loop ran: only its transcript is gone


def test_a_single_answers_tool_calls_are_scored_by_trajectory_scorers(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    # no tools offered: one request, whose answer's calls are scored (never run)
    server.script(calls("openai", ("get_weather", {"city": "Paris"})))
    cfg = write(
        tmp_path / "eval.yaml",
        f"""\
models:
  - {{id: m, provider: openai, model: gpt-4o, base_url: '{server.openai_url}', price: 0}}
variants:
  - {{id: v, messages: [{{role: user, content: "Weather?"}}]}}
cases:
  - {{id: c1}}
scorecard:
  - {{name: weather, type: tool-called, tool: get_weather, args: {{city: Paris}}}}
  - {{name: no-delete, type: tool-not-called, tool: delete}}
  - {{name: unchecked, type: args-valid}}
""",
    )
    evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    rows = stored(tmp_path / "out", "SELECT criterion, passed FROM scores ORDER BY criterion")
    assert {r["criterion"]: r["passed"] for r in rows} == {
        "weather": True,
        "no-delete": True,
        "unchecked": True,  # nothing was checked against a schema
    }
    assert server.count == 1 and stored(tmp_path / "out", "SELECT count(*) AS n FROM turns") == [
        {"n": 0}
    ]


@pytest.mark.parametrize(
    "api",
    [
        "openai",
        pytest.param("anthropic", marks=pytest.mark.slow),
        pytest.param("gemini", marks=pytest.mark.slow),
    ],
)
def test_a_loop_killed_mid_way_resumes_without_sending_its_finished_turns_again(
    tmp_path: Path, server: FakeLLMServer, api: str
) -> None:
    """A run SIGKILLed while its loop waits for its third answer (two calls answered, their
    tools run): ``--resume`` replays the two journaled answers and sends only the third
    request, carrying both results; the cell is stored once with its whole transcript. The
    kill lands at a known point: the fake server kills the run when the request arrives."""
    import os
    import signal

    from tests.features.test_journal import _CHILDREN

    server.script(
        calls(api, ("get_weather", {"city": "Paris"})),
        calls(api, ("get_weather", {"city": "Rome"})),
    )
    server.default = reply("sunny in both")
    cfg = config(tmp_path, server, api)
    out = tmp_path / "out"
    # the keys this test set: a forkserver an earlier test started has not got them
    keys = {k: os.environ[k] for k in KEY_NAMES}
    proc = _CHILDREN.Process(target=_run_with_keys, args=(cfg, out, keys))

    def kill_at_the_third_request(req: RecordedRequest) -> None:
        if req.index == 2:
            assert proc.pid is not None
            os.kill(proc.pid, signal.SIGKILL)

    server.responder = kill_at_the_third_request
    proc.start()
    proc.join(timeout=120)
    assert proc.exitcode == -signal.SIGKILL
    server.responder = None
    assert server.count == 3 and stored(out, "SELECT count(*) AS n FROM cases") == [{"n": 0}]
    server.reset()

    ((run_id,),) = [tuple(r.values()) for r in stored(out, "SELECT run_id FROM runs")]
    result = evalwh.run_eval(cfg, resume=run_id, output_dir=out)

    # one request: the third turn, with both tools' results; none of the finished turns
    assert server.count == 1
    ((_, text, is_error),) = results_sent(api, server.requests[0])
    assert (json.loads(text), is_error) == ({"temp_c": 24}, False)
    assert result.status == "completed" and result.totals["n_passed"] == 1
    found = row(tmp_path)
    assert found["output"] == "sunny in both"
    turns = stored(out, "SELECT role, tool_name, cached FROM turns ORDER BY seq")
    assert [(t["role"], t["tool_name"]) for t in turns] == [
        ("assistant", None),
        ("tool", "get_weather"),
        ("assistant", None),
        ("tool", "get_weather"),
        ("assistant", None),
    ]
    (totals,) = stored(out, "SELECT totals FROM runs")
    assert json.loads(totals["totals"])["replayed"] == 2
