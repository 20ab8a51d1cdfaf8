"""Execute a plan: per-model workers under one global limit, never aborting on a failure.

Each model gets ``min(max_concurrency, concurrency)`` workers pulling its cells; a global
semaphore caps requests in flight across models (answers and judge calls alike). Every cell
ends as a result (an answer or an error) that is scored and handed to the sink; the run goes
on whatever a provider does.

With ``privacy.redact_outputs`` on (the default), an answer is redacted as it arrives
(:meth:`CachedAnswer.redacted`), before anything else sees it: the scorers, the judges, the
response cache and the warehouse all get the same text, so a cached replay scores exactly as
the run that stored it, and no copy of a secret the model echoed is kept anywhere.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from evalwh.config.model import Case, ModelSpec
from evalwh.config.prompts import CompiledVariant, Rendered
from evalwh.engine.answers import CachedAnswer, Call
from evalwh.engine.budget import Budget
from evalwh.engine.embed import embedded
from evalwh.engine.limits import (
    DEAD_ENDPOINT_AFTER,
    MAX_RETRY_AFTER_S,
    AdaptiveLimit,
    RatePacer,
    backoff_s,
)
from evalwh.engine.plan import Cell, Plan, model_identity, request_hash, request_scope
from evalwh.engine.toolloop import LOOP_LIMITS, transcript_of
from evalwh.errors import ConfigError
from evalwh.providers.base import Completion, Provider, ProviderError, Request
from evalwh.scoring import CaseScore, CriterionScore, Scorecard, ScoreResult


@dataclass
class CheckOutcome:
    passed: bool
    exit_code: int | None
    output: str
    error: str | None


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
    judge_cost_usd: float | None = None
    check: CheckOutcome | None = None
    # waited before the kept (or last) attempt was sent: a rate pace, a concurrency slot, a
    # Retry-After pause, back-offs between attempts. None: no request was made (a cache hit)
    queued_ms: float | None = None
    wire: dict[str, Any] | None = None  # CachedAnswer.wire of the answer
    # a tool loop's transcript (evalwh.engine.toolloop.Turn), None for a single request
    turns: list[Any] | None = None


@dataclass
class EngineStats:
    requests: int = 0  # provider calls made, retries included
    cache_hits: int = 0
    errors: int = 0
    retries: int = 0
    done: int = 0
    judge_requests: int = 0
    replayed: int = 0  # answers taken from the run's journal (evalwh.engine.journal)
    tool_calls: int = 0  # tool calls of tool loops (evalwh.engine.toolloop)
    tool_errors: int = 0  # ... that failed: unknown tool, bad arguments, the tool's error
    batched: int = 0  # requests answered by batch jobs (evalwh.engine.batch), in requests too


@dataclass
class Endpoint:
    """One model as the engine calls it: provider, identity (for hashes), pacing, limit."""

    model: ModelSpec
    provider: Provider
    identity: str
    pacer: RatePacer
    limit: asyncio.Semaphore | None = None
    answered: bool = False  # one call succeeded: the endpoint is reachable
    refused: int = 0  # connection failures in a row before any answer
    unreachable: str | None = None  # set once declared dead: no more requests
    adaptive: AdaptiveLimit | None = None  # backs off on 429s (set by the Engine)

    def note_failure(self, error: ProviderError) -> None:
        """Count a refused connection; after DEAD_ENDPOINT_AFTER in a row, before any answer,
        the endpoint is unreachable."""
        text = str(error)
        if self.answered or error.kind != "connection":
            return
        if "ConnectError" not in text and "refused" not in text.lower():
            return
        self.refused += 1
        if self.refused >= DEAD_ENDPOINT_AFTER and self.unreachable is None:
            self.unreachable = (
                f"endpoint unreachable: the first {self.refused} connection attempts to model "
                f"'{self.model.id}' failed ({text}); its remaining cells were not requested"
            )

    @classmethod
    def for_model(cls, model: ModelSpec, provider: Provider, *, limited: bool = False) -> Endpoint:
        semaphore = (
            asyncio.Semaphore(model.max_concurrency) if limited and model.max_concurrency else None
        )
        return cls(
            model, provider, model_identity(model), RatePacer(model.requests_per_minute), semaphore
        )


@dataclass
class JudgeRuntime:
    prompts: Any  # evalwh.scoring.judge.JudgePrompts
    endpoint: Endpoint


if sys.version_info >= (3, 11):

    async def _with_timeout(awaitable: Awaitable[Any], seconds: float | None) -> Any:
        """``asyncio.wait_for`` without a task per call (3.11+)."""
        async with asyncio.timeout(seconds):
            return await awaitable

else:  # pragma: no cover - Python 3.10
    _with_timeout = asyncio.wait_for

# A worker whose cells never suspend (cache hits, an instant provider) hands the event loop
# over every this many cells, so the writer's flushes and progress keep going.
YIELD_EVERY = 32

# The cell whose requests are being made (a worker task's, inherited by its judge calls): the
# answer journal files every answer under its cell (evalwh.engine.journal).
CELL: ContextVar[Cell | None] = ContextVar("evalwh_cell", default=None)

Sink = Callable[[CellResult], None]
Remember = Callable[[str, ModelSpec, CachedAnswer], None]
CheckRunner = Callable[[Case, str], Awaitable[CheckOutcome]]


class _Shared:
    """A plain iterator of cells as the async iterator the workers share (never suspends)."""

    def __init__(self, cells: Iterator[Any]) -> None:
        self._next = cells.__next__

    def __aiter__(self) -> _Shared:
        return self

    async def __anext__(self) -> Any:
        try:
            return self._next()
        except StopIteration:
            raise StopAsyncIteration from None


def _unmarked(cells: Iterator[Any], marks: bytearray | None) -> Iterator[Any]:
    """``cells`` but those whose mark is set (replayed already: Engine._replay_hits)."""
    if not marks or not any(marks):
        return cells
    end = len(marks)  # shorter than the cells when the replay was stopped
    return (cell for i, cell in enumerate(cells) if i >= end or not marks[i])


async def _paced(full: Callable[[], bool] | None, count: int) -> None:
    """After a cell is handed to the sink: wait while the writer is behind (memory stays
    bounded), else let the event loop run every YIELD_EVERY cells."""
    if full is not None and full():
        while full():
            await asyncio.sleep(0.005)
    elif count % YIELD_EVERY == 0:
        await asyncio.sleep(0)


class _Locked:
    """An async iterator of cells the workers share, taken one at a time (an async
    generator must not be advanced by two workers at once)."""

    def __init__(self, cells: AsyncIterator[Any]) -> None:
        self._cells = cells
        self._lock = asyncio.Lock()

    def __aiter__(self) -> _Locked:
        return self

    async def __anext__(self) -> Any:
        async with self._lock:
            return await self._cells.__anext__()


@dataclass(frozen=True)
class Ask:
    """What a cell asks of a model: its key (the request's hash: the cache key, and its
    custom id in a batch job) and the request the engine sends."""

    endpoint: Endpoint
    messages: Rendered
    case: Case
    variant: str
    repeat: int
    output: Any = None
    tools: Any = None

    def key(self) -> str:
        scope = request_scope(
            self.endpoint.model, self.variant, self.case.id, self.output, self.tools
        )
        return request_hash(self.endpoint.identity, self.messages, self.repeat, scope=scope)

    def request(self) -> Request:
        """JSON by schema is asked in the prompt when the provider cannot ask it natively."""
        messages, output = self.messages, self.output
        if output is not None and output.mode_for(type(self.endpoint.provider)) == "prompted":
            from evalwh.config.outputs import prompted_messages

            messages, output = prompted_messages(messages, output), None
        return Request(
            model=self.endpoint.model,
            messages=messages,
            case=self.case,
            variant=self.variant,
            repeat=self.repeat,
            output=output,
            tools=self.tools,
        )


# a pointwise judge call's variant label: "judge:" and the judge's id (part of its cache key)
JUDGE_CALL = "judge:"


@dataclass
class Deferred:
    """A cell whose judge requests are held in batch jobs (judges_batch): ``finish`` scores
    it once their results are in."""

    finish: Coroutine[Any, Any, CellResult]


class BudgetStop(Exception):
    """A cell's request was refused by the cost cap: the worker stops taking cells."""


