"""The HTTP client every HTTP provider shares (evalwh/providers/http.py), against the fake
server on 127.0.0.1 and with httpx's MockTransport: where the key comes from (environment,
secrets files, a header reference) and that it never shows in an error; how each HTTP status,
body and broken connection becomes a ProviderError (its kind, whether it is retried, the
provider's own message cut to its bound, the Retry-After wait in each of its forms); the
checks of a base_url or headers entry; and the client itself on both transports (aiohttp's
pool, httpcore's sharded pools): TLS verification, no redirects, the headers and user agent
sent, the pool's shards and limits, keep-alive, one client per event loop, requests in flight
counted per shard; calls to an API's other endpoints (``send``: batch jobs, file uploads)
mapped like chat requests, and a results file read line by line (``send_lines``), each line
bounded.

The autouse ``environment`` fixture (keys, no proxy for 127.0.0.1, isolated secrets) and the
helpers ``make``/``complete``/``failure`` are imported by the other provider test modules."""

from __future__ import annotations

import asyncio
import datetime
import functools
import gc
import importlib.util
import ipaddress
import json
import math
import ssl
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import replace
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from evalwh import __version__, providers
from evalwh.config import secrets
from evalwh.config.model import Case, ModelSpec
from evalwh.errors import ConfigError
from evalwh.providers import create, http
from evalwh.providers.base import Completion, ProviderError, Request, cut_answer
from evalwh.providers.http import (
    DEFAULT_MAX_CONNECTIONS,
    DETAIL_CHARS,
    EXCERPT_CHARS,
    POOL_SHARD,
    HttpProvider,
    excerpt,
    parse_retry_after,
    shown_url,
)
from evalwh.providers.openai import OpenAICompatibleProvider
from tests.builders import closed_port
from tests.fakes.servers import (
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

# The tests that run on both transports need httpx-aiohttp (a dev dependency); they are
# skipped without it, as the rest of this module is not.
needs_aiohttp = pytest.mark.skipif(
    importlib.util.find_spec("httpx_aiohttp") is None, reason="httpx-aiohttp is not installed"
)

# A fixed clock for Retry-After dates (parse_retry_after's ``now``): no test reads the wall clock.
NOW = datetime.datetime(2025, 6, 1, 12, 0, tzinfo=datetime.timezone.utc)


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


def compatible(base_url: str) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider(
        ModelSpec(id="m", provider="openai-compatible", model="x", options={"base_url": base_url})
    )


# ---- checks of a base_url or headers entry ----------------------------------------------------


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


@pytest.mark.parametrize("provider", ["openai-compatible", "openai", "anthropic", "google"])
def test_a_password_in_base_url_is_refused_without_being_echoed(provider: str) -> None:
    """user:password@ in a base_url would be kept in every run's config snapshot, and every
    request failed (aiohttp will not send URL credentials beside the key's header)."""
    spec = spec_for(provider, "https://evals:hunter2-secret@proxy.example:8443/v1")
    with pytest.raises(ConfigError) as info:
        providers.check(spec, "eval.yaml")
    error = info.value
    assert (error.where, error.file) == ("models[0].base_url", "eval.yaml")
    assert error.message == (
        "base_url 'https://proxy.example:8443/v1' carries a user name or password "
        "(user:password@host), which a config must not hold"
    )
    assert "Basic ${NAME}" in (error.fix or "")
    assert "hunter2" not in str(error) and "evals:" not in str(error)


@needs_aiohttp
@pytest.mark.parametrize(
    ("options", "where", "message", "fix"),
    [
        (
            {},
            "models[0].base_url",
            "provider 'openai-compatible' needs a base_url",
            "add base_url: the server's API root, e.g. http://localhost:8000/v1",
        ),
        (
            {"base_url": "localhost:8000/v1"},
            "models[0].base_url",
            "base_url 'localhost:8000/v1' is not an http(s) URL",
            "write the full URL, e.g. http://localhost:8000/v1",
        ),
        (
            {"base_url": "http://h/v1", "headers": ["X-Team: evals"]},
            "models[0].headers",
            "headers must be a mapping of header name to value",
            "write headers: {X-Header: value}",
        ),
        (
            {"base_url": "http://h/v1", "headers": {"X-Port": 8080}},
            "models[0].headers.X-Port",
            "header values must be strings",
            "quote the value",
        ),
        (
            {"base_url": "http://h/v1", "headers": {"X-Key": "sk-ant-api03-" + "a" * 40}},
            "models[0].headers.X-Key",
            "this header holds what looks like a anthropic API key",
            'never put keys in a config: reference one as "${NAME}" and set NAME '
            "in the environment or .evalwh.secrets.yaml",
        ),
    ],
)
def test_a_bad_endpoint_entry_names_its_place_and_fix(
    options: dict[str, Any], where: str, message: str, fix: str
) -> None:
    model = ModelSpec("m", "openai-compatible", "local", options=options, where="models[0]")
    with pytest.raises(ConfigError) as caught:
        HttpProvider.check(model, "eval.yaml")
    error = caught.value
    assert (error.file, error.where, error.message, error.fix) == ("eval.yaml", where, message, fix)


@needs_aiohttp
def test_a_key_referenced_by_name_in_a_header_is_accepted_and_extra_must_be_a_mapping() -> None:
    fine = {"base_url": "http://h/v1", "headers": {"X-Key": "${TEAM_KEY}"}}
    HttpProvider.check(ModelSpec("m", "openai-compatible", "local", options=fine), "eval.yaml")
    model = ModelSpec(
        "m",
        "openai-compatible",
        "local",
        options={"base_url": "http://h/v1"},
        params={"extra": ["top_k", 5]},
        where="models[0]",
    )
    with pytest.raises(ConfigError) as caught:
        HttpProvider.check(model, "eval.yaml")
    error = caught.value
    assert (error.file, error.where, error.message, error.fix) == (
        "eval.yaml",
        "models[0].params.extra",
        "params.extra must be a mapping",
        "write extra: {field: value}",
    )


# ---- keys -------------------------------------------------------------------------------------


def test_secret_reference_in_headers(
    server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GATEWAY_PASS", "gateway-pass-value")
    complete(
        make("openai-compatible", server.openai_url, headers={"X-Gateway": "token ${GATEWAY_PASS}"})
    )
    assert server.last.header("x-gateway") == "token gateway-pass-value"


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


# ---- errors -----------------------------------------------------------------------------------


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


def test_retry_after_http_date(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    # the date is read against a fixed clock (parse_retry_after's ``now``), not the wall clock
    monkeypatch.setattr(http, "parse_retry_after", functools.partial(parse_retry_after, now=NOW))
    server.script(server_error(503, retry_after=formatdate(NOW.timestamp() + 30, usegmt=True)))
    err = failure(make("openai", server.openai_url))
    assert err.retryable
    assert err.retry_after == 30.0


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


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after-ms": "0"}, 0.0),
        ({"retry-after-ms": "500"}, 0.5),
        ({"retry-after-ms": "-5", "Retry-After": "2"}, 2.0),
        ({"Retry-After-Ms": "250", "Retry-After": "9"}, 0.25),
    ],
)
def test_retry_after_ms_wins_when_it_is_a_number_of_zero_or_more(
    headers: dict[str, str], seconds: float
) -> None:
    assert parse_retry_after(headers) == seconds


def test_an_http_date_without_a_zone_is_read_as_utc() -> None:
    # RFC 5322's "-0000": the time is UTC, its source's zone unknown (Python: a naive datetime)
    header = formatdate(NOW.timestamp() + 120)
    assert header.endswith("-0000")
    assert parse_retry_after({"Retry-After": header}, now=NOW) == 120.0


def test_an_http_date_with_a_zone_is_read_in_that_zone() -> None:
    header = formatdate(NOW.timestamp() + 3600 + 120, localtime=False).replace("-0000", "+0100")
    assert parse_retry_after({"Retry-After": header}, now=NOW) == 120.0


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


def test_an_empty_or_blank_body_is_shown_as_empty_body() -> None:
    assert excerpt("") == "(empty body)"
    assert excerpt(" \n\t \r\n") == "(empty body)"


def test_an_excerpt_is_one_line_cut_at_exactly_its_limit() -> None:
    assert excerpt("a" * EXCERPT_CHARS) == "a" * EXCERPT_CHARS
    assert excerpt("a" * (EXCERPT_CHARS + 1)) == "a" * EXCERPT_CHARS + "..."
    assert excerpt("<html>\n  <b>bad   gateway</b>\n</html>") == "<html> <b>bad gateway</b> </html>"
    assert excerpt("abcdef", limit=3) == "abc..."


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
    port = closed_port()
    err = failure(make("openai-compatible", f"http://127.0.0.1:{port}/v1"))
    assert err.retryable and err.kind == "connection"
    # the URL nothing answered at is named (without a user or password it may hold)
    assert f"cannot connect to http://127.0.0.1:{port}/v1/chat/completions (" in str(err)
    assert shown_url("https://me:pa55word@[::1]:8443/v1/x?k=v") == "https://[::1]:8443/v1/x"


def test_read_timeout(server: FakeLLMServer) -> None:
    # the outcome, not how long it took: the request is given up as a retryable timeout of
    # the configured timeout_s (the server would answer only after 1.5 s)
    server.script(slow(1.5))
    err = failure(make("anthropic", server.url, timeout_s=0.3))
    assert err.retryable and err.kind == "timeout"
    assert "timed out" in str(err)
    assert "timed out after 0.3s" in str(err)


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


# ---- a provider's own error message (built from a reply, no server) ---------------------------


KEY = "sk-ant-api03-" + "Q7eRrOrK3y" * 5


def provider(name: str = "anthropic") -> Any:
    return make(name, "http://127.0.0.1:9")  # never contacted: errors are built from replies


def status_failure(status: int, body: Any, prov: Any = None, **headers: str) -> ProviderError:
    text = body if isinstance(body, str) else json.dumps(body)
    prov = prov or provider()
    return prov._status_error(httpx.Response(status, headers=headers), text)  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ({"error": {"type": "invalid_request_error", "message": "bad"}}, "invalid_request_error: bad"),
        ({"error": {"code": "model_not_found", "message": "no such"}}, "model_not_found: no such"),
        ({"error": {"message": "plain"}}, "plain"),
        ({"error": "a string error"}, "a string error"),
        ({"error": "", "message": "the message key"}, "the message key"),
        ({"detail": "not found"}, "not found"),
        ({"detail": [{"loc": ["body"], "msg": "field required"}]},
         '[{"loc": ["body"], "msg": "field required"}]'),
    ],
)  # fmt: skip
def test_the_providers_own_message_is_read_from_each_shape_of_error_body(
    body: dict[str, Any], detail: str
) -> None:
    assert str(status_failure(400, body)) == f"anthropic: HTTP 400: {detail}"


