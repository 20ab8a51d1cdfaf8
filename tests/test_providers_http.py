"""The anthropic, openai and openai-compatible providers against the fake server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import gc
import socket
import time
from email.utils import formatdate
from pathlib import Path
from typing import Any

import pytest
from fakes.servers import (
    FakeLLMServer,
    Faults,
    drop,
    error,
    malformed,
    missing_fields,
    overloaded,
    rate_limited,
    raw,
    reply,
    server_error,
    slow,
    truncated,
)

from evalwh import providers
from evalwh.config import secrets
from evalwh.config.model import Case, ModelSpec
from evalwh.errors import ConfigError
from evalwh.providers.anthropic import AnthropicProvider
from evalwh.providers.base import Completion, ProviderError, Request
from evalwh.providers.http import parse_retry_after
from evalwh.providers.openai import OpenAICompatibleProvider, OpenAIProvider

ANTHROPIC_KEY = "sk-ant-api03-" + "Tk3yAnThr0p1c" * 4
OPENAI_KEY = "sk-proj-" + "Tk3y0pen41" * 5
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")

MESSAGES = [
    {"role": "system", "content": [{"type": "text", "text": "You are terse."}]},
    {
        "role": "user",
        "content": [{"type": "text", "text": "What is "}, {"type": "text", "text": "2+2?"}],
    },
    {"role": "assistant", "content": [{"type": "text", "text": "4"}]},
    {"role": "user", "content": [{"type": "text", "text": "And 3+3?"}]},
]


@pytest.fixture(autouse=True)
def environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("EVALWH_CONFIG_DIR", str(tmp_path / "userconf"))
    monkeypatch.chdir(work)
    for name in PROXY_VARS:  # never send 127.0.0.1 traffic through a proxy
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "*")
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setattr(secrets, "_loaded", set())


@pytest.fixture
def server():
    with FakeLLMServer() as srv:
        yield srv


def spec_for(
    provider: str, base_url: str | None, *, params: dict[str, Any] | None = None, **options: Any
) -> ModelSpec:
    if base_url is not None:
        options["base_url"] = base_url
    timeout = options.pop("timeout_s", 10.0)
    return ModelSpec(
        id=f"{provider}-test",
        provider=provider,
        model="test-model",
        params=params or {},
        timeout_s=timeout,
        options=options,
        where="models[0]",
    )


def make(provider: str, base_url: str | None, **kwargs: Any) -> Any:
    return providers.create(spec_for(provider, base_url, **kwargs))


def request_for(prov: Any, messages: list[dict[str, Any]] | None = None) -> Request:
    return Request(model=prov.spec, messages=messages or MESSAGES, case=Case(id="c1"), variant="v1")


def complete(prov: Any, messages: list[dict[str, Any]] | None = None, times: int = 1) -> Completion:
    async def go() -> Completion:
        try:
            result = None
            for _ in range(times):
                result = await prov.complete(request_for(prov, messages))
            assert result is not None
            return result
        finally:
            await prov.aclose()

    return asyncio.run(go())


def failure(prov: Any, messages: list[dict[str, Any]] | None = None) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        complete(prov, messages)
    return info.value


def closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


# ---- registry and validation ---------------------------------------------------------------


def test_registry_creates_each_provider(server: FakeLLMServer) -> None:
    assert isinstance(make("anthropic", None), AnthropicProvider)
    assert type(make("openai", None)) is OpenAIProvider
    assert isinstance(make("openai-compatible", server.openai_url), OpenAICompatibleProvider)
    for name in ("anthropic", "openai", "openai-compatible", "command"):
        assert name in providers.available()


def test_check_accepts_good_entries() -> None:
    good = [
        spec_for("anthropic", None),
        spec_for("openai", "https://gateway.example/v1", headers={"X-Team": "evals"}),
        spec_for("openai-compatible", "http://localhost:8000/v1/"),
        spec_for("openai", None, headers={"X-Key": "${GATEWAY_KEY}"}),
    ]
    for spec in good:
        assert providers.check(spec) is None
    # ... and the entries they configure are the ones requests go to
    urls = [providers.create(spec).url for spec in good]
    assert urls[1] == "https://gateway.example/v1/chat/completions"
    assert urls[2] == "http://localhost:8000/v1/chat/completions"
    assert urls[0].startswith("https://api.anthropic.com/")
    # each differs by one detail from an entry that check refuses
    bad = [
        spec_for("openai", "gateway.example/v1"),
        spec_for("openai", None, headers={"X-Team": 3}),
        spec_for("openai-compatible", None),
        spec_for("openai", None, headers={"X-Key": OPENAI_KEY}),
    ]
    for spec in bad:
        with pytest.raises(ConfigError):
            providers.check(spec)


def test_check_needs_base_url_for_openai_compatible() -> None:
    with pytest.raises(ConfigError) as info:
        providers.check(spec_for("openai-compatible", None), "eval.yaml")
    err = info.value
    assert err.file == "eval.yaml"
    assert err.where == "models[0].base_url"
    assert err.fix and "base_url" in err.fix


@pytest.mark.parametrize("bad", ["localhost:8000", "ftp://host/v1", ""])
def test_check_rejects_bad_base_url(bad: str) -> None:
    with pytest.raises(ConfigError) as info:
        providers.check(spec_for("openai-compatible", bad))
    assert info.value.where == "models[0].base_url"


def test_check_refuses_keys_in_headers() -> None:
    spec = spec_for("openai", None, headers={"Authorization": f"Bearer {OPENAI_KEY}"})
    with pytest.raises(ConfigError) as info:
        providers.check(spec, "eval.yaml")
    assert info.value.where == "models[0].headers.Authorization"
    assert OPENAI_KEY not in str(info.value)


def test_check_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.delenv("OPENAI_API_KEY")
    for provider, env in (("anthropic", "ANTHROPIC_API_KEY"), ("openai", "OPENAI_API_KEY")):
        spec = spec_for(provider, None)
        assert providers.check(spec) is None  # validation never needs the key ...
        assert providers.create(spec).key_env == env  # ... it is looked up when calling


# ---- anthropic wire format -----------------------------------------------------------------


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
    assert result.text == "Hello, world"
    assert (result.input_tokens, result.output_tokens) == (3, 4)
    assert result.extra["cache_read_input_tokens"] == 10


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_unsupported_part_type(server: FakeLLMServer, name: str) -> None:
    # Validation refuses these first (tests/test_multimodal.py); the adapter refuses too.
    video = {"type": "video", "name": "clip", "sha256": "0" * 64, "media_type": "video/mp4"}
    messages = [{"role": "user", "content": [video]}]
    err = failure(make(name, server.url if name == "anthropic" else server.openai_url), messages)
    assert not err.retryable and err.kind == "unsupported"
    assert "'video' parts (video/mp4)" in str(err) and "does not accept" in str(err)
    assert server.count == 0


# ---- openai wire format --------------------------------------------------------------------


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
    assert result.extra["refusal"] == "no"


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


def test_secret_reference_in_headers(
    server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GATEWAY_PASS", "gateway-pass-value")
    complete(
        make("openai-compatible", server.openai_url, headers={"X-Gateway": "token ${GATEWAY_PASS}"})
    )
    assert server.last.header("x-gateway") == "token gateway-pass-value"


# ---- keys ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "variable"), [("anthropic", "ANTHROPIC_API_KEY"), ("openai", "OPENAI_API_KEY")]
)
def test_missing_key(
    server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, name: str, variable: str
) -> None:
    monkeypatch.delenv(variable)
    err = failure(make(name, server.url))
    assert f"{variable} is not set; export it or put it in .evalwh.secrets.yaml" in str(err)
    assert err.kind == "auth" and not err.retryable
    assert server.count == 0


def test_missing_key_named_by_api_key_env(server: FakeLLMServer) -> None:
    err = failure(make("openai-compatible", server.openai_url, api_key_env="NOT_SET_ANYWHERE"))
    assert "NOT_SET_ANYWHERE is not set" in str(err)
    assert err.kind == "auth"


def test_key_from_project_secrets_file(
    server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    Path(".evalwh.secrets.yaml").write_text(f"ANTHROPIC_API_KEY: {ANTHROPIC_KEY}-file\n")
    complete(make("anthropic", server.url))
    assert server.last.header("x-api-key") == f"{ANTHROPIC_KEY}-file"


def test_an_unreadable_secrets_file_is_an_auth_failure_that_is_not_retried(
    server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    Path(".evalwh.secrets.yaml").write_text("- a list, not NAME: value\n")
    err = failure(make("anthropic", server.url))
    assert "a secrets file must be a mapping of NAME: value" in str(err)
    assert (err.kind, err.retryable) == ("auth", False)
    assert server.count == 0


def test_key_from_user_secrets_file(
    server: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    (tmp_path / "userconf").mkdir()
    (tmp_path / "userconf" / "secrets.yaml").write_text("OPENAI_API_KEY: user-file-openai-key\n")
    complete(make("openai", server.openai_url))
    assert server.last.header("authorization") == "Bearer user-file-openai-key"


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_key_never_in_error_messages(server: FakeLLMServer, name: str) -> None:
    server.script(error(401, "invalid credentials", echo_auth=True))
    prov = make(name, server.url if name == "anthropic" else server.openai_url)
    err = failure(prov)
    key = ANTHROPIC_KEY if name == "anthropic" else OPENAI_KEY
    assert "received credentials" in str(err)  # the server did echo it ...
    assert key not in str(err) and key[:20] not in str(err)  # ... and it was redacted
    assert "***" in str(err)
    assert err.status == 401 and err.kind == "auth" and not err.retryable


def test_unshaped_key_never_in_error_messages(
    server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Not key-shaped and not in a *_API_KEY variable: only the provider knows it is a secret.
    monkeypatch.setenv("LOCAL_LLM_PASS", "correct-horse-battery-staple")
    server.script(
        error(403, "forbidden", echo_auth=True), malformed("echo: correct-horse-battery-staple")
    )
    prov = make("openai-compatible", server.openai_url, api_key_env="LOCAL_LLM_PASS")

    async def go() -> list[ProviderError]:
        errors = []
        for _ in range(2):
            try:
                await prov.complete(request_for(prov))
            except ProviderError as exc:
                errors.append(exc)
        await prov.aclose()
        return errors

    errors = asyncio.run(go())
    assert len(errors) == 2
    for err in errors:
        assert "correct-horse-battery-staple" not in str(err)
        assert "***" in str(err)


# ---- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["anthropic", "openai"])
@pytest.mark.parametrize(
    ("status", "retryable", "kind"),
    [
        (400, False, "http"),
        (401, False, "auth"),
        (403, False, "auth"),
        (404, False, "http"),
        (408, True, "server"),
        (409, True, "server"),
        (410, False, "http"),
        (422, False, "http"),
        (429, True, "rate_limit"),
        (500, True, "server"),
        (502, True, "server"),
        (503, True, "server"),
        (529, True, "server"),
    ],
)
def test_status_errors(
    server: FakeLLMServer, name: str, status: int, retryable: bool, kind: str
) -> None:
    server.script(error(status, f"the {status} message from the server"))
    err = failure(make(name, server.url if name == "anthropic" else server.openai_url))
    assert err.status == status
    assert err.retryable is retryable
    assert err.kind == kind
    assert f"HTTP {status}" in str(err)
    assert f"the {status} message from the server" in str(err)
    assert str(err).startswith(f"{name}: ")


def test_anthropic_error_type_in_message(server: FakeLLMServer) -> None:
    server.script(overloaded())
    err = failure(make("anthropic", server.url))
    assert err.retryable and err.status == 529
    assert "overloaded_error: Overloaded" in str(err)


def test_retry_after_seconds(server: FakeLLMServer) -> None:
    server.script(rate_limited(7))
    err = failure(make("anthropic", server.url))
    assert err.retryable and err.kind == "rate_limit"
    assert err.retry_after == 7.0


def test_retry_after_ms_wins(server: FakeLLMServer) -> None:
    server.script(rate_limited(2, retry_after_ms=1500))
    err = failure(make("openai", server.openai_url))
    assert err.retry_after == pytest.approx(1.5)


def test_retry_after_http_date(server: FakeLLMServer) -> None:
    server.script(server_error(503, retry_after=formatdate(time.time() + 30, usegmt=True)))
    err = failure(make("openai", server.openai_url))
    assert err.retryable
    assert err.retry_after is not None and 25 <= err.retry_after <= 31


def test_no_retry_after_header(server: FakeLLMServer) -> None:
    server.script(server_error(500))
    assert failure(make("anthropic", server.url)).retry_after is None


def test_parse_retry_after_edge_cases() -> None:
    assert parse_retry_after({"Retry-After": "0"}) == 0.0
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({"Retry-After": formatdate(time.time() - 60, usegmt=True)}) == 0.0
    assert parse_retry_after({"retry-after-ms": "bad", "Retry-After": "3"}) == 3.0
    assert parse_retry_after({}) is None


def test_non_json_error_body(server: FakeLLMServer) -> None:
    server.script(
        raw(502, "<html>Bad Gateway from the proxy</html>", {"Content-Type": "text/html"})
    )
    err = failure(make("openai", server.openai_url))
    assert err.retryable and err.status == 502
    assert "Bad Gateway from the proxy" in str(err)


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_malformed_body(server: FakeLLMServer, name: str) -> None:
    server.script(malformed('{"id": "oops", "content": [ truncated'))
    err = failure(make(name, server.url if name == "anthropic" else server.openai_url))
    assert not err.retryable and err.kind == "bad_response"
    assert "not JSON" in str(err) and '"id": "oops"' in str(err)


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_missing_fields(server: FakeLLMServer, name: str) -> None:
    server.script(missing_fields())
    err = failure(make(name, server.url if name == "anthropic" else server.openai_url))
    assert not err.retryable and err.kind == "bad_response"
    assert "fake-incomplete" in str(err)


def test_long_malformed_body_is_excerpted(server: FakeLLMServer) -> None:
    server.script(malformed("x" * 5000))
    err = failure(make("anthropic", server.url))
    assert len(str(err)) < 400


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_dropped_connection(server: FakeLLMServer, name: str) -> None:
    server.script(drop())
    err = failure(make(name, server.url if name == "anthropic" else server.openai_url))
    assert err.retryable and err.kind == "connection"


def test_truncated_body(server: FakeLLMServer) -> None:
    server.script(truncated())
    err = failure(make("openai", server.openai_url))
    assert err.retryable and err.kind == "connection"


def test_connection_refused() -> None:
    err = failure(make("openai-compatible", f"http://127.0.0.1:{closed_port()}/v1"))
    assert err.retryable and err.kind == "connection"


def test_read_timeout(server: FakeLLMServer) -> None:
    server.script(slow(1.5))
    started = time.monotonic()
    err = failure(make("anthropic", server.url, timeout_s=0.3))
    assert time.monotonic() - started < 1.4
    assert err.retryable and err.kind == "timeout"
    assert "timed out" in str(err)


def test_recovers_after_errors_on_the_same_client(server: FakeLLMServer) -> None:
    server.script(drop(), server_error(500), reply("finally"))
    prov = make("anthropic", server.url)

    async def go() -> str:
        for _ in range(3):
            try:
                return (await prov.complete(request_for(prov))).text
            except ProviderError as exc:
                assert exc.retryable
        raise AssertionError("no success")

    async def main() -> str:
        try:
            return await go()
        finally:
            await prov.aclose()

    assert asyncio.run(main()) == "finally"
    assert server.count == 3


# ---- connection handling -------------------------------------------------------------------


def test_keep_alive_reuses_one_connection(server: FakeLLMServer) -> None:
    complete(make("openai", server.openai_url), times=10)
    assert server.count == 10
    assert server.connections == 1


def test_client_is_lazy_and_closes(server: FakeLLMServer) -> None:
    prov = make("anthropic", server.url)
    assert prov._client is None  # nothing opened before the first request
    complete(prov)
    assert prov._client is None  # aclose dropped it


@pytest.mark.filterwarnings("ignore::ResourceWarning")
def test_one_instance_across_event_loops(server: FakeLLMServer) -> None:
    prov = make("anthropic", server.url)
    first = asyncio.run(prov.complete(request_for(prov)))
    second = asyncio.run(prov.complete(request_for(prov)))  # a new loop gets a new client
    asyncio.run(prov.aclose())
    assert first.text == second.text == "And 3+3?"
    # The first loop's client could not be closed (its loop is gone): collect it here, where
    # its "unclosed transport" warning is expected.
    gc.collect()


def test_concurrent_requests_with_latency() -> None:
    with FakeLLMServer(latency=0.05) as server:
        prov = make("openai", server.openai_url)

        async def go() -> list[Completion]:
            sem = asyncio.Semaphore(32)

            async def one(i: int) -> Completion:
                async with sem:
                    msgs = [{"role": "user", "content": [{"type": "text", "text": f"q{i}"}]}]
                    return await prov.complete(request_for(prov, msgs))

            try:
                return await asyncio.gather(*(one(i) for i in range(160)))
            finally:
                await prov.aclose()

        results = asyncio.run(go())
    assert [r.text for r in results] == [f"q{i}" for i in range(160)]
    # the latency of one connection does not block others (counted at the server, not timed:
    # wall-time bounds belong to benchmarks/, not to tests on a shared machine)
    assert server.max_in_flight > 8
    assert server.connections <= 32


def test_fault_injection_is_deterministic() -> None:
    faults = Faults(error_rate=0.2, rate_limit_rate=0.1, retry_after=0.25, seed=3)
    expected = [faults.pick(i) for i in range(60)]
    with FakeLLMServer(faults=faults) as server:
        prov = make("anthropic", server.url)

        async def go() -> list[ProviderError | Completion]:
            out: list[ProviderError | Completion] = []
            for _ in range(60):
                try:
                    out.append(await prov.complete(request_for(prov)))
                except ProviderError as exc:
                    out.append(exc)
            await prov.aclose()
            return out

        outcomes = asyncio.run(go())
    statuses = [o.status if isinstance(o, ProviderError) else 200 for o in outcomes]
    assert statuses == [b.status if b else 200 for b in expected]
    assert 0 < statuses.count(500) < 30 and 0 < statuses.count(429) < 20
    assert all(
        o.retry_after == 0.25 for o in outcomes if isinstance(o, ProviderError) and o.status == 429
    )
