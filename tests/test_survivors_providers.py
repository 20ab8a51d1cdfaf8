"""Tests that kill mutants mutmut found alive in evalwh/providers (issue 21); each test names the user-visible behaviour it pins."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from evalwh.config import secrets
from evalwh.config.model import Case, ModelSpec
from evalwh.errors import ConfigError
from evalwh.providers.base import ProviderError, Request
from evalwh.providers.capabilities import MB, check_parts
from evalwh.providers.gemini_schema import MAX_DEPTH, response_schema
from evalwh.providers.google import GoogleProvider
from evalwh.providers.parts import part_bytes, unsupported_part
from tests.fakes.servers import FakeLLMServer, raw
from tests.test_survivors_small_parts import compatible

GEMINI_KEY = "AIza" + "SurvivorTestKey0123456789abcdefghijk"[:35]
UNSUPPORTED_FIX = "see the capability table in docs/providers.md"
TOO_BIG_FIX = (
    "make the file smaller (resize, compress, split), or use a provider with a "
    "larger limit (docs/providers.md)"
)


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


# ---- google: the request body ---------------------------------------------------------------


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


def test_an_unsupported_url_part_is_named_a_url() -> None:
    err = unsupported_part("google", {"type": "image", "url": "https://example.invalid/a.png"})
    assert str(err) == (
        "google: the google provider does not accept 'image' parts (a URL); " + UNSUPPORTED_FIX
    )
    err = unsupported_part("google", {"type": "image", "media_type": "image/gif"})
    assert "'image' parts (image/gif);" in str(err)


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


# ---- google: the answer ---------------------------------------------------------------------


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
    assert result.extra == {"thoughts_tokens": 5}


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


# ---- google: error bodies -------------------------------------------------------------------


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


# ---- google: validation ---------------------------------------------------------------------


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


# ---- gemini_schema --------------------------------------------------------------------------


def test_any_of_is_translated_branch_by_branch() -> None:
    schema = {"anyOf": [{"type": "string"}, {"type": "integer"}], "oneOf": [{"type": "boolean"}]}
    assert response_schema(schema) == {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]}


def test_a_list_of_types_keeps_the_other_keywords_in_each_branch() -> None:
    schema = {"type": ["string", "integer", "null"], "description": "an id"}
    assert response_schema(schema) == {
        "anyOf": [
            {"type": "STRING", "description": "an id"},
            {"type": "INTEGER", "description": "an id"},
        ],
        "nullable": True,
    }


LEAVES = {
    "$ref": {"$ref": "#/$defs/s"},
    "several types": {"type": ["string", "integer"]},
    "type or null": {"type": ["string", "null"]},
    "properties": {"type": "object", "properties": {"a": {"type": "string"}}},
    "anyOf": {"anyOf": [{"type": "string"}]},
}


def nested(levels: int, leaf: dict[str, Any]) -> dict[str, Any]:
    node = leaf
    for _ in range(levels):
        node = {"type": "array", "items": node}
    return {**node, "$defs": {"s": {"type": "string"}}}


@pytest.mark.parametrize("leaf", LEAVES.values(), ids=list(LEAVES))
def test_each_nesting_keyword_counts_one_level_toward_the_limit(leaf: dict[str, Any]) -> None:
    response_schema(nested(MAX_DEPTH - 1, leaf))  # its inner schema sits at the limit
    with pytest.raises(ConfigError, match=f"deeper than {MAX_DEPTH} levels"):
        response_schema(nested(MAX_DEPTH, leaf))


def test_a_schema_recursive_through_any_of_is_refused() -> None:
    schema = {"$defs": {"n": {"anyOf": [{"$ref": "#/$defs/n"}]}}, "$ref": "#/$defs/n"}
    with pytest.raises(ConfigError, match="recursive"):
        response_schema(schema)


# ---- capabilities ---------------------------------------------------------------------------


def part(kind: str, media_type: str | None, size: int = 10, **more: Any) -> dict[str, Any]:
    found = {"type": kind, "name": f"my{kind}", "sha256": "0" * 64, "bytes": size, **more}
    if media_type is not None:
        found["media_type"] = media_type
    return found


def refusal(model: ModelSpec, *parts: dict[str, Any]) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        check_parts(model, [{"role": "user", "content": list(parts)}], "c1", "v", "eval.yaml")
    return info.value


def test_a_video_for_google_names_only_the_providers_that_take_video() -> None:
    err = refusal(gemini(), part("video", "video/mp4"))
    assert (
        err.fix
        == "use a model whose provider accepts video parts: mock, command (docs/providers.md)"
    )


def test_an_audio_format_names_only_the_providers_that_take_that_format() -> None:
    model = ModelSpec(id="a", provider="openai", model="gpt-4o-audio-preview")
    err = refusal(model, part("audio", "audio/flac"))
    assert err.fix == (
        "convert it to one of audio/mpeg, audio/wav, or use a model that accepts it "
        "(mock, command, google)"
    )


def test_a_url_for_google_names_the_providers_that_take_urls() -> None:
    err = refusal(gemini(), {"type": "image", "url": "https://example.invalid/a.png"})
    assert err.fix == (
        "attach the file itself instead of a URL (URLs are accepted by: mock, command, "
        "anthropic, openai, openai-compatible)"
    )


def test_a_request_over_googles_limit_names_the_size_limit_place_and_fix() -> None:
    err = refusal(gemini(), part("image", "image/png", 16 * MB))
    assert err.message == (
        "case 'c1': the file 'the request's files' (16.0 MB) is over the limit of "
        "model 'g' (google gemini-2.5-flash): 20 MB per request inline (base64)"
    )
    assert (err.file, err.where) == ("eval.yaml", "variant 'v' messages[0].content[0]")
    assert err.fix == TOO_BIG_FIX


def test_a_raw_byte_limit_is_met_exactly_and_passed_by_one_byte() -> None:
    model = ModelSpec(id="o", provider="openai", model="gpt-4o")
    messages = [{"role": "user", "content": [part("image", "image/png", 50 * MB)]}]
    check_parts(model, messages, "c1", "v", "eval.yaml")  # 50 MB raw, not 50 MB of base64
    err = refusal(model, part("image", "image/png", 50 * MB + 1))
    assert err.message.endswith(": 50 MB of images per request")


# ---- parts ----------------------------------------------------------------------------------


def test_a_part_whose_file_is_gone_names_the_part_and_is_not_retried() -> None:
    with pytest.raises(ProviderError) as info:
        part_bytes("google", {"type": "image", "name": "photo", "sha256": "0" * 64})
    assert str(info.value) == (
        "google: the image part 'photo': no file with SHA-256 000000000000... was loaded in "
        "this run"
    )
    assert (info.value.kind, info.value.retryable) == ("attachment", False)


# -- the OpenAI reply's content and usage ------------------------------------------------------


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


# ---- the HTTP layer: each failure named, classed and counted ---------------------------------


async def answered_by(provider: Any, handler: Callable[[httpx.Request], Any]) -> httpx.AsyncClient:
    """Build the provider's pool in the running loop, then put one client whose requests
    ``handler`` answers in every shard; the caller closes it."""
    provider._client_for_loop()
    for client in provider._clients:
        await client.aclose()
    shared = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    provider._clients = [shared] * len(provider._clients)
    return shared


def post(provider: Any) -> Awaitable[Any]:
    return provider.post_json({"model": "x"})


def complete_one(provider: Any) -> Awaitable[Any]:
    return provider.complete(
        Request(model=provider.spec, messages=[], case=Case(id="c"), variant="v")
    )


def through(
    handler: Callable[[httpx.Request], httpx.Response],
    call: Callable[[Any], Awaitable[Any]] = post,
) -> tuple[Any, list[int]]:
    """What ``call`` of the provider gives (or the ProviderError it raises) when every request
    is answered by ``handler``, and its shards' busy counts after the call."""
    provider = compatible("http://127.0.0.1:9/v1")

    async def main() -> tuple[Any, list[int]]:
        shared = await answered_by(provider, handler)
        try:
            result: Any = await call(provider)
        except ProviderError as exc:
            result = exc
        finally:
            await shared.aclose()
        return result, list(provider._busy)

    return asyncio.run(main())


