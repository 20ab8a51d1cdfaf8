"""A fake LLM API server: real HTTP on 127.0.0.1, Anthropic Messages, OpenAI Chat and Gemini
generateContent wire formats.

Start it as a context manager (or with the ``fake_llm_server`` pytest fixture)::

    with FakeLLMServer(latency=0.1) as server:
        spec = ModelSpec(..., provider="anthropic", options={"base_url": server.url})
        spec = ModelSpec(..., provider="openai", options={"base_url": server.openai_url})

Routes: ``POST .../v1/messages`` answers like Anthropic, ``POST .../chat/completions`` like
OpenAI (any prefix, so ``server.url`` and ``server.openai_url`` both work), ``POST
.../models/{model}:generateContent`` like the Gemini API (``server.url`` is the google
provider's ``base_url``; replies follow tests/fixtures/wire/gemini/plain.json, a documented
example), and the embeddings routes ``POST .../embeddings`` (OpenAI: ``data[].embedding``,
``usage.prompt_tokens``) and ``POST .../models/{model}:embedContent`` (Gemini:
``embedding.values``), whose vectors are :func:`letter_vector` of each text (so a test knows
the cosine of two texts). By default it
echoes the text of the last user message, with made-up token counts. A Gemini request whose
``generationConfig.responseSchema`` the API would refuse (a field its Schema object does not
have, a type outside its Type enum, no ``responseMimeType: application/json``) gets the API's
400 INVALID_ARGUMENT, before any scripted behaviour.

Scripting, in the order the server consults them for each request:

1. ``server.script(b1, b2, ...)``: a queue; each request takes the next behaviour.
2. ``server.responder = fn``: ``fn(RecordedRequest) -> Behavior | None`` (None: fall through).
3. ``server.faults = Faults(error_rate=0.05, rate_limit_rate=0.05, seed=1)``: injected
   failures, drawn deterministically from the seed and the request's arrival number.
4. ``server.default``: the behaviour otherwise (``reply()``: echo).

Behaviours come from the helpers :func:`reply`, :func:`slow`, :func:`error`,
:func:`rate_limited`, :func:`server_error`, :func:`overloaded`, :func:`malformed`,
:func:`missing_fields`, :func:`drop`, :func:`hang`, :func:`truncated`, :func:`raw` and :func:`wire` (a
documented reply of tests/fixtures/wire/). ``server.latency``
(seconds) is added to every response; each connection has its own thread, so a slow response
never holds up other connections.

Recorded: ``server.requests`` (a list of :class:`RecordedRequest`: ``path``, ``headers`` with
lower-case names, parsed JSON ``body``, ``api``, ``behavior``, ``handled_ms``: the server's own
time for it, from its request line read to its answer's write, also sent back as the
``x-fake-handled-ms`` header), ``server.last``,
``server.count``, ``server.connections`` (TCP connections accepted: keep-alive reuse shows as
few connections for many requests) and ``server.max_in_flight``. ``server.reset()`` clears the
records, the script and the counters.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import socketserver
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email.utils import formatdate
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ReplyText = str | Callable[["RecordedRequest"], str] | None


# ---- behaviours ------------------------------------------------------------------------------


@dataclass
class Behavior:
    """What the server does with one request. Build these with the helper functions below."""

    name: str = "reply"
    status: int = 200
    text: ReplyText = None  # reply text (None: the server's reply_text, else echo)
    message: str | None = None  # error message for a non-2xx status
    error_type: str | None = None  # error type in the error JSON (default: by status)
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | str | dict[str, Any] | None = None  # a body sent as-is (overrides the rest)
    delay: float = 0.0  # seconds, on top of the server's latency
    drop: bool = False  # close the connection without answering
    hang: bool = False  # read the request, then never answer (until the server stops)
    truncate: bool = False  # send the headers and half the body, then close
    echo_auth: bool = False  # put the received x-api-key / Authorization into the error message
    input_tokens: int | None = None
    output_tokens: int | None = None


def reply(
    text: ReplyText = None,
    *,
    delay: float = 0.0,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
) -> Behavior:
    """A normal 200 reply: ``text`` (a string or a function of the request), else echo."""
    return Behavior(
        "reply", text=text, delay=delay, input_tokens=input_tokens, output_tokens=output_tokens
    )


def slow(delay: float, text: ReplyText = None) -> Behavior:
    return Behavior("slow", text=text, delay=delay)


def error(
    status: int,
    message: str | None = None,
    *,
    error_type: str | None = None,
    retry_after: float | str | None = None,
    retry_after_ms: float | None = None,
    echo_auth: bool = False,
    headers: dict[str, str] | None = None,
    delay: float = 0.0,
) -> Behavior:
    """A provider-shaped error JSON with ``status`` (Retry-After headers when given)."""
    hdrs = dict(headers or {})
    if retry_after is not None:
        hdrs["Retry-After"] = (
            _number(retry_after) if not isinstance(retry_after, str) else retry_after
        )
    if retry_after_ms is not None:
        hdrs["retry-after-ms"] = _number(retry_after_ms)
    return Behavior(
        f"error_{status}",
        status=status,
        message=message,
        error_type=error_type,
        headers=hdrs,
        echo_auth=echo_auth,
        delay=delay,
    )


def rate_limited(
    retry_after: float | str | None = 1, *, retry_after_ms: float | None = None
) -> Behavior:
    return error(429, retry_after=retry_after, retry_after_ms=retry_after_ms)


def server_error(status: int = 500, *, retry_after: float | str | None = None) -> Behavior:
    return error(status, retry_after=retry_after)


def overloaded() -> Behavior:
    """Anthropic's 529 overloaded_error."""
    return error(529)


