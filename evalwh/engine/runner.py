"""Execute a plan: per-model workers under one global limit, never aborting on a failure.

Each model gets ``min(max_concurrency, concurrency)`` workers pulling its cells; a global
semaphore caps requests in flight across models. Every cell ends as a result (an answer or an
error) that is scored and handed to the sink; the run goes on whatever a provider does.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalwh.config.model import Case, ModelSpec
from evalwh.engine.limits import RatePacer, backoff_s
from evalwh.engine.plan import Plan, model_identity, request_hash
from evalwh.prompts import CompiledVariant, Rendered
from evalwh.providers.base import Completion, Provider, ProviderError, Request
from evalwh.scoring import CaseScore, Scorecard


@dataclass
class CellResult:
    variant: str
    model: ModelSpec
    case: Case
    repeat: int
    messages: Rendered
    request_hash: str
    output: str | None
    error: str | None
    error_kind: str | None
    latency_ms: float | None
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    cached: bool
    attempts: int
    scored: CaseScore


@dataclass
class CachedAnswer:
    output: str
    input_tokens: int | None
    output_tokens: int | None
    latency_ms: float | None


@dataclass
class EngineStats:
    requests: int = 0  # provider calls made, retries included
    cache_hits: int = 0
    errors: int = 0
    retries: int = 0
    done: int = 0


Sink = Callable[[CellResult], None]


class Engine:
    def __init__(
        self,
        plan: Plan,
        providers: Mapping[str, Provider],
        scorecard: Scorecard,
        sink: Sink,
        *,
        concurrency: int,
        cache: Mapping[str, CachedAnswer] | None = None,
        redact: Callable[[str], str] = lambda s: s,
        attachments: Path | None = None,
    ) -> None:
        self.plan = plan
        self.providers = providers
        self.scorecard = scorecard
        self.sink = sink
        self.concurrency = concurrency
        self.cache = cache or {}
        self.redact = redact
        self.root = attachments or Path.cwd()
        self.stats = EngineStats()
        self._global = asyncio.Semaphore(concurrency)

    async def run(self) -> EngineStats:
        workers = []
        for model in self.plan.models:
            cells = self.plan.cells(model)
            identity = model_identity(model)
            pacer = RatePacer(model.requests_per_minute)
            n = min(model.max_concurrency or self.concurrency, self.concurrency)
            workers += [
                asyncio.create_task(self._worker(model, identity, cells, pacer)) for _ in range(n)
            ]
        try:
            await asyncio.gather(*workers)
        finally:
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
        return self.stats

    async def _worker(self, model: ModelSpec, identity: str, cells: Any, pacer: RatePacer) -> None:
        provider = self.providers[model.id]
        for variant, case, repeat in cells:  # a shared iterator: each cell is taken once
            result = await self._cell(provider, model, identity, pacer, variant, case, repeat)
            self.stats.done += 1
            self.sink(result)

    async def _cell(
        self,
        provider: Provider,
        model: ModelSpec,
        identity: str,
        pacer: RatePacer,
        variant: CompiledVariant,
        case: Case,
        repeat: int,
    ) -> CellResult:
        messages = variant.render(case)
        key = request_hash(identity, messages, repeat, variant.attachment_digest(self.root))
        hit = self.cache.get(key)
        if hit is not None:
            self.stats.cache_hits += 1
            return self._finish(model, variant, case, repeat, messages, key, hit, None, True, 0)

        request = Request(
            model=model, messages=messages, case=case, variant=variant.variant.id, repeat=repeat
        )
        attempt, error = 0, None
        while True:
            attempt += 1
            try:
                await pacer.wait()
                async with self._global:
                    self.stats.requests += 1
                    started = time.perf_counter()
                    completion: Completion = await asyncio.wait_for(
                        provider.complete(
                            request if attempt == 1 else _with_attempt(request, attempt)
                        ),
                        timeout=model.timeout_s,
                    )
                    latency = (time.perf_counter() - started) * 1000
                answer = CachedAnswer(
                    completion.text, completion.input_tokens, completion.output_tokens, latency
                )
                return self._finish(
                    model, variant, case, repeat, messages, key, answer, None, False, attempt
                )
            except asyncio.TimeoutError:
                error = ProviderError(
                    f"timed out after {model.timeout_s:g} s", retryable=True, kind="timeout"
                )
            except ProviderError as exc:
                error = exc
            except Exception as exc:  # a provider bug must not abort the run
                error = ProviderError(
                    f"{type(exc).__name__}: {exc}", retryable=False, kind="internal"
                )
            if not error.retryable or attempt > model.max_retries:
                self.stats.errors += 1
                return self._finish(
                    model, variant, case, repeat, messages, key, None, error, False, attempt
                )
            self.stats.retries += 1
            await asyncio.sleep(backoff_s(attempt, error.retry_after))

    def _finish(
        self,
        model: ModelSpec,
        variant: CompiledVariant,
        case: Case,
        repeat: int,
        messages: Rendered,
        key: str,
        answer: CachedAnswer | None,
        error: ProviderError | None,
        cached: bool,
        attempts: int,
    ) -> CellResult:
        if answer is None:
            assert error is not None
            message = str(error)
            if error.status and str(error.status) not in message:
                message = f"HTTP {error.status}: {message}"
            text = self.redact(message)
            return CellResult(
                variant.variant.id,
                model,
                case,
                repeat,
                messages,
                key,
                None,
                text,
                error.kind,
                None,
                None,
                None,
                None,
                False,
                attempts,
                self.scorecard.failed(text),
            )
        cost = None
        if (
            model.price is not None
            and answer.input_tokens is not None
            and answer.output_tokens is not None
        ):
            cost = model.price.cost(answer.input_tokens, answer.output_tokens)
        return CellResult(
            variant.variant.id,
            model,
            case,
            repeat,
            messages,
            key,
            answer.output,
            None,
            None,
            answer.latency_ms,
            answer.input_tokens,
            answer.output_tokens,
            cost,
            cached,
            attempts,
            self.scorecard.score(answer.output, case),
        )


def _with_attempt(request: Request, attempt: int) -> Request:
    from dataclasses import replace

    return replace(request, attempt=attempt)
