"""httpx over aiohttp's connection pool, when the optional ``httpx-aiohttp`` is installed.

httpx stays the client API (requests, responses, timeouts, errors are httpx's); only the
transport underneath changes. httpcore's pool walks every connection on every request and
its locks ask ``sniffio`` each time; aiohttp's connector hands out a free keep-alive
connection in constant time. On the benchmark server (benchmarks/httpclients.py, 0 ms) that
is about half the client CPU per request of httpcore's pool (benchmarks/README.md), so
:class:`evalwh.providers.http.HttpProvider` uses it when the package is importable
(``pip install "evalwh[fast]"``), unless ``EVALWH_HTTP_TRANSPORT=httpx``.

A URL that the environment routes through a proxy (``HTTPS_PROXY``/``HTTP_PROXY``/``ALL_PROXY``
without a matching ``NO_PROXY``) keeps httpx's own transport, which honours it exactly as
before: the aiohttp session does not read the environment (``trust_env`` would cost two
thread hops per request to look the proxy up again).

Errors are mapped here, not by httpx-aiohttp (which reports a refused connection as a
``ConnectTimeout``), so a provider sees exactly the httpx exception classes httpcore would
raise: a refused or unresolvable connection is ``ConnectError``, a dropped or cut-short
answer ``RemoteProtocolError``/``ReadError``, a timeout ``ReadTimeout``/``ConnectTimeout``.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

import httpx


def available() -> bool:
    """httpx-aiohttp installed and not switched off with ``EVALWH_HTTP_TRANSPORT=httpx``."""
    from evalwh.providers import fast_http

    return fast_http()


def _mapped(exc: BaseException) -> httpx.TransportError | None:
    """The httpx exception httpcore would have raised for an aiohttp one (None: not ours)."""
    import aiohttp

    text = str(exc) or type(exc).__name__
    if isinstance(exc, aiohttp.ClientProxyConnectionError | aiohttp.ClientHttpProxyError):
        return httpx.ProxyError(text)
    if isinstance(exc, aiohttp.ClientConnectorError):  # refused, unresolvable, TLS at connect
        if isinstance(exc, aiohttp.ClientConnectorCertificateError | aiohttp.ClientSSLError):
            return httpx.ConnectError(f"TLS: {text}")
        return httpx.ConnectError(text)
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return httpx.ConnectTimeout(text)
    if isinstance(exc, aiohttp.ServerTimeoutError | asyncio.TimeoutError):
        return httpx.ReadTimeout(text)
    if isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError):
        return httpx.RemoteProtocolError(text)
    if isinstance(exc, aiohttp.ClientResponseError):  # a malformed status line or headers
        return httpx.RemoteProtocolError(text)
    if isinstance(exc, aiohttp.ClientConnectionError | OSError):
        return httpx.ReadError(text)
    if isinstance(exc, aiohttp.InvalidURL):
        return httpx.UnsupportedProtocol(text)
    return None


def usable_for(url: str) -> bool:
    """:func:`available`, and no proxy from the environment applies to ``url``."""
    if not available():
        return False
    import urllib.request
    from urllib.parse import urlsplit

    proxies = urllib.request.getproxies()
    scheme = urlsplit(url).scheme
    if not (proxies.get(scheme) or proxies.get("all")):
        return True
    return bool(urllib.request.proxy_bypass(urlsplit(url).hostname or ""))


def _translated(exc: Exception) -> Exception:
    """``exc`` as httpcore would raise it; httpx-aiohttp's own mapping is redone from the
    aiohttp error it wraps. ``exc`` itself when it is not a transport error."""
    source = exc.__cause__ if isinstance(exc, httpx.TransportError) else exc
    mapped = _mapped(source) if source is not None else None
    return mapped if mapped is not None else exc


def transport(verify: ssl.SSLContext | bool, connections: int, keepalive_s: float) -> Any:
    """An ``httpx.AsyncBaseTransport`` over one aiohttp session (created on first use, in
    the running event loop) with at most ``connections`` connections."""
    import aiohttp
    from httpx_aiohttp import AiohttpTransport

    class Transport(AiohttpTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            try:
                response = await super().handle_async_request(request)
            except Exception as exc:
                mapped = _translated(exc)
                if mapped is exc:
                    raise
                raise mapped from None
            response.stream = _Body(response.stream)
            return response

    def session() -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(
            limit=connections,
            limit_per_host=0,
            keepalive_timeout=keepalive_s,
            ssl=verify if isinstance(verify, ssl.SSLContext) else False,
        )
        return aiohttp.ClientSession(connector=connector, trust_env=False)

    return Transport(verify=verify, client=session)


class _Body(httpx.AsyncByteStream):
    """The response body stream, with errors mapped as above (a body cut short)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def __aiter__(self) -> Any:
        try:
            async for chunk in self._stream:
                yield chunk
        except Exception as exc:
            mapped = _translated(exc)
            if mapped is exc:
                raise
            raise mapped from None

    async def aclose(self) -> None:
        await self._stream.aclose()
