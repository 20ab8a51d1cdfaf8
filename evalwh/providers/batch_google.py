"""The Gemini API's batch mode as a :class:`~evalwh.providers.batching.BatchApi`
(``GoogleProvider.batch_api()``), on the live provider's client, key (``x-goog-api-key``),
headers and ``base_url``.

The wire format, from the API reference ("Batch Mode": ``models.batchGenerateContent``,
``batches.get``, ``batches.cancel``) and the official google-genai SDK
(googleapis/python-genai ``google/genai/batches.py``: ``_CreateBatchJobParameters_to_mldev``,
``_InlinedRequest_to_mldev``, ``_BatchJob_from_mldev``, ``_InlinedResponse_from_mldev``;
``types.py``: ``BatchJob``, ``InlinedResponse``, ``JobError``, ``JobState``):

- create: ``POST /v1beta/models/{model}:batchGenerateContent`` with ``{"batch":
  {"displayName": <run id>, "inputConfig": {"requests": {"requests": [{"request":
  <GenerateContentRequest>, "metadata": {"key": <custom_id>}}]}}}}``, each request the body a
  live ``:generateContent`` would send (``build_body``). Inline requests are limited to
  20 MB a batch (:data:`LIMITS` keeps the lines under it, room left for the wrapper); the
  engine splits a larger group into several jobs.
- The reply, and ``GET /v1beta/batches/{id}``'s: a long-running Operation, ``{"name":
  "batches/...", "metadata": {"@type": "...GenerateContentBatch", "displayName", "model",
  "state", "batchStats", "createTime", "updateTime", "endTime", "output"}, "done",
  "response", "error"}``. ``state`` is ``BATCH_STATE_PENDING``, ``RUNNING``, ``SUCCEEDED``,
  ``FAILED``, ``CANCELLED``, ``EXPIRED`` (the SDK shows them as ``JOB_STATE_...``; both are
  read). ``batchStats`` counts ``requestCount``, ``successfulRequestCount``,
  ``failedRequestCount``, ``pendingRequestCount``, int64s that JSON writes as strings.
- The output (``metadata.output``, else the Operation's ``response``): ``{"inlinedResponses":
  {"inlinedResponses": [{"metadata": {"key"}, "response": <GenerateContentResponse>} or
  {"metadata": {"key"}, "error": {"code", "message"}}]}}``, or ``{"responsesFile":
  "files/..."}``, read from ``GET /download/v1beta/files/...:download?alt=media``: JSONL,
  ``{"key", "response"}`` or ``{"key", "error"}`` a line.
- cancel: ``POST /v1beta/batches/{id}:cancel`` (an empty reply); the job is polled after.

What evalwh makes of it:

- ``metadata.key`` is the request's cache key (any string: no mapping needed).
- State: pending, running, queued, paused and unspecified are ``running``; ``SUCCEEDED``
  ``ended``; ``CANCELLING`` ``cancelling``; ``CANCELLED`` ``cancelled``; ``EXPIRED``
  ``expired`` (the guide: an expired job has no results; what output it has is read);
  ``FAILED`` (or a done Operation with an ``error``) ``failed``.
- A result: ``response`` parsed as a live answer (``parse_reply``); ``error`` a ProviderError
  whose kind follows its code (gRPC's, as ``google.rpc.Status`` carries it, or an HTTP
  status); an entry that is neither, or a response that cannot be read, that request's
  ``bad_response``; an entry or line with no readable key is skipped (the engine stores its
  request as ``batch_missing``, as it does the requests a cancelled or expired job never ran:
  Gemini lists no entry for them).
- A done inline job's answers come in the poll that sees it done: they are kept for
  :meth:`GoogleBatchApi.results`, which otherwise fetches the job again (another process).
  Such a reply may exceed ``max_response_bytes``: it is read up to :data:`INLINE_REPLY_BYTES`.
- A job id (``batches/...``) and a responses file (``files/...``) go into a path only when
  they have that shape.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

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

INLINE_BYTES = 20 * 1000 * 1000  # the API's limit on a batch's inline requests
# the lines may fill the inline limit but for room for the wrapper (a comma a request, the
# display name and the few keys around them)
LIMITS = BatchLimits(max_requests=100_000, max_bytes=INLINE_BYTES - 500_000)
INLINE_REPLY_BYTES = 512 * 1024 * 1024  # a done inline job's Operation, its answers inside
JOB_ID = re.compile(r"batches/[A-Za-z0-9_-]{1,200}")
FILE_NAME = re.compile(r"files/[A-Za-z0-9_-]{1,200}")
STATES = {
    "PENDING": "running",
    "QUEUED": "running",
    "RUNNING": "running",
    "PAUSED": "running",
    "UNSPECIFIED": "running",
    "SUCCEEDED": "ended",
    "CANCELLING": "cancelling",
    "CANCELLED": "cancelled",
    "EXPIRED": "expired",
    "FAILED": "failed",
}
# an error's code (google.rpc.Code) -> the HTTP status the API maps it to, which decides the
# error's kind and whether a retry may help (HttpProvider's table); a code of 400 or more is
# an HTTP status already. CANCELLED (1) is the request's job cancelled before it ran.
RPC_STATUSES = {3: 400, 4: 504, 5: 404, 7: 403, 8: 429, 9: 400, 10: 409, 13: 500, 14: 503, 16: 401}


class GoogleBatchApi:
    """One Gemini model's batch mode (see the module docstring)."""

    limits = LIMITS

    def __init__(self, provider: HttpProvider, model: str) -> None:
        self.provider = provider
        self.model = model  # without its ``models/`` prefix
        self._answers: dict[str, list[Any]] = {}  # a done job's inline answers, by job id

    def line(self, item: BatchItem) -> dict[str, Any]:
        body = self.provider.build_body(item.request)
        return {"request": body, "metadata": {"key": item.custom_id}}

    async def submit(self, lines: list[dict[str, Any]], *, label: str) -> BatchJob:
        batch = {"displayName": label, "inputConfig": {"requests": {"requests": lines}}}
        path = f"v1beta/models/{self.model}:batchGenerateContent"
        return self._job(await self.provider.send("POST", path, json={"batch": batch}))

    async def poll(self, job_id: str) -> BatchJob:
        path = "v1beta/" + checked_name(self.provider, job_id, JOB_ID, "batch name")
        return self._job(await self.provider.send("GET", path, limit=INLINE_REPLY_BYTES))

    async def cancel(self, job_id: str) -> BatchJob:
        path = "v1beta/" + checked_name(self.provider, job_id, JOB_ID, "batch name")
        await self.provider.send("POST", path + ":cancel")
        return await self.poll(job_id)

    async def results(
        self, job: BatchJob, requests: Mapping[str, Request] | None = None
    ) -> AsyncIterator[BatchResult]:
        entries = self._answers.pop(job.id, None)
        if entries is None and "responses_file" not in job.extra:  # polled by another process
            job = await self.poll(job.id)
            entries = self._answers.pop(job.id, None)
        for entry in entries or ():
            result = self._entry(entry, requests or {})
            if result is not None:
                yield result
        name = job.extra.get("responses_file")
        if entries is None and isinstance(name, str):
            path = f"download/v1beta/{checked_name(self.provider, name, FILE_NAME, 'file')}"
            async for raw in self.provider.send_lines(
                "GET", path + ":download", params={"alt": "media"}
            ):
                key, data = read_line(raw, "key")
                if key is None:
                    continue
                if data is None:
                    yield unreadable(self.provider, key, "line is not JSON", raw)
                    continue
                yield self._outcome(key, data, raw, (requests or {}).get(key))

    # ---- reading replies ---------------------------------------------------------------------

    def _job(self, data: Any) -> BatchJob:
        if not isinstance(data, dict):
            data = {}
        job_id = checked_name(self.provider, data.get("name"), JOB_ID, "batch name")
        meta = data.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        word = str(meta.get("state") or "")
        state = STATES.get(re.sub(r"^(BATCH|JOB)_STATE_", "", word), "running")
        error = data.get("error")
        if isinstance(error, dict) and data.get("done"):
            state = "failed"
        stats = meta.get("batchStats")
        stats = stats if isinstance(stats, dict) else {}
        counts = {
            "total": count(stats.get("requestCount")),
            "succeeded": count(stats.get("successfulRequestCount")),
            "errored": count(stats.get("failedRequestCount")),
            "processing": count(stats.get("pendingRequestCount")),
        }
        extra: dict[str, Any] = {
            k: meta[k]
            for k in ("displayName", "createTime", "endTime")
            if isinstance(meta.get(k), str)
        }
        if isinstance(error, dict):
            extra["error"] = self.provider.error_detail({"error": error}) or "no error message"
        output = meta.get("output") or data.get("response")
        if isinstance(output, dict):
            if isinstance(output.get("responsesFile"), str):
                extra["responses_file"] = output["responsesFile"]
            inlined = output.get("inlinedResponses")
            entries = inlined.get("inlinedResponses") if isinstance(inlined, dict) else None
            if isinstance(entries, list):
                self._answers[job_id] = entries
        return BatchJob(job_id, state, word, counts, extra)

    def _entry(self, entry: Any, requests: Mapping[str, Request]) -> BatchResult | None:
        meta = entry.get("metadata") if isinstance(entry, dict) else None
        key = meta.get("key") if isinstance(meta, dict) else None
        if not isinstance(key, str) or not key:
            return None
        return self._outcome(key, entry, None, requests.get(key))

    def _outcome(
        self, key: str, data: dict[str, Any], raw: bytes | None, request: Request | None
    ) -> BatchResult:
        error = data.get("error")
        if isinstance(error, dict):
            code = error.get("code")
            if code == 1:
                return failed(
                    self.provider,
                    key,
                    "the batch was cancelled before this request ran",
                    kind="batch_cancelled",
                    retryable=True,
                )
            number = code if isinstance(code, int) else -1
            status = number if number >= 400 else RPC_STATUSES.get(number)
            return refused(self.provider, key, {"error": error}, status)
        if isinstance(data.get("response"), dict):
            return answer(self.provider, key, data["response"], request)
        import json

        shown = raw if raw is not None else json.dumps(data, ensure_ascii=False)
        return unreadable(self.provider, key, "has neither a response nor an error", shown)
