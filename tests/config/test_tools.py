"""``tools:`` in eval.yaml and a variant's ``tools``/``tool_choice``/``loop`` (evalwh/config/tools.py):
what is accepted, and every refusal naming its place and a fix before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalwh import load_config
from evalwh.api import validate
from evalwh.errors import EvalwhError
from tests.builders import expect_error
from tests.conftest import write

TOOL = """\
  - name: get_weather
    description: The weather.
    parameters: {type: object, properties: {city: {type: string}}, required: [city]}
    mock:
      - {when: {args: {city: Paris}}, result: {temp_c: 18}}
"""


def config(
    tmp_path: Path,
    *,
    tools: str = TOOL,
    variant: str = "tools: [get_weather]",
    model: str = "{id: m, provider: mock}",
) -> Path:
    return write(
        tmp_path / "eval.yaml",
        f"""\
tools:
{tools}
models:
  - {model}
variants:
  - id: v
    messages: [{{role: user, content: hi}}]
    {variant}
cases:
  - {{id: c1}}
scorecard:
  - {{name: ok, type: contains, value: x}}
""",
    )


def refused(cfg: Path, *fragments: str) -> str:
    with pytest.raises(EvalwhError) as info:
        validate(cfg)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in:\n{message}"
    return message


def test_a_variant_with_tools_gets_them_with_its_choice_and_bounds(tmp_path: Path) -> None:
    cfg = config(
        tmp_path,
        variant="tools: [get_weather]\n    tool_choice: {name: get_weather}\n"
        "    loop: {max_turns: 3, max_tool_calls: 2, max_cost_usd: 0.5}",
    )
    (variant,) = load_config(cfg).variants
    use = variant.tools
    assert [t.name for t in use.tools] == ["get_weather"]
    assert use.tools[0].kind == "mock"
    assert use.choice == {"name": "get_weather"}
    assert (use.limits.max_turns, use.limits.max_tool_calls, use.limits.max_cost_usd) == (3, 2, 0.5)
    assert use.limits.max_tokens is None
    validate(cfg)


def test_a_tools_memory_mb_is_taken_and_defaults_to_2048(tmp_path: Path) -> None:
    (tool,) = load_config(config(tmp_path)).variants[0].tools.tools
    assert tool.memory_mb == 2048
    bounded = TOOL + "    memory_mb: 256\n"
    (tool,) = load_config(config(tmp_path, tools=bounded)).variants[0].tools.tools
    assert tool.memory_mb == 256


@pytest.mark.parametrize("bad", ["0", "1.5", "lots"])
def test_a_memory_mb_that_is_no_whole_number_above_0_is_refused(tmp_path: Path, bad: str) -> None:
    refused(config(tmp_path, tools=TOOL + f"    memory_mb: {bad}\n"), "tools[0].memory_mb")


def test_a_variant_without_tools_is_a_single_request(tmp_path: Path) -> None:
    (variant,) = load_config(config(tmp_path, variant="")).variants
    assert variant.tools is None


def test_an_unknown_tool_name_is_refused(tmp_path: Path) -> None:
    expect_error(
        config(tmp_path, variant="tools: [get_wether]"),
        "unknown tool 'get_wether'",
        "variants[0].tools[0]",
        "known: get_weather",
    )


def test_parameters_that_are_no_json_schema_are_refused(tmp_path: Path) -> None:
    bad = TOOL.replace("{type: object, properties", "{type: objekt, properties")
    refused(config(tmp_path, tools=bad), "parameters is not a valid JSON Schema", "tools[0]")


def test_parameters_must_describe_an_object(tmp_path: Path) -> None:
    bad = TOOL.replace(
        "{type: object, properties: {city: {type: string}}, required: [city]}", "{type: string}"
    )
    refused(config(tmp_path, tools=bad), "parameters must describe an object")


def test_two_tools_with_one_name_are_refused(tmp_path: Path) -> None:
    refused(config(tmp_path, tools=TOOL + TOOL), "duplicate tool name 'get_weather'")


def test_a_tool_needs_exactly_one_implementation(tmp_path: Path) -> None:
    both = TOOL + "    python: tools:get_weather\n"
    with pytest.raises(EvalwhError):
        validate(config(tmp_path, tools=both))
    none = TOOL.split("    mock:")[0]
    with pytest.raises(EvalwhError):
        validate(config(tmp_path, tools=none))


def test_a_tool_choice_naming_a_tool_not_offered_is_refused(tmp_path: Path) -> None:
    variant = "tools: [get_weather]\n    tool_choice: {name: search}"
    refused(config(tmp_path, variant=variant), "tool_choice names 'search'")


def test_a_loop_without_tools_is_refused(tmp_path: Path) -> None:
    refused(config(tmp_path, variant="loop: {max_turns: 2}"), "`loop` without `tools`")


def test_a_model_that_cannot_call_tools_is_refused(tmp_path: Path) -> None:
    model = "{id: old, provider: openai, model: o1-mini-2024-09-12, price: 0}"
    refused(
        config(tmp_path, model=model),
        "model 'old' (provider openai) cannot be offered the tools of variant 'v'",
        "does not support tool calls",
    )


def test_native_json_by_schema_and_tools_in_one_variant_are_refused(tmp_path: Path) -> None:
    variant = "tools: [get_weather]\n    output_schema: {schema: {type: object}}"
    refused(config(tmp_path, variant=variant), "set output_schema.mode: prompted")


def test_a_command_tool_with_an_empty_program_is_refused(tmp_path: Path) -> None:
    tool = TOOL.split("    mock:")[0] + '    command: ""\n'
    refused(config(tmp_path, tools=tool), "tool 'get_weather': bad command: command is empty")
