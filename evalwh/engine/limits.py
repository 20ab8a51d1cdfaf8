"""Per-model request pacing, retry backoff and the bounds on retrying.

- ``MAX_RETRY_AFTER_S``: the longest Retry-After evalwh waits; a server asking for more fails
  that call with a clear error instead of holding a cell for minutes.
- ``DEAD_ENDPOINT_AFTER``: a model whose first calls all fail to connect (connection refused,
  this many attempts in a row, none answered yet) is declared unreachable: its remaining cells
  are recorded as "endpoint unreachable" errors without a request.
- each model's ``deadline_s`` (default 300) bounds one call, retries and waits included.
- :class:`AdaptiveLimit`: a model's requests in flight back off on 429s and recover (AIMD).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import deque

MAX_RETRY_AFTER_S = 60.0
DEAD_ENDPOINT_AFTER = 5


class RatePacer:
    """Spaces request starts so a model sees at most ``per_minute`` requests a minute."""

    def __init__(self, per_minute: float | None) -> None:
        self.interval = 60.0 / per_minute if per_minute else 0.0
        self._next = 0.0
        self._lock = asyncio.Lock()

    async def wait(self) -> None:
        if not self.interval:
            return
        async with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self.interval
        if start > now:
            await asyncio.sleep(start - now)


def backoff_s(
    attempt: int, retry_after: float | None, *, base: float = 0.5, cap: float = 30.0
) -> float:
    """Delay before attempt ``attempt + 1``: the server's Retry-After when given, else
    exponential with full jitter (so many workers do not retry in lockstep)."""
    if retry_after is not None and retry_after >= 0:
        return min(float(retry_after), MAX_RETRY_AFTER_S)
    return random.uniform(0.5, 1.0) * min(cap, base * 2.0 ** (attempt - 1))


class AdaptiveLimit:
    """Requests in flight for one model: halved on a 429, grown back by one per window (AIMD).

    The limit starts at ``ceiling`` (the model's workers: ``min(max_concurrency,
    concurrency)``), so a run that never sees a 429 is never held back. A 429 (``rate_limit``)
    halves it, never below 1, at most once per window: :meth:`acquire` hands out the current
    *epoch*, every decrease starts a new one, and a 429 to a request sent in an earlier epoch
    says nothing the last decrease did not already act on (otherwise the burst of 429s that
    one overload produces would drive the limit to 1). Each answered request adds
    ``1 / limit``: one more request in flight after a window's worth of answers, up to the
    ceiling again. A 429's Retry-After (when at most ``MAX_RETRY_AFTER_S``, i.e. when its own
    call waits for it rather than failing) also pauses the model's *new* requests until it
    has passed: the server said when it takes requests again,
    so the other workers do not spend 429s finding that out.

    ``peak`` / ``lowest`` / ``decreases`` record how the limit moved, for inspection and the
    tests; the run's stored stats do not include them.
    """

    def __init__(self, ceiling: int) -> None:
        self.ceiling = max(1, ceiling)
        self.limit = float(self.ceiling)
        self.in_flight = 0
        self.epoch = 0
        self.decreases = 0
        self.lowest = self.ceiling
        self.peak = 0  # most requests in flight at once
        self.resume_at = 0.0  # time.monotonic() before which no new request starts
        self._waiters: deque[asyncio.Future[None]] = deque()

    def _allowed(self) -> int:
        return int(self.limit)

    async def acquire(self) -> int:
        """Wait for a free slot; returns the epoch the request is sent in."""
        while self.resume_at:  # a Retry-After pause
            wait = self.resume_at - time.monotonic()
            if wait <= 0:
                self.resume_at = 0.0
                break
            await asyncio.sleep(wait)
        if self.in_flight < self._allowed() and not self._waiters:
            self.in_flight += 1
        else:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter  # release() counted this request in flight before waking it
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self.release()  # woken and cancelled at once: hand the slot on
                else:
                    self._waiters.remove(waiter)
                raise
        if self.in_flight > self.peak:
            self.peak = self.in_flight
        return self.epoch

    def release(self) -> None:
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        waiters, allowed = self._waiters, self._allowed()
        while waiters and self.in_flight < allowed:
            waiter = waiters.popleft()
            if not waiter.done():
                self.in_flight += 1
                waiter.set_result(None)

    def answered(self) -> None:
        """A request was answered: additive increase, up to the ceiling."""
        if self.limit < self.ceiling:
            self.limit = min(float(self.ceiling), self.limit + 1.0 / self.limit)
            self._wake()

    def rate_limited(self, epoch: int, retry_after: float | None = None) -> None:
        """A request sent in ``epoch`` got a 429: pause new requests for its Retry-After, and
        multiplicative decrease, once per epoch."""
        # a longer Retry-After fails its call instead of waiting: it holds nothing else either
        if retry_after is not None and 0 < retry_after <= MAX_RETRY_AFTER_S:
            self.resume_at = max(self.resume_at, time.monotonic() + retry_after)
        if epoch != self.epoch:
            return
        self.epoch += 1
        self.decreases += 1
        self.limit = max(1.0, self.limit / 2)
        self.lowest = min(self.lowest, self._allowed())