def error_class(error: ProviderError) -> str:
    """A failed request as a no-look run stores it: its status and class, never its text
    (a provider's error body may echo the prompt)."""
    return f"HTTP {error.status} ({error.kind})" if error.status else f"{error.kind} error"


def error_text(error: ProviderError, redact: Callable[[str], str], *, no_look: bool = False) -> str:
    """The stored text of a failed request (``redact`` is :func:`evalwh.config.secrets.redact`)."""
    if no_look:
        return error_class(error)
    message = str(error)
    if error.status and str(error.status) not in message:
        message = f"HTTP {error.status}: {message}"
    return redact(message)


def ending_failure(answer: CachedAnswer, model: ModelSpec) -> tuple[str, str] | None:
    """Why an answer that came back is a failed cell (its error text and kind), else None.

    Cut at the token limit: ``truncated`` (unless the model says ``on_truncated: score``); a
    refusal: ``refusal`` with the model's words; blocked by the provider's safety system:
    ``content_filter`` with the provider's reason; a generation the provider says failed:
    ``finish_error``. Tool calls and plain stops are scored as any answer.
    """
    wire = answer.wire
    if not wire:
        return None
    finish = wire.get("finish_reason")
    raw = _raw_reason(wire.get("extra") or {})
    if finish == "length" and model.on_truncated != "score":
        limit = model.params.get("max_tokens")
        cap = f" (max_tokens {limit})" if limit is not None else ""
        return (
            f"truncated: the answer was cut at the token limit{cap} ({raw}); "
            "raise max_tokens, or set on_truncated: score to score it as given",
            "truncated",
        )
    if finish == "refusal":
        return f"refused: {wire.get('refusal') or raw}", "refusal"
    if finish == "content_filter":
        return f"blocked by the provider's safety filter ({raw})", "content_filter"
    if finish == "error":
        return f"the provider ended the answer with an error ({raw})", "finish_error"
    if finish in LOOP_LIMITS:  # a tool loop that reached a bound (evalwh.engine.toolloop)
        return f"{finish}: {(wire.get('extra') or {}).get('loop_limit', finish)}", finish
    return None


def _raw_reason(extra: dict[str, Any]) -> str:
    """The provider's own word for why an answer ended, as named in its reply."""
    for key in ("stop_reason", "finish_reason", "block_reason"):
        if extra.get(key) is not None:
            return f"{key}: {extra[key]}"
    return "no reason given"


