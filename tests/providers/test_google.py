"""The Google (Gemini) provider (evalwh/providers/google.py): the request body (text parts,
system instruction), the URL and key headers, the reply parsed (text, finish reason, model
version, thinking and token counts), malformed replies and error bodies, the checks of a
model name, base_url and output schema, and structured output asked as responseSchema
through a whole run, on a fake server that refuses what the real API refuses."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

import evalwh
from evalwh.config import secrets
from evalwh.config.model import Case, ModelSpec
from evalwh.errors import ConfigError
from evalwh.providers.base import ProviderError, Request
from evalwh.providers.google import GoogleProvider
from tests.builders import PLACE_OUTPUT, PLACE_SCHEMA, place_config, place_scores
from tests.fakes.servers import FakeLLMServer, raw, reply
from tests.providers.test_parts import UNSUPPORTED_FIX

GEMINI_KEY = "AIza" + "SurvivorTestKey0123456789abcdefghijk"[:35]


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "*")
    monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setattr(secrets, "_loaded", set())


def gemini(model: str = "gemini-2.5-flash", params: Any = None, **options: Any) -> ModelSpec:
    return ModelSpec(
        id="g",
        provider="google",
        model=model,
        params=dict(params or {}),
        options=options,
        where="models[0]",
    )


def text(value: Any) -> dict[str, Any]:
    return {"type": "text", "text": value}


def body_for(messages: list[dict[str, Any]], **params: Any) -> dict[str, Any]:
    spec = gemini(params=params)
    return GoogleProvider(spec).build_body(Request(spec, messages, Case(id="c1"), "v"))


def parse(data: dict[str, Any]) -> Any:
    return GoogleProvider(gemini()).parse_body(data)


def send(spec: ModelSpec, messages: list[dict[str, Any]]) -> Any:
    prov = GoogleProvider(spec)

    async def go() -> Any:
        try:
            return await prov.complete(Request(spec, messages, Case(id="c1"), "v"))
        finally:
            await prov.aclose()

    return asyncio.run(go())


# ---- the request body -------------------------------------------------------------------------


def test_google_drops_empty_text_parts_but_keeps_the_others() -> None:
    body = body_for([{"role": "user", "content": [text("hi"), text(""), text(None)]}])
    assert body["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]


def test_google_sends_an_all_empty_message_as_one_empty_text_part() -> None:
    body = body_for([{"role": "user", "content": [text(None)]}])
    assert body["contents"] == [{"role": "user", "parts": [{"text": ""}]}]


def test_google_joins_system_messages_with_a_blank_line() -> None:
    body = body_for(
        [
            {"role": "system", "content": [text("Be brief.")]},
            {"role": "system", "content": [text("Answer in French.")]},
            {"role": "user", "content": [text("hi")]},
        ]
    )
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief.\n\nAnswer in French."}]}


def test_google_sends_no_system_instruction_for_an_empty_system_message() -> None:
    body = body_for(
        [{"role": "system", "content": [text(None)]}, {"role": "user", "content": [text("hi")]}]
    )
    assert "systemInstruction" not in body


def test_google_params_system_wins_over_system_messages() -> None:
    messages = [
        {"role": "system", "content": [text("From the messages.")]},
        {"role": "user", "content": [text("hi")]},
    ]
    body = body_for(messages, system="From params.")
    assert body["systemInstruction"] == {"parts": [{"text": "From params."}]}
    assert "systemInstruction" not in body_for(messages, system="")  # set but empty: none


def test_google_refuses_a_video_part_naming_it_and_the_capability_table() -> None:
    part = {
        "type": "video",
        "media_type": "video/mp4",
        "name": "clip",
        "sha256": "0" * 64,
    }
    with pytest.raises(ProviderError) as info:
        body_for([{"role": "user", "content": [part]}])
    assert str(info.value) == (
        "google: the google provider does not accept 'video' parts (video/mp4); " + UNSUPPORTED_FIX
    )
    assert (info.value.kind, info.value.retryable) == ("unsupported", False)


def test_google_strips_the_models_prefix_from_the_url() -> None:
    prov = GoogleProvider(gemini("models/gemini-2.5-pro", base_url="http://127.0.0.1:9"))
    assert prov.url == "http://127.0.0.1:9/v1beta/models/gemini-2.5-pro:generateContent"


def test_google_uses_the_key_named_by_api_key_env_over_gemini_api_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MY_GEMINI_KEY", "AIzaMyOwnKey")
    headers = GoogleProvider(gemini(api_key_env="MY_GEMINI_KEY"))._resolve_headers()
    assert headers["x-goog-api-key"] == "AIzaMyOwnKey"


def test_a_header_of_the_config_replaces_the_google_key_header_not_doubles_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GATEWAY_KEY", "AIzaGatewayKey")
    prov = GoogleProvider(gemini(headers={"x-goog-api-key": "${GATEWAY_KEY}"}))
    headers = prov._resolve_headers()
    assert [v for k, v in headers.items() if k.lower() == "x-goog-api-key"] == ["AIzaGatewayKey"]


# ---- the answer -------------------------------------------------------------------------------


def candidate(*parts: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"content": {"role": "model", "parts": list(parts)}, **fields}


def test_google_joins_text_parts_without_a_separator() -> None:
    result = parse({"candidates": [candidate({"text": "Hello, "}, {"text": "world."})]})
    assert result.text == "Hello, world."


def test_google_keeps_the_finish_reason_and_model_version_in_the_details() -> None:
    result = parse(
        {
            "candidates": [candidate({"text": "ok"}, finishReason="MAX_TOKENS")],
            "modelVersion": "gemini-2.5-flash-001",
        }
    )
    assert result.extra == {"finish_reason": "MAX_TOKENS", "model_version": "gemini-2.5-flash-001"}


def test_google_leaves_out_a_finish_reason_and_model_version_it_was_not_given() -> None:
    assert parse({"candidates": [candidate({"text": "ok"})]}).extra == {}


def test_google_thinking_tokens_alone_are_the_output_tokens() -> None:
    result = parse(
        {
            "candidates": [candidate({"text": "ok"})],
            "usageMetadata": {"promptTokenCount": 7, "thoughtsTokenCount": 5},
        }
    )
    assert (result.input_tokens, result.output_tokens) == (7, 5)
    assert result.reasoning_tokens == 5 and result.extra == {}


@pytest.mark.parametrize("bad", ["12", True, 1.5])
def test_google_token_counts_that_are_not_integers_are_unknown(bad: Any) -> None:
    result = parse(
        {
            "candidates": [candidate({"text": "ok"})],
            "usageMetadata": {"promptTokenCount": bad, "candidatesTokenCount": bad},
        }
    )
    assert (result.input_tokens, result.output_tokens) == (None, None)


def test_google_malformed_answers_are_errors_saying_what_is_missing() -> None:
    with pytest.raises(KeyError) as missing:
        parse({"usageMetadata": {"promptTokenCount": 3}})
    assert str(missing.value) == "'candidates'"
    with pytest.raises(TypeError) as not_list:
        parse({"candidates": [{"content": {"parts": "oops"}}]})
    assert str(not_list.value) == "'parts' is not a list"


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ({"usageMetadata": {}}, "unexpected response (KeyError: 'candidates'): "),
        (
            {"candidates": [{"content": {"parts": "oops"}}]},
            "unexpected response (TypeError: 'parts' is not a list): ",
        ),
    ],
)
def test_a_malformed_google_answer_is_reported_with_its_cause(
    body: dict[str, Any], said: str
) -> None:
    with FakeLLMServer() as server:
        server.script(raw(200, body))
        with pytest.raises(ProviderError) as info:
            send(gemini(base_url=server.url), [{"role": "user", "content": [text("hi")]}])
    assert str(info.value).startswith(f"google: {said}")
    assert info.value.kind == "bad_response"


@pytest.mark.parametrize(
    ("data", "detail"),
    [
        (
            {"error": {"code": 400, "message": "Bad key", "status": "INVALID_ARGUMENT"}},
            "INVALID_ARGUMENT: Bad key",
        ),
        ({"error": {"code": 400, "message": "Bad key"}}, "Bad key"),
        ({"error": "quota exhausted"}, "quota exhausted"),
        ({"message": "quota exhausted"}, "quota exhausted"),
        (["not", "an", "object"], None),
        ("plain text", None),
    ],
)
def test_google_error_detail_shows_the_apis_message(data: Any, detail: str | None) -> None:
    assert GoogleProvider(gemini()).error_detail(data) == detail


# ---- validation -------------------------------------------------------------------------------


def test_a_bad_gemini_model_name_points_at_the_model_with_a_fix() -> None:
    with pytest.raises(ConfigError) as info:
        GoogleProvider.check(gemini("gemini/../../x"), "eval.yaml")
    err = info.value
    assert (err.message, err.file, err.where) == (
        "'gemini/../../x' is not a Gemini model name",
        "eval.yaml",
        "models[0].model",
    )
    assert err.fix == "write the model's name as the API lists it, e.g. gemini-2.5-flash"


def test_a_bad_google_base_url_names_the_config_file() -> None:
    with pytest.raises(ConfigError) as info:
        GoogleProvider.check(gemini(base_url="ftp://example.invalid"), "eval.yaml")
    assert (info.value.file, info.value.where) == ("eval.yaml", "models[0].base_url")


def test_a_schema_gemini_cannot_take_names_the_file_place_and_fix() -> None:
    output = SimpleNamespace(schema={"type": "text"})
    with pytest.raises(ConfigError) as info:
        GoogleProvider.check_output(output, file="eval.yaml", where="variants[0].output")
    err = info.value
    assert (err.file, err.where) == ("eval.yaml", "variants[0].output")
    assert err.message == (
        "the output schema cannot be sent as Gemini's responseSchema: "
        "type 'text' is not a JSON Schema type"
    )
    assert err.fix == "simplify the schema, or ask for it by prompt (mode: prompted)"


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/gone"}}}, "names nothing"),
        ({"$ref": "https://example.com/s.json"}, "names nothing"),
        ({"$defs": {"n": {"$ref": "#/$defs/n"}}, "$ref": "#/$defs/n"}, "recursive"),
        ({"type": "text"}, "'text' is not a JSON Schema type"),
    ],
)
def test_a_schema_gemini_cannot_take_is_refused_at_validation(
    tmp_path: Path, schema: dict[str, Any], why: str
) -> None:
    output = f"    output_schema:\n      schema: {json.dumps(schema)}\n"
    model = "{id: g, provider: google, model: gemini-2.5-flash}"
    cfg = place_config(tmp_path, model, output)
    with pytest.raises(ConfigError, match=why) as exc:
        evalwh.validate(cfg)
    assert exc.value.where == "variants[0].output_schema"
    assert "mode: prompted" in (exc.value.fix or "")
    prompted = place_config(tmp_path / "p", model, output + "      mode: prompted\n")
    evalwh.validate(prompted)  # asked by prompt: the schema is never sent as responseSchema


# ---- structured output: responseSchema --------------------------------------------------------


GEMINI_ASKED = {
    "type": "OBJECT",
    "properties": {"city": {"type": "STRING"}},
    "required": ["city"],
    "propertyOrdering": ["city"],
}  # PLACE_SCHEMA as the API's Schema: additionalProperties (not a Schema field) left out


def test_google_is_asked_with_response_schema(
    tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fake refuses what the real API refuses (a JSON Schema keyword its Schema lacks, a
    lower-case type, a schema without responseMimeType), so the run passing shows the request
    is one the API takes."""
    monkeypatch.setenv("GEMINI_API_KEY", "g-test-000000")
    server.default = reply('{"city": "Paris"}')
    model = f"{{id: g, provider: google, model: gemini-2.5-flash, base_url: '{server.url}'}}"
    cfg = place_config(tmp_path, model, PLACE_OUTPUT)
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    body = server.last.body
    assert body["generationConfig"] == {
        "responseMimeType": "application/json",
        "responseSchema": GEMINI_ASKED,
    }
    assert "JSON Schema" not in json.dumps(body["contents"])  # native: no instruction added
    assert [r.behavior for r in server.requests] == ["reply", "reply"]
    assert place_scores(tmp_path / "out") == [("c1", True, "native"), ("c2", True, "native")]
    assert result.exit_code == 0


