"""Fake batch APIs: real HTTP on 127.0.0.1, one thread a connection (the machinery of
tests/fakes/servers.py), speaking Anthropic's Message Batches (:class:`FakeAnthropicBatches`).

Each inner answer is what the live fake (:class:`~tests.fakes.servers.FakeLLMServer`) would
answer for the same body: the batch fakes are FakeLLMServers with other routes, and build
each answer with its ``_reply_body``, so a batch answer equals the live one, text and tokens
(``reply_text`` as the live fake's).

Time is counted in polls, never wall time: a job ends on its ``polls_to_end``-th retrieve
(``server.polls_to_end``, 1 by default: the first poll after creation sees it ended). Jobs
live in the server, not in a client: a client process may die after submitting and another
one resume from the job id.

Scripting (set before or after a job is created; read when the job ends):

- ``server.fail = {custom_id: (error_type, message)}``: those requests end ``errored``.
- ``server.expire = {custom_id, ...}``: those requests end ``expired``.
- ``server.garbage = {custom_id: b"..."}``: that request's results line is these bytes.
- ``server.refuse = (status, message)``: the next create is refused (the whole batch fails).
- ``server.done_on_cancel = N``: a cancelled job's first N requests still succeed, the rest
  end ``canceled``.
- ``server.results_base``: the origin written into ``results_url`` (the server's own URL by
  default; a test points it elsewhere to check the key does not follow it).
- ``server.bodies[(method, path)] = body``: that request is answered 200 with ``body`` (a
  documented reply of tests/fixtures/wire/, a dict sent as JSON or bytes as they are),
  recorded as route ``scripted``.

Recorded: ``server.requests`` (``(route, method, path, headers, body)``, headers lower-cased)
and ``server.hits(route)``, routes ``create``, ``retrieve``, ``results``, ``cancel``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.servers import FakeLLMServer, RecordedRequest, ReplyText, reply

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
    results: list[bytes] = field(default_factory=list)


class BatchFake(FakeLLMServer):
    """The records and job clock both fakes share, on FakeLLMServer's HTTP machinery (start,
    stop, ``url``) and its answers (``_reply_body``); subclasses route and answer."""

    api = ""  # the live fake's API whose answers this server gives

    def __init__(self, *, polls_to_end: int = 1, reply_text: ReplyText = None) -> None:
        super().__init__(reply_text=reply_text)
        self.polls_to_end = polls_to_end
        self.fail: dict[str, tuple[str, str]] = {}
        self.expire: set[str] = set()
        self.garbage: dict[str, bytes] = {}
        self.refuse: tuple[int, str] | None = None
        self.done_on_cancel = 0
        self.results_base: str | None = None
        self.bodies: dict[tuple[str, str], Any] = {}
        self.jobs: dict[str, Job] = {}
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
