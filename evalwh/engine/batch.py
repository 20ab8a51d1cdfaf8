"""Batch mode: a run's uncached requests as provider batch jobs, answered through the same
path as live answers (docs/batch.md).

:class:`BatchFeed` plans, before the engine starts, which cells of the batched models are
asked in a batch: every cell that is not a tool loop (those run live), whose request is
neither in the response cache nor in the run's journal. Their requests are grouped per model
into jobs within the API's limits (requests and bytes), each request's ``custom_id`` its
cache key, and submitted; each job is recorded in the warehouse (``batches`` and
``batch_requests``) as soon as the provider accepts it, before anything waits on it. Then it
polls every open job with backoff and, as a job's results are read, hands its cells to the
engine's workers (:meth:`cells`), whose :meth:`Engine.call <evalwh.engine.runner.Engine.call>`
takes the result (:meth:`take`) instead of sending a request: parsing is the adapter's,
then redaction, scoring, judges, the cache, the journal and the warehouse are the live path.

A stop (Ctrl-C, SIGTERM) or a kill leaves the jobs running at the provider: a resumed run
(``--resume RUN``) reads the stored jobs back and polls them, submitting none of their
requests again; ``--retry-errors RUN`` submits the errored cells in new jobs.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from evalwh.config.model import Case, ModelSpec
from evalwh.config.prompts import CompiledVariant
from evalwh.engine.answers import BATCH_MARK
from evalwh.engine.plan import Cell, Plan
from evalwh.providers.base import MAX_OUTPUT_BYTES, ProviderError, Request, cut_answer
from evalwh.providers.batching import READABLE_STATES, BatchApi, BatchItem, BatchJob, BatchResult
from evalwh.warehouse.batches import JobRow, record_states, record_submission

log = logging.getLogger("evalwh.engine")

# Polling: the first poll this many seconds after the last submission, then each wait this
# factor longer, up to the ceiling. EVALWH_BATCH_POLL_S sets the first wait (0 in tests).
FIRST_POLL_S = 10.0
POLL_FACTOR = 1.5
MAX_POLL_S = 300.0
# a job whose results could not be read, or that could not be polled, this many times in a
# row: its requests are errors of that failure (which --retry-errors submits again); a
# failure another attempt may mend (a 429, a 5xx, a dropped connection) is given more tries
MAX_READ_FAILURES = 3
MAX_POLL_FAILURES = {False: 3, True: 20}  # retryable -> polls that may fail in a row
# a request's error kind when its job ended without its result, per the job's state
MISSING_KIND = {
    "expired": "batch_expired",
    "cancelled": "batch_cancelled",
    "failed": "batch_failed",
    "ended": "batch_missing",
}
MISSING_TEXT = {
    "batch_expired": "the batch job expired before this request ran",
    "batch_cancelled": "the batch job was cancelled before this request ran",
    "batch_failed": "the batch job failed",
    "batch_missing": "the batch job ended without a result for this request",
}

Sleep = Callable[[float], Awaitable[None]]
pause: Sleep = asyncio.sleep  # the wait between rounds of polls (tests count them)
Now = Callable[[], datetime]
HeldCell = tuple[CompiledVariant, Case, int]


def first_poll_s(env: Mapping[str, str] | None = None) -> float:
    """The first wait between polls: ``EVALWH_BATCH_POLL_S``, else FIRST_POLL_S."""
    raw = (os.environ if env is None else env).get("EVALWH_BATCH_POLL_S", "").strip()
    if not raw:
        return FIRST_POLL_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if value < 0:
        from evalwh.errors import UsageError

        raise UsageError(f"EVALWH_BATCH_POLL_S={raw!r} is not a number of seconds >= 0")
    return value


def next_wait(wait: float) -> float:
    """The wait after ``wait``: longer by POLL_FACTOR, at most MAX_POLL_S (and at least 1 s
    once polling has started, unless the first wait is 0)."""
    return min(MAX_POLL_S, wait * POLL_FACTOR)


@dataclass
class OpenJob:
    """A job the feed waits on: its latest row, its API and the requests it holds."""

    row: JobRow
    api: BatchApi
    spec: ModelSpec
    keys: list[str]
    read_failures: int = 0
    poll_failures: int = 0


@dataclass
class Submission:
    """One model's requests to submit, grouped into jobs."""

    spec: ModelSpec
    api: BatchApi
    items: list[tuple[BatchItem, dict[str, Any], int]] = field(default_factory=list)


