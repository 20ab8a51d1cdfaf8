"""Judges in a second batch (``judges_batch: true``, docs/batch.md): a cell's judge requests
are held once its answer is in and asked in batch jobs of the judge's model.

:class:`JudgeFeed` is a :class:`~evalwh.engine.batch.BatchFeed` whose requests are not planned
before the run (a judge's prompt holds the answer) but registered as each answer arrives
(:meth:`JudgeFeed.ask`, from the engine's worker, before it takes its next cell). A model's
held requests are submitted as a job when they fill one (the API's limits), the rest once
every answer of the run is in; each job is recorded in ``batches`` like an answer job, its
``custom_id`` the judge request's cache key. Polling, reading, the error kinds of requests a
job did not answer and the batch price are the answer jobs' (BatchFeed); each result resolves
the future its judge calls wait on, and the engine keeps and parses it as a live verdict.

A resumed run waits on the judge jobs it stored: a request already in one is not submitted
again, and a job read before every cell asked for its results keeps them until asked.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from evalwh.config.model import ModelSpec
from evalwh.engine.batch import BatchFeed, OpenJob, Submission, next_wait
from evalwh.providers.base import Request
from evalwh.providers.batching import BatchApi, BatchItem, BatchResult
from evalwh.warehouse.batches import JobRow


class JudgeFeed(BatchFeed):
    """The run's judge requests asked in batch jobs, per judge model."""

    def __init__(
        self,
        run_id: str,
        warehouse: Any,
        apis: Mapping[str, BatchApi],
        stored: Mapping[str, tuple[JobRow, list[str]]] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(run_id, warehouse, apis, **options)
        self.stored = dict(stored or {})
        self.stored_in = {key: job for job, (_, keys) in self.stored.items() for key in keys}
        self.waiting: dict[str, asyncio.Future[BatchResult]] = {}  # key -> its judge calls' wait
        self.answered: dict[str, BatchResult] = {}  # key -> its result, once read
        self.answers_in = False  # every answer of the run is in: submit what is held
        self.closed = False  # run() returned: nothing more is submitted
        self.wake = asyncio.Event()

    def asks(self, spec: ModelSpec) -> bool:
        """Whether this judge model's requests go in batch jobs."""
        return spec.id in self.apis

    def ask(self, key: str, request: Request, spec: ModelSpec) -> asyncio.Future[BatchResult]:
        """The result of a judge request, held for a batch job (once: two cells asking the
        same request share it; a request in a job a resumed run stored is not held again)."""
        future = self.waiting.get(key)
        if future is not None:
            return future
        future = asyncio.get_running_loop().create_future()
        done = self.answered.get(key)
        if done is None and self.closed:  # never held while the feed ran: no job will hold it
            done = BatchResult(key, error=self._missing(key, "batch_missing"))
        if done is not None:
            future.set_result(done)
            return future
        self.waiting[key] = future
        self.request_of[key] = request
        api = self.apis[spec.id]
        job_id = self.stored_in.get(key)
        if job_id is not None:  # a resumed run's job holds it: wait on that job
            if job_id not in self.jobs:
                row, keys = self.stored.pop(job_id)
                self.jobs[job_id] = OpenJob(row, api, spec, list(keys))
                self.all_jobs.append(row)
                self.wake.set()
            return future
        submission = self.submissions.setdefault(spec.id, Submission(spec, api))
        item = BatchItem(key, request)
        line = api.line(item)
        size = len(json.dumps(line, separators=(",", ":")).encode()) + 1
        submission.items.append((item, line, size))
        if self._full(submission) or self.answers_in:
            self.wake.set()
        return future

    def all_answers_in(self) -> None:
        """No answer is coming any more: what is held is submitted."""
        self.answers_in = True
        self.wake.set()

    def stop(self) -> None:
        super().stop()
        self.wake.set()

    @staticmethod
    def _full(submission: Submission) -> bool:
        limits = submission.api.limits
        size = sum(entry[2] for entry in submission.items)
        return len(submission.items) >= limits.max_requests or size >= limits.max_bytes

    async def run(self) -> None:
        """Submit the held requests as jobs fill (all of them once the answers are in), poll
        the open jobs, until every judge request has its result (or the run stops)."""
        try:
            await self._run()
        finally:
            self.closed = True

    async def _run(self) -> None:
        wait = self.first_wait
        while not self.stopped:
            due = [
                model
                for model, submission in self.submissions.items()
                if self.answers_in or self._full(submission)
            ]
            for model in due:
                if self.stopped:
                    return
                await self._submit(self.submissions.pop(model))
                wait = self.first_wait
            if self.answers_in and not (self.waiting or self.jobs or self.submissions):
                return
            if not self.jobs:
                self.wake.clear()
                await self.wake.wait()
                continue
            await self._round(wait, read=True)
            wait = next_wait(wait)

    def _deliver(self, key: str, result: BatchResult) -> None:
        self.request_of.pop(key, None)
        self.answered[key] = result
        future = self.waiting.pop(key, None)
        if future is not None and not future.done():
            future.set_result(result)
