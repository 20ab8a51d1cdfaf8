"""The Anthropic provider (evalwh/providers/anthropic.py): its wire format against the fake
server (the body, the system field, stop sequences, extra params, the key and version
headers and a configured header replacing them), the Messages API reply parsed (text blocks
joined, a forced tool call's input as the answer, token counts, cache tokens), and
structured output asked as a forced tool call through a whole run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

import evalwh
from evalwh import __version__
from evalwh.config import attachments
from evalwh.config.model import Case, ModelSpec
from evalwh.config.outputs import OutputSpec
from evalwh.providers.anthropic import AnthropicProvider
from evalwh.providers.base import Request
from tests.builders import PLACE_OUTPUT, PLACE_SCHEMA, materialised, place_config, place_scores
from tests.fakes.servers import (
    FakeLLMServer,
    raw,
    reply,
)
from tests.providers.test_http import (
    ANTHROPIC_KEY,
    complete,
    environment,  # noqa: F401  (autouse: keys, proxies, isolated secrets)
    make,
)

AGENT = {"user-agent": f"evalwh/{__version__}"}


def claude(params: Any = None, **options: Any) -> AnthropicProvider:
    spec = ModelSpec(
        id="c",
        provider="anthropic",
        model="claude-test",
        params=dict(params or {}),
        options=options,
        where="models[0]",
    )
    return AnthropicProvider(spec)


def text(value: Any) -> dict[str, Any]:
    return {"type": "text", "text": value}


def body_for(messages: list[dict[str, Any]], **params: Any) -> dict[str, Any]:
    prov = claude(params)
    return prov.build_body(Request(prov.spec, messages, Case(id="c1"), "v"))


def user(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(parts)}


def system(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "system", "content": list(parts)}


# ---- the request ------------------------------------------------------------------------------


def test_anthropic_wire_format_and_parsing(server: FakeLLMServer) -> None:
    server.script(reply("six", input_tokens=21, output_tokens=2))
    prov = make(
        "anthropic",
        server.url,
        params={
            "temperature": 0.2,
            "top_p": 0.9,
            "stop": "###",
            "extra": {"metadata": {"user_id": "u1"}},
        },
        headers={"anthropic-beta": "test-beta"},
    )
    result = complete(prov)
    assert result.text == "six"
    assert (result.input_tokens, result.output_tokens) == (21, 2)
    assert result.extra["stop_reason"] == "end_turn"

    sent = server.last
    assert sent.method == "POST" and sent.path == "/v1/messages"
    assert sent.header("x-api-key") == ANTHROPIC_KEY
    assert sent.header("anthropic-version") == "2023-06-01"
    assert sent.header("anthropic-beta") == "test-beta"
    assert sent.header("content-type") == "application/json"
    assert sent.header("authorization") is None
    assert sent.body == {
        "model": "test-model",
        "max_tokens": 1024,
        "system": "You are terse.",
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "What is "}, {"type": "text", "text": "2+2?"}],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "4"}]},
            {"role": "user", "content": [{"type": "text", "text": "And 3+3?"}]},
        ],
        "temperature": 0.2,
        "top_p": 0.9,
        "stop_sequences": ["###"],
        "metadata": {"user_id": "u1"},
    }


def test_anthropic_params_system_max_tokens_and_stop_list(server: FakeLLMServer) -> None:
    prov = make(
        "anthropic",
        server.url,
        params={"system": "Override.", "max_tokens": 77, "stop": ["a", "b"], "extra": {"top_k": 5}},
    )
    result = complete(prov)
    assert result.text == "And 3+3?"  # the server echoes the last user text
    body = server.last.body
    assert body["system"] == "Override."
    assert body["max_tokens"] == 77
    assert body["stop_sequences"] == ["a", "b"]
    assert body["top_k"] == 5
    assert all(m["role"] != "system" for m in body["messages"])


def test_anthropic_without_system_message_sends_no_system(server: FakeLLMServer) -> None:
    complete(
        make("anthropic", server.url),
        [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
    )
    assert "system" not in server.last.body
    assert "temperature" not in server.last.body


def test_an_empty_or_missing_text_part_becomes_an_empty_anthropic_text_block() -> None:
    prov = claude()
    for value in ("", None):
        assert prov._part(text(value)) == {"type": "text", "text": ""}
    assert prov._part(text("hi")) == {"type": "text", "text": "hi"}


def test_empty_text_blocks_are_dropped_from_an_anthropic_message_and_the_rest_kept() -> None:
    image = {"type": "image", "url": "https://example.invalid/cat.jpg"}
    body = body_for([user(text("hi"), text(""), image, text(None))])
    assert body == {
        "model": "claude-test",
        "max_tokens": 1024,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "hi"},
                    {
                        "type": "image",
                        "source": {"type": "url", "url": "https://example.invalid/cat.jpg"},
                    },
                ],
            }
        ],
    }


def test_a_message_of_only_empty_text_keeps_its_block_so_the_content_is_never_empty() -> None:
    body = body_for([user(text(""))])
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": ""}]}]


def test_system_messages_go_to_the_system_field_joined_by_a_blank_line() -> None:
    body = body_for(
        [system(text("Be brief.")), system(text("Answer in French.")), user(text("Bonjour"))]
    )
    assert body == {
        "model": "claude-test",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Bonjour"}]}],
        "system": "Be brief.\n\nAnswer in French.",
    }


def test_an_empty_system_text_part_sends_no_system_field_and_adds_nothing() -> None:
    for value in ("", None):
        body = body_for([system(text(value)), user(text("hi"))])
        assert body == {
            "model": "claude-test",
            "max_tokens": 1024,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        }
    body = body_for([system(text("Be brief."), text(None)), user(text("hi"))])
    assert body["system"] == "Be brief.\n\n"


def test_a_text_file_that_is_not_utf8_is_sent_with_replacement_characters(
    tmp_path: Path,
) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"caf\xe9 au lait\n")
    found = attachments.load(path, "notes")
    part = {**found.part("file"), "media_type": "text/plain"}
    assert claude()._part(part) == {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "caf\ufffd au lait\n"},
    }


# ---- headers ----------------------------------------------------------------------------------


def test_the_anthropic_key_and_version_headers_have_their_lower_case_wire_names() -> None:
    prov = claude()
    assert prov.auth_headers("k") == {"x-api-key": "k"}
    assert prov.base_headers() == {"anthropic-version": "2023-06-01"}
    assert prov._resolve_headers() == {
        **AGENT,
        "anthropic-version": "2023-06-01",
        "x-api-key": ANTHROPIC_KEY,
    }


def test_a_configured_header_replaces_the_anthropic_key_and_version_not_adds_a_second(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GATEWAY_KEY", "gw-survivor-secret")
    prov = claude(headers={"anthropic-version": "2024-01-01", "x-api-key": "${GATEWAY_KEY}"})
    assert prov._resolve_headers() == {
        **AGENT,
        "anthropic-version": "2024-01-01",
        "x-api-key": "gw-survivor-secret",
    }
    # names in another case replace them too: a header sent twice (both values) was the bug
    prov = claude(headers={"Anthropic-Version": "2024-01-01", "X-Api-Key": "${GATEWAY_KEY}"})
    assert prov._resolve_headers() == {
        **AGENT,
        "Anthropic-Version": "2024-01-01",
        "X-Api-Key": "gw-survivor-secret",
    }
    prov = claude(headers={"User-Agent": "gateway-probe"})
    assert prov._resolve_headers() == {
        "User-Agent": "gateway-probe",
        "anthropic-version": "2023-06-01",
        "x-api-key": ANTHROPIC_KEY,
    }


# ---- the reply --------------------------------------------------------------------------------


def test_anthropic_joins_text_blocks(server: FakeLLMServer) -> None:
    server.script(
        raw(
            200,
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Hello, "},
                    {"type": "tool_use", "id": "t1", "name": "calc", "input": {}},
                    {"type": "text", "text": "world"},
                ],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 3, "output_tokens": 4, "cache_read_input_tokens": 10},
            },
        )
    )
    result = complete(make("anthropic", server.url))
    assert result.text == "Hello, world"  # the tool call is not the answer: it is kept apart
    # with its id, which the tool_result answering it names (a tool loop, docs/tools.md)
    assert result.tool_calls == [{"name": "calc", "arguments": {}, "id": "t1"}]
    # every prompt token (3 uncached + 10 read from the cache), of which 10 cached
    assert (result.input_tokens, result.output_tokens, result.cache_read_tokens) == (13, 4, 10)


def anthropic_reply(*, schema: str | None = None, **changes: Any) -> Any:
    """Parse a reply; ``schema``: the request asked for JSON by the schema of that name."""
    spec = ModelSpec(id="a", provider="anthropic", model="claude-sonnet-4-5")
    data = {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "Paris."}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 3},
    }
    data.update(changes)
    output = None if schema is None else OutputSpec(schema={"type": "object"}, name=schema)
    request = Request(model=spec, messages=[], case=Case(id="c"), variant="v", output=output)
    return AnthropicProvider(spec).parse_body(data, request)


def test_a_reply_whose_content_is_not_a_list_says_so() -> None:
    with pytest.raises(TypeError) as info:
        anthropic_reply(content="Paris.")
    assert str(info.value) == "'content' is not a list"


def test_a_forced_tool_call_after_a_text_block_answers_with_the_tools_input() -> None:
    found = anthropic_reply(
        content=[
            {"type": "text", "text": "Here is the answer:"},
            {"type": "tool_use", "id": "toolu_01", "name": "answer", "input": {"b": 1}},
        ],
        stop_reason="tool_use",
        schema="answer",
    )
    assert found.text == '{"b": 1}'
    assert found.extra == {"stop_reason": "tool_use"}
    assert (found.finish_reason, found.tool_calls) == ("stop", None)  # the answer, not a call


def test_a_structured_answer_is_sorted_json_keeping_non_ascii_text() -> None:
    found = anthropic_reply(
        content=[
            {
                "type": "tool_use",
                "id": "toolu_01",
                "name": "answer",
                "input": {"ville": "Zürich", "pays": "Suisse", "accent": "é"},
            }
        ],
        stop_reason="tool_use",
        schema="answer",
    )
    assert found.text == '{"accent": "é", "pays": "Suisse", "ville": "Zürich"}'


def test_blocks_that_are_not_objects_are_skipped() -> None:
    found = anthropic_reply(content=["stray", {"type": "text", "text": "Paris."}])
    assert found.text == "Paris."


def test_cache_creation_and_read_tokens_are_kept() -> None:
    found = anthropic_reply(
        usage={
            "input_tokens": 12,
            "output_tokens": 3,
            "cache_creation_input_tokens": 2048,
            "cache_read_input_tokens": 512,
        }
    )
    # input_tokens is every prompt token: 12 uncached, 2048 written, 512 read
    assert (found.text, found.input_tokens, found.output_tokens) == ("Paris.", 2572, 3)
    assert (found.cache_write_tokens, found.cache_read_tokens) == (2048, 512)
    assert found.extra == {"stop_reason": "end_turn"}


@pytest.mark.parametrize("bad", ["12", 12.0, None, True])
def test_token_counts_that_are_not_integers_are_dropped(bad: Any) -> None:
    found = anthropic_reply(usage={"input_tokens": bad, "output_tokens": 3})
    assert found.input_tokens is None
    assert found.output_tokens == 3


# ---- structured output: a forced tool call ----------------------------------------------------


def test_anthropic_is_asked_with_a_forced_tool_call(
    tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k-test-000000")
    server.default = reply('{"city": "London"}')
    model = f"{{id: m, provider: anthropic, model: claude-3-5-haiku, base_url: '{server.url}'}}"
    cfg = place_config(tmp_path, model, PLACE_OUTPUT)
    evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    body = server.last.body
    assert body["tools"] == [
        {
            "name": "place",
            "description": "Give the answer by calling this tool; its input is the answer.",
            "input_schema": PLACE_SCHEMA,
        }
    ]
    assert body["tool_choice"] == {"type": "tool", "name": "place"}
    assert place_scores(tmp_path / "out") == [("c1", True, "native"), ("c2", True, "native")]
    con = duckdb.connect(str(tmp_path / "out" / "warehouse.duckdb"), read_only=True)
    try:  # the tool call's input is the answer, as JSON text
        assert con.execute("SELECT DISTINCT output FROM cases").fetchall() == [
            ('{"city": "London"}',)
        ]
    finally:
        con.close()


# ---- extended thinking and what is sent ---------------------------------------------------------

IMAGE = {"type": "image", "url": "https://example.com/cat.png"}


def test_a_thinking_budget_enables_extended_thinking_with_max_tokens_above_it() -> None:
    body = body_for([user(text("Think."))], thinking_budget=2048)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 2048 + 1024  # room for the answer after the thinking
    assert (
        body_for([user(text("Think."))], thinking_budget=2048, max_tokens=4000)["max_tokens"]
        == 4000
    )


def test_only_the_parameters_the_config_sets_are_sent_besides_max_tokens() -> None:
    body = body_for([user(text("Hi."))])
    assert body == {
        "model": "claude-test",
        "max_tokens": 1024,  # the API requires it
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi."}]}],
    }


def test_the_bodies_sent_are_the_sdks_request_type() -> None:
    """Each body validates as the SDK's MessageCreateParamsNonStreaming and loses nothing in
    doing so (a field the API does not know would be dropped), but temperature and top_p: the
    current SDK's request type no longer lists the sampling parameters, so evalwh sends them
    only when a config sets them."""
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
    from pydantic import TypeAdapter

    adapter = TypeAdapter(MessageCreateParamsNonStreaming)
    output = OutputSpec(schema={"type": "object", "properties": {"a": {"type": "string"}}})
    prov = claude({"thinking_budget": 1024, "system": "Be brief.", "stop": ["END"]})
    bodies = [
        body_for([system(text("Terse.")), user(text("Hi."), IMAGE)], temperature=0.5),
        body_for([user(text("Read."))], top_p=0.9, stop="###", max_tokens=10),
        prov.build_body(Request(prov.spec, [user(text("Think."))], Case(id="c1"), "v")),
        claude().build_body(
            Request(claude().spec, [user(text("J"))], Case(id="c"), "v", output=output)
        ),
    ]
    for body in bodies:
        kept = {k: v for k, v in body.items() if k not in ("temperature", "top_p")}
        assert materialised(adapter.validate_python(body)) == kept