class BatchFeed:
    """The batched cells of a run: planned, submitted, polled and handed to the engine."""

    def __init__(
        self,
        run_id: str,
        warehouse: Any,
        apis: Mapping[str, BatchApi],
        *,
        sleep: Sleep | None = None,
        now: Now | None = None,
        first_wait: float | None = None,
        budget: Any = None,
        on_poll: Callable[[list[JobRow]], None] | None = None,
    ) -> None:
        from evalwh.warehouse.store import utcnow

        self.run_id = run_id
        self.warehouse = warehouse  # a Location (file or lake target)
        self.apis = dict(apis)  # model id -> its batch API
        self.sleep = sleep or pause
        self.now = now or utcnow
        self.first_wait = first_poll_s() if first_wait is None else first_wait
        self.budget = budget
        self.on_poll = on_poll
        self.held: dict[str, list[HeldCell]] = {}  # key -> the cells waiting on its result
        self.held_cells: set[Cell] = set()
        self.model_of: dict[str, str] = {}  # key -> model id
        # key -> its request, given to the API with each job's results (an answer is read
        # with its request, as a live one is: a resumed job's too)
        self.request_of: dict[str, Request] = {}
        self.results: dict[str, tuple[BatchResult, int]] = {}  # key -> result, cells left
        self.reserved: dict[str, float] = {}  # key -> its share of the cost cap's reservation
        self.queues: dict[str, asyncio.Queue[list[HeldCell] | None]] = {}
        self.outstanding: dict[str, int] = {}  # model id -> keys without a result yet
        self.submissions: dict[str, Submission] = {}
        self.jobs: dict[str, OpenJob] = {}  # job id -> a job not read yet
        self.all_jobs: list[JobRow] = []
        self.output_limit: dict[str, int] = {}  # model id -> bytes of an answer kept
        self.live_tools = 0  # cells of batched models run live: tool loops
        self.stopped = False
        self.submitted = 0  # jobs this process submitted

    # ---- planning ---------------------------------------------------------------------------

    def plan(
        self,
        plan: Plan,
        endpoints: Mapping[str, Any],
        skip: Callable[[str], bool],
        stored: Mapping[str, tuple[JobRow, list[str]]] | None = None,
    ) -> None:
        """Hold every batched cell whose request ``skip`` does not serve (cache, journal):
        those already in a ``stored`` job (a resumed run) wait on it, the others are grouped
        for submission; keys and requests are made as the engine makes them (Ask)."""
        from evalwh.engine.runner import Ask

        in_job: dict[str, str] = {}
        for job_id, (_, keys) in (stored or {}).items():
            for key in keys:
                in_job[key] = job_id
        waiting_on: dict[str, list[str]] = {}
        for model in plan.models:
            api = self.apis.get(model.id)
            if api is None:
                continue
            endpoint = endpoints[model.id]
            limit = getattr(endpoint.provider, "max_output_bytes", MAX_OUTPUT_BYTES)
            self.output_limit[model.id] = int(limit)
            self.queues[model.id] = asyncio.Queue()
            self.outstanding[model.id] = 0
            submission = Submission(model, api)
            for variant, case, repeat in plan.cells(model):
                spec = variant.variant
                if spec.tools is not None:
                    self.live_tools += 1
                    continue
                messages = variant.render(case)
                ask = Ask(endpoint, messages, case, spec.id, repeat, spec.output)
                key = ask.key()
                if skip(key):
                    continue
                self.held_cells.add((spec.id, model.id, case.id, repeat))
                if key in self.held:
                    self.held[key].append((variant, case, repeat))
                    continue
                self.held[key] = [(variant, case, repeat)]
                self.model_of[key] = model.id
                request = ask.request()
                self.request_of[key] = request
                self.outstanding[model.id] += 1
                if key in in_job:
                    waiting_on.setdefault(in_job[key], []).append(key)
                    continue
                item = BatchItem(key, request)
                line = api.line(item)
                size = len(json.dumps(line, separators=(",", ":")).encode()) + 1
                submission.items.append((item, line, size))
            if submission.items:
                self.submissions[model.id] = submission
        for job_id, keys in waiting_on.items():
            row, _ = (stored or {})[job_id]
            api = self.apis.get(row.model)
            if api is None:  # a model no longer batched: its cells were planned live
                continue
            model_spec = next(m for m in plan.models if m.id == row.model)
            self.jobs[job_id] = OpenJob(row, api, model_spec, keys)
            self.all_jobs.append(row)

    @property
    def requests(self) -> int:
        """Requests of this run asked in a batch (held), whether or not submitted here."""
        return len(self.held)

    def is_held(self, cell: Cell) -> bool:
        return cell in self.held_cells

    # ---- the engine's side ------------------------------------------------------------------

    async def cells(self, model_id: str, plain: Iterator[HeldCell]) -> AsyncIterator[HeldCell]:
        """A batched model's cells for its workers: first those not held (cache hits, tool
        loops: no wait), then each held cell once its request's result is in."""
        for variant, case, repeat in plain:
            if (variant.variant.id, model_id, case.id, repeat) not in self.held_cells:
                yield variant, case, repeat
        queue = self.queues.get(model_id)
        if queue is None or (not self.outstanding[model_id] and queue.empty()):
            return  # nothing of this model was held
        while not self.stopped:
            ready = await queue.get()
            if ready is None:
                return
            for cell in ready:
                yield cell

    def take(self, key: str) -> BatchResult | None:
        """The result of a batched request (None: not one); kept until each cell holding the
        same request has taken it."""
        found = self.results.get(key)
        if found is None:
            return None
        result, left = found
        if left <= 1:
            del self.results[key]
        else:
            self.results[key] = (result, left - 1)
        return result

    def settle(self, key: str, cost: float | None, model: ModelSpec) -> None:
        """A batched request's actual cost, against the cost cap's reservation."""
        amount = self.reserved.pop(key, None)
        if self.budget is not None and amount is not None:
            self.budget.settle(amount, cost, model)

    def stop(self) -> None:
        """Wait no more: the workers' iterators end; the jobs keep running at the provider."""
        self.stopped = True
        for queue in self.queues.values():
            queue.put_nowait(None)

    # ---- submitting and polling -------------------------------------------------------------

    async def run(self) -> None:
        """Submit the planned jobs, then poll until every job is read (or the run stops)."""
        try:
            for submission in self.submissions.values():
                if self.stopped:
                    return
                await self._submit(submission)
            await self._wait(read=True)
        finally:
            for queue in self.queues.values():
                queue.put_nowait(None)  # no more results: the workers finish what they hold

    async def wait_ended(self) -> None:
        """Poll the open jobs until each has ended, recording the states that changed; no
        result is read (``evalwh batch wait``)."""
        await self._wait(read=False)

    async def _wait(self, *, read: bool) -> None:
        wait = self.first_wait
        while self.jobs and not self.stopped:
            await self._round(wait, read=read)
            wait = next_wait(wait)

    async def _round(self, wait: float, *, read: bool) -> None:
        """Wait ``wait`` seconds, then poll every open job (unless the run stopped)."""
        await self.sleep(wait)
        if self.stopped:
            return
        await self._poll_round(read=read)
        if self.on_poll is not None:
            self.on_poll(list(self.all_jobs))

    def groups(
        self, submission: Submission
    ) -> Iterator[list[tuple[BatchItem, dict[str, Any], int]]]:
        """A model's items in jobs, each within the API's limits on requests and bytes."""
        limits = submission.api.limits
        group: list[tuple[BatchItem, dict[str, Any], int]] = []
        size = 0
        for entry in submission.items:
            if group and (len(group) >= limits.max_requests or size + entry[2] > limits.max_bytes):
                yield group
                group, size = [], 0
            group.append(entry)
            size += entry[2]
        if group:
            yield group

    async def _submit(self, submission: Submission) -> None:
        spec, api = submission.spec, submission.api
        for group in self.groups(submission):
            if self.stopped:
                return
            keys = [item.custom_id for item, _, _ in group]
            if not self._reserve(spec, group):
                self._fail(keys, self.budget_error())
                continue
            try:
                job = await api.submit([line for _, line, _ in group], label=self.run_id)
            except ProviderError as exc:
                log.warning("batch job of %s not accepted: %s", spec.id, exc)
                for key in keys:
                    self.settle(key, None, spec)
                self._fail(keys, exc)
                continue
            self.submitted += 1
            row = JobRow(
                self.run_id,
                spec.id,
                spec.provider,
                job.id,
                0,
                job.state,
                job.provider_state,
                len(group),
                sum(size for _, _, size in group),
                dict(job.counts),
                submitted_at=self.now(),
                extra=job.extra or None,
            )
            await asyncio.to_thread(record_submission, self.warehouse, row, keys)
            self.jobs[job.id] = OpenJob(row, api, spec, keys)
            self.all_jobs.append(row)

    def budget_error(self) -> ProviderError:
        reason = self.budget.reason if self.budget is not None else "the cost cap"
        return ProviderError(f"not sent: {reason}", retryable=False, kind="budget")

    def _reserve(self, spec: ModelSpec, group: list[tuple[BatchItem, dict[str, Any], int]]) -> bool:
        """Take the cost cap's reservation for a job's requests at the batch price."""
        if self.budget is None:
            return True
        from evalwh.providers.pricing import batch_factor

        factor = batch_factor(spec.provider)
        amounts = []
        for item, _, _ in group:
            chars = sum(len(p.get("text", "")) for m in item.request.messages for p in m["content"])
            amounts.append(self.budget.reservation(spec, chars) * factor)
        if not self.budget.reserve(sum(amounts)):
            return False
        for (item, _, _), amount in zip(group, amounts, strict=True):
            self.reserved[item.custom_id] = amount
        return True

    async def _poll_round(self, *, read: bool = True) -> None:
        """Poll every open job, record the states that changed (one transaction), then read
        the jobs that ended (when ``read``)."""
        polled: list[tuple[OpenJob, BatchJob]] = []
        for job in list(self.jobs.values()):
            try:
                polled.append((job, await job.api.poll(job.row.job_id)))
                job.poll_failures = 0
            except ProviderError as exc:  # the job may go on at the provider: poll again
                job.poll_failures += 1
                log.warning("polling batch job %s failed: %s", job.row.job_id, exc)
                if job.poll_failures >= MAX_POLL_FAILURES[exc.retryable]:
                    self.jobs.pop(job.row.job_id, None)
                    if read:
                        self._fail(list(job.keys), exc)
        now = self.now()
        rows = [r for job, state in polled if (r := next_row(job.row, state, now)) is not None]
        if rows:
            await asyncio.to_thread(record_states, self.warehouse, rows)
        for row in rows:
            self.jobs[row.job_id].row = row
        self.all_jobs = [next((r for r in rows if r.job_id == o.job_id), o) for o in self.all_jobs]
        for job, state in polled:
            ended = state.state in READABLE_STATES or state.state == "failed"
            if ended and not read:
                self.jobs.pop(job.row.job_id, None)
            elif state.state in READABLE_STATES:
                await self._read(job, state)
            elif state.state == "failed":
                self._close(job, job.keys, "failed")

    async def _read(self, job: OpenJob, state: BatchJob) -> None:
        """Hand each result of an ended job to the engine; a request the job has no result
        for is an error of the job's state's kind."""
        wanted = set(job.keys)
        limit = self.output_limit.get(job.row.model, MAX_OUTPUT_BYTES)
        try:
            requests = {key: self.request_of[key] for key in job.keys if key in self.request_of}
            async for result in job.api.results(state, requests):
                key = result.custom_id
                # a result for a request this job does not hold (a provider's reply is
                # untrusted) or given twice is ignored: it never answers another cell
                if key not in wanted:
                    continue
                wanted.discard(key)
                if result.completion is not None:
                    completion = cut_answer(result.completion, limit)
                    completion.extra = {**completion.extra, BATCH_MARK: job.row.job_id}
                    result = BatchResult(key, completion=completion)
                elif result.error is None:
                    result = BatchResult(key, error=self._missing(key, "ended"))
                self._deliver(key, result)
        except ProviderError as exc:
            job.read_failures += 1
            job.keys = sorted(wanted)
            if job.read_failures < MAX_READ_FAILURES:
                log.warning("reading batch job %s failed (will retry): %s", job.row.job_id, exc)
                return
            self._fail(sorted(wanted), exc)
            self.jobs.pop(job.row.job_id, None)
            return
        self._close(job, sorted(wanted), state.state)

    def _close(self, job: OpenJob, keys: list[str], state: str) -> None:
        self.jobs.pop(job.row.job_id, None)
        kind = MISSING_KIND.get(state, "batch_missing")
        for key in keys:
            self._deliver(key, BatchResult(key, error=self._missing(key, kind)))

    def _missing(self, key: str, kind: str) -> ProviderError:
        return ProviderError(MISSING_TEXT.get(kind, kind), retryable=False, kind=kind)

    def _fail(self, keys: list[str], error: ProviderError) -> None:
        for key in keys:
            self._deliver(key, BatchResult(key, error=error))

    def _deliver(self, key: str, result: BatchResult) -> None:
        cells = self.held.pop(key, None)
        if cells is None:
            return  # delivered already
        self.request_of.pop(key, None)
        model_id = self.model_of[key]
        self.results[key] = (result, len(cells))
        self.outstanding[model_id] -= 1
        queue = self.queues[model_id]
        queue.put_nowait(cells)
        if self.outstanding[model_id] == 0:
            queue.put_nowait(None)