def raising(exc: Exception) -> Callable[[httpx.Request], httpx.Response]:
    def handler(request: httpx.Request) -> httpx.Response:
        raise exc

    return handler


def answering(status: int, **body: Any) -> Callable[[httpx.Request], httpx.Response]:
    return lambda request: httpx.Response(status, **body)


@pytest.mark.parametrize(
    ("exc", "said", "retryable", "kind"),
    [
        (httpx.ReadTimeout("slow"), "request timed out after 60s (ReadTimeout)", True, "timeout"),
        (
            httpx.ConnectError("refused"),
            "connection failed (ConnectError: refused)",
            True,
            "connection",
        ),
        (
            httpx.RemoteProtocolError(""),
            "connection failed (RemoteProtocolError: no detail)",
            True,
            "connection",
        ),
        (
            httpx.UnsupportedProtocol("no ftp"),
            "request failed (UnsupportedProtocol: no ftp)",
            False,
            "http",
        ),
        (httpx.InvalidURL("bad host"), "request failed (InvalidURL: bad host)", False, "http"),
    ],
)
def test_a_failed_request_says_what_failed_and_whether_to_retry(
    exc: Exception, said: str, retryable: bool, kind: str
) -> None:
    # the retry policy reads `retryable` and the stored row `kind`: a timeout or a dropped
    # connection is worth another attempt, a request httpx refuses to send is not
    error, busy = through(raising(exc))
    assert isinstance(error, ProviderError)
    assert (str(error), error.retryable, error.kind) == (
        f"openai-compatible: {said}",
        retryable,
        kind,
    )
    assert busy == [0] * len(busy)  # the connection is given back after a failure too