def malformed(body: str = '{"id": "oops", "content": [') -> Behavior:
    """A 200 whose body is not valid JSON."""
    return Behavior("malformed", body=body, headers={"Content-Type": "application/json"})


def missing_fields() -> Behavior:
    """A 200 with valid JSON that lacks the reply (no ``content`` / ``choices``)."""
    return Behavior("missing_fields", body={"id": "fake-incomplete", "type": "message"})


def drop(delay: float = 0.0) -> Behavior:
    """Close the connection without sending anything."""
    return Behavior("drop", drop=True, delay=delay)


def hang() -> Behavior:
    """Accept and read the request, then never answer: the connection stays open, silent,
    until the server stops (a server that hangs; ``server.count`` still counts it)."""
    return Behavior("hang", hang=True)


def truncated() -> Behavior:
    """Send the headers and part of the body, then close."""
    return Behavior("truncated", truncate=True)


def raw(
    status: int, body: bytes | str | dict[str, Any], headers: dict[str, str] | None = None
) -> Behavior:
    """Any status with any body."""
    return Behavior(f"raw_{status}", status=status, body=body, headers=dict(headers or {}))


WIRE = Path(__file__).resolve().parent.parent / "fixtures" / "wire"


def wire(provider: str, name: str) -> Behavior:
    """A documented reply, ``tests/fixtures/wire/<provider>/<name>.json``, sent as it is
    (README.md there says where each came from). A name ending in a status (``overloaded_529``)
    is sent with that status, any other with 200."""
    body = json.loads((WIRE / provider / f"{name}.json").read_text("utf-8"))
    tail = name.rsplit("_", 1)[-1]
    status = int(tail) if tail.isdigit() else 200
    return Behavior(f"wire_{provider}_{name}", status=status, body=body)


@dataclass
class Faults:
    """Injected failures for a fraction of requests (the rest get the default behaviour).

    The draw hashes ``seed`` and the request's arrival number, so a run of N requests always
    sees the same number of each failure.
    """

    error_rate: float = 0.0  # 500
    rate_limit_rate: float = 0.0  # 429
    unavailable_rate: float = 0.0  # 503
    drop_rate: float = 0.0  # connection closed without a response
    malformed_rate: float = 0.0  # 200 with a body that is not JSON
    retry_after: float | None = None  # Retry-After on injected 429/503s
    seed: int = 0

    def pick(self, index: int) -> Behavior | None:
        digest = hashlib.blake2b(f"{self.seed}:{index}".encode(), digest_size=8).digest()
        u = int.from_bytes(digest, "big") / 2**64
        for rate, make in (
            (self.error_rate, lambda: server_error(500)),
            (self.rate_limit_rate, lambda: rate_limited(self.retry_after)),
            (self.unavailable_rate, lambda: server_error(503, retry_after=self.retry_after)),
            (self.drop_rate, drop),
            (self.malformed_rate, malformed),
        ):
            if u < rate:
                return make()
            u -= rate
        return None


