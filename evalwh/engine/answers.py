"""One request's outcome as the engine keeps it: the answer (also what the response cache
holds) and the call that got it, after the cache, the cost cap and the retries."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from evalwh.config.model import ModelSpec
from evalwh.config.secrets import known_secret_values, redact_tree
from evalwh.providers.base import ProviderError

# An answer's wire ``extra`` key naming the batch job that gave it (evalwh.engine.batch):
# its cost is the provider's batch price (evalwh.providers.pricing.batch_factor).
BATCH_MARK = "batch_job"


def is_batch_answer(wire: dict[str, Any] | None) -> bool:
    """Whether an answer came from a batch job."""
    return bool(((wire or {}).get("extra") or {}).get(BATCH_MARK))


@dataclass
class CachedAnswer:
    output: str
    input_tokens: int | None
    output_tokens: int | None
    latency_ms: float | None
    # why it ended and its token kinds (Completion.wire: finish_reason, refusal, tool_calls,
    # reasoning, reasoning/cache tokens, the provider's raw values); kept in the cache too
    wire: dict[str, Any] | None = None

    def redacted(self) -> CachedAnswer:
        """The answer as evalwh keeps it: known secrets and key shapes in its text and in
        every string of its wire fields (refusal, tool calls, reasoning, raw values) are
        ``***`` (:func:`~evalwh.config.secrets.redact_tree`)."""
        known = known_secret_values()
        return replace(
            self, output=redact_tree(self.output, known), wire=redact_tree(self.wire, known)
        )


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
    replayed: bool = False  # answered before a kill, read back from the run's journal

    def cost(self, model: ModelSpec) -> float | None:
        a = self.answer
        if a is None or model.price is None or a.input_tokens is None or a.output_tokens is None:
            return None
        wire = a.wire or {}
        cost = model.price.cost(
            a.input_tokens,
            a.output_tokens,
            wire.get("cache_read_tokens"),
            wire.get("cache_write_tokens"),
        )
        if is_batch_answer(wire):
            from evalwh.providers.pricing import batch_factor

            return cost * batch_factor(model.provider)
        return cost
