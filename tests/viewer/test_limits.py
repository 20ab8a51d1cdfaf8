"""The viewer's limits (evalwh/viewer/limits.py) under real uvicorn on loopback: the body
limit, the header timeout, the connection cap."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from evalwh.viewer.app import create_app
from evalwh.viewer.limits import MAX_BODY, Limits
from evalwh.viewer.security import Guard
from tests.viewer.serving import TOKEN, read_all, uvicorn_serving


class Counted:
    """An ASGI app counting the body bytes the server hands to ``app``."""

    def __init__(self, app: Any) -> None:
        self.app, self.read = app, 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def counting() -> Any:
            message = await receive()
            self.read += len(message.get("body", b""))
            return message

        await self.app(scope, counting, send)


def viewer(wh: dict[str, Any], limits: Limits) -> Any:
    return create_app(wh["view"], Guard("127.0.0.1", 8000, TOKEN), limits=limits)


def connect(address: tuple[str, int]) -> socket.socket:
    sock = socket.create_connection(address, timeout=60)  # a bound on a hang, not a measure
    return sock


def head(path: str, *lines: str) -> bytes:
    return "\r\n".join([f"POST {path} HTTP/1.1", "Host: 127.0.0.1:8000", *lines, "", ""]).encode()


# -- the body limit ----------------------------------------------------------------------------
def test_a_streamed_body_without_the_token_is_cut_at_the_limit(wh: dict[str, Any]) -> None:
    """A 400 MB chunked body, no token: 413 once 64 KB are in, and no more is read."""
    app = Counted(viewer(wh, Limits()))
    chunk = b"x" * 1024
    with uvicorn_serving(app, Limits()) as address, connect(address) as sock:
        sock.sendall(head("/baselines/pin", "Transfer-Encoding: chunked"))
        for _ in range(MAX_BODY // len(chunk) + 1):  # just over the limit, then wait
            sock.sendall(b"400\r\n" + chunk + b"\r\n")
        answer = sock.recv(65536)
        assert answer.startswith(b"HTTP/1.1 413"), answer
        sent = 0
        with pytest.raises(OSError):  # the server closed: the rest of 400 MB is refused
            while sent < 400_000_000:
                sock.sendall(b"400\r\n" + chunk + b"\r\n")
                sent += len(chunk)
    assert app.read <= MAX_BODY + len(chunk), app.read


def test_a_declared_400_mb_body_is_refused_before_a_byte_is_read(wh: dict[str, Any]) -> None:
    app = Counted(viewer(wh, Limits()))
    with uvicorn_serving(app, Limits()) as address, connect(address) as sock:
        sock.sendall(
            head(
                "/baselines/pin",
                "Content-Length: 400000000",
                f"X-Evalwh-Token: {TOKEN}",
                "Origin: http://127.0.0.1:8000",
                "Content-Type: application/json",
            )
        )
        answer = read_all(sock)
    assert answer.startswith(b"HTTP/1.1 413") and b"connection: close" in answer, answer
    assert app.read == 0


def test_a_body_sent_a_byte_at_a_time_is_cut_at_the_body_timeout(wh: dict[str, Any]) -> None:
    limits = Limits(body_timeout_s=0.2)
    with uvicorn_serving(viewer(wh, limits), limits) as address, connect(address) as sock:
        origin = "Origin: http://127.0.0.1:8000"  # the Host head() sends: a write that passes
        writer = head("/baselines/pin", "Content-Length: 100", f"X-Evalwh-Token: {TOKEN}", origin)
        sock.sendall(writer + b"{")  # and nothing more
        answer = read_all(sock)  # returns only once the server closes
    assert answer.startswith(b"HTTP/1.1 408"), answer


def test_a_body_within_the_limit_still_writes(wh: dict[str, Any]) -> None:
    import httpx

    with uvicorn_serving(viewer(wh, Limits()), Limits()) as (host, port):
        r = httpx.post(
            f"http://{host}:{port}/baselines/pin",
            json={"run": wh["a"], "name": "limits", "pad": "x" * 60_000},
            headers={"X-Evalwh-Token": TOKEN, "Origin": f"http://{host}:{port}"},
            timeout=60,
        )
    assert r.status_code == 200, r.text
    wh["view"].remove_baseline("limits")


# -- slow and idle connections -----------------------------------------------------------------
def test_half_a_request_is_closed_after_the_header_timeout(wh: dict[str, Any]) -> None:
    limits = Limits(header_timeout_s=0.2)
    with uvicorn_serving(viewer(wh, limits), limits) as address:
        with connect(address) as sock:
            sock.sendall(b"GET /runs.json HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            answer = read_all(sock)  # returns only once the server closes
        assert answer.startswith(b"HTTP/1.1 408"), answer
        with connect(address) as sock:  # a connection that never sends a byte
            assert read_all(sock).startswith(b"HTTP/1.1 408")
        with connect(address) as sock:  # the second request of a kept-alive connection
            sock.sendall(b"GET /runs.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /runs.json")
            answer = read_all(sock)
        assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"Request Timeout"), answer


def test_connections_over_the_cap_get_503_and_free_their_descriptor(wh: dict[str, Any]) -> None:
    limits = Limits(max_connections=3)
    with uvicorn_serving(viewer(wh, limits), limits) as address:
        held = [connect(address) for _ in range(3)]
        for sock in held:  # each is the server's before the next connects
            sock.sendall(b"GET /runs.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        with connect(address) as sock:
            answer = read_all(sock)
        assert answer.startswith(b"HTTP/1.1 503") and answer.endswith(b"Service Unavailable")
        for sock in held:
            sock.close()
        with connect(address) as sock:  # room again once they are gone
            sock.sendall(b"GET /runs.json HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            assert read_all(sock).startswith(b"HTTP/1.1 200")


def test_the_connection_cap_stays_below_the_descriptor_limit() -> None:
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert Limits().connections < soft


# -- the live tail ------------------------------------------------------------------------------
def test_many_live_tail_clients_share_one_poll_and_one_more_gets_503(wh: dict[str, Any]) -> None:
    """A run's subscribers (up to the cap) are fed by one poll per tick; the next is refused
    with 503 and Retry-After. The poll is counted; no time is measured."""
    import threading
    from contextlib import ExitStack

    import httpx

    from evalwh.viewer.live import Hub

    ticks, cap = 4, Limits().sse_per_run
    polls: list[Any] = []
    joined = threading.Event()  # the second poll waits until every subscriber is in

    def poll(run_id: str, after: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        polls.append(after)
        if len(polls) == 2:
            joined.wait(timeout=120)
        n = len(polls)
        return {"live": n < ticks, "n": n}, [{"created_at": n, "case_id": f"q{n}"}]

    hub = Hub(poll, per_run=cap, poll_s=0.01)
    app = create_app(wh["view"], Guard("127.0.0.1", 8000, TOKEN), limits=Limits(), hub=hub)
    url = f"/runs/{wh['a']}/events"
    try:
        with uvicorn_serving(app, Limits()) as (host, port), ExitStack() as stack:
            client = stack.enter_context(
                httpx.Client(base_url=f"http://{host}:{port}", timeout=120)
            )
            streams = [stack.enter_context(client.stream("GET", url)) for _ in range(cap)]
            assert all(s.status_code == 200 for s in streams)
            over = client.get(url)
            assert over.status_code == 503 and int(over.headers["retry-after"]) > 0
            joined.set()
            seen = [[line for line in s.iter_lines() if line.startswith("data: ")] for s in streams]
    finally:
        joined.set()
    assert len(polls) == ticks  # one poll per tick, not one per subscriber
    # each poll asks for the rows after the last one seen
    assert polls[1:] == [{"created_at": n, "case_id": f"q{n}"} for n in (1, 2, 3)]
    for lines in seen:  # every subscriber saw every tick once, then `end` with the last
        progress = [line for line in lines if line.startswith('data: {"live"')]
        assert progress == [
            f'data: {{"live":{str(n < ticks).lower()},"n":{n}}}' for n in (1, 2, 3, 4, 4)
        ]