# ---- records ---------------------------------------------------------------------------------


@dataclass
class RecordedRequest:
    index: int  # arrival number, from 0
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    raw: bytes
    body: Any  # parsed JSON (None if the body was not JSON)
    api: str  # "anthropic", "openai", "google" or "unknown"
    behavior: str = ""  # the name of the behaviour that answered
    received: float = 0.0  # time.perf_counter() when the server had read its request line
    handled_ms: float | None = None  # the server's own time, until it writes its answer

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


# ---- the server ------------------------------------------------------------------------------

_ANTHROPIC_ERRORS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    422: "invalid_request_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
_OPENAI_ERRORS = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "invalid_request_error",
    404: "invalid_request_error",
    422: "invalid_request_error",
    429: "requests",
    500: "server_error",
    503: "server_error",
}
_GOOGLE_ERRORS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}
_MESSAGES = {
    400: "Bad request",
    401: "Invalid API key",
    403: "Permission denied",
    404: "Not found",
    422: "Unprocessable entity",
    429: "Rate limit exceeded, please retry later",
    500: "Internal server error",
    502: "Bad gateway",
    503: "Service unavailable",
    529: "Overloaded",
}


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # Anthropic/OpenAI typed parts, or Gemini's {"text": ...}
        return "".join(
            p.get("text", "")
            for p in content
            if isinstance(p, dict) and p.get("type", "text") == "text"
        )
    return ""


def _gemini_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Gemini ``contents`` as role/content messages (``model`` is the assistant)."""
    contents = body.get("contents") or []
    return [
        {"role": "assistant" if c.get("role") == "model" else "user", "content": c.get("parts")}
        for c in contents
        if isinstance(c, dict)
    ]


# The Gemini API's Schema object (https://ai.google.dev/api/caching#Schema): its fields and
# the names of its Type enum. A responseSchema with any other field, or another type name, is
# refused with 400 INVALID_ARGUMENT, as the API's JSON request parsing does.
_GEMINI_SCHEMA_FIELDS = {
    "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
    "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
    "pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum", "maximum",
}  # fmt: skip
_GEMINI_TYPES = {"TYPE_UNSPECIFIED", "STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"}  # fmt: skip
# generationConfig.responseSchema needs one of these response MIME types
_GEMINI_SCHEMA_MIME_TYPES = ("application/json", "text/x.enum")


def _gemini_schema_problem(schema: Any, at: str) -> str | None:
    """Why the API would refuse ``schema`` as a Schema (None when it takes it)."""
    if not isinstance(schema, dict):
        return f"Invalid value at '{at}': a Schema is a JSON object"
    for name, value in schema.items():
        if name not in _GEMINI_SCHEMA_FIELDS:
            return f"Invalid JSON payload received. Unknown name \"{name}\" at '{at}': Cannot find field."
        if name == "type" and value not in _GEMINI_TYPES:
            return f"Invalid value at '{at}.type' (type.googleapis.com/google.ai.generativelanguage.v1beta.Type), {json.dumps(value)}"
        if name in ("required", "enum", "propertyOrdering") and not (
            isinstance(value, list) and all(isinstance(v, str) for v in value)
        ):
            return f"Invalid value at '{at}.{name}': a list of strings"
    subs = [(f"{at}.items", schema["items"])] if "items" in schema else []
    subs += [
        (f"{at}.properties[{k}].value", v) for k, v in (schema.get("properties") or {}).items()
    ]
    subs += [(f"{at}.any_of[{i}]", v) for i, v in enumerate(schema.get("anyOf") or [])]
    for where, sub in subs:
        problem = _gemini_schema_problem(sub, where)
        if problem is not None:
            return problem
    return None


def _gemini_request_problem(body: dict[str, Any]) -> str | None:
    """Why the API would refuse this generateContent body's generationConfig (None: it takes it)."""
    config = body.get("generationConfig") or {}
    if "responseSchema" not in config:
        return None
    if config.get("responseMimeType") not in _GEMINI_SCHEMA_MIME_TYPES:
        return (
            "GenerateContentRequest.generation_config.response_schema: only allowed when "
            "response_mime_type is one of " + ", ".join(_GEMINI_SCHEMA_MIME_TYPES)
        )
    return _gemini_schema_problem(config["responseSchema"], "generation_config.response_schema")


