"""The OpenAI and OpenAI-compatible providers (evalwh/providers/openai.py): the chat
completions wire format against the fake server (messages flattened to text, params, the
key as a bearer token or none for a compatible server), image URLs and refused URL parts,
the reply's content and usage parsed, and structured output asked as response_format
json_schema through a whole run; a compatible server's endpoint URL, the shards of its
connection pool, and closing its clients."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import evalwh
from evalwh.config.model import ModelSpec
from evalwh.providers.base import ProviderError
from evalwh.providers.openai import OpenAIProvider
from tests.builders import PLACE_OUTPUT, PLACE_SCHEMA, materialised, place_config, place_scores
from tests.fakes.servers import (
    FakeLLMServer,
    raw,
    reply,
)
from tests.providers.test_http import (
    OPENAI_KEY,
    compatible,
    complete,
    environment,  # noqa: F401  (autouse: keys, proxies, isolated secrets)
    make,
    request_for,
)


@pytest.mark.parametrize(
    ("base_url", "url"),
    [
        ("http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1/chat/completions"),
        ("http://127.0.0.1:9/v1//", "http://127.0.0.1:9/v1/chat/completions"),
        ("http://127.0.0.1:9/apiX/", "http://127.0.0.1:9/apiX/chat/completions"),
    ],
)
def test_the_endpoint_is_appended_to_the_base_url_without_its_trailing_slashes(
    base_url: str, url: str
) -> None:
    assert compatible(base_url).url == url


def test_a_request_goes_to_a_shard_with_a_free_connection_and_a_full_pool_still_serves(
    transport: str,
) -> None:
    # a run's concurrency may exceed the pool (100 connections unless the model's
    # max_concurrency is larger): a request then waits in the least busy shard, never fails
    provider = compatible("http://127.0.0.1:9/v1")

    async def main() -> None:
        first = provider._client_for_loop()
        clients, per = provider._clients, provider._per_shard
        assert (len(clients), per) == ((1, 100) if transport == "aiohttp" else (7, 15))
        assert provider._client_for_loop() is first  # sequential requests: the first shard
        provider._busy[0] = per  # the first shard is full
        expected = clients[0] if len(clients) == 1 else clients[1]
        assert provider._client_for_loop() is expected
        provider._busy[:] = [per] * len(clients)  # every shard is full
        provider._busy[-1] = per + 1
        assert provider._client_for_loop() is clients[0]  # the least busy
        await provider.aclose()

    asyncio.run(main())


def test_closing_a_provider_in_its_loop_closes_its_clients() -> None:
    provider = compatible("http://127.0.0.1:9/v1")

    async def main() -> list[Any]:
        provider._client_for_loop()
        clients = list(provider._clients)
        await provider.aclose()
        return clients

    clients = asyncio.run(main())
    assert clients and all(c.is_closed for c in clients)
    assert provider._clients == [] and provider._loop is None


def test_openai_wire_format_and_parsing(server: FakeLLMServer) -> None:
    server.script(reply("six", input_tokens=30, output_tokens=1))
    prov = make(
        "openai",
        server.openai_url,
        params={
            "temperature": 0,
            "max_tokens": 50,
            "top_p": 1,
            "stop": ["\n\n"],
            "extra": {"seed": 7},
        },
        headers={"OpenAI-Organization": "org-test"},
    )
    result = complete(prov)
    assert result.text == "six"
    assert (result.input_tokens, result.output_tokens) == (30, 1)
    assert result.extra["finish_reason"] == "stop"
    sent = server.last
    assert sent.path == "/v1/chat/completions"
    assert sent.header("authorization") == f"Bearer {OPENAI_KEY}"
    assert sent.header("openai-organization") == "org-test"
    assert sent.header("x-api-key") is None
    assert sent.body == {
        "model": "test-model",
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "What is 2+2?"},
            {"role": "assistant", "content": "4"},
            {"role": "user", "content": "And 3+3?"},
        ],
        "max_completion_tokens": 50,
        "temperature": 0,
        "top_p": 1,
        "stop": ["\n\n"],
        "seed": 7,
    }


def test_openai_params_system_replaces_system_messages(server: FakeLLMServer) -> None:
    complete(make("openai", server.openai_url, params={"system": "New system.", "stop": "END"}))
    body = server.last.body
    assert body["messages"][0] == {"role": "system", "content": "New system."}
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "user"]
    assert body["stop"] == "END"
    assert "max_completion_tokens" not in body and "max_tokens" not in body


def test_openai_null_content_and_missing_usage(server: FakeLLMServer) -> None:
    server.script(
        raw(
            200,
            {
                "choices": [
                    {
                        "message": {"role": "assistant", "content": None, "refusal": "no"},
                        "finish_reason": "stop",
                    }
                ]
            },
        )
    )
    result = complete(make("openai", server.openai_url))
    assert result.text == ""
    assert result.input_tokens is None and result.output_tokens is None
    assert (result.refusal, result.finish_reason) == ("no", "refusal")


def test_openai_compatible_without_key(
    server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    prov = make("openai-compatible", server.openai_url, params={"max_tokens": 12})
    assert complete(prov).text == "And 3+3?"
    assert server.last.header("authorization") is None
    assert server.last.body["max_tokens"] == 12
    assert "max_completion_tokens" not in server.last.body


def test_openai_compatible_with_key_env(
    server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCAL_LLM_PASS", "local-pass-value-123")
    complete(make("openai-compatible", server.openai_url, api_key_env="LOCAL_LLM_PASS"))
    assert server.last.header("authorization") == "Bearer local-pass-value-123"


# ---- parts and the reply's content and usage --------------------------------------------------


def openai_reply(content: Any, usage: Any = None) -> Any:
    body = {"choices": [{"message": {"content": content}}], "usage": usage or {}}
    return compatible("http://127.0.0.1:9/v1").parse_body(body)


def test_an_image_url_is_sent_as_given_beside_an_empty_text_part() -> None:
    url = "https://example.invalid/cat.png"
    message = {
        "role": "user",
        "content": [{"type": "text", "text": ""}, {"type": "image", "url": url}],
    }
    assert compatible("http://127.0.0.1:9/v1")._content(message) == [
        {"type": "text", "text": ""},
        {"type": "image_url", "image_url": {"url": url}},
    ]


@pytest.mark.parametrize("kind", ["audio", "file"])
def test_audio_or_a_file_by_url_is_refused_as_unsupported(kind: str) -> None:
    part = {"type": kind, "url": "https://example.invalid/x", "media_type": "audio/wav"}
    with pytest.raises(ProviderError) as refused:
        compatible("http://127.0.0.1:9/v1")._content({"role": "user", "content": [part]})
    assert (refused.value.kind, str(refused.value)) == (
        "unsupported",
        f"openai-compatible: the openai-compatible provider does not accept '{kind}' parts "
        "(a URL); see the capability table in docs/providers.md",
    )


def test_content_given_as_parts_is_their_text_joined() -> None:
    # some compatible servers answer with a list of parts; parts without text add nothing
    parts = [{"type": "text", "text": "Par"}, {"type": "image_url"}, "junk", {"text": "is"}]
    assert openai_reply(parts).text == "Paris"


def test_content_of_another_type_is_a_malformed_reply() -> None:
    with pytest.raises(TypeError) as raised:
        openai_reply(5)
    assert str(raised.value) == "'content' is not a string"


def test_token_counts_that_are_not_integers_are_unknown() -> None:
    usage = {"prompt_tokens": 3.5, "completion_tokens": True}
    got = openai_reply("hi", usage)
    assert (got.input_tokens, got.output_tokens) == (None, None)
    got = openai_reply("hi", {"prompt_tokens": 7, "completion_tokens": 2})
    assert (got.input_tokens, got.output_tokens) == (7, 2)


# ---- structured output: response_format json_schema ------------------------------------------


def test_openai_is_asked_with_response_format_json_schema(
    tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k-test-000000")
    server.default = reply('{"city": "Paris"}')
    model = f"{{id: m, provider: openai, model: gpt-4o-mini, base_url: '{server.openai_url}'}}"
    cfg = place_config(tmp_path, model, PLACE_OUTPUT)
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    body = server.last.body
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "place", "schema": PLACE_SCHEMA, "strict": True},
    }
    assert "JSON Schema" not in json.dumps(body["messages"])  # native: no instruction
    assert place_scores(tmp_path / "out") == [("c1", True, "native"), ("c2", True, "native")]
    [criterion] = evalwh.open_warehouse(tmp_path / "out" / "warehouse.duckdb").show(result.run_id)[
        "criteria"
    ]
    assert criterion["mode"] == "native" and criterion["pass_rate"] == 1.0


# ---- reasoning models and what is sent ----------------------------------------------------------


IMAGE_URL = {"type": "image", "url": "https://example.com/cat.png"}


def gpt_body(model: str, messages: list[dict[str, Any]] | None = None, **params: Any) -> Any:
    spec = ModelSpec(id="g", provider="openai", model=model, params=params, where="models[0]")
    prov = OpenAIProvider(spec)
    return prov.build_body(request_for(prov, messages))


def test_a_reasoning_effort_is_sent_with_max_completion_tokens_and_no_sampling_params() -> None:
    body = gpt_body("o4-mini", reasoning_effort="high", max_tokens=4000)
    assert body["reasoning_effort"] == "high" and body["max_completion_tokens"] == 4000
    assert "temperature" not in body and "top_p" not in body and "max_tokens" not in body


def test_only_the_parameters_the_config_sets_are_sent() -> None:
    assert set(gpt_body("gpt-4o")) == {"model", "messages"}


def test_the_bodies_sent_are_the_sdks_request_type() -> None:
    """Each body validates as openai.types.chat.CompletionCreateParamsNonStreaming and loses
    nothing in doing so (a field the API does not know would be dropped)."""
    from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
    from pydantic import TypeAdapter

    adapter = TypeAdapter(CompletionCreateParamsNonStreaming)
    image = [{"role": "user", "content": [{"type": "text", "text": "What is it?"}, IMAGE_URL]}]
    bodies = [
        gpt_body("gpt-4o", temperature=0.2, top_p=0.5, stop=["END"], max_tokens=100),
        gpt_body("gpt-4o", image, system="Terse."),
        gpt_body("o3", reasoning_effort="low"),
    ]
    for body in bodies:
        assert materialised(adapter.validate_python(body)) == body