def tool_calls_of(turns: list[Any] | None, wire: dict[str, Any] | None) -> list[Any] | None:
    """A cell's tool calls as trajectory scorers read them (evalwh.scoring.trajectory): every
    call of a tool loop's answers, in order, with its outcome when it ran; for one request, the
    calls its answer made (never run). None when there were none."""
    if not turns:
        made = (wire or {}).get("tool_calls")
        return [{**c, "turn": 0, "args_valid": None} for c in made] if made else None
    ran = {t.call_id: t for t in turns if t.role == "tool"}
    calls = []
    for t in turns:
        for c in t.arguments or () if t.role == "assistant" else ():
            done = ran.get(c.get("id"))
            calls.append(
                {
                    "name": c.get("name"),
                    "arguments": c.get("arguments"),
                    "turn": t.turn,
                    "args_valid": done.args_valid if done is not None else None,
                    "error": done.error if done is not None else None,
                    "result": done.result if done is not None else None,
                }
            )
    return calls or None


class _DeadlinePassed(Exception):
    """The call's deadline_s passed before another attempt could start."""


def _past_deadline(
    model: ModelSpec, attempts: int, last: ProviderError | None = None
) -> ProviderError:
    tail = f"; last error: {last}" if last is not None else ""
    return ProviderError(
        f"gave up after {attempts} attempt(s): the call's deadline_s of {model.deadline_s:g} s "
        f"(retries and waits included) would pass{tail}",
        retryable=False,
        kind="deadline",
    )