def test_only_an_auth_failure_names_the_key_variable() -> None:
    assert str(status_failure(401, {"error": {"message": "denied"}})) == (
        "anthropic: HTTP 401 (check ANTHROPIC_API_KEY): denied"
    )
    assert str(status_failure(500, {"error": {"message": "down"}})) == "anthropic: HTTP 500: down"


def test_a_retry_after_is_kept_only_for_an_error_that_is_retried() -> None:
    assert status_failure(503, "busy", **{"Retry-After": "7"}).retry_after == 7.0
    assert status_failure(400, "bad", **{"Retry-After": "7"}).retry_after is None


def test_a_long_provider_message_is_cut_to_its_bound() -> None:
    message = str(status_failure(400, {"error": {"message": "y" * 5000}}))
    assert message == f"anthropic: HTTP 400: {'y' * DETAIL_CHARS}..."


def test_a_key_the_provider_echoes_at_the_cut_leaves_no_part_of_it() -> None:
    # Attack: an error body that echoes the key just where the message is cut. Redacting
    # after the cut would miss the key's first characters (the full value no longer matches).
    prov = provider()
    prov._secrets.append(KEY)  # what a request that sent the key has noted
    message = str(status_failure(400, {"error": {"message": "x" * (DETAIL_CHARS - 5) + KEY}}, prov))
    assert KEY[:5] not in message


