"""HTTP client strategies side by side: CPU per request against benchmarks/server.py.

Each strategy posts ``n`` OpenAI chat bodies with ``concurrency`` workers to the loopback
server (its own process, 0 ms latency by default) and parses the JSON answer; the figure is
the CPU time of this process per request (``time.process_time``: wall time is noise on a
shared 2-core machine), beside the wall time and the most requests the server saw in flight.

    uv run python benchmarks/httpclients.py                      # every strategy, 10,000 requests
    uv run python benchmarks/httpclients.py --only provider --n 2000 --loop uvloop

Strategies (each in a fresh child process, so imports and process-wide fixes do not leak):

- ``httpx-sharded``: httpx pools of at most 16 connections, a request takes the first shard
  with a free connection (evalwh's client before this work);
- ``httpx-one``: one ``httpx.AsyncClient`` with ``Limits(max_connections=c,
  max_keepalive_connections=c)``;
- ``httpx-aiohttp``: one ``httpx.AsyncClient`` over ``httpx_aiohttp.AiohttpTransport``;
- ``aiohttp``: a bare ``aiohttp.ClientSession`` (a reference, not an httpx API);
- ``provider``: evalwh's shipped ``openai-compatible`` provider end to end (build the body,
  post, parse the completion) through ``evalwh.providers.http`` (over aiohttp when
  httpx-aiohttp is installed); ``provider-httpx`` the same with
  ``EVALWH_HTTP_TRANSPORT=httpx`` (sharded httpcore pools).

``--sniffio-fix`` makes httpcore's per-lock ``import sniffio`` fail fast (what
:func:`evalwh.providers.http.fast_async_detection` does) for the httpx strategies; the shipped
provider always has it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
STRATEGIES = (
    "httpx-sharded",
    "httpx-one",
    "httpx-aiohttp",
    "aiohttp",
    "provider-httpx",
    "provider",
)

BODY = {
    "model": "bench",
    "messages": [
        {"role": "system", "content": "Answer with the number only."},
        {"role": "user", "content": "What is 21 plus 21?"},
    ],
}


def _stats(base_url: str) -> dict[str, Any]:
    import urllib.request

    with urllib.request.urlopen(base_url + "/stats", timeout=5) as fh:  # loopback only
        return json.loads(fh.read())


Post = Callable[[], Awaitable[Any]]


async def _strategy(
    name: str, url: str, concurrency: int
) -> tuple[Post, Callable[[], Awaitable[None]]]:
    """(post one body and parse the answer, close)."""
    headers = {"user-agent": "bench"}
    if name in ("httpx-one", "httpx-sharded", "httpx-aiohttp"):
        import httpx

        def client(size: int, transport: Any = None) -> httpx.AsyncClient:
            return httpx.AsyncClient(
                verify=False,
                timeout=httpx.Timeout(300, pool=None),
                limits=httpx.Limits(
                    max_connections=size, max_keepalive_connections=size, keepalive_expiry=30.0
                ),
                transport=transport,
            )

        if name == "httpx-sharded":
            shards = max(1, math.ceil(max(100, concurrency) / 16))
            per = math.ceil(max(100, concurrency) / shards)
            clients = [client(per) for _ in range(shards)]
            busy = [0] * shards

            async def post() -> Any:
                i = next((i for i, n in enumerate(busy) if n < per), busy.index(min(busy)))
                busy[i] += 1
                try:
                    response = await clients[i].post(url, json=BODY, headers=headers)
                finally:
                    busy[i] -= 1
                return json.loads(response.text)

            async def close() -> None:
                for c in clients:
                    await c.aclose()

            return post, close
        if name == "httpx-aiohttp":
            import aiohttp
            from httpx_aiohttp import AiohttpTransport

            transport = AiohttpTransport(
                client=lambda: aiohttp.ClientSession(
                    connector=aiohttp.TCPConnector(limit=max(100, concurrency))
                )
            )
            one = client(max(100, concurrency), transport)
        else:
            one = client(max(100, concurrency))

        async def post_one() -> Any:
            response = await one.post(url, json=BODY, headers=headers)
            return json.loads(response.text)

        return post_one, one.aclose
    if name == "aiohttp":
        import aiohttp

        session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=max(100, concurrency)))

        async def post_aiohttp() -> Any:
            async with session.post(url, json=BODY, headers=headers) as response:
                return json.loads(await response.text())

        return post_aiohttp, session.close
    if name in ("provider", "provider-httpx"):
        from evalwh.config.model import Case, ModelSpec
        from evalwh.providers import create
        from evalwh.providers.base import Request

        spec = ModelSpec(
            "local",
            "openai-compatible",
            "bench",
            max_concurrency=concurrency,
            timeout_s=300,
            options={"base_url": url.rsplit("/chat/completions", 1)[0]},
        )
        provider = create(spec)
        messages = [
            {"role": m["role"], "content": [{"type": "text", "text": m["content"]}]}
            for m in BODY["messages"]
        ]
        request = Request(model=spec, messages=messages, case=Case("c"), variant="v", repeat=0)

        async def post_provider() -> Any:
            return await provider.complete(request)

        return post_provider, provider.aclose
    raise SystemExit(f"unknown strategy {name}; known: {', '.join(STRATEGIES)}")


async def _drive(name: str, url: str, n: int, concurrency: int) -> dict[str, Any]:
    post, close = await _strategy(name, url, concurrency)
    for _ in range(min(concurrency, 50)):  # warm up: connections open, code paths imported
        await post()
    left = n

    async def worker() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            await post()

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    await close()
    return {"cpu_s": cpu, "wall_s": wall}


def measure(
    name: str, url: str, n: int, concurrency: int, loop: str, sniffio_fix: bool
) -> dict[str, Any]:
    """One strategy in this process (call from a fresh one)."""
    if name == "provider-httpx":
        os.environ["EVALWH_HTTP_TRANSPORT"] = "httpx"
    if sniffio_fix or name.startswith("provider"):
        from evalwh.providers.http import fast_async_detection

        fast_async_detection()
    if loop == "uvloop":
        import uvloop

        uvloop.install()
    before = _stats(url.rsplit("/chat/completions", 1)[0])
    got = asyncio.run(_drive(name, url, n, concurrency))
    after = _stats(url.rsplit("/chat/completions", 1)[0])
    return {
        **got,
        "strategy": name,
        "n": n,
        "concurrency": concurrency,
        "loop": loop,
        "sniffio_fix": sniffio_fix or name.startswith("provider"),
        "cpu_ms_per_request": got["cpu_s"] / n * 1000,
        "requests_per_s": n / got["wall_s"],
        "server_requests": after["requests"] - before["requests"],
        "server_max_in_flight": after["max_in_flight"],
    }


def run_child(
    name: str, url: str, n: int, concurrency: int, loop: str, sniffio_fix: bool
) -> dict[str, Any]:
    params = json.dumps([name, url, n, concurrency, loop, sniffio_fix])
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", params],
        stdout=subprocess.PIPE,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"http client child {name} failed (exit {done.returncode})")
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare(
    n: int,
    concurrency: int,
    runs: int,
    latency: float = 0.0,
    only: list[str] | None = None,
    loops: tuple[str, ...] = ("asyncio", "uvloop"),
    log: Callable[[str], None] = lambda s: None,
) -> list[dict[str, Any]]:
    """Every (strategy, sniffio fix, loop) against one server; ``runs`` children each."""
    plan: list[tuple[str, bool, str]] = []
    for name in only or STRATEGIES:
        fixes = (False, True) if name.startswith("httpx") else (False,)
        for fix in fixes:
            for loop in loops:
                if loop == "uvloop" and not _has("uvloop"):
                    continue
                if "aiohttp" in name and not _has("aiohttp"):
                    continue
                plan.append((name, fix, loop))
    out = []
    sys.path.insert(0, str(HERE))
    from figures import latency_server

    with latency_server(latency) as base:
        url = base + "/chat/completions"
        for name, fix, loop in plan:
            results = [run_child(name, url, n, concurrency, loop, fix) for _ in range(runs)]
            cpu = sorted(r["cpu_ms_per_request"] for r in results)[len(results) // 2]
            wall = sorted(r["wall_s"] for r in results)[len(results) // 2]
            log(
                f"{name:14} sniffio-fix={fix!s:5} {loop:7} {cpu:.3f} ms CPU/request, "
                f"wall {wall:.2f} s, server max in flight "
                f"{max(r['server_max_in_flight'] for r in results)}"
            )
            out.append(
                {
                    "strategy": name,
                    "sniffio_fix": fix or name.startswith("provider"),
                    "loop": loop,
                    "cpu_ms_per_request": cpu,
                    "wall_s": wall,
                    "runs": results,
                }
            )
    return out


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--only", default="", help="comma-separated strategies")
    parser.add_argument("--loop", default="asyncio,uvloop")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        sys.path.insert(0, str(HERE.parent))
        print(json.dumps(measure(*json.loads(args.child))))
        return
    rows = compare(
        args.n,
        args.concurrency,
        args.runs,
        args.latency,
        [s for s in args.only.split(",") if s] or None,
        tuple(args.loop.split(",")),
        log=lambda s: print(s, flush=True),
    )
    print(json.dumps(rows)[:0])


if __name__ == "__main__":
    main()
