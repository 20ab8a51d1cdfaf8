"""Fake batch APIs: real HTTP on 127.0.0.1, one thread a connection (the machinery of
tests/fakes/servers.py), speaking Anthropic's Message Batches (:class:`FakeAnthropicBatches`)
and the Gemini API's batch mode (:class:`FakeGeminiBatches`).

Each inner answer is what the live fake (:class:`~tests.fakes.servers.FakeLLMServer`) would
answer for the same body: the batch fakes are FakeLLMServers with other routes, and build
each answer with its ``_reply_body``, so a batch answer equals the live one, text and tokens
(``reply_text`` as the live fake's).

Time is counted in polls, never wall time: a job ends on its ``polls_to_end``-th retrieve
(``server.polls_to_end``, 1 by default: the first poll after creation sees it ended). Jobs
live in the server, not in a client: a client process may die after submitting and another
one resume from the job id.

Scripting (set before or after a job is created; read when the job ends):

- ``server.fail = {custom_id: (error, message)}``: those requests end ``errored`` (Anthropic:
  ``error`` an error type such as ``overloaded_error``; Gemini: a google.rpc code such as 8).
- ``server.expire = {custom_id, ...}``: those requests end ``expired`` (Anthropic; a Gemini
  job expires whole: ``server.expire_job = True``, and has no output then).
- ``server.garbage = {custom_id: b"..."}``: that request's results line is these bytes (a
  Gemini inline entry: their JSON, or the bytes as a string when they are not JSON).
- ``server.refuse = (status, message)``: the next create is refused (the whole batch fails).
- ``server.fail_job = message``: Gemini only, a job ends ``BATCH_STATE_FAILED`` with that
  error and no output.
- ``server.done_on_cancel = N``: a cancelled job's first N requests still succeed, the rest
  end ``canceled`` (Gemini lists no entry for them).
- ``server.output = "file"``: Gemini only, a job's answers go to a responses file (read with
  ``GET /download/v1beta/files/...:download?alt=media``) instead of inline.
- ``server.results_base``: the origin written into ``results_url`` (the server's own URL by
  default; a test points it elsewhere to check the key does not follow it).
- ``server.on_create = fn``: ``fn({custom_id: body})`` with a new job's requests once it is
  created, before it can end: a test scripts the outcomes above by what each request asks
  (a custom id is the engine's request hash, known only then).
- ``server.bodies[(method, path)] = body``: that request is answered 200 with ``body`` (a
  documented reply of tests/fixtures/wire/, a dict sent as JSON or bytes as they are),
  recorded as route ``scripted``.

Recorded: ``server.requests`` (``(route, method, path, headers, body)``, headers lower-cased)
and ``server.hits(route)``, routes ``create``, ``retrieve``, ``results``, ``cancel``.

Gemini's routes, as the API reference and the google-genai SDK (``batches.py``) have them:
``POST /v1beta/models/{model}:batchGenerateContent``, ``GET /v1beta/batches/{id}`` (a
long-running Operation whose ``metadata`` is the batch: ``state`` ``BATCH_STATE_...``,
``batchStats`` counts as int64 strings, ``output``), ``POST /v1beta/batches/{id}:cancel``
(an empty reply) and the responses file's download. Each inner request goes through the live
fake's check of ``generationConfig`` first: one the API would refuse ends with its error
(code 3, INVALID_ARGUMENT), as it would live.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.servers import (
    FakeLLMServer,
    RecordedRequest,
    ReplyText,
    _gemini_request_problem,
    reply,
)

CREATED_AT = "2024-09-24T18:37:24.100435Z"
EXPIRES_AT = "2024-09-25T18:37:24.100435Z"
ENDED_AT = "2024-09-24T18:39:03.114875Z"


@dataclass
class Recorded:
    route: str
    method: str
    path: str
    headers: dict[str, str]
    body: Any

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


@dataclass
class Job:
    """A job as the server keeps it: its requests (custom id, body) in order, its polls."""

    id: str
    requests: list[tuple[str, dict[str, Any]]]
    polls: int = 0
    cancelled: bool = False
    ended: bool = False
    results: list[bytes] = field(default_factory=list)  # the results file's lines
    entries: list[Any] = field(default_factory=list)  # Gemini's inline answers
    model: str = ""
    label: str = ""


class BatchFake(FakeLLMServer):
    """The records and job clock both fakes share, on FakeLLMServer's HTTP machinery (start,
    stop, ``url``) and its answers (``_reply_body``); subclasses route and answer."""

    api = ""  # the live fake's API whose answers this server gives

    def __init__(self, *, polls_to_end: int = 1, reply_text: ReplyText = None) -> None:
        super().__init__(reply_text=reply_text)
        self.polls_to_end = polls_to_end
        self.fail: dict[str, tuple[Any, str]] = {}
        self.expire: set[str] = set()
        self.garbage: dict[str, bytes] = {}
        self.refuse: tuple[int, str] | None = None
        self.fail_job: str | None = None
        self.expire_job = False
        self.output = "inline"
        self.done_on_cancel = 0
        self.results_base: str | None = None
        self.bodies: dict[tuple[str, str], Any] = {}
        self.jobs: dict[str, Job] = {}
        self.on_create: Callable[[dict[str, Any]], None] | None = None
        self._calls: list[Recorded] = []

    @property
    def requests(self) -> list[Recorded]:  # type: ignore[override]
        with self._lock:
            return list(self._calls)

    def hits(self, route: str) -> int:
        """Requests to ``route`` so far."""
        return sum(1 for r in self.requests if r.route == route)

    # -- handling

    def _handle(self, handler: Any) -> None:
        raw = handler.read_body()
        path = handler.path
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in handler.headers.items()}
        if (handler.command, path) in self.bodies:
            route, status, payload = "scripted", 200, self.bodies[(handler.command, path)]
        else:
            route, status, payload = self.route(handler.command, path, body)
        with self._lock:
            self._calls.append(Recorded(route, handler.command, path, headers, body))
        if isinstance(payload, bytes):
            handler.send(status, payload, {"Content-Type": "application/binary"})
        else:
            handler.send(status, json.dumps(payload).encode(), {})

    def route(self, method: str, path: str, body: Any) -> tuple[str, int, Any]:
        raise NotImplementedError

    def answer(self, custom_id: str, body: dict[str, Any], path: str) -> dict[str, Any]:
        """The live fake's answer to ``body``."""
        recorded = RecordedRequest(
            index=0, method="POST", path=path, headers={}, raw=b"", body=body, api=self.api
        )
        return self._reply_body(self.api, recorded, reply())

    def _poll(self, job: Job) -> None:
        """Count a retrieve; the job ends on its ``polls_to_end``-th."""
        with self._lock:
            job.polls += 1
            if not job.ended and (job.cancelled or job.polls >= self.polls_to_end):
                job.ended = True
                self.end(job)

    def created(self, job: Job) -> None:
        if self.on_create is not None:
            self.on_create(dict(job.requests))

    def end(self, job: Job) -> None:
        raise NotImplementedError

    def outcome(self, job: Job, index: int, custom_id: str) -> str:
        """What became of a request: ``succeeded``, ``errored``, ``expired``, ``canceled``."""
        if job.cancelled and index >= self.done_on_cancel:
            return "canceled"
        if custom_id in self.expire:
            return "expired"
        if custom_id in self.fail:
            return "errored"
        return "succeeded"


