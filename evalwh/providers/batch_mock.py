"""The mock provider's batch API: jobs kept as JSON files, so a run killed after submitting
can be resumed by another process and tests can count what was submitted.

Each job is ``<batch_dir>/<job id>.json`` holding its lines (one per request: the custom id,
the case, the messages and the answer the mock gives live, computed when the line is made)
and how often it was polled. ``batch_dir`` (a model option) defaults to
``evalwh-mock-batches`` under the system temp folder. The script under ``mock.batch``::

    mock:
      batch:
        polls: 3            # a job ends at its 3rd poll (default 1)
        errored: [q2]       # these cases' requests come back as errors ...
        expired: [q3]       # ... or are never run (the job ends ``expired``)
        max_requests: 100   # limits of one job (default 50,000 requests, 200 MB)

A scripted error or expiry hits a request only the first time it is submitted to that
folder: resubmitted (``--retry-errors``), it is answered, as a real provider's retry would be.
"""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from evalwh.providers.base import Completion, ProviderError, Request
from evalwh.providers.batching import BatchItem, BatchJob, BatchLimits, BatchResult

DEFAULT_MAX_REQUESTS = 50_000
DEFAULT_MAX_BYTES = 200 * 1024 * 1024
JOB_PREFIX = "mockbatch_"


def default_batch_dir() -> Path:
    return Path(tempfile.gettempdir()) / "evalwh-mock-batches"


def batch_dir_of(options: dict[str, Any]) -> Path:
    """The folder a mock model keeps its jobs in (its ``batch_dir`` option, or the default)."""
    given = options.get("batch_dir")
    return Path(str(given)) if given else default_batch_dir()


def submitted_jobs(folder: Path) -> list[dict[str, Any]]:
    """Every job submitted to ``folder``, oldest first (what a test counts)."""
    if not folder.is_dir():
        return []
    jobs = [json.loads(p.read_text("utf-8")) for p in folder.glob(f"{JOB_PREFIX}*.json")]
    return sorted(jobs, key=lambda j: (j["seq"], j["id"]))


class MockBatchApi:
    """:class:`evalwh.providers.batching.BatchApi` for the mock provider (module docstring)."""

    def __init__(self, provider: Any) -> None:
        self.provider = provider
        script = (provider.spec.options.get("mock") or {}).get("batch") or {}
        self.polls = int(script.get("polls", 1))
        self.errored = {str(c) for c in script.get("errored") or ()}
        self.expired = {str(c) for c in script.get("expired") or ()}
        self.limits = BatchLimits(
            int(script.get("max_requests", DEFAULT_MAX_REQUESTS)),
            int(script.get("max_bytes", DEFAULT_MAX_BYTES)),
        )
        self.folder = batch_dir_of(provider.spec.options)

    def line(self, item: BatchItem) -> dict[str, Any]:
        request = item.request
        line: dict[str, Any] = {
            "custom_id": item.custom_id,
            "case": request.case.id,
            "body": {"model": request.model.model, "messages": request.messages},
        }
        try:
            completion = self.provider.answer(request)
        except ProviderError as exc:
            line["error"] = str(exc)
        else:
            line["answer"] = {
                "text": completion.text,
                "input_tokens": completion.input_tokens,
                "output_tokens": completion.output_tokens,
            }
        return line

    def _path(self, job_id: str) -> Path:
        if not job_id.startswith(JOB_PREFIX) or not job_id[len(JOB_PREFIX) :].isalnum():
            raise ProviderError(f"mock: no batch job {job_id!r}", kind="http", status=404)
        return self.folder / f"{job_id}.json"

    def _load(self, job_id: str) -> dict[str, Any]:
        path = self._path(job_id)
        if not path.is_file():
            raise ProviderError(f"mock: no batch job {job_id!r}", kind="http", status=404)
        job: dict[str, Any] = json.loads(path.read_text("utf-8"))
        return job

    def _save(self, job: dict[str, Any]) -> None:
        path = self._path(job["id"])
        part = path.with_suffix(".part")
        part.write_text(json.dumps(job), "utf-8")
        os.replace(part, path)  # a reader never sees half a job

    async def submit(self, lines: list[dict[str, Any]], *, label: str) -> BatchJob:
        self.folder.mkdir(parents=True, exist_ok=True)
        earlier = submitted_jobs(self.folder)
        seen = {line["custom_id"] for job in earlier for line in job["lines"]}
        marked = [
            {**line, "first": line["custom_id"] not in seen} for line in lines
        ]  # a scripted failure hits only a request's first submission
        job = {
            "id": f"{JOB_PREFIX}{uuid.uuid4().hex[:16]}",
            "seq": len(earlier),
            "label": label,
            "lines": marked,
            "polls": 0,
            "cancelled": False,
        }
        self._save(job)
        return self._state(job)

    def _unrun(self, line: dict[str, Any]) -> bool:
        return bool(line["first"]) and line["case"] in self.expired

    def _state(self, job: dict[str, Any]) -> BatchJob:
        lines = job["lines"]
        total = len(lines)
        ended = job["polls"] >= self.polls
        if job["cancelled"]:  # asked before it ended
            return BatchJob(
                job["id"], "cancelled", "cancelled", {"total": total, "cancelled": total}
            )
        if not ended:
            return BatchJob(
                job["id"], "running", "in_progress", {"total": total, "processing": total}
            )
        expired = sum(1 for line in lines if self._unrun(line))
        errored = sum(
            1
            for line in lines
            if not self._unrun(line)
            and ("error" in line or (line["first"] and line["case"] in self.errored))
        )
        counts = {
            "total": total,
            "succeeded": total - expired - errored,
            "errored": errored,
            "expired": expired,
        }
        state = "expired" if expired else "ended"
        return BatchJob(job["id"], state, state, counts)

    async def poll(self, job_id: str) -> BatchJob:
        job = self._load(job_id)
        job["polls"] += 1
        self._save(job)
        return self._state(job)

    async def results(
        self, job: BatchJob, requests: Mapping[str, Request] | None = None
    ) -> AsyncIterator[BatchResult]:
        stored = self._load(job.id)
        if self._state(stored).state == "cancelled":
            return
        for line in stored["lines"]:
            custom_id = line["custom_id"]
            if self._unrun(line):
                continue  # never run: the job has no result for it
            if line["first"] and line["case"] in self.errored:
                yield BatchResult(
                    custom_id,
                    error=ProviderError("mock: scripted batch error", kind="provider"),
                )
            elif "error" in line:
                yield BatchResult(custom_id, error=ProviderError(line["error"], kind="provider"))
            else:
                answer = line["answer"]
                completion = Completion(
                    answer["text"], answer["input_tokens"], answer["output_tokens"]
                )
                yield BatchResult(custom_id, completion=completion)

    async def cancel(self, job_id: str) -> BatchJob:
        job = self._load(job_id)
        if job["polls"] < self.polls:
            job["cancelled"] = True
            self._save(job)
        return self._state(job)
