"""Adaptive concurrency (issue 18): a model's requests in flight halve on a 429 and grow back.

The unit tests pin every boundary of evalwh.engine.limits.AdaptiveLimit (start at the
ceiling, halve once per epoch, never below 1, +1/limit per answer, never above the ceiling,
waiters woken in order, a cancelled waiter leaves no slot behind); the end-to-end test runs
the same eval against a loopback server that allows N requests a second, once with
``adaptive_concurrency: false`` and once adaptive, and compares the 429 and retry counts.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

import evalwh
from evalwh.engine.limits import AdaptiveLimit
from tests.fakes.servers import Behavior, FakeLLMServer, RecordedRequest, rate_limited
from tests.test_providers_e2e import eval_for


def test_starts_at_the_ceiling_and_the_next_request_waits() -> None:
    async def main() -> None:
        limit = AdaptiveLimit(3)
        assert [await limit.acquire() for _ in range(3)] == [0, 0, 0]
        assert limit.in_flight == 3 and limit.peak == 3
        fourth = asyncio.ensure_future(limit.acquire())
        await asyncio.sleep(0)
        assert not fourth.done()  # exactly at the ceiling: waits
        limit.release()
        assert await fourth == 0
        assert limit.in_flight == 3

    asyncio.run(main())


def test_a_429_halves_once_per_epoch_and_never_below_one() -> None:
    limit = AdaptiveLimit(16)
    limit.rate_limited(0)
    assert (limit.limit, limit.epoch, limit.decreases) == (8.0, 1, 1)
    limit.rate_limited(0)  # a 429 to a request sent before the decrease: already acted on
    assert (limit.limit, limit.decreases) == (8.0, 1)
    limit.rate_limited(1)
    assert limit.limit == 4.0 and limit.lowest == 4
    for epoch in range(2, 10):
        limit.rate_limited(epoch)
    assert limit.limit == 1.0 and limit.lowest == 1  # floor
    assert AdaptiveLimit(0).ceiling == 1  # a ceiling below 1 is 1


def test_answers_grow_the_limit_by_one_per_window_up_to_the_ceiling() -> None:
    limit = AdaptiveLimit(4)
    limit.answered()
    assert limit.limit == 4.0  # at the ceiling: no growth
    limit.rate_limited(0)
    limit.rate_limited(1)
    assert limit.limit == 1.0
    limit.answered()  # + 1 / 1
    assert limit.limit == 2.0
    limit.answered()  # + 1/2
    assert limit.limit == 2.5
    limit.answered()  # + 1/2.5
    assert limit.limit == pytest.approx(2.9)
    for _ in range(20):
        limit.answered()
    assert limit.limit == 4.0  # capped at the ceiling


def test_growth_and_release_wake_waiters_in_order() -> None:
    async def main() -> None:
        limit = AdaptiveLimit(2)
        limit.rate_limited(0)  # limit 1
        assert await limit.acquire() == 1
        order: list[str] = []

        async def take(name: str) -> None:
            await limit.acquire()
            order.append(name)

        a = asyncio.ensure_future(take("a"))
        b = asyncio.ensure_future(take("b"))
        await asyncio.sleep(0)
        assert order == []
        limit.answered()  # limit 2: one more slot, the first waiter gets it
        await asyncio.sleep(0)
        assert order == ["a"] and limit.in_flight == 2
        limit.release()
        await asyncio.gather(a, b)
        assert order == ["a", "b"] and limit.in_flight == 2

    asyncio.run(main())


def test_a_cancelled_waiter_leaves_no_slot_taken() -> None:
    async def main() -> None:
        limit = AdaptiveLimit(1)
        await limit.acquire()
        waiting = asyncio.ensure_future(limit.acquire())
        await asyncio.sleep(0)
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
        limit.release()
        assert limit.in_flight == 0
        # woken and cancelled in the same turn: the slot it was given is handed back
        await limit.acquire()
        woken = asyncio.ensure_future(limit.acquire())
        await asyncio.sleep(0)
        limit.release()  # wakes `woken` (counts it in flight) ...
        woken.cancel()  # ... which is cancelled before it runs
        await asyncio.gather(woken, return_exceptions=True)
        assert limit.in_flight == 0
        assert await asyncio.wait_for(limit.acquire(), 1) == 0

    asyncio.run(main())


class PerSecond:
    """A server-side limit of ``n`` requests a second: a token bucket refilled at ``n`` a
    second holding at most ``burst``; a request that finds it empty gets a 429 with a short
    Retry-After (as real APIs do)."""

    def __init__(self, n: float, burst: float = 2.0, retry_after: float = 0.1) -> None:
        self.n, self.burst, self.retry_after = n, burst, retry_after
        self.tokens, self.at = burst, time.monotonic()
        self.lock = threading.Lock()
        self.rejected = 0

    def __call__(self, request: RecordedRequest) -> Behavior | None:
        with self.lock:
            now = time.monotonic()
            self.tokens = min(self.burst, self.tokens + (now - self.at) * self.n)
            self.at = now
            if self.tokens >= 1:
                self.tokens -= 1
                return None
            self.rejected += 1
            return rate_limited(retry_after=self.retry_after)


@pytest.mark.slow
@pytest.mark.parametrize("cases", [50])
def test_under_a_rate_limit_adaptive_concurrency_sends_fewer_429s_and_retries(
    tmp_path: Path, cases: int
) -> None:
    """Bug: fixed concurrency under a rate limit retried in a storm: every worker kept
    hitting the limit. Counts, not wall time: the adaptive run must see far fewer 429s."""
    counts = {}
    for adaptive in (False, True):
        limiter = PerSecond(10)
        with FakeLLMServer(latency=0.1) as server:
            server.responder = limiter
            block = (
                f"  - {{id: m, provider: openai-compatible, model: local, base_url: "
                f"'{server.openai_url}', price: 0, max_retries: 100, max_concurrency: 16, "
                f"adaptive_concurrency: {str(adaptive).lower()}}}"
            )
            folder = tmp_path / f"adaptive-{adaptive}"
            cfg = eval_for(folder, block, cases, concurrency=16)
            result = evalwh.run_eval(cfg, output_dir=folder / "out")
        assert result.totals["n"] == cases and not result.errors  # everything answered
        print(adaptive, limiter.rejected, result.stats)
        counts[adaptive] = (limiter.rejected, result.stats["retries"])
    (fixed_429, fixed_retries), (adaptive_429, adaptive_retries) = counts[False], counts[True]
    assert fixed_429 > 0  # the limit did bite the fixed run
    assert adaptive_429 * 2 < fixed_429, counts
    assert adaptive_retries * 2 < fixed_retries, counts


def test_retry_after_pauses_new_requests_only_when_the_call_itself_would_wait() -> None:
    """Bug risk: a 429 asking for 10 minutes fails its own call at once (MAX_RETRY_AFTER_S);
    it must not hold every other request of the model either."""
    from evalwh.engine.limits import MAX_RETRY_AFTER_S

    limit = AdaptiveLimit(4)
    limit.rate_limited(0, MAX_RETRY_AFTER_S + 1)
    assert limit.resume_at == 0.0 and limit.decreases == 1  # halved, not paused
    limit.rate_limited(5, 0)  # an old epoch, no wait: nothing
    assert limit.resume_at == 0.0 and limit.decreases == 1
    before = time.monotonic()
    limit.rate_limited(1, MAX_RETRY_AFTER_S)  # exactly the bound: paused
    assert limit.resume_at >= before + MAX_RETRY_AFTER_S

    async def main() -> float:
        short = AdaptiveLimit(2)
        short.rate_limited(0, 0.05)
        started = time.monotonic()
        await short.acquire()
        return time.monotonic() - started

    assert asyncio.run(main()) >= 0.04  # the new request waited out the pause
