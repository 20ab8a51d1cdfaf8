"""A fake OpenAI Batch API: real HTTP on 127.0.0.1, OpenAI's Files and Batch wire formats.

``base_url`` for ``provider: openai`` is ``server.url`` (``http://127.0.0.1:PORT/v1``)::

    with FakeOpenAIBatchServer(polls=2) as server:
        spec = ModelSpec(..., provider="openai", options={"base_url": server.url})

Routes (as in OpenAI's API reference; any other is a 404 with OpenAI's error object, a
request without ``Authorization: Bearer ...`` a 401):

- ``POST /v1/files`` (multipart: ``purpose``, ``file``) keeps the file, answers a File object;
- ``POST /v1/batches`` ``{input_file_id, endpoint, completion_window, metadata}`` answers a
  Batch object in ``validating``; its input is checked at once (each line JSON with a unique
  ``custom_id``, ``method`` POST, ``url`` the batch's endpoint, a ``body`` object): a bad
  input fails the job, with ``errors.data`` naming the line, as the API does;
- ``GET /v1/batches/{id}`` answers ``in_progress`` for the first ``polls`` polls, then the
  job's end (``completed`` unless ``fail``, ``expire`` or a cancel says otherwise), its
  output and error files written at that moment;
- ``POST /v1/batches/{id}/cancel`` answers ``cancelling``; the next poll ``cancelled``;
- ``GET /v1/batches?limit=N`` lists the newest N jobs (``{object: list, data, first_id,
  last_id, has_more}``, newest first; ``limit`` 1 to 100, default 20);
- ``GET /v1/files/{id}/content`` answers the file's bytes.

Each request's answer is the live fake's (an unstarted :class:`FakeLLMServer`'s reply to the
same body, ``reply_text`` as it has it), so a batch answer equals the live answer, token
counts too. Outcomes, set on the server before the job ends:

- ``failing``: custom ids answered in the error file with ``status_code`` 400 (OpenAI's
  error object in the body); ``garbage``: custom ids whose output line is not JSON;
- ``expire=N``: the job expires with only its first N requests answered; the rest get the
  guide's ``batch_expired`` error line, or no line at all with ``expired_lines=False``;
- ``fail="message"``: the whole job fails (``errors.data``), no output;
- ``answered_before_cancel=N``: a cancelled job answered its first N requests, the rest have
  no line;
- ``lose_creates=N``: the next N ``POST /v1/batches`` create their job, then drop the
  connection without an answer (a reply lost after OpenAI accepted the job);
- ``on_create``: called with a new job's requests (``{custom_id: body}``) once it is
  created, before it can end: a test scripts the outcomes above by what each request asks
  (a custom id is the engine's request hash, known only then).

The state (files, jobs, polls) lives in the server, not in any client: a client process that
dies after submitting leaves a job another client polls and reads. Recorded: ``requests``
(method, path, headers with lower-case names, body bytes), ``counts`` per route (``"POST
/files"``, ``"POST /batches"``, ``"GET /batches"``, ``"GET /batches/{id}"``, ``"POST
/batches/{id}/cancel"``, ``"GET /files/{id}/content"``), ``files`` and ``batches`` by id. ``echo_auth=True``: errors
repeat the Authorization header they got (a server that leaks what it is sent).
"""

from __future__ import annotations

import contextlib
import email.parser
import email.policy
import json
import socket
import threading
import urllib.parse
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from tests.fakes.servers import FakeLLMServer, RecordedRequest, _Handler, _HTTPServer

EXPIRED_MESSAGE = "This request could not be executed before the completion window expired."
CREATED_AT = 1_711_471_533  # the API reference's example batch's created_at


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class FakeBatch:
    data: dict[str, Any]  # the Batch object as answered
    lines: list[dict[str, Any]]  # the input file's requests
    polls: int = 0
    cancelled: bool = False


