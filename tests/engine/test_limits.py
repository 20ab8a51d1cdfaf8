"""The adaptive concurrency limit (evalwh/engine/limits.py): how rate limits lower it and what
the run stats count.

Adaptive concurrency (AdaptiveLimit): a model's requests in flight halve on a 429 and grow
back. The unit tests pin every boundary (start at the ceiling, halve once per epoch, never
below 1, +1/limit per answer, never above the ceiling, waiters woken in order, a cancelled
waiter leaves no slot behind, a Retry-After pause); the end-to-end test runs the same eval
against a loopback server that allows N requests a second, once with
``adaptive_concurrency: false`` and once adaptive, and compares the 429 and retry counts.
The request pacer (RatePacer) spaces a model's request starts by its interval; its clock and
sleeps are a stand-in here, so no test waits or measures time."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import evalwh
from evalwh.engine import limits
from evalwh.engine.limits import MAX_RETRY_AFTER_S, AdaptiveLimit, RatePacer, backoff_s
from tests.builders import eval_for
from tests.conftest import write
from tests.fakes.servers import Behavior, FakeLLMServer, RecordedRequest, rate_limited, slow


def test_two_rate_limits_in_successive_epochs_count_two_decreases() -> None:
    limit = AdaptiveLimit(8)
    limit.rate_limited(0)
    limit.rate_limited(1)
    assert limit.decreases == 2
    assert limit.limit == 2.0


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


@pytest.mark.e2e
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


class SteppedClock:
    """The limits' clock, on a stand-in: ``sleep`` (patched in for asyncio.sleep) notes the
    seconds asked and moves the clock on by them at once."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = 1000.0
        self.slept: list[float] = []
        monkeypatch.setattr(limits, "time", SimpleNamespace(monotonic=self.monotonic))
        monkeypatch.setattr(asyncio, "sleep", self.sleep)

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float, result: Any = None) -> Any:
        self.slept.append(seconds)
        self.now += seconds
        return result


def test_retry_after_pauses_new_requests_only_when_the_call_itself_would_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bug risk: a 429 asking for 10 minutes fails its own call at once (MAX_RETRY_AFTER_S);
    it must not hold every other request of the model either."""
    from evalwh.engine.limits import MAX_RETRY_AFTER_S

    clock = SteppedClock(monkeypatch)
    limit = AdaptiveLimit(4)
    limit.rate_limited(0, MAX_RETRY_AFTER_S + 1)
    assert limit.resume_at == 0.0 and limit.decreases == 1  # halved, not paused
    limit.rate_limited(5, 0)  # an old epoch, no wait: nothing
    assert limit.resume_at == 0.0 and limit.decreases == 1
    before = clock.monotonic()
    limit.rate_limited(1, MAX_RETRY_AFTER_S)  # exactly the bound: paused
    assert limit.resume_at >= before + MAX_RETRY_AFTER_S
    assert limit.resume_at == before + MAX_RETRY_AFTER_S

    async def main() -> float:
        short = AdaptiveLimit(2)
        short.rate_limited(0, 0.05)
        started = clock.monotonic()
        await short.acquire()
        return clock.monotonic() - started

    clock.slept.clear()
    assert asyncio.run(main()) >= 0.04  # the new request waited out the pause
    assert clock.slept == [pytest.approx(0.05)]  # the pause, asked of asyncio.sleep once


def test_a_pacer_spaces_request_starts_by_its_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    assert RatePacer(1200).interval == pytest.approx(0.05)
    assert RatePacer(None).interval == 0.0 and RatePacer(0).interval == 0.0

    clock = SteppedClock(monkeypatch)

    async def three() -> list[float]:
        pacer, starts = RatePacer(1200), []
        for _ in range(3):
            await pacer.wait()
            starts.append(clock.monotonic())
        return starts

    first, second, third = asyncio.run(three())
    assert second - first >= 0.045 and third - second >= 0.045
    # the first start at once, each next one interval after the one before
    assert clock.slept == [pytest.approx(0.05), pytest.approx(0.05)]
    assert [second - first, third - second] == [pytest.approx(0.05), pytest.approx(0.05)]


def test_an_adaptive_limits_peak_counts_requests_in_flight_from_none() -> None:
    limit = AdaptiveLimit(3)
    assert limit.peak == 0  # nothing sent yet

    async def two() -> None:
        await limit.acquire()
        await limit.acquire()
        limit.release()

    asyncio.run(two())
    assert (limit.peak, limit.in_flight) == (2, 1)


@pytest.mark.parametrize("adaptive", ["true", "false"])
def test_a_judge_models_max_concurrency_bounds_its_requests(tmp_path: Path, adaptive: str) -> None:
    # the judge has a limit of its own, with adaptive concurrency (its ceiling) or without (a
    # plain limit): the answering model's concurrency does not spill over
    verdict = json.dumps({"score": 1, "rationale": "fine"})
    with FakeLLMServer(default=slow(0.05, verdict)) as server:
        cfg = write(
            tmp_path / "eval.yaml",
            f"""