def letter_vector(text: str) -> list[float]:
    """The fake's embedding of a text: how often each letter a-z occurs in it, lower-cased
    (26 numbers; a text without letters is the zero vector)."""
    lower = text.lower()
    return [float(lower.count(chr(c))) for c in range(ord("a"), ord("z") + 1)]


def _embeddings_body(api: str, body: dict[str, Any], behavior: Behavior) -> dict[str, Any]:
    """An embeddings reply in the API's shape: OpenAI's ``POST /v1/embeddings`` (``input``, a
    string or a list of them) or Gemini's ``:embedContent`` (``content.parts[].text``)."""
    if api == "google-embeddings":
        text = _text_of((body.get("content") or {}).get("parts"))
        return {"embedding": {"values": letter_vector(text)}}
    given = body.get("input")
    texts = [given] if isinstance(given, str) else list(given or [])
    tokens = (
        behavior.input_tokens
        if behavior.input_tokens is not None
        else sum(_tokens(t) for t in texts)
    )
    return {
        "object": "list",
        "data": [
            {"object": "embedding", "index": i, "embedding": letter_vector(t)}
            for i, t in enumerate(texts)
        ],
        "model": body.get("model", "fake-embedding"),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def _tokens(text: str) -> int:
    return max(1, (len(text) + 3) // 4)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024

    def __init__(self, owner: FakeLLMServer, address: tuple[str, int]) -> None:
        self.owner = owner
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind does a reverse DNS lookup of the host; skip it.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError, OSError)):
            return  # the client went away (timed out, dropped): normal in these tests
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        self.server.owner._opened(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner._closed(self.connection)

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def parse_request(self) -> bool:
        self.received = time.perf_counter()  # the request line is read: the server's clock starts
        return super().parse_request()

    def do_POST(self) -> None:
        self.server.owner._handle(self)

    do_GET = do_POST
    do_PUT = do_POST
    do_DELETE = do_POST

    def read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def send(
        self, status: int, body: bytes, headers: dict[str, str], *, declared: int | None = None
    ) -> None:
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = "Overloaded" if status == 529 else "Unknown"
        lines = [
            f"HTTP/1.1 {status} {reason}",
            "Server: fake-llm",
            f"Date: {formatdate(usegmt=True)}",
            f"Content-Length: {len(body) if declared is None else declared}",
        ]
        if not any(k.lower() == "content-type" for k in headers):
            lines.append("Content-Type: application/json")
        lines.extend(f"{k}: {v}" for k, v in headers.items())
        if self.close_connection:
            lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        self.wfile.write(head + body)


class FakeLLMServer:
    """See the module docstring. Thread-safe; start/stop or use as a context manager."""

    def __init__(
        self,
        *,
        latency: float = 0.0,
        reply_text: ReplyText = None,
        faults: Faults | None = None,
        default: Behavior | None = None,
    ) -> None:
        self.latency = latency
        self.reply_text = reply_text
        self.faults = faults
        self.default = default or reply()
        self.responder: Callable[[RecordedRequest], Behavior | None] | None = None
        self._lock = threading.Lock()
        self._script: deque[Behavior] = deque()
        self._requests: list[RecordedRequest] = []
        self._count = 0
        self._sockets: set[socket.socket] = set()
        self.connections = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()  # set by stop(): hung requests let go

    # -- lifecycle

    def start(self) -> FakeLLMServer:
        if self._httpd is None:
            self._stopping.clear()
            self._httpd = _HTTPServer(self, ("127.0.0.1", 0))
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.01},
                name="fake-llm-server",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:  # end idle keep-alive connections so their threads exit
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "the server is not running"
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """Base URL: the ``base_url`` for the anthropic provider."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def anthropic_url(self) -> str:
        return self.url

    @property
    def openai_url(self) -> str:
        """``.../v1``: the ``base_url`` for the openai / openai-compatible providers."""
        return f"{self.url}/v1"

    # -- scripting and records

    def script(self, *behaviors: Behavior) -> FakeLLMServer:
        """Queue behaviours for the next requests, in order."""
        with self._lock:
            self._script.extend(behaviors)
        return self

    @property
    def pending(self) -> int:
        """Scripted behaviours not used yet."""
        with self._lock:
            return len(self._script)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def last(self) -> RecordedRequest:
        with self._lock:
            return self._requests[-1]

    @property
    def count(self) -> int:
        with self._lock:
            return self._count

    def reset(self) -> None:
        with self._lock:
            self._script.clear()
            self._requests.clear()
            self._count = 0
            self.connections = 0
            self.max_in_flight = 0

    def _opened(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.add(sock)
            self.connections += 1

    def _closed(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.discard(sock)

    # -- handling

    def _choose(self, req: RecordedRequest) -> Behavior:
        with self._lock:
            if self._script:
                return self._script.popleft()
        if self.responder is not None:
            chosen = self.responder(req)
            if chosen is not None:
                return chosen
        if self.faults is not None:
            chosen = self.faults.pick(req.index)
            if chosen is not None:
                return chosen
        return self.default

    def _handle(self, handler: _Handler) -> None:
        raw_body = handler.read_body()
        path = handler.path.split("?", 1)[0]
        if path.endswith("/messages"):
            api = "anthropic"
        elif path.endswith("/chat/completions"):
            api = "openai"
        elif path.endswith(":generateContent"):
            api = "google"
        elif path.endswith("/embeddings"):
            api = "openai-embeddings"
        elif path.endswith(":embedContent"):
            api = "google-embeddings"
        else:
            api = "unknown"
        try:
            body = json.loads(raw_body) if raw_body else None
        except ValueError:
            body = None
        with self._lock:
            index = self._count
            self._count += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        req = RecordedRequest(
            index=index,
            method=handler.command,
            path=path,
            headers={k.lower(): v for k, v in handler.headers.items()},
            raw=raw_body,
            body=body,
            api=api,
            received=getattr(handler, "received", time.perf_counter()),
        )
        try:
            if api == "unknown" or handler.command != "POST":
                behavior = error(404, f"no route for {handler.command} {path}")
            elif not isinstance(body, dict):
                behavior = error(400, "the request body is not a JSON object")
            elif api == "google" and (refused := _gemini_request_problem(body)) is not None:
                behavior = error(400, refused)
            else:
                behavior = self._choose(req)
            req.behavior = behavior.name
            with self._lock:
                self._requests.append(req)
            wait = self.latency + behavior.delay
            if wait > 0:
                time.sleep(wait)
            self._respond(handler, req, behavior)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _respond(self, handler: _Handler, req: RecordedRequest, behavior: Behavior) -> None:
        if behavior.hang:
            self._stopping.wait()
        if behavior.drop or behavior.hang:
            handler.close_connection = True
            with contextlib.suppress(OSError):
                handler.connection.shutdown(socket.SHUT_RDWR)
            return
        api = req.api if req.api != "unknown" else "openai"
        if behavior.body is not None:
            payload = behavior.body
            data = json.dumps(payload).encode() if isinstance(payload, dict) else payload
            data = data.encode() if isinstance(data, str) else data
        elif behavior.status >= 400:
            data = json.dumps(self._error_body(api, req, behavior)).encode()
        else:
            data = json.dumps(self._reply_body(api, req, behavior)).encode()
        # stamped before the answer is written: a client that has read it finds it set
        req.handled_ms = (time.perf_counter() - req.received) * 1000
        headers = {"x-fake-handled-ms": f"{req.handled_ms:.3f}", **behavior.headers}
        if behavior.truncate:
            handler.close_connection = True
            handler.send(behavior.status, data[: len(data) // 2], headers, declared=len(data))
            return
        handler.send(behavior.status, data, headers)

    def _error_body(self, api: str, req: RecordedRequest, behavior: Behavior) -> dict[str, Any]:
        status = behavior.status
        message = behavior.message or _MESSAGES.get(status, f"HTTP {status}")
        if behavior.echo_auth:
            got = (
                req.header("x-api-key")
                or req.header("authorization")
                or req.header("x-goog-api-key")
                or "(none)"
            )
            message = f"{message}: received credentials {got!r}"
        if api == "anthropic":
            kind = behavior.error_type or _ANTHROPIC_ERRORS.get(status, "api_error")
            return {"type": "error", "error": {"type": kind, "message": message}}
        if api.startswith("google"):
            kind = behavior.error_type or _GOOGLE_ERRORS.get(status, "INTERNAL")
            return {"error": {"code": status, "message": message, "status": kind}}
        kind = behavior.error_type or _OPENAI_ERRORS.get(status, "server_error")
        code = {401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(status)
        return {"error": {"message": message, "type": kind, "param": None, "code": code}}

    def _reply_body(self, api: str, req: RecordedRequest, behavior: Behavior) -> dict[str, Any]:
        body = req.body
        if api.endswith("embeddings"):
            return _embeddings_body(api, body, behavior)
        messages = _gemini_messages(body) if api == "google" else body.get("messages") or []
        source = behavior.text if behavior.text is not None else self.reply_text
        if callable(source):
            text = source(req)
        elif source is not None:
            text = source
        else:
            users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
            text = _text_of(users[-1].get("content")) if users else ""
        system = body.get("system") or (body.get("systemInstruction") or {}).get("parts")
        prompt = _text_of(system) + "".join(
            _text_of(m.get("content")) for m in messages if isinstance(m, dict)
        )
        input_tokens = (
            behavior.input_tokens if behavior.input_tokens is not None else _tokens(prompt)
        )
        output_tokens = (
            behavior.output_tokens if behavior.output_tokens is not None else _tokens(text)
        )
        model = body.get("model", "fake-model")
        if api == "google":
            return {
                "candidates": [
                    {
                        "content": {"parts": [{"text": text}], "role": "model"},
                        "finishReason": "STOP",
                        "index": 0,
                    }
                ],
                "usageMetadata": {
                    "promptTokenCount": input_tokens,
                    "candidatesTokenCount": output_tokens,
                    "totalTokenCount": input_tokens + output_tokens,
                },
                "modelVersion": req.path.rsplit("/", 1)[-1].split(":")[0],
            }
        if api == "anthropic":
            forced = body.get("tool_choice") or {}
            if forced.get("type") == "tool":  # a forced tool call: the reply is its input
                try:
                    given = json.loads(text)
                except ValueError:
                    given = {"answer": text}
                return {
                    "id": f"msg_fake_{req.index}",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [
                        {
                            "type": "tool_use",
                            "id": f"toolu_fake_{req.index}",
                            "name": forced.get("name"),
                            "input": given,
                        }
                    ],
                    "stop_reason": "tool_use",
                    "stop_sequence": None,
                    "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
                }
            return {
                "id": f"msg_fake_{req.index}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
            }
        return {
            "id": f"chatcmpl-fake-{req.index}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": input_tokens,
                "completion_tokens": output_tokens,
                "total_tokens": input_tokens + output_tokens,
            },
        }


@contextlib.contextmanager
def fake_llm(**kwargs: Any) -> Iterator[FakeLLMServer]:
    """``with fake_llm(latency=0.1) as server: ...``"""
    with FakeLLMServer(**kwargs) as server:
        yield server


try:
    import pytest
except ImportError:  # pragma: no cover - benchmarks may run without pytest
    pass
else:

    @pytest.fixture
    def fake_llm_server() -> Iterator[FakeLLMServer]:
        """A running FakeLLMServer, stopped after the test."""
        with FakeLLMServer() as server:
            yield server
