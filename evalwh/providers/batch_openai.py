"""OpenAI's Batch API for ``provider: openai`` (evalwh.providers.batching's BatchApi).

The wire format, from OpenAI's API reference (Files, Batch) and the official SDK's types
(openai-python ``types/batch.py``, ``batch_create_params.py``, ``file_object.py``):

- A request is one JSONL line ``{"custom_id", "method": "POST", "url":
  "/v1/chat/completions", "body"}``; ``body`` is exactly the live request's body
  (``OpenAIProvider.build_body``), so a batch answer is the answer the live call would get.
- :meth:`OpenAIBatchApi.submit` uploads the lines as one file (``POST /files``, multipart:
  ``purpose=batch`` and ``file``, compact JSON, one request a line, ``\\n`` after each), then
  creates the job (``POST /batches`` ``{input_file_id, endpoint: /v1/chat/completions,
  completion_window: 24h, metadata: {evalwh_run: label}}``). One file holds at most 50,000
  requests and 200 MB (``LIMITS``); more is refused before anything is sent. A create that
  fails in a way another attempt may mend (a timeout, a dropped connection, a 5xx: the reply
  may be lost after OpenAI made the job) is looked up before it is given up: ``GET
  /batches?limit=100`` (newest first) lists the jobs, and one whose ``input_file_id`` is the
  file just uploaded is the job created, returned as if the reply had come (else the
  create's error is raised, as is any failure of the listing).
- :meth:`OpenAIBatchApi.poll` reads ``GET /batches/{id}``: ``status`` validating,
  in_progress, finalizing are ``running``; completed is ``ended``; cancelling, cancelled,
  expired, failed keep their names. ``request_counts`` {total, completed, failed} are the
  counts total, succeeded, errored (and ``processing`` the rest while it runs); ``extra``
  keeps the three file ids and, for a failed job, its ``errors.data`` (code, message, line).
- :meth:`OpenAIBatchApi.results` streams ``GET /files/{output_file_id}/content``, then the
  error file's. Each line is ``{id, custom_id, response: {status_code, request_id, body},
  error}``: a ``status_code`` of 200 is the chat completion ``body`` (parsed as a live
  answer), any other the error its live request would have raised (429 ``rate_limit``, 5xx
  ``server``, other 4xx ``http``, with the API's message); a line with an ``error`` object
  and no response is that error (``batch_expired`` from an expired job, as OpenAI's batch
  guide shows, and ``batch_cancelled``). A line that cannot be read is a ``bad_response``
  for the request it names (a line naming none has no request to go to: the engine finds
  that request missing). A job that expired or was cancelled may leave requests without a
  line: they are read from the job's input file and given as ``batch_expired`` or
  ``batch_cancelled``.
- :meth:`OpenAIBatchApi.cancel` is ``POST /batches/{id}/cancel``.

Batch and file ids come from the provider's replies and the warehouse: each must be a plain
id (letters, digits, ``_``, ``-``) before it is put in a path, so a reply naming
``https://elsewhere/`` or ``../`` as its output file cannot send the key to another host or
endpoint. Every error goes through the provider's redaction of its key.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Mapping
from typing import Any

from evalwh.config.secrets import sanitize
from evalwh.providers.base import ProviderError, Request, cut_answer
from evalwh.providers.batching import BatchItem, BatchJob, BatchLimits, BatchResult
from evalwh.providers.http import DETAIL_CHARS, HttpProvider, excerpt

ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
LIMITS = BatchLimits(max_requests=50_000, max_bytes=200 * 1024 * 1024)
# the job's ``status`` -> the state evalwh stores (evalwh.providers.batching.JOB_STATES)
STATES = {
    "validating": "running",
    "in_progress": "running",
    "finalizing": "running",
    "completed": "ended",
    "cancelling": "cancelling",
    "cancelled": "cancelled",
    "expired": "expired",
    "failed": "failed",
}
# a line's ``error.code`` -> the error kind stored for its request
ERROR_KINDS = {"batch_expired": "batch_expired", "batch_cancelled": "batch_cancelled"}
# what a request left without a line by a job in this state is stored as
LEFT_WITHOUT_LINE = {"expired": "batch_expired", "cancelled": "batch_cancelled"}
LISTED = 100  # jobs a lost create's reply is looked for among (the API's largest page)
METADATA_VALUE_CHARS = 512  # the API's bound on a metadata value
JOB_ERRORS_KEPT = 20  # of a failed job's ``errors.data``
PLAIN_ID = re.compile(r"[A-Za-z0-9_-]{1,200}")
CUSTOM_ID = re.compile(rb'"custom_id"\s*:\s*"((?:[^"\\]|\\.){1,200})"')


class OpenAIBatchApi:
    """One ``provider: openai`` model's batch endpoints, on the provider's own client, key
    and base URL."""

    limits = LIMITS

    def __init__(self, provider: HttpProvider) -> None:  # an OpenAIProvider
        self.provider = provider

    # ---- requests -------------------------------------------------------------------------

    def line(self, item: BatchItem) -> dict[str, Any]:
        return {
            "custom_id": item.custom_id,
            "method": "POST",
            "url": ENDPOINT,
            "body": self.provider.build_body(item.request),
        }

    async def submit(self, lines: list[dict[str, Any]], *, label: str) -> BatchJob:
        data = input_file(lines)
        if len(lines) > self.limits.max_requests or len(data) > self.limits.max_bytes:
            raise self._fail(
                f"a batch of {len(lines):,} requests and {len(data):,} bytes is over the Batch "
                f"API's {self.limits.max_requests:,} requests or {self.limits.max_bytes:,} bytes",
                kind="http",
            )
        name = f"evalwh-{re.sub(r'[^A-Za-z0-9_-]', '_', label)[:100]}.jsonl"
        files = [("purpose", (None, "batch")), ("file", (name, data, "application/jsonl"))]
        uploaded = await self.provider.send("POST", "files", files=files)
        file_id = self._id(uploaded, "id", "the uploaded file")
        try:
            created = await self.provider.send(
                "POST",
                "batches",
                json={
                    "input_file_id": file_id,
                    "endpoint": ENDPOINT,
                    "completion_window": COMPLETION_WINDOW,
                    "metadata": {"evalwh_run": label[:METADATA_VALUE_CHARS]},
                },
            )
        except ProviderError as exc:
            found = await self._created_from(file_id) if exc.retryable else None
            if found is None:
                raise
            return found
        return self._job(created)

    async def _created_from(self, file_id: str) -> BatchJob | None:
        """The job over the input file ``file_id`` among the newest ``LISTED`` jobs (a
        create whose reply was lost), or None (not there, or the listing failed)."""
        try:
            listed = await self.provider.send("GET", "batches", params={"limit": str(LISTED)})
        except ProviderError:
            return None
        data = listed.get("data") if isinstance(listed, dict) else None
        for batch in data if isinstance(data, list) else []:
            if isinstance(batch, dict) and batch.get("input_file_id") == file_id:
                return self._job(batch)
        return None

    async def poll(self, job_id: str) -> BatchJob:
        return self._job(await self.provider.send("GET", f"batches/{self._plain(job_id)}"))

    async def cancel(self, job_id: str) -> BatchJob:
        return self._job(await self.provider.send("POST", f"batches/{self._plain(job_id)}/cancel"))

    # ---- results ----------------------------------------------------------------------------

    async def results(
        self, job: BatchJob, requests: Mapping[str, Request] | None = None
    ) -> AsyncIterator[BatchResult]:
        seen: set[str] = set()
        for key in ("output_file_id", "error_file_id"):
            file_id = job.extra.get(key)
            if not file_id:
                continue
            async for raw in self.provider.send_lines(
                "GET", f"files/{self._plain(file_id)}/content"
            ):
                result = self._result(raw, requests)
                if result is not None:
                    seen.add(result.custom_id)
                    yield result
        kind = LEFT_WITHOUT_LINE.get(job.state)
        total = job.counts.get("total")
        input_id = job.extra.get("input_file_id")
        if kind is None or not input_id or (total is not None and len(seen) >= total):
            return
        async for raw in self.provider.send_lines("GET", f"files/{self._plain(input_id)}/content"):
            _, custom_id = read_line(raw)
            if custom_id is not None and custom_id not in seen:
                seen.add(custom_id)
                message = f"batch {job.id} {job.provider_state} before this request ran"
                yield BatchResult(custom_id, error=self._fail(message, kind=kind, retryable=True))

    def _result(
        self, raw: bytes, requests: Mapping[str, Request] | None = None
    ) -> BatchResult | None:
        """One line of an output or error file; None for a line that names no request."""
        data, custom_id = read_line(raw)
        if custom_id is None:
            return None
        if data is None:
            return BatchResult(custom_id, error=self._unreadable(raw, "not a JSON object"))
        response, error = data.get("response"), data.get("error")
        if isinstance(response, dict):
            request = (requests or {}).get(custom_id)
            return self._response(custom_id, raw, response, request)
        if isinstance(error, dict):
            code = self._said(error.get("code") or "error", 80)
            kind = ERROR_KINDS.get(code, "http")
            message = self._said(error.get("message") or "no message", DETAIL_CHARS)
            failed = self._fail(f"{code}: {message}", kind=kind, retryable=kind != "http")
            return BatchResult(custom_id, error=failed)
        return BatchResult(custom_id, error=self._unreadable(raw, "neither response nor error"))

    def _response(
        self, custom_id: str, raw: bytes, response: dict[str, Any], request: Request | None
    ) -> BatchResult:
        status, body = response.get("status_code"), response.get("body")
        if not isinstance(status, int):
            return BatchResult(custom_id, error=self._unreadable(raw, "no status_code"))
        if status != 200:
            text = json.dumps(body, ensure_ascii=False) if not isinstance(body, str) else body
            return BatchResult(custom_id, error=self.provider.status_failure(status, text))
        try:
            completion = self.provider.parse_body(body, request)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            why = f"unexpected response ({type(exc).__name__}: {exc})"
            return BatchResult(custom_id, error=self._unreadable(raw, why))
        return BatchResult(
            custom_id, completion=cut_answer(completion, self.provider.max_output_bytes)
        )

    # ---- jobs -------------------------------------------------------------------------------

    def _job(self, data: Any) -> BatchJob:
        """A Batch object as a BatchJob; a reply that is not one is a ``bad_response``."""
        try:
            job_id = self._id(data, "id", "the batch")
            status = data["status"]
            state = STATES[status]
            counts = data.get("request_counts") or {}
            extra: dict[str, Any] = {
                key: self._plain(data[key])
                for key in ("input_file_id", "output_file_id", "error_file_id")
                if data.get(key)
            }
            errors = (data.get("errors") or {}).get("data") or []
            if errors:
                extra["errors"] = [
                    {
                        key: self._said(e[key], DETAIL_CHARS) if isinstance(e[key], str) else e[key]
                        for key in ("code", "message", "line", "param")
                        if e.get(key) is not None
                    }
                    for e in errors[:JOB_ERRORS_KEPT]
                ]
            shown = {"total": "total", "completed": "succeeded", "failed": "errored"}
            job_counts = {
                ours: int(counts[theirs]) for theirs, ours in shown.items() if theirs in counts
            }
        except ProviderError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raw = json.dumps(data, ensure_ascii=False) if not isinstance(data, str) else data
            raise self._unreadable(
                raw.encode(), f"not a batch ({type(exc).__name__}: {exc})"
            ) from None
        if state in ("running", "cancelling") and "total" in job_counts:
            done = job_counts.get("succeeded", 0) + job_counts.get("errored", 0)
            job_counts["processing"] = max(0, job_counts["total"] - done)
        return BatchJob(job_id, state, status, job_counts, extra)

    def _id(self, data: Any, key: str, what: str) -> str:
        if not isinstance(data, dict) or not isinstance(data.get(key), str):
            shown = json.dumps(data, ensure_ascii=False) if not isinstance(data, str) else data
            raise self._unreadable(shown.encode(), f"{what} has no {key}")
        return self._plain(data[key])

    def _plain(self, value: Any) -> str:
        """``value`` if it is a plain id, safe in a path under the API's root; else an error
        (a file id ``https://elsewhere/x`` would take the key to another host)."""
        if isinstance(value, str) and PLAIN_ID.fullmatch(value):
            return value
        shown = self._said(value, 80)
        raise self._fail(f"{shown!r} is not a batch or file id", kind="bad_response")

    def _said(self, value: Any, limit: int) -> str:
        """Text a reply gave, to be stored or shown: the key redacted, then cut."""
        return sanitize(str(value), limit, extra=self.provider._secrets)

    def _unreadable(self, raw: bytes, why: str) -> ProviderError:
        text = raw.decode("utf-8", errors="replace")
        return self._fail(f"{why}: {excerpt(text)}", kind="bad_response", status=200)

    def _fail(
        self, message: str, *, kind: str, retryable: bool = False, status: int | None = None
    ) -> ProviderError:
        return self.provider._fail(message, retryable=retryable, kind=kind, status=status)


def input_file(lines: list[dict[str, Any]]) -> bytes:
    """The JSONL file of a job: each line compact JSON, ``\\n`` after each."""
    return b"".join(
        json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        for line in lines
    )


def read_line(raw: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """A results line's JSON object (None if it is not one) and the ``custom_id`` it names,
    read even from a line that is not JSON (None if it names none)."""
    try:
        data = json.loads(raw)
    except ValueError:
        data = None
    if isinstance(data, dict):
        value = data.get("custom_id")
        return data, value if isinstance(value, str) else None
    found = CUSTOM_ID.search(raw)
    if found is None:
        return None, None
    try:
        value = json.loads(b'"' + found.group(1) + b'"')
    except ValueError:
        return None, None
    return None, value if isinstance(value, str) else None
