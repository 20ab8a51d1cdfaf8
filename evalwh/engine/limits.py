"""Per-model request pacing, retry backoff and the bounds on retrying.

- ``MAX_RETRY_AFTER_S``: the longest Retry-After evalwh waits; a server asking for more fails
  that call with a clear error instead of holding a cell for minutes.
- ``DEAD_ENDPOINT_AFTER``: a model whose first calls all fail to connect (connection refused,
  this many attempts in a row, none answered yet) is declared unreachable: its remaining cells
  are recorded as "endpoint unreachable" errors without a request.
- each model's ``deadline_s`` (default 300) bounds one call, retries and waits included.
"""

from __future__ import annotations

import asyncio
import random
import time

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
