"""One request's outcome as the engine keeps it: the answer (also what the response cache
holds) and the call that got it, after the cache, the cost cap and the retries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalwh.config.model import ModelSpec
from evalwh.providers.base import ProviderError


@dataclass
class CachedAnswer:
    output: str
    input_tokens: int | None
    output_tokens: int | None
    latency_ms: float | None
    # why it ended and its token kinds (Completion.wire: finish_reason, refusal, tool_calls,
    # reasoning, reasoning/cache tokens, the provider's raw values); kept in the cache too
    wire: dict[str, Any] | None = None


@dataclass
class Call:
    """The outcome of one request after cache and retries. ``queued_ms``: the time its
    attempts waited to be sent (pacing, slots, pauses, back-offs), None for a cache hit."""

    key: str
    answer: CachedAnswer | None
    error: ProviderError | None
    cached: bool
    attempts: int
    queued_ms: float | None = None

    def cost(self, model: ModelSpec) -> float | None:
        a = self.answer
        if a is None or model.price is None or a.input_tokens is None or a.output_tokens is None:
            return None
        wire = a.wire or {}
        return model.price.cost(
            a.input_tokens,
            a.output_tokens,
            wire.get("cache_read_tokens"),
            wire.get("cache_write_tokens"),
        )
