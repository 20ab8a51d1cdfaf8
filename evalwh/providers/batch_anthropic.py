"""Anthropic's Message Batches as a :class:`~evalwh.providers.batching.BatchApi`
(``AnthropicProvider.batch_api()``), on the live provider's client, key, headers
(``x-api-key``, ``anthropic-version``, a config's ``headers:``) and ``base_url``.

The wire format, from the API reference ("Message Batches") and the official SDK's types
(anthropic-sdk-python ``src/anthropic/types/messages/batch_create_params.py``,
``message_batch*.py``):

- create: ``POST /v1/messages/batches`` with ``{"requests": [{"custom_id", "params"}]}``,
  ``params`` the body a live ``POST /v1/messages`` would send (``build_body``). At most
  100,000 requests or 256 MB a batch (:data:`LIMITS`). The reply is a ``MessageBatch``.
- retrieve: ``GET /v1/messages/batches/{id}``: a ``MessageBatch`` with ``id``
  (``msgbatch_...``), ``processing_status`` (``in_progress``, ``canceling``, ``ended``),
  ``request_counts`` (``processing``, ``succeeded``, ``errored``, ``canceled``,
  ``expired``: all but ``processing`` stay 0 until the batch ends), ``results_url`` (once
  ended), ``created_at``, ``expires_at`` (24 hours after creation), ``ended_at``,
  ``cancel_initiated_at``.
- results: ``GET results_url``, JSONL in any order, a ``MessageBatchIndividualResponse`` a
  line: ``{"custom_id", "result": {"type": "succeeded", "message": <Message>}}``, or
  ``{"type": "errored", "error": {"type": "error", "error": {"type", "message"}}}``, or
  ``{"type": "canceled"}``, or ``{"type": "expired"}``.
- cancel: ``POST /v1/messages/batches/{id}/cancel``: the ``MessageBatch``, now
  ``canceling``.

What evalwh makes of it:

- ``custom_id`` must match ``^[a-zA-Z0-9_-]{1,64}$``. evalwh's request hash (64 lower-case
  hex digits) fits as it is, so a result's ``custom_id`` is the request's cache key with no
  table to map it back; :meth:`AnthropicBatchApi.line` refuses any other id (ValueError).
- State: ``in_progress`` is ``running``, ``canceling`` ``cancelling``; ``ended`` is
  ``cancelled`` when a cancel was asked (``cancel_initiated_at``), ``expired`` when requests
  expired, else ``ended``. All three can be read.
- A result: ``succeeded`` is parsed as a live answer (``parse_reply``: the same text, tokens
  and finish reason); ``errored`` a ProviderError from the error object (its ``type`` gives
  the kind and whether a retry may help, as the live statuses do); ``canceled``
  ``batch_cancelled``, ``expired`` ``batch_expired``; a line that is not a result is that
  request's ``bad_response`` (a line with no readable ``custom_id`` is skipped: the engine
  stores its request as ``batch_missing``).
- Results are read from ``results_url`` only when it is on the API's own origin (scheme,
  host, port of ``base_url``); any other URL is ignored for the documented
  ``/v1/messages/batches/{id}/results`` under ``base_url``, so a reply naming another host
  never receives the key. A job id goes into a path only when it has the shape of one.
- JSON by schema is a forced tool call whose input is the answer, so reading it needs the
  request: :meth:`~AnthropicBatchApi.results` parses each line with the request the engine
  gives for its ``custom_id`` (rebuilt from the plan by a resumed run; a line whose request
  is not given is parsed as a plain answer).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from evalwh.providers.base import Request
from evalwh.providers.batch_wire import (
    answer,
    checked_name,
    count,
    failed,
    read_line,
    refused,
    unreadable,
)
from evalwh.providers.batching import BatchItem, BatchJob, BatchLimits, BatchResult

if TYPE_CHECKING:
    from evalwh.providers.http import HttpProvider

# 100,000 requests or 256 MB a batch; the lines may fill it but for room for the wrapper (a
# comma a request and the few bytes around them)
LIMITS = BatchLimits(max_requests=100_000, max_bytes=256 * 1000 * 1000 - 500_000)
BATCHES = "v1/messages/batches"
CUSTOM_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
JOB_ID = re.compile(r"[A-Za-z0-9_-]{1,200}")
# an errored result's error.type -> the HTTP status the live API answers it with, which
# decides the error's kind and whether a retry may help (HttpProvider's table)
ERROR_STATUSES = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


class AnthropicBatchApi:
    """One Anthropic model's Message Batches (see the module docstring)."""

    limits = LIMITS

    def __init__(self, provider: HttpProvider) -> None:
        self.provider = provider

    def line(self, item: BatchItem) -> dict[str, Any]:
        if not CUSTOM_ID.fullmatch(item.custom_id):
            raise ValueError(
                f"custom_id {item.custom_id!r} is not 1-64 letters, digits, '_' or '-' "
                "(Anthropic's Message Batches refuse it)"
            )
        return {"custom_id": item.custom_id, "params": self.provider.build_body(item.request)}

    async def submit(self, lines: list[dict[str, Any]], *, label: str) -> BatchJob:
        # a Message Batch keeps no name or metadata: ``label`` is not sent
        return self._job(await self.provider.send("POST", BATCHES, json={"requests": lines}))

    async def poll(self, job_id: str) -> BatchJob:
        return self._job(await self.provider.send("GET", self._path(job_id)))

    async def cancel(self, job_id: str) -> BatchJob:
        return self._job(await self.provider.send("POST", self._path(job_id) + "/cancel"))

    async def results(
        self, job: BatchJob, requests: Mapping[str, Request] | None = None
    ) -> AsyncIterator[BatchResult]:
        async for raw in self.provider.send_lines("GET", self._results_url(job)):
            result = self._result(raw, requests or {})
            if result is not None:
                yield result

    # ---- reading replies ---------------------------------------------------------------------

    def _path(self, job_id: str) -> str:
        return f"{BATCHES}/{checked_name(self.provider, job_id, JOB_ID, 'Message Batch id')}"

    def _job(self, data: Any) -> BatchJob:
        if not isinstance(data, dict):
            data = {}
        job_id = checked_name(self.provider, data.get("id"), JOB_ID, "Message Batch id")
        status = data.get("processing_status")
        counts = data.get("request_counts")
        counts = counts if isinstance(counts, dict) else {}
        found = {
            "processing": count(counts.get("processing")),
            "succeeded": count(counts.get("succeeded")),
            "errored": count(counts.get("errored")),
            "cancelled": count(counts.get("canceled")),
            "expired": count(counts.get("expired")),
        }
        found["total"] = sum(found.values())
        if status == "ended":
            if data.get("cancel_initiated_at"):
                state = "cancelled"
            elif found["expired"]:
                state = "expired"
            else:
                state = "ended"
        elif status == "canceling":
            state = "cancelling"
        else:
            state = "running"
        extra = {
            k: data[k]
            for k in ("results_url", "created_at", "expires_at", "ended_at", "cancel_initiated_at")
            if isinstance(data.get(k), str)
        }
        return BatchJob(job_id, state, str(status), found, extra)

    def _results_url(self, job: BatchJob) -> str:
        """``results_url`` when it is on the API's own origin, else the documented path."""
        given = job.extra.get("results_url")
        if isinstance(given, str) and _origin(given) == _origin(self.provider.api_url("")):
            return given
        return self._path(job.id) + "/results"

    def _result(self, raw: bytes, requests: Mapping[str, Request]) -> BatchResult | None:
        custom_id, data = read_line(raw, "custom_id")
        if custom_id is None:
            return None
        result = data.get("result") if data is not None else None
        kind = result.get("type") if isinstance(result, dict) else None
        if data is None or not isinstance(result, dict):
            return unreadable(self.provider, custom_id, "line is not a result", raw)
        provider = self.provider
        if kind == "succeeded":
            return answer(provider, custom_id, result.get("message"), requests.get(custom_id))
        if kind == "errored":
            error = result.get("error")
            error = error if isinstance(error, dict) else {}
            inner = error.get("error")
            word = inner.get("type") if isinstance(inner, dict) else None
            return refused(provider, custom_id, error, ERROR_STATUSES.get(str(word)))
        if kind == "canceled":
            return failed(
                provider,
                custom_id,
                "the batch was cancelled before this request ran",
                kind="batch_cancelled",
                retryable=True,
            )
        if kind == "expired":
            return failed(
                provider,
                custom_id,
                "the batch expired (24 hours) before this request ran",
                kind="batch_expired",
                retryable=True,
            )
        return unreadable(provider, custom_id, f"of an unknown type {kind!r}", raw)


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.rpartition("@")[2].lower()