@pytest.mark.parametrize("status", [300, 301, 304])
def test_a_3xx_answer_is_an_error_not_a_reply(status: int) -> None:
    # redirects are not followed (a key must not travel to another host), so a 3xx is refused
    error, busy = through(answering(status, json={"choices": []}))
    assert isinstance(error, ProviderError)
    assert (error.status, error.kind, error.retryable) == (status, "http", False)
    assert busy == [0] * len(busy)


def test_a_2xx_answer_is_parsed_and_the_shard_given_back() -> None:
    got, busy = through(answering(299, json={"ok": "ü"}))
    assert got == {"ok": "ü"}
    assert busy == [0] * len(busy)


def test_a_2xx_answer_that_is_not_json_keeps_its_status() -> None:
    error, _ = through(answering(200, text="<html>oops</html>"))
    assert isinstance(error, ProviderError)
    assert (
        str(error) == "openai-compatible: HTTP 200 with a body that is not JSON: <html>oops</html>"
    )
    assert (error.status, error.kind, error.retryable) == (200, "bad_response", False)


@pytest.mark.parametrize(
    ("body", "shown"),
    [
        ({"json": {"Grüße": "ü"}}, '{"Grüße": "ü"}'),  # the reply as sent, not \u-escaped
        ({"json": "just text"}, "just text"),  # a JSON string is shown as its text
    ],
)
def test_a_reply_of_the_wrong_shape_is_shown_as_it_came(body: dict[str, Any], shown: str) -> None:
    error, _ = through(answering(200, **body), call=complete_one)
    assert isinstance(error, ProviderError)
    assert str(error).startswith("openai-compatible: unexpected response (")
    assert str(error).endswith(f"): {shown}")
    assert (error.status, error.kind, error.retryable) == (200, "bad_response", False)


def test_requests_in_flight_are_counted_on_their_shard_while_they_last() -> None:
    # the count decides where the next request goes (a shard with a free connection)
    provider = compatible("http://127.0.0.1:9/v1")
    seen: list[int] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.append(sum(provider._busy))
        await asyncio.sleep(0.05)  # both requests are in flight together
        return httpx.Response(200, json={"ok": True})

    async def main() -> list[int]:
        shared = await answered_by(provider, handler)
        try:
            await asyncio.gather(post(provider), post(provider))
        finally:
            await shared.aclose()
        return list(provider._busy)

    after = asyncio.run(main())
    assert seen == [1, 2]
    assert after == [0] * len(after)


@pytest.mark.parametrize(("where", "shown"), [("", None), ("models[2]", "models[2].provider")])
def test_a_provider_that_does_not_load_is_placed_only_when_its_entry_is_named(
    monkeypatch: pytest.MonkeyPatch, where: str, shown: str | None
) -> None:
    # asked for by name alone (no config entry to point at), the error claims no place
    import evalwh.providers as registry

    monkeypatch.setattr(registry, "available", lambda: {"ghost": "acme_missing_module:Ghost"})
    with pytest.raises(ConfigError) as info:
        registry.provider_class("ghost", where=where)
    assert info.value.where == shown
    assert info.value.message.startswith("cannot load provider 'ghost' from acme_missing_module")
