"""The provider side of batch mode: one model's requests as a provider's batch job.

OpenAI's Batch API, Anthropic's Message Batches and Gemini's batch mode take many requests
at once, answer within 24 hours and bill about half the live price. A provider that has one
returns a :class:`BatchApi` from ``batch_api()``; the engine (evalwh.engine.batch) groups a
run's uncached requests per model, submits them, stores each job in the ``batches`` table and
reads the results back through the same parsing as live answers (``parse_body``).

Every request in a batch carries a ``custom_id`` (the request's cache key, so a job
submitted twice for the same request is recognised and nothing is paid twice). An adapter
only speaks its API's wire format; the engine owns grouping, polling with backoff, resume,
retries of failed requests, costs and storage.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from evalwh.providers.base import Completion, ProviderError, Request

# A job's state in the words evalwh stores (the provider's own word is ``provider_state``):
# ``running`` accepted and not ended (validating, queued, in progress, finalizing),
# ``ended`` its results can be read (some requests may have failed or expired),
# ``cancelling`` a cancel was asked and has not ended, ``cancelled`` it ended by a cancel
# (results of finished requests may still be read), ``expired`` the provider's window
# passed (finished requests' results may still be read), ``failed`` the whole job was
# refused (a bad input file, say): no results.
JOB_STATES = ("running", "ended", "cancelling", "cancelled", "expired", "failed")
# states whose results can be read (those of the requests that finished)
READABLE_STATES = ("ended", "cancelled", "expired")
# A request's error kinds in a batch, beside the live ones (``http``, ``server``, ...):
# ``batch_expired`` the job's window passed before it ran, ``batch_cancelled`` the job was
# cancelled before it ran, ``batch_failed`` the whole job failed, ``batch_missing`` the job
# ended without a result for it. All are retried by ``--retry-errors``.
BATCH_ERROR_KINDS = ("batch_expired", "batch_cancelled", "batch_failed", "batch_missing")


@dataclass(frozen=True)
class BatchLimits:
    """What one job of this API may hold: requests, and bytes of its serialised requests."""

    max_requests: int
    max_bytes: int


@dataclass
class BatchJob:
    """A job as the provider reports it."""

    id: str  # the provider's job id (OpenAI ``batch_...``, Anthropic ``msgbatch_...``,
    # Gemini ``batches/...``)
    state: str  # one of JOB_STATES
    provider_state: str  # the provider's own word (``in_progress``, ``JOB_STATE_RUNNING``, ...)
    # requests per outcome so far, the keys that apply of: ``total``, ``succeeded``,
    # ``errored``, ``expired``, ``cancelled``, ``processing``
    counts: dict[str, int] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # ids of files, URLs of results, ...


@dataclass
class BatchResult:
    """One request's outcome: a completion, or an error (never both)."""

    custom_id: str
    completion: Completion | None = None
    error: ProviderError | None = None


@dataclass(frozen=True)
class BatchItem:
    """One request to put in a job: its id in the job and the request."""

    custom_id: str
    request: Request


class BatchApi(Protocol):
    """One provider's batch endpoints, for one model (built by the provider's
    ``batch_api()``, on the provider's own HTTP client, key and base URL)."""

    limits: BatchLimits

    def line(self, item: BatchItem) -> dict[str, Any]:
        """The request as this API's batch carries it (a JSON object; its serialised size
        counts toward ``limits.max_bytes``)."""
        ...

    async def submit(self, lines: list[dict[str, Any]], *, label: str) -> BatchJob:
        """Create one job from ``lines`` (each made by :meth:`line`); ``label`` names it
        where the API keeps a name or metadata (the run id). Raises ProviderError."""
        ...

    async def poll(self, job_id: str) -> BatchJob:
        """The job's state and counts now. Raises ProviderError."""
        ...

    def results(
        self, job: BatchJob, requests: Mapping[str, Request] | None = None
    ) -> AsyncIterator[BatchResult]:
        """Each request's outcome of a job in READABLE_STATES, read as it streams (a results
        file is never held whole). ``requests``: the job's requests by custom_id, as the
        live ``parse_body`` reads an answer with its request (an answer asked as a forced
        tool call, say); a process that resumes a job rebuilds them from the plan, so an
        adapter never relies on having seen :meth:`line`. A result that cannot be parsed is
        a ``bad_response`` error for its request, never an exception for the job."""
        ...

    async def cancel(self, job_id: str) -> BatchJob:
        """Ask the provider to cancel the job; its state after asking."""
        ...
