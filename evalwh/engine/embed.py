"""The ``semantic`` scorer's embeddings, sent by the engine (``embedder: {model: ID}``).

Each text (the output and every reference) is one request to the embedding model's endpoint
(evalwh.providers.embeddings) through :meth:`Engine.call <evalwh.engine.runner.Engine.call>`:
the response cache (keyed by the model's identity marked as an embedding, and the text, so a
reference is embedded once and a rerun sends nothing), the cost cap, the limits and the
retries, as a judge's request. What the texts cost is the criterion's ``cost_usd`` and part
of the case's ``judge_cost_usd``; a failed embedding is the criterion's error, never the
run's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from evalwh.config.model import Case
from evalwh.config.prompts import Rendered
from evalwh.providers.base import ProviderError
from evalwh.scoring import ScoreResult

MARK = "\x00embeddings"  # an embedding endpoint's identity ends with it (its own cache keys)

Call = Callable[[Any, Rendered, Case, str], Awaitable[Any]]  # Engine.call


def text_messages(text: str) -> Rendered:
    """One text as the engine sends it to an embedding endpoint."""
    return [{"role": "user", "content": [{"type": "text", "text": text}]}]


async def embedded(
    call: Call,
    endpoint: Any,
    name: str,
    scorer: Any,
    case: Case,
    output: str,
    describe: Callable[[ProviderError], str],
) -> tuple[str, ScoreResult, tuple[str, float | None, float | None]]:
    """One semantic criterion scored from the embeddings ``endpoint`` (an Endpoint whose
    identity ends with MARK) gives through ``call`` (Engine.call): (name, result, (model, raw
    score, cost)) as Engine._judge gives a judged criterion. ``describe`` is a failed
    request's stored text (runner.error_text)."""
    model = endpoint.model
    texts = scorer.texts(output, case)
    if isinstance(texts, ScoreResult):  # the case has no reference: nothing is sent
        return name, texts, (model.model, None, None)
    unique = list(dict.fromkeys(texts))
    calls = await asyncio.gather(
        *(call(endpoint, text_messages(t), case, f"embed:{model.id}") for t in unique)
    )
    costs = [c.cost(model) for c in calls if not c.cached]
    known = [c for c in costs if c is not None]
    cost = sum(known) if known else None
    for sent in calls:
        if sent.answer is None:
            failed = ScoreResult(
                0.0, error=f"embedder model '{model.id}' failed: {describe(sent.error)}"
            )
            return name, failed, (model.model, None, cost)
    vectors = {t: c.answer.output for t, c in zip(unique, calls, strict=True)}
    return name, scorer.from_vectors([vectors[t] for t in texts]), (model.model, None, cost)