class FakeAnthropicBatches(BatchFake):
    """Message Batches (``/v1/messages/batches``) as the API reference documents them; the
    module docstring says how to script it. ``server.url`` is the provider's ``base_url``."""

    api = "anthropic"
    PREFIX = "/v1/messages/batches"

    def route(self, method: str, path: str, body: Any) -> tuple[str, int, Any]:
        if path == self.PREFIX and method == "POST":
            return "create", *self._create(body)
        rest = path[len(self.PREFIX) + 1 :] if path.startswith(self.PREFIX + "/") else ""
        job_id, _, action = rest.partition("/")
        job = self.jobs.get(job_id)
        if job is None:
            return "unknown", 404, _error("not_found_error", f"no route for {method} {path}")
        if method == "GET" and action == "":
            self._poll(job)
            return "retrieve", 200, self.batch(job)
        if method == "POST" and action == "cancel":
            with self._lock:
                job.cancelled = True
            return "cancel", 200, self.batch(job)
        if method == "GET" and action == "results" and job.ended:
            return "results", 200, b"".join(line + b"\n" for line in job.results)
        return "unknown", 404, _error("not_found_error", f"no route for {method} {path}")

    def _create(self, body: Any) -> tuple[int, Any]:
        if self.refuse is not None:
            (status, message), self.refuse = self.refuse, None
            return status, _error("invalid_request_error", message)
        requests = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(requests, list) or not requests:
            return 400, _error("invalid_request_error", "requests: Field required")
        seen: set[str] = set()
        for request in requests:
            custom_id = request.get("custom_id") if isinstance(request, dict) else None
            if not isinstance(custom_id, str) or custom_id in seen:
                return 400, _error("invalid_request_error", "custom_id must be unique")
            seen.add(custom_id)
        with self._lock:
            job_id = f"msgbatch_{len(self.jobs):024d}"
            self.jobs[job_id] = Job(job_id, [(r["custom_id"], r["params"]) for r in requests])
            job = self.jobs[job_id]
        self.created(job)
        return 200, self.batch(job)

    def end(self, job: Job) -> None:
        for index, (custom_id, params) in enumerate(job.requests):
            if custom_id in self.garbage:
                job.results.append(self.garbage[custom_id])
                continue
            kind = self.outcome(job, index, custom_id)
            result: dict[str, Any] = {"type": kind}
            if kind == "succeeded":
                result["message"] = self.answer(custom_id, params, "/v1/messages")
            elif kind == "errored":
                result["error"] = _error(*self.fail[custom_id])
            line = {"custom_id": custom_id, "result": result}
            job.results.append(json.dumps(line).encode())

    def batch(self, job: Job) -> dict[str, Any]:
        """The job as a ``MessageBatch``."""
        counts = dict.fromkeys(("processing", "succeeded", "errored", "canceled", "expired"), 0)
        if job.ended:
            for index, (custom_id, _) in enumerate(job.requests):
                counts[self.outcome(job, index, custom_id)] += 1
        else:
            counts["processing"] = len(job.requests)
        base = self.results_base or self.url
        status = "ended" if job.ended else "canceling" if job.cancelled else "in_progress"
        return {
            "id": job.id,
            "type": "message_batch",
            "processing_status": status,
            "request_counts": counts,
            "ended_at": ENDED_AT if job.ended else None,
            "created_at": CREATED_AT,
            "expires_at": EXPIRES_AT,
            "archived_at": None,
            "cancel_initiated_at": CREATED_AT if job.cancelled else None,
            "results_url": f"{base}{self.PREFIX}/{job.id}/results" if job.ended else None,
        }


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