def stored_jobs(store: Any, run_id: str) -> dict[str, tuple[JobRow, list[str]]]:
    """A run's jobs a resume waits on: each one's latest row and its requests (a job that
    failed as a whole is not waited on: its requests are submitted again)."""
    from evalwh.warehouse.batches import job_requests, latest_states

    keys = job_requests(store, run_id)
    return {
        row.job_id: (row, keys.get(row.job_id, []))
        for row in latest_states(store, run_id)
        if row.state != "failed"
    }


def next_row(row: JobRow, state: BatchJob, now: datetime) -> JobRow | None:
    """A job's next ``batches`` row when a poll found its state, the provider's word or its
    counts changed since ``row``; None when nothing did."""
    if (state.state, state.provider_state, state.counts) == (
        row.state,
        row.provider_state,
        row.counts,
    ):
        return None
    final = state.state not in ("running", "cancelling")
    return JobRow(
        row.run_id,
        row.model,
        row.provider,
        row.job_id,
        row.seq + 1,
        state.state,
        state.provider_state,
        row.requests,
        row.bytes,
        dict(state.counts),
        submitted_at=row.submitted_at,
        ended_at=row.ended_at or (now if final else None),
        polled_at=now,
        extra={**(row.extra or {}), **state.extra} or None,
    )


def record_state_of(warehouse: Any, row: JobRow, state: BatchJob) -> None:
    """Append a job's state as a provider reported it (when it changed)."""
    from evalwh.warehouse.store import utcnow

    new = next_row(row, state, utcnow())
    if new is not None:
        record_states(warehouse, [new])