@dataclass
class FakeOpenAIBatchServer:
    polls: int = 1  # polls answered in_progress before the job ends
    reply_text: Any = None  # as FakeLLMServer's: a string, a function of the request, or echo
    failing: set[str] = field(default_factory=set)
    garbage: set[str] = field(default_factory=set)
    expire: int | None = None
    expired_lines: bool = True
    fail: str | None = None
    answered_before_cancel: int = 0
    echo_auth: bool = False
    lose_creates: int = 0
    on_create: Callable[[dict[str, dict[str, Any]]], None] | None = None
    requests: list[Seen] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    files: dict[str, bytes] = field(default_factory=dict)
    batches: dict[str, FakeBatch] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._live = FakeLLMServer(reply_text=self.reply_text)  # never started: its replies
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle (as FakeLLMServer's)

    def __enter__(self) -> FakeOpenAIBatchServer:
        self._httpd = _HTTPServer(cast(Any, self), ("127.0.0.1", 0))
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            with self._lock:
                sockets = list(self._sockets)
            for sock in sockets:  # end idle keep-alive connections so their threads exit
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def url(self) -> str:
        assert self._httpd is not None, "the server is not running"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def live_answer(self, body: dict[str, Any], index: int = 0) -> dict[str, Any]:
        """What the live fake answers to the chat completions ``body``."""
        seen = RecordedRequest(index, "POST", "/v1/chat/completions", {}, b"", body, "openai")
        return self._live._reply_body("openai", seen, self._live.default)

    # -- called by the HTTP handler

    def _opened(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.add(sock)

    def _closed(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.discard(sock)

    def _handle(self, handler: _Handler) -> None:
        raw = handler.read_body()
        path, _, query = handler.path.partition("?")
        headers = {k.lower(): v for k, v in handler.headers.items()}
        with self._lock:
            self.requests.append(Seen(handler.command, path, headers, raw))
            status, answer = self._answer(handler.command, path, headers, raw, query)
            lost = path.rstrip("/") == "/v1/batches" and handler.command == "POST"
            lost = lost and status == 200 and self.lose_creates > 0
            if lost:
                self.lose_creates -= 1
        if lost:
            handler.close_connection = True
            with contextlib.suppress(OSError):
                handler.connection.shutdown(socket.SHUT_RDWR)
            return
        if isinstance(answer, bytes):
            handler.send(status, answer, {"Content-Type": "application/octet-stream"})
        else:
            handler.send(status, json.dumps(answer).encode(), {})

    def _answer(
        self, method: str, path: str, headers: dict[str, str], raw: bytes, query: str = ""
    ) -> tuple[int, dict[str, Any] | bytes]:
        auth = headers.get("authorization", "")
        if not auth.startswith("Bearer ") or len(auth) <= len("Bearer "):
            return self._error(401, "You didn't provide an API key.", auth)
        parts = path.strip("/").split("/")
        if parts[:1] != ["v1"]:
            return self._error(404, f"Invalid URL ({method} {path})", auth)
        parts = parts[1:]
        route = {
            ("POST", 1, "files"): "POST /files",
            ("POST", 1, "batches"): "POST /batches",
            ("GET", 1, "batches"): "GET /batches",
            ("GET", 2, "batches"): "GET /batches/{id}",
            ("POST", 3, "batches"): "POST /batches/{id}/cancel",
            ("GET", 3, "files"): "GET /files/{id}/content",
        }.get((method, len(parts), parts[0] if parts else ""))
        if route is None or (len(parts) == 3 and parts[2] not in ("cancel", "content")):
            return self._error(404, f"Invalid URL ({method} {path})", auth)
        self.counts[route] += 1
        if route == "POST /files":
            return self._upload(headers.get("content-type", ""), raw, auth)
        if route == "POST /batches":
            return self._create(raw, auth)
        if route == "GET /batches":
            return self._list(query, auth)
        if route == "GET /files/{id}/content":
            if parts[1] not in self.files:
                return self._error(404, f"No such File object: {parts[1]}", auth)
            return 200, self.files[parts[1]]
        batch = self.batches.get(parts[1])
        if batch is None:
            return self._error(404, f"No batch found with id '{parts[1]}'.", auth)
        if route == "POST /batches/{id}/cancel":
            if batch.data["status"] in ("validating", "in_progress", "finalizing"):
                batch.cancelled = True
                batch.data["status"] = "cancelling"
            return 200, batch.data
        self._advance(batch)
        return 200, batch.data

    def _list(self, query: str, auth: str) -> tuple[int, dict[str, Any]]:
        asked = urllib.parse.parse_qs(query).get("limit", ["20"])[0]
        if not asked.isdigit() or not 1 <= int(asked) <= 100:
            return self._error(400, "limit must be between 1 and 100", auth)
        newest = [b.data for b in reversed(self.batches.values())]
        data = newest[: int(asked)]
        return 200, {
            "object": "list",
            "data": data,
            "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None,
            "has_more": len(newest) > len(data),
        }

    def _error(self, status: int, message: str, auth: str) -> tuple[int, dict[str, Any]]:
        if self.echo_auth:
            message = f"{message} (received {auth!r})"
        kind = "invalid_request_error" if status < 500 else "server_error"
        code = "invalid_api_key" if status == 401 else None
        return status, {"error": {"message": message, "type": kind, "param": None, "code": code}}

    def _upload(self, content_type: str, raw: bytes, auth: str) -> tuple[int, dict[str, Any]]:
        parsed = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            f"Content-Type: {content_type}\r\n\r\n".encode() + raw
        )
        fields: dict[str, tuple[str | None, bytes]] = {}
        if parsed.is_multipart():
            for part in parsed.iter_parts():
                name = part.get_param("name", header="content-disposition")
                payload = part.get_payload(decode=True)
                if isinstance(name, str) and isinstance(payload, bytes):
                    fields[name] = (part.get_filename(), payload)
        if fields.get("purpose", (None, b""))[1] != b"batch" or "file" not in fields:
            return self._error(400, "A multipart upload with purpose and file is required", auth)
        filename, data = fields["file"]
        file_id = f"file-{len(self.files) + 1:06d}"
        self.files[file_id] = data
        return 200, self._file_object(file_id, filename or "upload", data, "batch")

    @staticmethod
    def _file_object(file_id: str, name: str, data: bytes, purpose: str) -> dict[str, Any]:
        return {
            "id": file_id,
            "object": "file",
            "bytes": len(data),
            "created_at": CREATED_AT,
            "filename": name,
            "purpose": purpose,
            "status": "processed",
            "expires_at": CREATED_AT + 30 * 86_400,
        }

    def _create(self, raw: bytes, auth: str) -> tuple[int, dict[str, Any]]:
        try:
            asked = json.loads(raw)
            input_id, endpoint = asked["input_file_id"], asked["endpoint"]
        except (ValueError, KeyError, TypeError):
            return self._error(400, "input_file_id and endpoint are required", auth)
        if input_id not in self.files:
            return self._error(400, f"No such File object: {input_id}", auth)
        if asked.get("completion_window") != "24h":
            return self._error(400, "completion_window must be '24h'", auth)
        batch_id = f"batch_{len(self.batches) + 1:06d}"
        lines, problems = _read_input(self.files[input_id], endpoint)
        data: dict[str, Any] = {
            "id": batch_id,
            "object": "batch",
            "endpoint": endpoint,
            "errors": None,
            "input_file_id": input_id,
            "completion_window": "24h",
            "status": "validating",
            "output_file_id": None,
            "error_file_id": None,
            "created_at": CREATED_AT,
            "in_progress_at": None,
            "expires_at": CREATED_AT + 86_400,
            "finalizing_at": None,
            "completed_at": None,
            "failed_at": None,
            "expired_at": None,
            "cancelling_at": None,
            "cancelled_at": None,
            "request_counts": {"total": 0, "completed": 0, "failed": 0},
            "metadata": asked.get("metadata"),
        }
        if problems or self.fail:
            errors = problems or [{"code": "batch_failed", "message": self.fail, "line": None}]
            data.update(status="failed", failed_at=CREATED_AT + 1)
            data["errors"] = {"object": "list", "data": errors}
        else:
            data["request_counts"]["total"] = len(lines)
        self.batches[batch_id] = FakeBatch(data, lines)
        if self.on_create is not None and lines:
            self.on_create({line["custom_id"]: line["body"] for line in lines})
        return 200, data

    def _advance(self, batch: FakeBatch) -> None:
        """One poll of a job: in progress for ``polls`` polls, then its end."""
        data = batch.data
        if data["status"] in ("completed", "failed", "expired", "cancelled"):
            return
        batch.polls += 1
        if batch.cancelled:
            self._end(batch, "cancelled", self.answered_before_cancel, with_lines=False)
        elif batch.polls <= self.polls:
            data.update(status="in_progress", in_progress_at=CREATED_AT + 1)
        elif self.expire is not None:
            self._end(batch, "expired", self.expire, with_lines=self.expired_lines)
        else:
            self._end(batch, "completed", len(batch.lines), with_lines=True)

    def _end(self, batch: FakeBatch, status: str, answered: int, *, with_lines: bool) -> None:
        output, errors = [], []
        for n, line in enumerate(batch.lines):
            custom_id = line["custom_id"]
            row: dict[str, Any] = {"id": f"batch_req_{n:06d}", "custom_id": custom_id}
            if n >= answered:
                if with_lines:
                    error = {"code": "batch_expired", "message": EXPIRED_MESSAGE}
                    errors.append(json.dumps({**row, "response": None, "error": error}))
                continue
            if custom_id in self.garbage:  # cut short: not JSON, its custom_id still readable
                output.append(json.dumps({**row, "response": {"status_code": 200}})[:-3])
                continue
            if custom_id in self.failing:
                body = {
                    "error": {
                        "message": f"Invalid request {custom_id}",
                        "type": "invalid_request_error",
                        "param": "messages",
                        "code": None,
                    }
                }
                response = {"status_code": 400, "request_id": f"req_{n:06d}", "body": body}
                errors.append(json.dumps({**row, "response": response, "error": None}))
                continue
            body = self.live_answer(line["body"], n)
            response = {"status_code": 200, "request_id": f"req_{n:06d}", "body": body}
            output.append(json.dumps({**row, "response": response, "error": None}))
        data = batch.data
        failed = sum(1 for line in batch.lines[:answered] if line["custom_id"] in self.failing)
        data["request_counts"] = {
            "total": len(batch.lines),
            "completed": len(output),
            "failed": failed,
        }
        data.update(status=status, **{f"{status}_at": CREATED_AT + 2})
        for key, lines in (("output_file_id", output), ("error_file_id", errors)):
            if lines:
                file_id = f"file-{len(self.files) + 1:06d}"
                self.files[file_id] = "".join(f"{line}\n" for line in lines).encode()
                data[key] = file_id


def _read_input(data: bytes, endpoint: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The requests of an input file, and the problems the API would fail the job for."""
    lines: list[dict[str, Any]] = []
    problems: list[dict[str, Any]] = []
    ids: set[str] = set()
    for number, raw in enumerate(data.splitlines(), start=1):
        try:
            line = json.loads(raw)
        except ValueError:
            problems.append({"code": "invalid_json_line", "message": "not JSON", "line": number})
            continue
        custom_id = line.get("custom_id") if isinstance(line, dict) else None
        if not isinstance(custom_id, str) or custom_id in ids:
            message = "custom_id missing or not unique"
            problems.append({"code": "duplicate_custom_id", "message": message, "line": number})
        elif line.get("method") != "POST" or line.get("url") != endpoint:
            message = f"method must be POST and url {endpoint}"
            problems.append({"code": "mismatched_endpoint", "message": message, "line": number})
        elif not isinstance(line.get("body"), dict):
            problems.append({"code": "invalid_request", "message": "no body", "line": number})
        else:
            ids.add(custom_id)
            lines.append(line)
    if not lines and not problems:
        problems.append({"code": "empty_file", "message": "The input file is empty"})
    return lines, problems