def test_google_prompted_mode_sends_no_response_schema(
    tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "g-test-000000")
    server.default = reply('{"city": "Paris"}')
    model = f"{{id: g, provider: google, model: gemini-2.5-flash, base_url: '{server.url}'}}"
    cfg = place_config(tmp_path, model, PLACE_OUTPUT + "      mode: prompted\n")
    evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert "generationConfig" not in server.last.body
    assert "valid against this JSON Schema" in json.dumps(server.last.body["contents"])
    assert {r[2] for r in place_scores(tmp_path / "out")} == {"prompted"}


JSON = "application/json"


@pytest.mark.parametrize(
    ("config_", "refusal"),
    [
        ({"responseSchema": {"type": "OBJECT"}}, "response_mime_type"),
        ({"responseMimeType": "text/plain", "responseSchema": {"type": "OBJECT"}}, "mime"),
        ({"responseMimeType": JSON, "responseSchema": PLACE_SCHEMA}, "response_schema.type"),
        (
            {"responseMimeType": JSON, "responseSchema": {**GEMINI_ASKED, "$schema": "x"}},
            'Unknown name "$schema"',
        ),
        (
            {"responseMimeType": JSON, "responseSchema": {"type": "ARRAY", "items": {"const": 1}}},
            "Unknown name \"const\" at 'generation_config.response_schema.items'",
        ),
        (
            {
                "responseMimeType": JSON,
                "responseSchema": {"type": "OBJECT", "properties": {"a": {"type": "string"}}},
            },
            "response_schema.properties[a].value.type",
        ),
        (
            {"responseMimeType": JSON, "responseSchema": {"anyOf": [{"type": "STRING"}, 3]}},
            "response_schema.any_of[1]",
        ),
        ({"responseMimeType": JSON, "responseSchema": {"required": "city"}}, "list of strings"),
    ],
)
def test_the_fake_gemini_server_refuses_what_the_api_refuses(
    server: FakeLLMServer, config_: dict[str, Any], refusal: str
) -> None:
    """The fake's check of generationConfig (the API's published Schema fields and Type
    names): a provider that sent raw JSON Schema would fail here as it would for real."""

    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "generationConfig": config_}
    url = f"{server.url}/v1beta/models/gemini-2.5-flash:generateContent"
    answer = httpx.post(url, json=body, headers={"x-goog-api-key": "k"})
    assert answer.status_code == 400
    assert answer.json()["error"]["status"] == "INVALID_ARGUMENT"
    assert refusal in answer.json()["error"]["message"]


def test_a_thinking_budget_is_sent_as_thinking_config_with_the_thoughts_kept() -> None:
    prompt = [{"role": "user", "content": [{"type": "text", "text": "Think."}]}]
    config = body_for(prompt, thinking_budget=1024)["generationConfig"]
    assert config == {"thinkingConfig": {"thinkingBudget": 1024, "includeThoughts": True}}
    off = body_for(prompt, thinking_budget=0)["generationConfig"]
    assert off == {"thinkingConfig": {"thinkingBudget": 0}}  # thinking off: no thoughts asked
    assert "generationConfig" not in body_for(prompt)  # nothing set, nothing sent