# ---- each failure of a request named, classed and counted (httpx's MockTransport) ------------


async def answered_by(provider: Any, handler: Callable[[httpx.Request], Any]) -> httpx.AsyncClient:
    """Build the provider's pool in the running loop, then put one client whose requests
    ``handler`` answers in every shard; the caller closes it."""
    provider._client_for_loop()
    for client in provider._clients:
        await client.aclose()
    # with the headers the provider's own clients send (its key among them)
    provider._headers = provider._resolve_headers()
    shared = httpx.AsyncClient(transport=httpx.MockTransport(handler), headers=provider._headers)
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
    provider: Any = None,
) -> tuple[Any, list[int]]:
    """What ``call`` of the provider (an openai-compatible one unless given) gives (or the
    ProviderError it raises) when every request is answered by ``handler``, and its shards'
    busy counts after the call."""
    provider = provider or compatible("http://127.0.0.1:9/v1")

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
            httpx.ConnectError("refused"),  # the URL, for the failed run's hint
            "cannot connect to http://127.0.0.1:9/v1/chat/completions (ConnectError: refused)",
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


# ---- the client on both transports: TLS, redirects, headers -----------------------------------


def spec(base_url: str, **options: Any) -> ModelSpec:
    return ModelSpec(
        "m",
        "openai-compatible",
        "local",
        timeout_s=5,
        max_retries=0,
        options={"base_url": base_url, **options},
    )


