"""The HTTP transport underneath httpx (issue 18): aiohttp's pool when httpx-aiohttp is
installed, httpcore's sharded pools otherwise (or with EVALWH_HTTP_TRANSPORT=httpx).

Both must fail the same way: a provider sees the httpx exception httpcore would raise, so
error kinds, retries and the dead-endpoint rule do not depend on what is installed.
"""

from __future__ import annotations

import asyncio
import socket
import sys

import httpx
import pytest

from evalwh.config.model import Case, ModelSpec
from evalwh.providers import create
from evalwh.providers import http_aiohttp as aio
from evalwh.providers.base import ProviderError, Request
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


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_refused_connection_is_a_connect_error_on_both(transport: str) -> None:
    """Bug: httpx-aiohttp reports a refused connection as ConnectTimeout, which would make
    it a `timeout` and hide a dead endpoint from the dead-endpoint rule."""
    with pytest.raises(ProviderError) as caught:
        asyncio.run(_complete(f"http://127.0.0.1:{_closed_port()}/v1"))
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


def test_the_sniffio_fix_makes_the_import_fail_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bug: httpcore retried a failed `import sniffio` (a sys.path search) ~8 times a request."""
    import importlib.util

    from evalwh.providers.http import fast_async_detection

    monkeypatch.delitem(sys.modules, "sniffio", raising=False)
    installed = importlib.util.find_spec("sniffio") is not None
    fast_async_detection()
    if installed:
        assert sys.modules.get("sniffio") is not None  # nothing changes
    else:
        assert "sniffio" in sys.modules and sys.modules["sniffio"] is None
        with pytest.raises(ModuleNotFoundError):
            import sniffio  # noqa: F401
    fast_async_detection()  # idempotent


@pytest.mark.parametrize(
    ("env", "uvloop_expected"),
    [
        ({}, True),
        ({"EVALWH_EVENT_LOOP": "asyncio"}, False),
        ({"EVALWH_HTTP_TRANSPORT": "httpx"}, False),  # uvloop measured slower with httpcore
    ],
)
def test_runs_use_uvloop_only_with_the_fast_http_path(
    env: dict[str, str], uvloop_expected: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("uvloop")
    if sys.version_info < (3, 11):
        pytest.skip("uvloop is used on Python 3.11+ (asyncio.Runner's loop_factory)")
    from evalwh.engine.execute import run_loop

    for name in ("EVALWH_EVENT_LOOP", "EVALWH_HTTP_TRANSPORT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    async def which() -> str:
        return type(asyncio.get_running_loop()).__module__

    assert run_loop(which()).startswith("uvloop") is uvloop_expected


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
