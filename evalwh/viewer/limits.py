"""What one client may cost the viewer: time, connections, body bytes (docs/viewer.md#limits).

- **Request bodies** are refused with 413 past :attr:`Limits.max_body` bytes, from
  ``Content-Length`` before a byte is read, and while a body without one streams in
  (:class:`BodyLimit`, outside every other check: a body without the token is cut too);
  the whole body must arrive within :attr:`Limits.body_timeout_s` (else 408).
- **Headers** must be complete within :attr:`Limits.header_timeout_s` of the connection
  opening or of the previous response's end, else the connection gets 408 and is closed.
  uvicorn's h11 protocol has no such timeout (its keep-alive timeout stops at the first byte
  of the next request), so :func:`protocol` adds it to uvicorn's own class.
- **Connections** are capped below the process's descriptor limit: the one over the cap gets
  503 at once and is closed, so idle or slow connections cannot use up the descriptors.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalwh.viewer.live import PER_RUN

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, MutableMapping

    import uvicorn

    Scope = MutableMapping[str, Any]
    Message = MutableMapping[str, Any]
    Receive = Callable[[], Awaitable[Message]]
    Send = Callable[[Message], Awaitable[None]]
    ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_BODY = 64_000  # bytes of a write request (a label or a baseline is well under 1 KB)
SPARE_DESCRIPTORS = 100  # kept free of connections: the warehouse, threads, logs
MAX_CONNECTIONS = 1000


def connection_cap(wanted: int = MAX_CONNECTIONS) -> int:
    """``wanted``, or fewer: the process's descriptor limit less the spare ones."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(1, min(wanted, soft - SPARE_DESCRIPTORS))


@dataclass(frozen=True)
class Limits:
    """The viewer's limits; the defaults are `evalwh serve`'s."""

    max_body: int = MAX_BODY
    body_timeout_s: float = 30.0  # the whole body, from the end of the headers
    header_timeout_s: float = 10.0  # the request line and headers, from connect or last response
    keep_alive_s: int = 5  # an idle connection between two requests
    max_header_bytes: int = 16 * 1024  # the request line and headers together
    max_connections: int | None = None  # None: connection_cap()
    sse_per_run: int = PER_RUN  # live-tail subscribers of one run (one shared poll feeds them)

    @property
    def connections(self) -> int:
        return self.max_connections or connection_cap()


def _plain(status: int, text: str) -> bytes:
    body = text.encode()
    return (
        f"HTTP/1.1 {status} {text}\r\ncontent-type: text/plain; charset=utf-8\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode() + body


class BodyLimit:
    """Refuse a request body over ``max_body`` bytes with 413 before the app sees it, and one
    slower than ``timeout_s`` with 408; a body within both is read (at most ``max_body``
    bytes held) and handed on whole."""

    def __init__(self, app: ASGIApp, max_body: int = MAX_BODY, timeout_s: float = 30.0) -> None:
        self.app = app
        self.max_body = max_body
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        import anyio

        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        length = headers.get(b"content-length")
        if length in (None, b"0") and b"transfer-encoding" not in headers:
            await self.app(scope, receive, send)  # no body
            return
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            await self._refuse(413, f"the request body is over {self.max_body} bytes", send)
            return
        body = bytearray()
        with anyio.move_on_after(self.timeout_s) as slow:
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return  # the client went away
                body += message.get("body", b"")
                if len(body) > self.max_body:
                    await self._refuse(413, f"the request body is over {self.max_body} bytes", send)
                    return
                if not message.get("more_body", False):
                    break
        if slow.cancelled_caught:
            await self._refuse(408, f"the request body took over {self.timeout_s:g} s", send)
            return
        whole: list[Message] = [{"type": "http.request", "body": bytes(body), "more_body": False}]

        async def replay() -> Message:
            return whole.pop() if whole else await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, status: int, message: str, send: Send) -> None:
        text = message.encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(text)).encode()),
                    (b"connection", b"close"),  # the rest of the body is never read
                ],
            }
        )
        await send({"type": "http.response.body", "body": text})


def protocol(limits: Limits) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with a header timeout and a connection cap."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    cap = limits.connections  # read the descriptor limit once

    class Guarded(H11Protocol):
        header_timer: asyncio.TimerHandle | None = None
        timed: object = None  # the cycle (request) whose headers the timer waits for

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > cap:
                self.logger.warning("over %d connections: 503", cap)
                transport.write(_plain(503, "Service Unavailable"))
                transport.close()
                return
            self._arm()

        def _arm(self) -> None:
            self._disarm()
            self.timed = self.cycle
            self.header_timer = self.loop.call_later(limits.header_timeout_s, self._too_slow)

        def _disarm(self) -> None:
            if self.header_timer is not None:
                self.header_timer.cancel()
                self.header_timer = None

        def _too_slow(self) -> None:
            self.header_timer = None
            idle = self.cycle is None or self.cycle.response_complete
            if idle and self.cycle is self.timed and not self.transport.is_closing():
                self.transport.write(_plain(408, "Request Timeout"))
                self.transport.close()

        def handle_events(self) -> None:
            super().handle_events()
            if self.cycle is not self.timed:  # a new request's headers are in
                self._disarm()
                self.timed = self.cycle

        def on_response_complete(self) -> None:
            super().on_response_complete()  # may start a pipelined request at once
            if not self.transport.is_closing() and self.cycle.response_complete:
                self._arm()  # the next request's headers

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return Guarded


def uvicorn_config(app: ASGIApp, host: str, port: int, limits: Limits) -> uvicorn.Config:
    """The server's config with every limit set on purpose (uvicorn's defaults have no
    header timeout and no connection cap); the body limit is the app's own outermost layer
    (:func:`evalwh.viewer.app.create_app`)."""
    import uvicorn

    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=protocol(limits),
        h11_max_incomplete_event_size=limits.max_header_bytes,
        timeout_keep_alive=limits.keep_alive_s,
        # one over the cap: the protocol refuses the connection past it; uvicorn's own check
        # (connections or running requests at this number) answers 503 too
        limit_concurrency=limits.connections + 1,
        log_level="warning",
        access_log=False,
    )
