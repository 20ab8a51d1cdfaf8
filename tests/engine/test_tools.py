"""Running one tool call (evalwh/engine/tools.py): the schema check, mock rules, python and
command implementations, and every way an implementation can fail becoming the call's error."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from evalwh.config.tools import ToolSpec, ToolUse
from evalwh.engine.tools import ToolBox, ToolOutcome

CITY = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}


def tool(kind: str, impl: Any, **more: Any) -> ToolSpec:
    return ToolSpec("get_weather", "The weather.", CITY, kind, impl, **more)


def call(spec: ToolSpec, arguments: Any, name: str = "get_weather") -> ToolOutcome:
    box = ToolBox()
    try:
        return asyncio.run(box.run(ToolUse((spec,)), name, arguments))
    finally:
        box.close()


MOCK = tool(
    "mock",
    [
        {"when": {"args": {"city": "Paris"}}, "result": {"temp_c": 18}},
        {"when": {"args": {"city": "Atlantis"}}, "error": "no such city"},
    ],
)


def test_the_first_mock_rule_whose_args_match_answers() -> None:
    found = call(MOCK, {"city": "Paris"})
    assert (found.result, found.error, found.args_valid) == ({"temp_c": 18}, None, True)
    assert found.text() == '{"temp_c": 18}'
    failed = call(MOCK, {"city": "Atlantis"})
    assert failed.error == "get_weather failed: no such city" and failed.text() == failed.error
    assert call(MOCK, {"city": "Oslo"}).error == (
        "get_weather failed: no mock rule matches these arguments"
    )


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ({"town": "Paris"}, "'city' is a required property"),
        ({"city": 3}, "3 is not of type 'string' (at city)"),
        ("{not json", "arguments must be a JSON object"),
    ],
)
def test_arguments_that_do_not_fit_the_schema_never_run(arguments: Any, why: str) -> None:
    found = call(MOCK, arguments)
    assert found.args_valid is False and found.result is None
    assert found.error is not None and found.error.startswith("invalid arguments for get_weather")
    assert why in found.error


def test_a_call_to_a_tool_not_offered_is_an_error_naming_the_offered_ones() -> None:
    found = call(MOCK, {"city": "Paris"}, name="rm_rf")
    assert found.error == "unknown tool 'rm_rf' (offered: get_weather)"
    assert found.args_valid is False


def python_tool(tmp_path: Path, body: str, **more: Any) -> ToolSpec:
    (tmp_path / "weather.py").write_text(body, encoding="utf-8")
    return tool("python", "weather.py:get_weather", root=tmp_path, **more)


def test_a_python_tool_is_called_with_the_arguments_as_keywords(tmp_path: Path) -> None:
    spec = python_tool(
        tmp_path, "def get_weather(city):\n    return {'city': city, 'temp_c': 18}\n"
    )
    assert call(spec, {"city": "Paris"}).result == {"city": "Paris", "temp_c": 18}


def test_a_python_tool_that_exits_is_the_calls_error(tmp_path: Path) -> None:
    # attack: a tool calling os._exit must not end evalwh
    spec = python_tool(tmp_path, "import os\n\ndef get_weather(city):\n    os._exit(3)\n")
    found = call(spec, {"city": "Paris"})
    assert found.error == "get_weather failed: exited with code 3"


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_DATA is enforced on Linux")
def test_a_python_tool_growing_a_list_past_memory_mb_is_stopped_and_answers_the_next_call(
    tmp_path: Path,
) -> None:
    # attack: a tool asked (by an untrusted model) for something that grows without end
    body = (
        "def get_weather(city):\n"
        "    hoard = []\n"
        "    while city == 'everywhere':\n"
        "        hoard.append(' ' * (1 << 20))\n"
        "    return {'city': city}\n"
    )
    spec = python_tool(tmp_path, body, memory_mb=200)
    box = ToolBox()

    async def both() -> list[ToolOutcome]:
        use = ToolUse((spec,))
        return [
            await box.run(use, "get_weather", {"city": "everywhere"}),
            await box.run(use, "get_weather", {"city": "Paris"}),
        ]

    try:
        hungry, next_call = asyncio.run(both())
    finally:
        box.close()
    assert hungry.error == "get_weather failed: ran out of memory (memory_mb: 200)"
    assert (next_call.result, next_call.error) == ({"city": "Paris"}, None)


def test_a_python_tool_whose_result_is_not_json_is_the_calls_error(tmp_path: Path) -> None:
    spec = python_tool(tmp_path, "def get_weather(city):\n    return {1, 2}\n")
    assert call(spec, {"city": "Paris"}).error == "get_weather failed: its result is not JSON: set"


COMMAND = """\
import json, os, sys
call = json.load(sys.stdin)
city = call["arguments"]["city"]
if city == "Atlantis":
    print(json.dumps({"error": "no such city"}))
