"""A measured proposal for evalwh/providers/http.py, applied only inside a benchmark child.

Profiling the latency benchmark shows httpx/httpcore spending 2-12 ms of CPU per request at
concurrency 32-128 (see README.md): httpcore's pool walks every connection on every request
(``_assign_requests_to_connections``: ``is_idle`` / ``has_expired``, one ``poll()`` syscall per
idle connection), and each of its locks and events retries ``import sniffio`` (not installed
with anyio 4.x), a failed import through the whole path search. Two changes, both local to
``HttpProvider``, remove most of it:

1. ``sys.modules.setdefault("sniffio", None)``: the import fails at once (httpcore then assumes
   asyncio, as it does today); or depend on ``sniffio``.
2. Shard the pool: ``ceil(size / 16)`` clients of at most 16 connections each; a request
   goes to the client with the fewest requests in its pool, so it scans 16 connections
   instead of ``size``; the shards share one SSL context (building one loads the CA bundle,
   ~40 ms).

The benchmark runs the latency rows with and without this patch; the shipped code is what the
table reports.
"""

from __future__ import annotations

import asyncio
import math
import ssl
import sys
from typing import Any

SHARD = 16


def _load(client: Any) -> int:
    """Requests in a client's pool (active and queued)."""
    return len(client._transport._pool._requests)


def apply() -> None:
    import httpx

    from evalwh.providers import http

    sys.modules.setdefault("sniffio", None)  # type: ignore[arg-type]

    def _client_for_loop(self: Any) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        clients = getattr(self, "_bench_clients", None)
        if clients is None or self._loop is not loop:
            size = max(http.DEFAULT_MAX_CONNECTIONS, self.spec.max_concurrency or 0)
            shards = max(1, math.ceil(size / SHARD))
            per = math.ceil(size / shards)
            verify = ssl.create_default_context()  # one CA bundle load, not one per shard
            clients = [
                httpx.AsyncClient(
                    verify=verify,
                    timeout=httpx.Timeout(self.spec.timeout_s, pool=None),
                    limits=httpx.Limits(
                        max_connections=per, max_keepalive_connections=per, keepalive_expiry=30.0
                    ),
                    follow_redirects=False,
                )
                for _ in range(shards)
            ]
            self._bench_clients = clients
            self._client = clients[0]
            self._loop = loop
        return min(clients, key=_load)

    async def aclose(self: Any) -> None:
        clients = getattr(self, "_bench_clients", None) or []
        self._bench_clients = None
        self._client = None
        if self._loop is asyncio.get_running_loop():
            for client in clients:
                await client.aclose()
        self._loop = None

    http.HttpProvider._client_for_loop = _client_for_loop  # type: ignore[method-assign]
    http.HttpProvider.aclose = aclose  # type: ignore[method-assign]