models: [{{id: m, provider: mock}}]
judges:
  - id: j
    rubric: Is it an answer?
    model: {{id: jm, provider: openai-compatible, model: judge, base_url: '{server.openai_url}',
             price: 0, max_concurrency: 1, adaptive_concurrency: {adaptive}}}
variants: [{{id: v, messages: [{{role: user, content: "{{{{ q }}}}"}}]}}]
cases: [{", ".join(f"{{id: c{i}, vars: {{q: q{i}}}}}" for i in range(6))}]
scorecard: [{{name: graded, type: llm-judge, judge: j}}]
settings: {{concurrency: 6}}
""",
        )
        result = evalwh.run_eval(cfg, output_dir=tmp_path / "o")
        assert (result.totals["n_passed"], server.count) == (6, 6)
        assert server.max_in_flight == 1


def test_a_paced_model_spaces_its_request_starts_by_its_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock, slept = [100.0], []
    monkeypatch.setattr(limits.time, "monotonic", lambda: clock[0])

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr(limits.asyncio, "sleep", sleep)
    pacer = limits.RatePacer(60)  # one request a second

    async def main() -> None:
        for _ in range(3):
            await pacer.wait()
        clock[0] = 105.0  # idle for a while: the next start is at once
        await pacer.wait()
        await limits.RatePacer(None).wait()  # no pace: never waits

    asyncio.run(main())
    assert slept == [1.0, 2.0]


@pytest.fixture
def widest_jitter(monkeypatch: pytest.MonkeyPatch) -> list[tuple[float, float]]:
    """random.uniform at the top of its range, and the ranges it was asked for."""
    asked: list[tuple[float, float]] = []

    def uniform(low: float, high: float) -> float:
        asked.append((low, high))
        return high

    monkeypatch.setattr(limits.random, "uniform", uniform)
    return asked


@pytest.mark.parametrize(
    ("attempt", "seconds"), [(1, 0.5), (2, 1.0), (4, 4.0), (7, 30.0), (20, 30.0)]
)
def test_the_backoff_doubles_from_half_a_second_up_to_thirty(
    widest_jitter: list[tuple[float, float]], attempt: int, seconds: float
) -> None:
    assert backoff_s(attempt, None) == seconds
    assert widest_jitter == [(0.5, 1.0)]  # jitter: between half and all of the step


def test_the_backoff_takes_its_base_and_cap_from_the_caller(
    widest_jitter: list[tuple[float, float]],
) -> None:
    assert backoff_s(3, None, base=2.0, cap=5.0) == 5.0
    assert backoff_s(2, None, base=2.0, cap=5.0) == 4.0


@pytest.mark.parametrize(("given", "waited"), [(0.0, 0.0), (0.5, 0.5), (1e6, MAX_RETRY_AFTER_S)])
def test_a_retry_after_is_waited_as_given_even_zero_and_at_most_a_minute(
    widest_jitter: list[tuple[float, float]], given: float, waited: float
) -> None:
    assert backoff_s(5, given) == waited
    assert widest_jitter == []  # no jitter on a server's word


def test_a_negative_retry_after_falls_back_to_the_backoff(
    widest_jitter: list[tuple[float, float]],
) -> None:
    assert backoff_s(1, -1.0) == 0.5