elif city == "Env":
    print(json.dumps({"result": sorted(k for k in os.environ if "TOKEN" in k)}))
elif city == "Plain":
    print("just text")
elif city == "everywhere":
    hoard = []
    while True:
        hoard.append(" " * (1 << 20))
elif city == "Hang":
    import time
    while True:
        time.sleep(1)
else:
    print(json.dumps({"result": {"name": call["name"], "city": city}}))
"""


def command_tool(tmp_path: Path, **more: Any) -> ToolSpec:
    (tmp_path / "weather_cmd.py").write_text(COMMAND, encoding="utf-8")
    return tool("command", [sys.executable, "weather_cmd.py"], root=tmp_path, **more)


def test_a_command_tool_gets_the_call_as_json_and_answers_with_json(tmp_path: Path) -> None:
    spec = command_tool(tmp_path)
    assert call(spec, {"city": "Paris"}).result == {"name": "get_weather", "city": "Paris"}
    assert call(spec, {"city": "Atlantis"}).error == "get_weather failed: no such city"
    assert call(spec, {"city": "Plain"}).result == "just text"


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_DATA is enforced on Linux")
def test_a_command_tool_growing_a_list_past_memory_mb_is_the_calls_error(tmp_path: Path) -> None:
    # attack: a tool asked (by an untrusted model) for something that grows without end
    found = call(command_tool(tmp_path, memory_mb=200), {"city": "everywhere"})
    assert found.error is not None
    assert found.error.startswith(
        f"get_weather failed: {sys.executable} ran out of memory (memory_mb: 200): "
    )
    assert found.error.endswith("MemoryError")


def test_a_command_tool_gets_no_secret_unless_passed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # attack: a tool program reading the API keys and tokens of the environment
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secretsecretsecret")
    monkeypatch.setenv("CORP_TOKEN", "passed-on-purpose")
    assert call(command_tool(tmp_path), {"city": "Env"}).result == []
    passed = command_tool(tmp_path, pass_env=("CORP_TOKEN",))
    assert call(passed, {"city": "Env"}).result == ["CORP_TOKEN"]


def test_a_command_tool_that_hangs_is_killed_at_its_timeout(tmp_path: Path) -> None:
    found = call(command_tool(tmp_path, timeout_s=0.5), {"city": "Hang"})
    assert found.error is not None
    assert (
        found.error.startswith("get_weather failed: ")
        and "did not finish within 0.5s" in found.error
    )


def test_a_command_tools_output_is_bounded(tmp_path: Path) -> None:
    # attack: a tool flooding stdout to exhaust memory; only max_output_bytes are held
    (tmp_path / "flood.py").write_text("import sys\nsys.stdout.write('x' * 100000)\n")
    spec = tool("command", [sys.executable, "flood.py"], root=tmp_path, max_output_bytes=1000)
    found = call(spec, {"city": "Paris"})
    assert found.error == "get_weather failed: its output exceeded 1000 bytes (100000 written)"


def test_what_the_model_is_sent_is_the_result_as_json_or_the_text() -> None:
    assert ToolOutcome("plain", None, True, 0).text() == "plain"
    assert json.loads(ToolOutcome([1, {"a": None}], None, True, 0).text()) == [1, {"a": None}]