class Engine:
    def __init__(
        self,
        plan: Plan,
        endpoints: Mapping[str, Endpoint],
        scorecard: Scorecard,
        sink: Sink,
        *,
        concurrency: int,
        cache: dict[str, CachedAnswer] | None = None,
        reuse: bool = True,
        remember: Remember | None = None,
        redact: Callable[[str], str] = lambda s: s,
        judges: Mapping[str, JudgeRuntime] | None = None,
        embedders: Mapping[str, Endpoint] | None = None,
        check_runner: CheckRunner | None = None,
        backpressure: Callable[[], bool] | None = None,
        budget: Budget | None = None,
        batches: Iterator[list[Case]] | None = None,
        no_look: bool = False,
        redact_answers: bool = False,
        journal: Any = None,
        replay: Mapping[str, Call] | None = None,
        batch: Any = None,
        judge_batch: Any = None,
        keys: Mapping[Cell, str] | None = None,
        lookup: Callable[[list[str]], Mapping[str, CachedAnswer]] | None = None,
    ) -> None:
        self.plan = plan
        # request hashes -> the stored answers among them (the response cache, one query): a
        # streamed batch's hits are read with it and replayed in bulk (replay_batch)
        self.lookup = lookup
        # cell -> its request's hash, as the run's planning computed it (execute.prepare):
        # a cell without a tool loop is not hashed again (nor its messages encoded for it)
        self.keys = keys or {}
        self.endpoints = endpoints
        self.scorecard = scorecard
        self.sink = sink
        self.concurrency = concurrency
        self.cache = cache if cache is not None else {}
        # reuse=False (--no-cache, cache: false): every request is sent, even when an earlier
        # case of this run rendered the same prompt
        self.reuse = reuse
        self.remember = remember
        self.redact = redact
        self.judges = judges or {}
        self.embedders = embedders or {}  # semantic criteria's embedding models (engine.embed)
        self.check_runner = check_runner
        # True while the sink holds as many rows as it may: workers wait for a flush.
        self.backpressure = backpressure
        self.budget = budget  # the cost cap, enforced before every request (evalwh.engine.budget)
        self.stats = EngineStats()
        self._global = asyncio.Semaphore(concurrency)
        for endpoint in [
            *endpoints.values(),
            *(j.endpoint for j in self.judges.values()),
            *self.embedders.values(),
        ]:
            model = endpoint.model
            if model.adaptive_concurrency and endpoint.adaptive is None:
                ceiling = min(model.max_concurrency or concurrency, concurrency)
                endpoint.adaptive = AdaptiveLimit(ceiling)
        self.stopping = False  # set on SIGINT/SIGTERM: finish the cells in flight, start none
        # a streaming plan's case batches (evalwh.engine.feed.case_batches), pulled as needed
        self.batches = batches
        self.no_look = no_look  # errors are stored as their status and class only
        # privacy.redact_outputs: every answer and judge reply is redacted as it arrives, so
        # what is scored, cached and stored is one text (CachedAnswer.redacted)
        self.redact_answers = redact_answers
        self.feed: Any = None  # the CaseFeed of a streaming run, once it runs
        # the answer journal (evalwh.engine.journal.Journal): told of every answer as it
        # arrives; ``replay``: request hash -> an answer it kept from before a kill
        self.journal = journal
        self.replay = replay or {}
        # batch mode (evalwh.engine.batch.BatchFeed): the batched models' cells come from it
        # as their jobs' results arrive, and call() takes those results instead of sending
        self.batch = batch
        # judges_batch (evalwh.engine.judge_batch.JudgeFeed): a cell's judge requests are held
        # for batch jobs of the judge's model; the cell is finished by a task of its own
        # (``deferred``) once their results are in, while its worker takes the next cell
        self.judge_batch = judge_batch
        self.deferred: set[asyncio.Task[None]] = set()
        from evalwh.engine.tools import ToolBox

        self.toolbox = ToolBox()  # the tools of tool loops (evalwh.engine.toolloop)

    def stop(self) -> None:
        """Start no new cell; the ones in flight finish (and are written). Batch jobs are
        left running at the provider (a resumed run picks them up)."""
        self.stopping = True
        if self.batch is not None:
            self.batch.stop()
        if self.judge_batch is not None:
            self.judge_batch.stop()

    async def run(self) -> EngineStats:
        from evalwh.engine.feed import CaseFeed

        counts = {
            m.id: min(m.max_concurrency or self.concurrency, self.concurrency)
            for m in self.plan.models
        }
        feed = None if self.batches is None else CaseFeed(self.plan, self.batches, counts)
        if feed is not None and self.lookup is not None:
            feed.replay = self.replay_batch
        self.feed = feed
        replayed = await self._replay_hits() if self._replayable() else {}
        workers = []
        batch = self.batch
        for model in self.plan.models:
            cells: AsyncIterator[Any]
            if batch is not None and model.id in batch.queues:
                cells = _Locked(batch.cells(model.id, self.plan.cells(model)))
            elif feed is None:
                cells = _Shared(_unmarked(self.plan.cells(model), replayed.get(model.id)))
            else:
                cells = feed.cells(model.id)
            endpoint = self.endpoints[model.id]
            workers += [
                asyncio.create_task(self._worker(endpoint, cells)) for _ in range(counts[model.id])
            ]
        producer = None if feed is None else asyncio.create_task(feed.produce(self._halted))
        if batch is not None:
            producer = asyncio.create_task(batch.run())
        judging = self.judge_batch
        verdicts = None if judging is None else asyncio.create_task(judging.run())
        try:
            await asyncio.gather(*workers)
            if batch is not None and producer is not None:
                await producer  # its failure (a warehouse write, say) is the run's
            if judging is not None and verdicts is not None:
                judging.all_answers_in()
                await verdicts  # every held judge request has its result (or the run stopped)
                if not self.stopping:
                    await asyncio.gather(*self.deferred)
        finally:
            tasks = [*workers, *([producer] if producer is not None else [])]
            tasks += [*([verdicts] if verdicts is not None else []), *self.deferred]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if feed is not None and feed.error is not None:
            raise feed.error
        return self.stats

    def _halted(self) -> bool:
        return self.stopping or (self.budget is not None and self.budget.stopped)

    async def _worker(self, endpoint: Endpoint, cells: AsyncIterator[Any]) -> None:
        stats, sink, cell, full = self.stats, self.sink, self._cell, self.backpressure
        count = 0
        # a shared iterator: each cell is taken once
        async for variant, case, repeat in cells:
            count += 1
            if self.stopping:
                return
            if self.budget is not None and self.budget.stopped:
                return  # nothing more is sent; the run is stored as stopped
            try:
                result = await cell(endpoint, variant, case, repeat)
            except BudgetStop:
                return
            if isinstance(result, Deferred):  # its judges' verdicts come from batch jobs
                task = asyncio.create_task(self._finish_later(result))
                self.deferred.add(task)
                continue
            stats.done += 1
            sink(result)
            await _paced(full, count)

    def _replayable(self, *, streamed: bool = False) -> bool:
        """Whether cache hits can be replayed in bulk: a run that reuses the cache, with no
        batch jobs and no judge, embedded criterion or other awaited scoring; the plan's
        hits before the workers start (a planned run: the plan's keys), or a streamed
        batch's as it is fed (``streamed``)."""
        card = self.scorecard
        return (
            self.reuse
            and (streamed or (bool(self.keys) and self.batches is None))
            and self.batch is None
            and self.judge_batch is None
            and not card.judged
            and not card.embedded
        )

    async def _replay_hits(self) -> dict[str, bytearray]:
        """The bulk replay of a cached rerun: every planned cell whose answer is in the cache
        (and not in the journal's replay) scored and handed to the sink in one loop, without a
        worker, a request or a hash of its own (the key is the plan's). Returns model id -> one
        mark per cell of ``plan.cells(model)``, set where the cell was replayed, so the workers
        skip it. Tool loops and exec checks still go through the workers."""
        marks: dict[str, bytearray] = {}
        keys, cache, journal = self.keys, self.cache, self.replay
        full = self.backpressure
        checks = self.check_runner is not None
        count = 0
        for model in self.plan.models:
            endpoint = self.endpoints[model.id]
            marked = marks[model.id] = bytearray()
            for variant, case, repeat in self.plan.cells(model):
                hit, cell = None, (variant.variant.id, model.id, case.id, repeat)
                key = keys.get(cell, "")
                live = variant.variant.tools is not None or (checks and case.check is not None)
                if key and not live and key not in journal:
                    hit = cache.get(key)
                marked.append(hit is not None)
                if hit is None:
                    continue
                if self.stopping:
                    return marks  # the workers start nothing either
                self._replay_one(endpoint, variant, case, repeat, key, hit, variant.render(case))
                count += 1
                await _paced(full, count)
        return marks

    def _replay_one(
        self,
        endpoint: Endpoint,
        variant: CompiledVariant,
        case: Case,
        repeat: int,
        key: str,
        hit: CachedAnswer,
        messages: Rendered,
    ) -> None:
        """One cache hit scored and handed to the sink, as a worker would have."""
        CELL.set((variant.variant.id, endpoint.model.id, case.id, repeat))
        self.stats.cache_hits += 1
        call = Call(key, hit, None, True, 0)
        result = self._settled(endpoint, variant, case, repeat, messages, call, None)
        if not isinstance(result, CellResult):
            calls = tool_calls_of(None, hit.wire)
            scored = self.scorecard.score(hit.output, case, None, calls, [])
            result = self._answered(endpoint, variant, result, call, hit, scored)
        self.stats.done += 1
        self.sink(result)

    async def replay_batch(self, batch: list[Case]) -> set[Cell]:
        """A streamed batch's cache hits: its requests hashed, the answers not in memory
        read in one query (``lookup``, in a thread), the hits replayed as
        :meth:`_replay_hits` does. Returns the cells replayed (the feed queues the others).
        Without ``lookup`` (no cache, a datasource run) nothing is replayed."""
        lookup = self.lookup
        if lookup is None or not self._replayable(streamed=True) or self.stopping:
            return set()
        checks = self.check_runner is not None
        plan, asks = self.plan, []
        for case in batch:
            if checks and case.check is not None:
                continue
            for variant in plan.variants:
                if variant.variant.tools is not None:
                    continue
                try:
                    messages = variant.render(case)
                except ConfigError:
                    continue  # its worker stores the render error
                for model in plan.models:
                    endpoint = self.endpoints[model.id]
                    for repeat in range(plan.repeats):
                        if plan.wanted((variant.variant.id, model.id, case.id, repeat)):
                            ask = Ask(
                                endpoint, messages, case, variant.variant.id, repeat,
                                variant.variant.output,
                            )  # fmt: skip
                            asks.append((ask, variant))
        keys = [ask.key() for ask, _ in asks]
        cache = self.cache
        missing = [k for k in keys if k not in cache]
        found = await asyncio.to_thread(lookup, missing) if missing else {}
        done: set[Cell] = set()
        for (ask, variant), key in zip(asks, keys, strict=True):
            hit = found.get(key) or cache.get(key)
            if hit is None or key in self.replay:
                continue
            if self.stopping:
                break
            self._replay_one(ask.endpoint, variant, ask.case, ask.repeat, key, hit, ask.messages)
            done.add((ask.variant, ask.endpoint.model.id, ask.case.id, ask.repeat))
            if len(done) % YIELD_EVERY == 0:
                await _paced(self.backpressure, len(done))
        return done

    async def _finish_later(self, deferred: Deferred) -> None:
        """A cell whose judge requests are held in batch jobs: scored and stored once their
        results are in."""
        result = await deferred.finish
        self.stats.done += 1
        self.sink(result)

    async def call(
        self,
        endpoint: Endpoint,
        messages: Rendered,
        case: Case,
        variant: str,
        repeat: int = 0,
        output: Any = None,
        tools: Any = None,
        key: str | None = None,
    ) -> Call:
        """One request through the cache, the cost cap, the limits and the retries. Never
        raises; a request the cap refuses is a Call whose error has kind ``budget``.
        ``output`` (an OutputSpec) asks for JSON by schema, ``tools`` (a ToolUse) offers
        tools; both are part of the request's key. ``key``: that key when already known
        (the plan's hash of this request), else it is computed here."""
        model = endpoint.model
        if key is None:
            key = Ask(endpoint, messages, case, variant, repeat, output, tools).key()
        replayed = self.replay.get(key)
        if replayed is not None:  # paid for before the kill: never asked again
            self.stats.replayed += 1
            return replayed
        if self.batch is not None:
            result = self.batch.take(key)
            if result is not None:  # answered in a batch job
                return self._batched(endpoint, key, result)
        hit = self.cache.get(key) if self.reuse else None
        if hit is not None:
            self.stats.cache_hits += 1
            return Call(key, hit, None, True, 0)
        feed = self.judge_batch
        if feed is not None and variant.startswith(JUDGE_CALL) and feed.asks(model):
            request = Ask(endpoint, messages, case, variant, repeat).request()
            return self._batched(endpoint, key, await feed.ask(key, request, model), feed)
        budget = self.budget
        if budget is None:
            return await self._send(endpoint, messages, case, variant, repeat, key, output, tools)
        chars = sum(len(p.get("text", "")) for m in messages for p in m["content"])
        amount = budget.reservation(model, chars)
        if not budget.reserve(amount):
            error = ProviderError(f"not sent: {budget.reason}", retryable=False, kind="budget")
            return Call(key, None, error, False, 0)
        call = None
        try:
            call = await self._send(endpoint, messages, case, variant, repeat, key, output, tools)
            return call
        finally:
            budget.settle(amount, call.cost(model) if call is not None else None, model)

    async def _send(
        self,
        endpoint: Endpoint,
        messages: Rendered,
        case: Case,
        variant: str,
        repeat: int,
        key: str,
        output: Any = None,
        tools: Any = None,
    ) -> Call:
        model = endpoint.model
        request = Ask(endpoint, messages, case, variant, repeat, output, tools).request()
        adaptive = endpoint.adaptive
        attempt = 0
        began = time.monotonic()
        waited = 0.0  # seconds spent waiting to send: paces, slots, pauses, back-offs

        def ended(answer: CachedAnswer | None, error: ProviderError | None, tries: int) -> Call:
            return Call(key, answer, error, False, tries, round(waited * 1000, 1))

        while True:
            if endpoint.unreachable is not None:
                dead = ProviderError(endpoint.unreachable, retryable=False, kind="unreachable")
                return ended(None, dead, attempt)
            attempt += 1
            remaining = model.deadline_s - (time.monotonic() - began)
            epoch = -1
            try:
                if remaining <= 0:
                    raise _DeadlinePassed
                asked = time.monotonic()
                await endpoint.pacer.wait()
                if adaptive is not None:
                    epoch = await adaptive.acquire()
                try:
                    if endpoint.limit is not None:
                        await endpoint.limit.acquire()
                    try:
                        async with self._global:
                            waited += time.monotonic() - asked
                            self.stats.requests += 1
                            started = time.perf_counter()
                            completion = await _with_timeout(
                                endpoint.provider.complete(
                                    request if attempt == 1 else replace(request, attempt=attempt)
                                ),
                                min(model.timeout_s, max(remaining, 0.001)),
                            )
                            latency = completion.latency_ms
                            if latency is None:  # the provider does not time its own requests
                                latency = (time.perf_counter() - started) * 1000
                    finally:
                        if endpoint.limit is not None:
                            endpoint.limit.release()
                finally:
                    if adaptive is not None:
                        adaptive.release()
                endpoint.answered = True
                if adaptive is not None:
                    adaptive.answered()
                answer = self._keep(key, model, completion, latency, attempt, waited)
                return ended(answer, None, attempt)
            except _DeadlinePassed:
                return ended(None, _past_deadline(model, attempt - 1), attempt - 1)
            except asyncio.TimeoutError:
                if time.monotonic() - began >= model.deadline_s:
                    return ended(None, _past_deadline(model, attempt), attempt)
                error = ProviderError(
                    f"timed out after {model.timeout_s:g} s", retryable=True, kind="timeout"
                )
            except ProviderError as exc:
                error = exc
                endpoint.note_failure(exc)
                if adaptive is not None and exc.kind == "rate_limit":
                    adaptive.rate_limited(epoch, exc.retry_after)
            except Exception as exc:  # a provider bug must not abort the run
                error = ProviderError(
                    f"{type(exc).__name__}: {exc}", retryable=False, kind="internal"
                )
            if not error.retryable or attempt > model.max_retries:
                return ended(None, error, attempt)
            if error.retry_after is not None and error.retry_after > MAX_RETRY_AFTER_S:
                too_long = ProviderError(
                    f"{error} (the server asked to retry after {error.retry_after:g} s, longer "
                    f"than the {MAX_RETRY_AFTER_S:g} s evalwh waits)",
                    retryable=False,
                    status=error.status,
                    kind=error.kind,
                )
                return ended(None, too_long, attempt)
            delay = backoff_s(attempt, error.retry_after)
            if time.monotonic() - began + delay >= model.deadline_s:
                return ended(None, _past_deadline(model, attempt, error), attempt)
            self.stats.retries += 1
            backing_off = time.monotonic()
            await asyncio.sleep(delay)
            waited += time.monotonic() - backing_off

    def _keep(
        self,
        key: str,
        model: ModelSpec,
        completion: Completion,
        latency: float | None,
        attempts: int,
        waited: float,
    ) -> CachedAnswer:
        """An answer as it arrives: redacted (privacy.redact_outputs), then cached,
        remembered for the response cache and journaled."""
        answer = CachedAnswer(
            completion.text,
            completion.input_tokens,
            completion.output_tokens,
            latency,
            completion.wire(),
        )
        if self.redact_answers:
            answer = answer.redacted()
        self.cache[key] = answer
        if self.remember is not None:
            self.remember(key, model, answer)
        if self.journal is not None:
            self.journal.answered(key, model, answer, attempts, round(waited * 1000, 1))
        return answer

    def _batched(self, endpoint: Endpoint, key: str, result: Any, feed: Any = None) -> Call:
        """A batch job's result for this request (evalwh.engine.batch; ``feed``: the one
        that read it, the answers' by default), kept as a live answer is; its latency is
        unknown (NULL), it waited in its job."""
        feed = feed if feed is not None else self.batch
        model = endpoint.model
        self.stats.requests += 1
        self.stats.batched += 1
        if result.completion is None:
            feed.settle(key, None, model)
            return Call(key, None, result.error, False, 1)
        answer = self._keep(key, model, result.completion, result.completion.latency_ms, 1, 0.0)
        call = Call(key, answer, None, False, 1)
        feed.settle(key, call.cost(model), model)
        return call

    async def _cell(
        self, endpoint: Endpoint, variant: CompiledVariant, case: Case, repeat: int
    ) -> CellResult | Deferred:
        model = endpoint.model
        cell = (variant.variant.id, model.id, case.id, repeat)
        CELL.set(cell)
        try:
            messages = variant.render(case)
        except ConfigError as exc:
            if self.batches is None:  # the plan's cases were all rendered before the run
                raise
            return self._unrenderable(endpoint, variant, case, repeat, exc)
        turns = None
        if variant.variant.tools is not None:  # a bounded model-tool loop
            from evalwh.engine.toolloop import tool_loop

            call, turns = await tool_loop(self, endpoint, messages, case, variant.variant, repeat)
        else:
            call = await self.call(
                endpoint,
                messages,
                case,
                variant.variant.id,
                repeat,
                variant.variant.output,
                key=self.keys.get(cell),
            )
        base = self._settled(endpoint, variant, case, repeat, messages, call, turns)
        if isinstance(base, CellResult):
            return base
        answer = call.answer
        assert answer is not None
        transcript = self._transcript(turns)
        finish = self._finish(endpoint, variant, case, base, call, answer, messages, transcript)
        if self.judge_batch is not None and self._hold_judges(case, messages, answer, transcript):
            return Deferred(finish)
        return await finish

    def _settled(
        self,
        endpoint: Endpoint,
        variant: CompiledVariant,
        case: Case,
        repeat: int,
        messages: Rendered,
        call: Call,
        turns: list[Any] | None,
    ) -> CellResult | dict[str, Any]:
        """A cell whose request has its outcome: the failed cell's result (an error, or an
        answer that ended truncated, refused or blocked), else the fields of its result the
        scoring does not decide. Raises BudgetStop where the cost cap refused the request."""
        model = endpoint.model
        base: dict[str, Any] = {
            "variant": variant.variant.id,
            "model": model,
            "case": case,
            "repeat": repeat,
            "messages": messages,
            "request_hash": call.key,
            "cached": call.cached,
            "attempts": call.attempts,
            "queued_ms": call.queued_ms,
            "turns": turns,
        }
        if call.answer is None:
            assert call.error is not None
            if call.error.kind == "budget":
                raise BudgetStop(call.error)  # the cap is reached: this cell is not stored
            self.stats.errors += 1
            text = error_text(call.error, self.redact, no_look=self.no_look)
            return CellResult(
                **base,
                output=None,
                error=text,
                error_kind=call.error.kind,
                latency_ms=None,
                input_tokens=None,
                output_tokens=None,
                cost_usd=None,
                scored=self.scorecard.failed(text),
            )
        answer = call.answer
        ended = ending_failure(answer, model)
        if ended is not None:  # truncated, refused or blocked: a failed cell, what it cost kept
            self.stats.errors += 1
            text, kind = ended
            return CellResult(
                **base,
                output=answer.output or None,
                error=text if not self.no_look else kind,
                error_kind=kind,
                latency_ms=answer.latency_ms,
                input_tokens=answer.input_tokens,
                output_tokens=answer.output_tokens,
                cost_usd=call.cost(model),
                scored=self.scorecard.failed(text if not self.no_look else kind),
                wire=answer.wire,
            )
        return base

    async def _finish(
        self,
        endpoint: Endpoint,
        variant: CompiledVariant,
        case: Case,
        base: dict[str, Any],
        call: Call,
        answer: CachedAnswer,
        messages: Rendered,
        transcript: list[dict[str, Any]],
    ) -> CellResult:
        """An answered cell scored (its judges asked) into its result."""
        calls = tool_calls_of(base["turns"], answer.wire)
        if (
            self.scorecard.judged
            or self.scorecard.embedded
            or (case.check is not None and self.check_runner is not None)
        ):
            scored, judge_cost, check = await self._score(
                answer.output, case, messages, calls, transcript
            )
        else:  # deterministic scorers only: nothing to await
            scored = self.scorecard.score(answer.output, case, None, calls, transcript)
            judge_cost, check = None, None
        return self._answered(endpoint, variant, base, call, answer, scored, judge_cost, check)

    def _answered(
        self,
        endpoint: Endpoint,
        variant: CompiledVariant,
        base: dict[str, Any],
        call: Call,
        answer: CachedAnswer,
        scored: CaseScore,
        judge_cost: float | None = None,
        check: CheckOutcome | None = None,
    ) -> CellResult:
        """An answered cell's result from its scores."""
        if variant.variant.output is not None:  # the schema pass rate says how it was asked
            mode = variant.variant.output.mode_for(type(endpoint.provider))
            for row in scored.criteria:
                if row.scorer == "json-schema":
                    row.details = {**(row.details or {}), "mode": mode}
        return CellResult(
            **base,
            output=answer.output,
            error=None,
            error_kind=None,
            latency_ms=answer.latency_ms,
            input_tokens=answer.input_tokens,
            output_tokens=answer.output_tokens,
            cost_usd=call.cost(endpoint.model),
            scored=scored,
            judge_cost_usd=judge_cost,
            check=check,
            wire=answer.wire,
        )

    def _transcript(self, turns: list[Any] | None) -> list[dict[str, Any]]:
        """The cell's tool loop as scorers and judges get it: redacted as it is stored (the
        tools' results too) unless ``redact_outputs`` is off, so what a judge is sent and what
        the warehouse keeps are one text."""
        steps = transcript_of(turns)
        if steps and self.redact_answers:
            from evalwh.config.secrets import known_secret_values, redact_tree

            steps = redact_tree(steps, known_secret_values())
        return steps

    def _render_error_text(self, exc: Exception) -> str:
        """What is kept of a datasource row's render error: its redacted message, or in
        no-look mode only that it happened (the message may quote the row)."""
        return "render error" if self.no_look else self.redact(str(exc))

    def _unrenderable(
        self, endpoint: Endpoint, variant: CompiledVariant, case: Case, repeat: int, exc: Exception
    ) -> CellResult:
        """A datasource case whose prompt does not render: an errored cell, not a dead run
        (its later pages may be fine); in no-look mode the message is not kept."""
        self.stats.errors += 1
        text = self._render_error_text(exc)
        return CellResult(
            variant=variant.variant.id,
            model=endpoint.model,
            case=case,
            repeat=repeat,
            messages=[],
            request_hash="",
            output=None,
            error=text,
            error_kind="render",
            latency_ms=None,
            input_tokens=None,
            output_tokens=None,
            cost_usd=None,
            cached=False,
            attempts=0,
            scored=self.scorecard.failed(text),
        )

    async def _score(
        self,
        output: str,
        case: Case,
        messages: Rendered,
        calls: list[Any] | None = None,
        transcript: list[dict[str, Any]] | None = None,
    ) -> tuple[CaseScore, float | None, CheckOutcome | None]:
        """Judge criteria, embedded criteria and the exec check run concurrently; then the
        whole scorecard."""
        shown = self._shown(transcript)
        jobs: list[Awaitable[Any]] = [
            self._judge(name, jid, case, messages, output, shown)
            for name, jid in self.scorecard.judged
        ]
        describe = partial(error_text, redact=self.redact, no_look=self.no_look)
        jobs += [
            embedded(self.call, self.embedders[model], name, fn, case, output, describe)
            for name, model, fn in self.scorecard.embedded
        ]
        if case.check is not None and self.check_runner is not None:
            jobs.append(self.check_runner(case, output))
        done = await asyncio.gather(*jobs) if jobs else []
        judged = done[: len(self.scorecard.judged) + len(self.scorecard.embedded)]
        check: CheckOutcome | None = done[-1] if len(done) > len(judged) else None
        given = {name: result for name, result, _ in judged}
        scored = self.scorecard.score(output, case, given, calls, transcript)
        meta = {name: m for name, _, m in judged}
        judge_cost = None
        for row in scored.criteria:
            if row.name in meta:
                row.judge_model, row.raw_score, row.cost_usd = meta[row.name]
                judge_cost = (judge_cost or 0.0) + (row.cost_usd or 0.0)
        if check is not None:
            scored.criteria.append(
                CriterionScore(
                    "check",
                    "exec-check",
                    1.0 if check.passed else 0.0,
                    check.passed,
                    0.0,
                    True,
                    {"exit_code": check.exit_code},
                    None,
                    check.error,
                )
            )
            scored.passed = scored.passed and check.passed
        return scored, judge_cost, check

    def _shown(self, transcript: list[dict[str, Any]] | None) -> str:
        """A tool loop's transcript as the judges' prompts show it ("" without one)."""
        if not (transcript and self.scorecard.judged):
            return ""
        from evalwh.scoring.transcript import render_transcript

        return render_transcript(transcript)

    def _judge_prompt(
        self, judge_id: str, case: Case, messages: Rendered, output: str, shown: str
    ) -> Rendered:
        """A judge's prompt for an answer (ConfigError: it does not render)."""
        from evalwh.scoring.judge import input_text

        # the transcript is in the prompt, so in the judge call's cache key too
        prompt: Rendered = self.judges[judge_id].prompts.point(
            case, input_text(messages), output, shown
        )
        return prompt

    def _hold_judges(
        self,
        case: Case,
        messages: Rendered,
        answer: CachedAnswer,
        transcript: list[dict[str, Any]],
    ) -> bool:
        """Hold an answered cell's judge requests for batch jobs (judges_batch), before its
        worker takes the next cell, so that every request is held once the answers are in;
        False when none is held (no judge, or every verdict cached, replayed, unrenderable:
        the cell is finished at once)."""
        feed, held = self.judge_batch, False
        shown = self._shown(transcript)
        for _, judge_id in self.scorecard.judged:
            endpoint = self.judges[judge_id].endpoint
            if not feed.asks(endpoint.model):
                continue
            try:
                prompt = self._judge_prompt(judge_id, case, messages, answer.output, shown)
            except ConfigError:
                continue  # _judge stores the criterion's error
            ask = Ask(endpoint, prompt, case, f"{JUDGE_CALL}{judge_id}", 0)
            key = ask.key()
            if key in self.replay or (self.reuse and key in self.cache):
                continue
            feed.ask(key, ask.request(), endpoint.model)
            held = True
        return held

    async def _judge(
        self,
        name: str,
        judge_id: str,
        case: Case,
        messages: Rendered,
        output: str,
        transcript: str = "",
    ) -> tuple[str, ScoreResult, tuple[str, float | None, float | None]]:
        from evalwh.scoring.judge import parse_score

        runtime = self.judges[judge_id]
        endpoint = runtime.endpoint
        try:
            prompt = self._judge_prompt(judge_id, case, messages, output, transcript)
        except ConfigError as exc:
            if self.batches is None:  # the plan's cases were all rendered before the run
                raise
            # a datasource row the judge's prompt cannot render: this criterion errs, the run
            # goes on (as for a row the variant's own prompt cannot render); no judge is called
            text = self._render_error_text(exc)
            failed = ScoreResult(0.0, error=f"judge '{judge_id}' prompt did not render: {text}")
            return name, failed, (endpoint.model.model, None, None)
        call = await self.call(endpoint, prompt, case, f"{JUDGE_CALL}{judge_id}")
        self.stats.judge_requests += 0 if call.cached or call.replayed else 1
        cost = None if call.cached else call.cost(endpoint.model)
        if call.answer is None:
            assert call.error is not None
            result = ScoreResult(
                0.0,
                error=f"judge '{judge_id}' failed: "
                f"{error_text(call.error, self.redact, no_look=self.no_look)}",
            )
            return name, result, (endpoint.model.model, None, cost)
        result = parse_score(call.answer.output, runtime.prompts.judge.scale)
        raw = (result.details or {}).get("raw_score")
        return name, result, (endpoint.model.model, raw, cost)
