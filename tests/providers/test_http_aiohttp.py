"""The HTTP transport underneath httpx (evalwh/providers/http_aiohttp.py): aiohttp's pool when
httpx-aiohttp is installed, httpcore's sharded pools otherwise (or with
EVALWH_HTTP_TRANSPORT=httpx, or where a proxy from the environment applies).

Both must fail the same way: a provider sees the httpx exception httpcore would raise (a
refused connection, a dropped or cut answer, each aiohttp error mapped to its httpx class),
so error kinds, retries and the dead-endpoint rule do not depend on what is installed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from evalwh.config.model import Case, ModelSpec
from evalwh.providers import create
from evalwh.providers import http_aiohttp as aio
from evalwh.providers.base import ProviderError, Request
from tests.builders import closed_port
from tests.fakes.servers import FakeLLMServer, drop, reply, truncated

pytest.importorskip("httpx_aiohttp")


def _spec(base_url: str) -> ModelSpec:
    return ModelSpec("m", "openai-compatible", "local", timeout_s=5, options={"base_url": base_url})


def _request(spec: ModelSpec) -> Request:
    messages = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    return Request(model=spec, messages=messages, case=Case("c"), variant="v", repeat=0)


async def _complete(base_url: str) -> tuple[object, str]:
    provider = create(_spec(base_url))
    try:
        result = await provider.complete(_request(provider.spec))
        kind = type(provider._clients[0]._transport).__module__
        return result, kind
    finally:
        await provider.aclose()


def test_the_switch_chooses_the_transport(transport: str) -> None:
    assert aio.available() is (transport == "aiohttp")
    with FakeLLMServer() as server:
        server.script(reply("ok"))
        completion, module = asyncio.run(_complete(server.openai_url))
    assert completion.text == "ok"  # type: ignore[attr-defined]
    assert (module == "evalwh.providers.http_aiohttp") is (transport == "aiohttp")


def test_a_refused_connection_is_a_connect_error_on_both(transport: str) -> None:
    """Bug: httpx-aiohttp reports a refused connection as ConnectTimeout, which would make
    it a `timeout` and hide a dead endpoint from the dead-endpoint rule."""
    with pytest.raises(ProviderError) as caught:
        asyncio.run(_complete(f"http://127.0.0.1:{closed_port()}/v1"))
    assert caught.value.kind == "connection" and caught.value.retryable
    assert "ConnectError" in str(caught.value)


@pytest.mark.parametrize("behavior", [drop(), truncated()], ids=["dropped", "truncated"])
def test_a_dropped_or_cut_answer_is_a_retryable_connection_error(
    transport: str, behavior: object
) -> None:
    with FakeLLMServer() as server:
        server.default = behavior  # type: ignore[assignment]
        with pytest.raises(ProviderError) as caught:
            asyncio.run(_complete(server.openai_url))
    assert caught.value.kind == "connection" and caught.value.retryable


def test_aiohttp_errors_map_to_the_httpx_classes_httpcore_raises() -> None:
    import aiohttp

    key = aiohttp.client_reqrep.ConnectionKey("h", 1, False, False, None, None, None)
    refused = aiohttp.ClientConnectorError(key, ConnectionRefusedError(111, "refused"))
    cases = [
        (refused, httpx.ConnectError),
        (aiohttp.ServerDisconnectedError(), httpx.RemoteProtocolError),
        (aiohttp.ClientPayloadError("cut"), httpx.RemoteProtocolError),
        (aiohttp.ServerTimeoutError("slow"), httpx.ReadTimeout),
        (aiohttp.ConnectionTimeoutError("slow"), httpx.ConnectTimeout),
        (asyncio.TimeoutError(), httpx.ReadTimeout),
        (aiohttp.ClientOSError(104, "reset"), httpx.ReadError),
        (aiohttp.ClientProxyConnectionError(key, OSError(1, "proxy")), httpx.ProxyError),
    ]
    for exc, expected in cases:
        assert type(aio._mapped(exc)) is expected, exc
    assert aio._mapped(ValueError("not a transport error")) is None


def test_a_mapped_aiohttp_error_keeps_its_message() -> None:
    aiohttp = pytest.importorskip("aiohttp")
    mapped = aio._mapped(aiohttp.ServerTimeoutError("read timed out after 5s"))
    assert type(mapped) is httpx.ReadTimeout and str(mapped) == "read timed out after 5s"
    mapped = aio._mapped(aiohttp.ServerDisconnectedError())
    assert type(mapped) is httpx.RemoteProtocolError and str(mapped) == "Server disconnected"


def test_a_mapped_aiohttp_error_without_a_message_is_named_by_its_class() -> None:
    aiohttp = pytest.importorskip("aiohttp")
    mapped = aio._mapped(asyncio.TimeoutError())
    assert type(mapped) is httpx.ReadTimeout and str(mapped) == "TimeoutError"
    mapped = aio._mapped(aiohttp.ConnectionTimeoutError())
    assert type(mapped) is httpx.ConnectTimeout and str(mapped) == "ConnectionTimeoutError"


class _Cut:
    """A response body stream that yields one chunk, then fails with ``error``."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield b'{"partial": '
        raise self.error

    async def aclose(self) -> None:
        return None


def _read(error: Exception) -> tuple[list[bytes], Exception]:
    async def go() -> tuple[list[bytes], Exception]:
        chunks: list[bytes] = []
        try:
            async for chunk in aio._Body(_Cut(error)):
                chunks.append(chunk)
        except Exception as exc:  # the test inspects what was raised
            return chunks, exc
        raise AssertionError("the body did not fail")

    return asyncio.run(go())


def test_a_body_cut_short_by_a_raw_aiohttp_error_is_a_protocol_error() -> None:
    """aiohttp's own payload error (not wrapped by httpx-aiohttp) is still mapped."""
    aiohttp = pytest.importorskip("aiohttp")
    chunks, raised = _read(aiohttp.ClientPayloadError("response payload is not completed"))
    assert chunks == [b'{"partial": ']
    assert type(raised) is httpx.RemoteProtocolError
    assert str(raised) == "response payload is not completed"


def test_a_body_error_wrapped_by_httpx_aiohttp_is_mapped_from_its_cause() -> None:
    aiohttp = pytest.importorskip("aiohttp")
    wrapped = httpx.ReadTimeout("wrapped")
    wrapped.__cause__ = aiohttp.ServerDisconnectedError()
    _chunks, raised = _read(wrapped)
    assert type(raised) is httpx.RemoteProtocolError and str(raised) == "Server disconnected"


def test_a_body_error_that_is_not_a_transport_error_is_raised_as_it_is() -> None:
    error = ValueError("a bug, not the network")
    _chunks, raised = _read(error)
    assert raised is error


# ---- which URLs use aiohttp's pool ------------------------------------------------------------


def test_a_proxy_from_the_environment_keeps_httpx_transport(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bug risk: the aiohttp session does not read proxy variables; a proxied URL must keep
    httpx's transport, which honours them."""
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY", "EVALWH_HTTP_TRANSPORT"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    assert aio.usable_for("https://api.example.com/v1")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    assert not aio.usable_for("https://api.example.com/v1")
    assert aio.usable_for("http://127.0.0.1:8000/v1")  # no HTTP_PROXY: http is not proxied
    monkeypatch.setenv("NO_PROXY", "api.example.com")
    assert aio.usable_for("https://api.example.com/v1")  # exempted


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
