"""A small asyncio HTTP/1.1 server speaking OpenAI chat completions, for latency benchmarks.

Loopback only. Every ``POST .../chat/completions`` is answered after ``--latency`` seconds with
the text of the last user message (echo) and made-up token counts; ``GET /stats`` returns the
request count and the most requests seen in flight at once (``GET /stats/reset`` starts that
count again). ``--rate N`` allows N requests a second (a token bucket holding ``--burst``);
the rest get a 429 with ``Retry-After: --retry-after`` at once, like a rate-limited API. A
request that offers ``tools`` is answered with a call of its first tool until it carries
:data:`TOOL_ROUNDS` tool results (a three-turn loop). Keep-alive connections, one
coroutine per connection: hundreds of concurrent connections cost one event loop, unlike the
thread-per-connection test server (tests/fakes/servers.py), so the server is never the
bottleneck of a concurrency-128 run.

Run it in its own process (so it has its own core and GIL)::

    python benchmarks/server.py --latency 0.1      # prints "PORT <n>" once listening

or in-process with :func:`serve` (tests, small checks).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from dataclasses import dataclass

# A request that offers tools is answered with a call of its first tool until it carries
# this many tool results: a tool loop of TOOL_ROUNDS + 1 turns (benchmarks/toolloop.py).
TOOL_ROUNDS = 2


@dataclass
class Stats:
    requests: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    connections: int = 0
    rejected: int = 0  # 429s sent (with --rate)


def _last_user_text(body: dict) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _response(status: str, payload: bytes, keep_alive: bool, extra: str = "") -> bytes:
    head = (
        f"HTTP/1.1 {status}\r\n{extra}"
        "content-type: application/json\r\n"
        f"content-length: {len(payload)}\r\n"
        f"connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n"
    )
    return head.encode("latin-1") + payload


class LatencyServer:
    def __init__(
        self, latency: float, rate: float = 0.0, burst: float = 1.0, retry_after: float = 0.1
    ) -> None:
        self.latency = latency
        self.stats = Stats()
        self.rate, self.burst, self.retry_after = rate, burst, retry_after
        self._tokens, self._at = burst, time.monotonic()

    def _admit(self) -> bool:
        """The token bucket of ``--rate``: True when this request may be answered."""
        if not self.rate:
            return True
        now = time.monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate)
        self._at = now
        if self._tokens >= 1:
            self._tokens -= 1
            return True
        self.stats.rejected += 1
        return False

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.stats.connections += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, path, _version = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        name, value = line.split(":", 1)
                        headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length") or 0)
                raw = await reader.readexactly(length) if length else b""
                keep_alive = headers.get("connection", "").lower() != "close"
                if method == "GET" and path.endswith("/stats/reset"):
                    self.stats.max_in_flight = self.stats.in_flight
                    writer.write(_response("200 OK", b"{}", keep_alive))
                elif method == "GET" and path.endswith("/stats"):
                    payload = json.dumps(self.stats.__dict__).encode()
                    writer.write(_response("200 OK", payload, keep_alive))
                elif method == "POST" and path.endswith("/chat/completions"):
                    writer.write(await self._complete(raw, keep_alive))
                else:
                    payload = json.dumps({"error": {"message": f"no route {path}"}}).encode()
                    writer.write(_response("404 Not Found", payload, keep_alive))
                await writer.drain()
                if not keep_alive:
                    return
        finally:
            writer.close()

    async def _complete(self, raw: bytes, keep_alive: bool) -> bytes:
        stats = self.stats
        stats.requests += 1
        if not self._admit():
            payload = json.dumps(
                {"error": {"type": "rate_limit_error", "message": "slow down"}}
            ).encode()
            extra = f"retry-after: {self.retry_after:g}\r\n"
            return _response("429 Too Many Requests", payload, keep_alive, extra)
        stats.in_flight += 1
        stats.max_in_flight = max(stats.max_in_flight, stats.in_flight)
        try:
            body = json.loads(raw or b"{}")
            text = _last_user_text(body)
            # at 0 ms one pass of the event loop: requests that arrived together are counted
            # in flight together (what "the client reached its concurrency" means at 0 ms)
            await asyncio.sleep(self.latency)
        finally:
            stats.in_flight -= 1
        message: dict = {"role": "assistant", "content": text}
        finish = "stop"
        rounds = sum(1 for m in body.get("messages") or () if m.get("role") == "tool")
        if body.get("tools") and rounds < TOOL_ROUNDS:  # a tool loop: call the first tool
            name = body["tools"][0]["function"]["name"]
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{stats.requests}",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps({"q": text[:40]})},
                    }
                ],
            }
            finish = "tool_calls"
        payload = json.dumps(
            {
                "id": f"chatcmpl-{stats.requests}",
                "object": "chat.completion",
                "model": body.get("model", "bench"),
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {
                    "prompt_tokens": max(1, len(raw) // 4),
                    "completion_tokens": max(1, len(text) // 4),
                },
            }
        ).encode()
        return _response("200 OK", payload, keep_alive)


async def serve(
    latency: float,
    port: int = 0,
    *,
    ready: asyncio.Future | None = None,
    rate: float = 0.0,
    burst: float = 1.0,
    retry_after: float = 0.1,
) -> None:
    """Serve on 127.0.0.1 until cancelled; ``ready`` gets the bound port."""
    server = LatencyServer(latency, rate, burst, retry_after)
    listener = await asyncio.start_server(server.handle, "127.0.0.1", port, backlog=1024)
    bound = listener.sockets[0].getsockname()[1]
    if ready is not None:
        ready.set_result(bound)
    else:
        sys.stdout.write(f"PORT {bound}\n")
        sys.stdout.flush()
    async with listener:
        await listener.serve_forever()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.1, help="seconds per response")
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    parser.add_argument("--rate", type=float, default=0.0, help="requests/s allowed (0: all)")
    parser.add_argument("--burst", type=float, default=1.0, help="the token bucket's size")
    parser.add_argument("--retry-after", type=float, default=0.1, help="seconds, in 429s")
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(
            serve(
                args.latency,
                args.port,
                rate=args.rate,
                burst=args.burst,
                retry_after=args.retry_after,
            )
        )


if __name__ == "__main__":
    main()