async def ask(provider: Any) -> Any:
    messages = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    return await provider.complete(
        Request(model=provider.spec, messages=messages, case=Case("c"), variant="v", repeat=0)
    )


async def complete_model(model: ModelSpec) -> Any:
    provider = create(model)
    try:
        return await ask(provider)
    finally:
        await provider.aclose()


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 that no authority signed, and its key."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


class _Completion(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = json.dumps(
            {
                "id": "x",
                "object": "chat.completion",
                "model": "local",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "over tls"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
            }
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def https_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    cert, key = self_signed(tmp_path)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Completion)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}/v1", cert
    finally:
        server.shutdown()
        server.server_close()


@needs_aiohttp
def test_an_https_endpoint_with_an_untrusted_certificate_is_refused(
    transport: str, https_server: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, cert = https_server
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    with pytest.raises(ProviderError) as caught:
        asyncio.run(complete_model(spec(url)))
    assert "certificate" in str(caught.value).lower()
    # the same server, its certificate trusted: the refusal above was the verification
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    assert asyncio.run(complete_model(spec(url))).text == "over tls"


@needs_aiohttp
def test_a_redirect_is_an_error_and_never_followed(transport: str) -> None:
    with FakeLLMServer() as server:
        elsewhere = f"{server.openai_url}/elsewhere"
        server.script(raw(307, {"moved": True}, {"location": elsewhere}), reply("followed"))
        with pytest.raises(ProviderError):
            asyncio.run(complete_model(spec(server.openai_url)))
        assert server.count == 1  # the Location was not asked


@needs_aiohttp
def test_the_configured_headers_and_the_user_agent_reach_the_server(transport: str) -> None:
    with FakeLLMServer() as server:
        server.script(reply("ok"))
        asyncio.run(complete_model(spec(server.openai_url, headers={"X-Team": "evals"})))
        request = server.last
    assert request.header("x-team") == "evals"
    assert request.header("user-agent") == f"evalwh/{__version__}"


@needs_aiohttp
def test_a_server_that_does_not_answer_in_timeout_s_is_given_up(transport: str) -> None:
    from tests.fakes.servers import slow

    with FakeLLMServer() as server:
        server.script(slow(3.0, "too late"))
        with pytest.raises(ProviderError) as caught:
            asyncio.run(complete_model(replace(spec(server.openai_url), timeout_s=0.3)))
    assert caught.value.kind == "timeout" or "timed out" in str(caught.value).lower()


# ---- a request's own time ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["anthropic", "openai", "google"])
def test_an_answer_carries_its_time_from_sending_to_the_last_byte(
    server: FakeLLMServer, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The span holds the server's own time for the request (stamped by the fake server) and
    nothing before the send: the client's set-up on first use, 2 s here, is not in it."""
    monkeypatch.setenv("GEMINI_API_KEY", "test-key-gemini-0000")
    server.latency = 0.02
    url = {"anthropic": server.url, "openai": server.openai_url, "google": server.url}[name]
    prov = make(name, url)
    set_up = prov._client_for_loop

    def slow_set_up() -> Any:
        time.sleep(0.0 if prov._clients else 2.0)
        return set_up()

    monkeypatch.setattr(prov, "_client_for_loop", slow_set_up)
    answer = complete(prov)
    handled = server.last.handled_ms
    assert handled is not None and handled >= 20.0
    assert answer.latency_ms is not None
    assert handled - 1.0 <= answer.latency_ms <= handled + 1000.0  # not the 2 s set-up


# ---- connection handling and the pool ---------------------------------------------------------


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


@needs_aiohttp
@pytest.mark.parametrize("max_concurrency", [None, 8, 300])
def test_the_pool_is_one_aiohttp_pool_or_httpcore_shards_of_at_most_16(
    transport: str, max_concurrency: int | None
) -> None:
    size = max(DEFAULT_MAX_CONNECTIONS, max_concurrency or 0)
    model = replace(spec("http://127.0.0.1:9/v1"), max_concurrency=max_concurrency)

    async def pool() -> tuple[int, int]:
        provider = create(model)
        try:
            assert isinstance(provider, HttpProvider)
            provider._client_for_loop()
            return len(provider._clients), provider._per_shard
        finally:
            await provider.aclose()

    shards, per = asyncio.run(pool())
    if transport == "aiohttp":
        assert (shards, per) == (1, size)
    else:
        assert shards == math.ceil(size / POOL_SHARD) and per == math.ceil(size / shards)
        assert per <= POOL_SHARD


@needs_aiohttp
def test_the_shards_of_an_https_pool_share_one_ssl_context(
    transport: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a context loads the CA bundle (milliseconds each): one per client, not one per shard
    made: list[ssl.SSLContext] = []
    real = ssl.create_default_context

    def counted(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(ssl, "create_default_context", counted)

    async def pool() -> int:
        provider = create(spec("https://127.0.0.1:9/v1"))
        try:
            assert isinstance(provider, HttpProvider)
            provider._client_for_loop()
            return len(provider._clients)
        finally:
            await provider.aclose()

    shards = asyncio.run(pool())
    assert shards == (1 if transport == "aiohttp" else math.ceil(DEFAULT_MAX_CONNECTIONS / 16))
    assert len(made) == 1


@needs_aiohttp
def test_the_pool_keeps_its_limits_its_keepalive_and_no_proxy_from_the_environment(
    transport: str,
) -> None:
    """The limits reach the library's pool (read back from it after one request)."""
    size = 300  # above the default of 100: the limit is ours, not the library's default

    async def pools() -> list[Any]:
        provider = create(replace(spec(server.openai_url), max_concurrency=size))
        try:
            await ask(provider)
            assert isinstance(provider, HttpProvider)
            clients = list(provider._clients)
            timeouts = {(c.timeout.read, c.timeout.pool) for c in clients}
            assert timeouts == {(5, None)}  # timeout_s per read; waiting for a slot is unbounded
            if transport == "aiohttp":
                session = clients[0]._transport.client
                connector = session.connector
                return [
                    (connector.limit, connector.limit_per_host, connector._keepalive_timeout),
                    session.trust_env,
                ]
            return [
                (
                    c._transport._pool._max_connections,
                    c._transport._pool._max_keepalive_connections,
                    c._transport._pool._keepalive_expiry,
                )
                for c in clients
            ]
        finally:
            await provider.aclose()

    with FakeLLMServer() as server:
        server.script(reply("ok"))
        found = asyncio.run(pools())
    if transport == "aiohttp":
        assert found == [(size, 0, 30.0), False]  # no per-host cap; HTTP_PROXY is not read
    else:
        per = math.ceil(size / math.ceil(size / POOL_SHARD))
        assert found == [(per, per, 30.0)] * math.ceil(size / POOL_SHARD)


# ---- httpcore's sniffio lookup ----------------------------------------------------------------


@needs_aiohttp
def test_the_sniffio_fix_makes_the_import_fail_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bug: httpcore retried a failed `import sniffio` (a sys.path search) ~8 times a request."""
    import importlib.util

    from evalwh.providers.http import fast_async_detection

    # restored afterwards as it was: the None the fix leaves would break a later import of
    # the openai or anthropic SDK in this process
    monkeypatch.setitem(sys.modules, "sniffio", sys.modules.get("sniffio"))
    monkeypatch.delitem(sys.modules, "sniffio")
    # absent: the path without the folder that holds it (the dev env installs it for the
    # openai and anthropic SDKs; installed, nothing changes: the next test)
    hidden = [p for p in sys.path if not (Path(p) / "sniffio").exists()]
    monkeypatch.setattr(sys, "path", hidden)
    assert importlib.util.find_spec("sniffio") is None
    fast_async_detection()
    assert "sniffio" in sys.modules and sys.modules["sniffio"] is None
    with pytest.raises(ModuleNotFoundError):
        import sniffio  # noqa: F401
    fast_async_detection()  # idempotent


@needs_aiohttp
def test_httpcores_sniffio_lookup_is_left_to_the_import_when_sniffio_is_installed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import sys

    from evalwh.providers.http import fast_async_detection

    # restored afterwards as it was: the None the fix leaves would break a later import of
    # the openai or anthropic SDK in this process
    monkeypatch.setitem(sys.modules, "sniffio", sys.modules.get("sniffio"))
    monkeypatch.delitem(sys.modules, "sniffio")
    # absent: the test above; installed (a module on the path) and not yet imported: left
    # for the import to find
    (tmp_path / "sniffio.py").write_text("def current_async_library():\n    return 'asyncio'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    fast_async_detection()
    assert "sniffio" not in sys.modules


# ---- bounds: a reply's body and an answer's text are capped while read (issue 46) ----


@needs_aiohttp
def test_http_reply_declaring_20_mb_over_max_response_bytes_is_refused_unread(
    transport: str,
) -> None:
    with FakeLLMServer() as server:
        server.script(raw(200, b"x" * (20 << 20)))
        with pytest.raises(ProviderError) as info:
            asyncio.run(complete_model(spec(server.openai_url, max_response_bytes=1 << 20)))
    assert info.value.kind == "bad_response" and not info.value.retryable
    assert "the reply declares 20,971,520 bytes, over max_response_bytes (1,048,576)" in str(
        info.value
    )


def test_http_reply_streaming_20_mb_without_a_length_stops_being_read_at_the_bound() -> None:
    sent: list[int] = []

    async def body() -> AsyncIterator[bytes]:
        for _ in range(20):
            sent.append(1 << 20)
            yield b"x" * (1 << 20)

    result, busy = through(lambda request: httpx.Response(200, content=body()))
    assert isinstance(result, ProviderError) and result.kind == "bad_response"
    assert "passed 16,777,216 bytes (reading stopped at 17,825,792)" in str(result)
    assert sum(sent) == 17 << 20  # 17 of the 20 MiB were asked for, then reading stopped
    assert busy == [0] * len(busy)


@needs_aiohttp
def test_http_answer_of_2_mib_is_stored_cut_to_1_mib_and_marked(transport: str) -> None:
    with FakeLLMServer() as server:
        server.script(reply("é" * (1 << 20)))  # 2 MiB of UTF-8
        answer = asyncio.run(complete_model(spec(server.openai_url)))
    assert answer.text == "é" * (1 << 19)
    assert answer.extra["output_truncated"] == {"kept_bytes": 1 << 20, "total_bytes": 2 << 20}


def test_cut_answer_never_splits_a_character_and_leaves_short_answers_alone() -> None:
    assert cut_answer(Completion(text="aé"), 2) == Completion(
        text="a", extra={"output_truncated": {"kept_bytes": 2, "total_bytes": 3}}
    )
    assert cut_answer(Completion(text="aé"), 3) == Completion(text="aé")


# ---- another endpoint of the same API: send and send_lines (batch jobs, files; issue 49) ----


def sent_to(
    handler: Callable[[httpx.Request], Any],
    call: Callable[[Any], Awaitable[Any]],
    provider: Any = None,
) -> tuple[Any, list[httpx.Request]]:
    """What ``call`` of the provider gives (or the ProviderError it raises) and the requests
    it sent, every request answered by ``handler``."""
    seen: list[httpx.Request] = []

    async def record(request: httpx.Request) -> Any:
        seen.append(request)
        answer = handler(request)
        return await answer if asyncio.iscoroutine(answer) else answer

    result, _ = through(record, call, provider)
    return result, seen


def lines_of(path: str) -> Callable[[Any], Awaitable[list[bytes]]]:
    async def call(provider: Any) -> list[bytes]:
        return [line async for line in provider.send_lines("GET", path)]

    return call


def test_send_goes_under_the_api_root_or_to_a_full_url_and_gives_the_json() -> None:
    got, seen = sent_to(
        answering(200, json={"id": "batch_1"}),
        lambda p: p.send("POST", "/batches", json={"a": 1}, params={"limit": "2"}),
    )
    assert got == {"id": "batch_1"}
    assert str(seen[0].url) == "http://127.0.0.1:9/v1/batches?limit=2"
    assert json.loads(seen[0].content) == {"a": 1}
    _, seen = sent_to(
        answering(200, json={}), lambda p: p.send("GET", "https://files.example/r.jsonl")
    )
    assert str(seen[0].url) == "https://files.example/r.jsonl"


def test_send_posts_a_multipart_upload_with_plain_fields_beside_the_file() -> None:
    files = [
        ("purpose", (None, "batch")),
        ("file", ("in.jsonl", b'{"a":1}\n', "application/jsonl")),
    ]
    _, seen = sent_to(answering(200, json={}), lambda p: p.send("POST", "files", files=files))
    body = seen[0].read()
    assert seen[0].headers["content-type"].startswith("multipart/form-data; boundary=")
    assert b'name="purpose"\r\n\r\nbatch\r\n' in body
    assert b'name="file"; filename="in.jsonl"' in body and b'{"a":1}\n' in body


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [(400, "http", False), (401, "auth", False), (404, "http", False), (429, "rate_limit", True),
     (500, "server", True), (503, "server", True)],
)  # fmt: skip
def test_send_and_send_lines_map_a_failed_status_as_a_chat_request_does(
    status: int, kind: str, retryable: bool
) -> None:
    body = {"error": {"message": "no batch here", "type": "invalid_request_error"}}
    handler = answering(status, json=body, headers={"retry-after": "3"})
    for call in (lambda p: p.send("GET", "batches/b1"), lines_of("files/f1/content")):
        failed, _ = sent_to(handler, call)
        assert isinstance(failed, ProviderError)
        assert (failed.status, failed.kind, failed.retryable) == (status, kind, retryable)
        assert failed.retry_after == (3.0 if retryable else None)
        assert "invalid_request_error: no batch here" in str(failed)


def test_send_and_send_lines_never_show_the_key_a_server_echoes() -> None:
    # Attack: a files or batches endpoint that echoes the Authorization header in its error.
    def echo(request: httpx.Request) -> httpx.Response:
        said = {"error": {"message": f"bad key {request.headers['authorization']}"}}
        return httpx.Response(401, json=said)

    for call in (lambda p: p.send("GET", "batches/b1"), lines_of("files/f1/content")):
        failed, _ = sent_to(echo, call, make("openai", "http://127.0.0.1:9/v1"))
        assert isinstance(failed, ProviderError) and failed.kind == "auth"
        assert OPENAI_KEY not in str(failed) and "bad key Bearer ***" in str(failed)


def test_send_bounds_its_reply_by_limit() -> None:
    failed, _ = sent_to(
        answering(200, content=b"x" * 2000), lambda p: p.send("GET", "batches", limit=1000)
    )
    assert isinstance(failed, ProviderError) and failed.kind == "bad_response"
    assert "declares 2,000 bytes" in str(failed)


def test_send_lines_gives_each_line_without_its_end_and_skips_blank_ones() -> None:
    body = b'{"a": 1}\r\n\n  \n{"b": 2}\n{"c": 3}'
    got, _ = sent_to(answering(200, content=body), lines_of("files/f1/content"))
    assert got == [b'{"a": 1}', b'{"b": 2}', b'{"c": 3}']


def test_send_lines_gives_a_line_before_the_rest_of_the_file_is_sent() -> None:
    sent: list[int] = []

    async def body() -> AsyncIterator[bytes]:
        for n in range(3):
            sent.append(n)
            yield b'{"n": %d}\n{"half' % n
            yield b'": true}\n'

    async def first_line(provider: Any) -> tuple[bytes, list[int]]:
        async for line in provider.send_lines("GET", "files/f1/content"):
            return line, list(sent)
        raise AssertionError("no line")

    got, _ = sent_to(lambda request: httpx.Response(200, content=body()), first_line)
    assert got == (b'{"n": 0}', [0])  # the first line came with the first chunk


@pytest.mark.parametrize("chunk", [1 << 20, 100], ids=["one chunk", "many chunks"])
def test_send_lines_refuses_a_line_over_max_response_bytes(chunk: int) -> None:
    # a results line of 20 MB, whether it comes whole or a few bytes at a time, is refused once
    # it passes the bound: a results file's lines are never held without one
    line = b"ok\n" + b"y" * 20_000 + b"\nafter\n"

    async def body() -> AsyncIterator[bytes]:
        for at in range(0, len(line), chunk):
            yield line[at : at + chunk]

    async def read(provider: Any) -> list[bytes]:
        provider.max_response_bytes = 10_000
        return [got async for got in provider.send_lines("GET", "files/f1/content")]

    failed, _ = sent_to(lambda request: httpx.Response(200, content=body()), read)
    assert isinstance(failed, ProviderError)
    assert (failed.kind, failed.status, failed.retryable) == ("bad_response", 200, False)
    assert "has a line of" in str(failed) and "over max_response_bytes (10,000)" in str(failed)