GEMINI_BATCH = "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch"
GEMINI_OUTPUT = "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput"
GEMINI_CREATE = re.compile(r"/v1beta/models/([^/:]+):batchGenerateContent")
GEMINI_JOB = re.compile(r"/v1beta/batches/([A-Za-z0-9_-]+)(:cancel)?")
GEMINI_FILE = re.compile(r"/download/v1beta/files/([A-Za-z0-9_-]+):download\?alt=media")


class FakeGeminiBatches(BatchFake):
    """The Gemini API's batch mode, inline requests in, inline answers (or a responses file)
    out; the module docstring says how to script it. ``server.url`` is the google provider's
    ``base_url``."""

    api = "google"

    def route(self, method: str, path: str, body: Any) -> tuple[str, int, Any]:
        if (found := GEMINI_CREATE.fullmatch(path)) and method == "POST":
            return "create", *self._create(found.group(1), body)
        if (found := GEMINI_FILE.fullmatch(path)) and method == "GET":
            job = self.jobs.get(found.group(1))
            if job is not None and job.ended and self.output == "file":
                return "results", 200, b"".join(line + b"\n" for line in job.results)
        found = GEMINI_JOB.fullmatch(path)
        job = self.jobs.get(found.group(1)) if found else None
        if found and job is not None and method == "GET" and not found.group(2):
            self._poll(job)
            return "retrieve", 200, self.operation(job)
        if found and job is not None and method == "POST" and found.group(2):
            with self._lock:
                job.cancelled = True
            return "cancel", 200, {}
        return "unknown", 404, _gemini_error(404, f"no route for {method} {path}", "NOT_FOUND")

    def _create(self, model: str, body: Any) -> tuple[int, Any]:
        if self.refuse is not None:
            (status, message), self.refuse = self.refuse, None
            return status, _gemini_error(status, message, "INVALID_ARGUMENT")
        batch = body.get("batch") if isinstance(body, dict) else None
        config = batch.get("inputConfig") if isinstance(batch, dict) else None
        holder = config.get("requests") if isinstance(config, dict) else None
        requests = holder.get("requests") if isinstance(holder, dict) else None
        if not isinstance(batch, dict) or not batch.get("displayName"):
            return 400, _gemini_error(400, "batch.display_name is required", "INVALID_ARGUMENT")
        if not isinstance(requests, list) or not all(
            isinstance(r, dict) and isinstance(r.get("request"), dict) for r in requests
        ):
            return 400, _gemini_error(400, "batch.input_config is required", "INVALID_ARGUMENT")
        with self._lock:
            name = f"batch{len(self.jobs):020d}"
            keys = [str((r.get("metadata") or {}).get("key", "")) for r in requests]
            job = Job(name, [(k, r["request"]) for k, r in zip(keys, requests, strict=True)])
            job.model, job.label = model, batch["displayName"]
            self.jobs[name] = job
        self.created(job)
        return 200, self.operation(job)

    def end(self, job: Job) -> None:
        if self.fail_job is not None or self.expire_job:
            return  # no output
        for index, (key, request) in enumerate(job.requests):
            if key in self.garbage:
                raw = self.garbage[key]
                job.results.append(raw)
                try:
                    job.entries.append(json.loads(raw))
                except ValueError:
                    job.entries.append(raw.decode("utf-8", errors="replace"))
                continue
            kind = self.outcome(job, index, key)
            problem = _gemini_request_problem(request)
            if kind == "canceled":
                continue
            if kind == "errored" or problem is not None:
                code, message = self.fail.get(key) or (3, problem)
                outcome: dict[str, Any] = {"error": {"code": code, "message": message}}
            else:
                path = f"/v1beta/models/{job.model}:generateContent"
                outcome = {"response": self.answer(key, request, path)}
            job.entries.append({**outcome, "metadata": {"key": key}})
            job.results.append(json.dumps({"key": key, **outcome}).encode())

    def _state(self, job: Job) -> str:
        if not job.ended:
            return "BATCH_STATE_RUNNING" if job.polls else "BATCH_STATE_PENDING"
        if self.fail_job is not None:
            return "BATCH_STATE_FAILED"
        if self.expire_job:
            return "BATCH_STATE_EXPIRED"
        return "BATCH_STATE_CANCELLED" if job.cancelled else "BATCH_STATE_SUCCEEDED"

    def operation(self, job: Job) -> dict[str, Any]:
        """The job as the long-running Operation ``batches.get`` answers."""
        total = len(job.requests)
        stats = {"requestCount": str(total)}
        if job.ended:
            failed = sum(1 for e in job.entries if isinstance(e, dict) and "error" in e)
            done = len(job.entries) - failed
            stats.update(successfulRequestCount=str(done), failedRequestCount=str(failed))
            stats = {k: v for k, v in stats.items() if v != "0"}  # proto3 JSON leaves out zeros
        else:
            stats["pendingRequestCount"] = str(total)
        meta: dict[str, Any] = {
            "@type": GEMINI_BATCH,
            "model": f"models/{job.model}",
            "displayName": job.label,
            "createTime": CREATED_AT,
            "updateTime": ENDED_AT if job.ended else CREATED_AT,
            "batchStats": stats,
            "state": self._state(job),
            "name": f"batches/{job.id}",
        }
        answer: dict[str, Any] = {"name": f"batches/{job.id}", "metadata": meta}
        if not job.ended:
            return answer
        meta["endTime"] = ENDED_AT
        answer["done"] = True
        if self.fail_job is not None:
            answer["error"] = {"code": 3, "message": self.fail_job}
            return answer
        if self.expire_job:
            return answer
        if self.output == "file":
            output: dict[str, Any] = {"responsesFile": f"files/{job.id}"}
        else:
            output = {"inlinedResponses": {"inlinedResponses": job.entries}}
        meta["output"] = output
        answer["response"] = {"@type": GEMINI_OUTPUT, **output}
        return answer


def _gemini_error(code: int, message: str, status: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status}}
