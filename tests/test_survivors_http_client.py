"""The HTTP client every provider shares, pinned where mutation testing found it loose
(docs/testing.md), on both transports (aiohttp's pool, httpcore's sharded pools):

- **a man in the middle**: an https endpoint whose certificate no trusted authority signed is
  refused; the same server is reached once its certificate is trusted (SSL_CERT_FILE), so
  the refusal is the verification and nothing else;
- **a redirect to elsewhere**: a 307 is an error, never followed (it would resend the key);
- the configured headers and evalwh's user agent reach the server;
- the pool: one aiohttp pool, or httpcore shards of at most 16 connections;
- each config error of a base_url or headers entry, with its place and fix."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import json
import math
import ssl
import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from evalwh import __version__
from evalwh.config.model import Case, ModelSpec
from evalwh.errors import ConfigError
from evalwh.providers import create
from evalwh.providers.base import ProviderError, Request
from evalwh.providers.http import DEFAULT_MAX_CONNECTIONS, POOL_SHARD, HttpProvider
from tests.fakes.servers import FakeLLMServer, raw, reply

pytest.importorskip("httpx_aiohttp")


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


async def complete(model: ModelSpec) -> Any:
    provider = create(model)
    try:
        return await ask(provider)
    finally:
        await provider.aclose()


# -- TLS ------------------------------------------------------------------------------------


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


def test_an_https_endpoint_with_an_untrusted_certificate_is_refused(
    transport: str, https_server: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, cert = https_server
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    with pytest.raises(ProviderError) as caught:
        asyncio.run(complete(spec(url)))
    assert "certificate" in str(caught.value).lower()
    # the same server, its certificate trusted: the refusal above was the verification
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    assert asyncio.run(complete(spec(url))).text == "over tls"


# -- what reaches the server -----------------------------------------------------------------


def test_a_redirect_is_an_error_and_never_followed(transport: str) -> None:
    with FakeLLMServer() as server:
        elsewhere = f"{server.openai_url}/elsewhere"
        server.script(raw(307, {"moved": True}, {"location": elsewhere}), reply("followed"))
        with pytest.raises(ProviderError):
            asyncio.run(complete(spec(server.openai_url)))
        assert server.count == 1  # the Location was not asked


def test_the_configured_headers_and_the_user_agent_reach_the_server(transport: str) -> None:
    with FakeLLMServer() as server:
        server.script(reply("ok"))
        asyncio.run(complete(spec(server.openai_url, headers={"X-Team": "evals"})))
        request = server.last
    assert request.header("x-team") == "evals"
    assert request.header("user-agent") == f"evalwh/{__version__}"


# -- the pool ------------------------------------------------------------------------------


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


# -- config errors ---------------------------------------------------------------------------


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


def test_a_server_that_does_not_answer_in_timeout_s_is_given_up(transport: str) -> None:
    from tests.fakes.servers import slow

    with FakeLLMServer() as server:
        server.script(slow(3.0, "too late"))
        with pytest.raises(ProviderError) as caught:
            asyncio.run(complete(replace(spec(server.openai_url), timeout_s=0.3)))
    assert caught.value.kind == "timeout" or "timed out" in str(caught.value).lower()


def test_httpcores_sniffio_lookup_is_cut_short_only_when_sniffio_is_absent(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import sys

    from evalwh.providers.http import fast_async_detection

    monkeypatch.delitem(sys.modules, "sniffio", raising=False)
    fast_async_detection()
    assert "sniffio" in sys.modules and sys.modules["sniffio"] is None  # absent here
    # installed (a module on the path) and not yet imported: left for the import to find
    monkeypatch.delitem(sys.modules, "sniffio")
    (tmp_path / "sniffio.py").write_text("def current_async_library():\n    return 'asyncio'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    fast_async_detection()
    assert "sniffio" not in sys.modules


@pytest.mark.parametrize(
    ("variables", "pool"),
    [
        ({}, True),
        ({"ALL_PROXY": "http://127.0.0.1:9"}, False),  # any scheme through a proxy
        ({"HTTP_PROXY": "http://127.0.0.1:9"}, False),
        ({"HTTP_PROXY": "http://127.0.0.1:9", "NO_PROXY": "llm.test"}, True),  # bypassed
    ],
)
def test_aiohttp_is_used_only_where_no_proxy_from_the_environment_applies(
    monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], pool: bool
) -> None:
    """aiohttp's pool reads no proxy settings (trust_env=False): a URL a proxy applies to goes
    through httpx, which honours them."""
    from evalwh.providers import http_aiohttp

    monkeypatch.delenv("EVALWH_HTTP_TRANSPORT", raising=False)
    for name in ("ALL_PROXY", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"):
        for spelled in (name, name.lower()):
            monkeypatch.delenv(spelled, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    assert http_aiohttp.usable_for("http://llm.test/v1") is pool


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
