"""Shared plumbing for providers that speak JSON over HTTP (httpx, no vendor SDKs).

:class:`HttpProvider` owns one ``httpx.AsyncClient`` per provider instance, created on the
first request (so validation and dry runs never open sockets or need keys) with a generous
keep-alive pool. It resolves the API key through :mod:`evalwh.config.secrets`, posts the JSON body
and turns every failure into a :class:`ProviderError`:

=====================================  =========  ================  ===================
failure                                retryable  kind              notes
=====================================  =========  ================  ===================
429                                    yes        ``rate_limit``    ``retry_after`` set
408, 409, 5xx (and Anthropic's 529)    yes        ``server``        ``retry_after`` set
401, 403                               no         ``auth``
other 4xx (400, 404, 422, ...)         no         ``http``
timeout (connect, read, write)         yes        ``timeout``
refused / dropped / reset connection   yes        ``connection``
2xx with a body that is not the API's  no         ``bad_response``  short excerpt
missing API key                        no         ``auth``
=====================================  =========  ================  ===================

``retry_after`` comes from ``retry-after-ms`` when present, else ``Retry-After`` (seconds or
an HTTP date). Every message names the provider and the status, carries the provider's own
error message and goes through :func:`evalwh.config.secrets.redact`, so keys never leak into logs.

Each answer carries its own time (``Completion.latency_ms``): from sending the request to
the last byte of the answer, so neither the client's set-up on first use nor the body's
building nor the engine's waiting is in the stored latency.

Header values may reference secrets as ``${NAME}`` (resolved like API keys), so configs never
need to hold a key: ``headers: {X-Api-Key: "${MY_GATEWAY_KEY}"}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import math
import re
import ssl
import sys
import time
from collections.abc import AsyncIterator, Iterator
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

import httpx

from evalwh import __version__ as _evalwh_version
from evalwh.config.model import ModelSpec
from evalwh.config.secrets import SECRET_REF, get_secret, key_shape, redact, sanitize
from evalwh.errors import ConfigError
from evalwh.providers import http_aiohttp
from evalwh.providers.base import (
    MAX_OUTPUT_BYTES,
    Completion,
    ProviderError,
    Request,
    SecretNeed,
    cannot_connect,
    check_key,
    cut_answer,
)
from evalwh.providers.batching import BatchApi

DEFAULT_MAX_CONNECTIONS = 100
POOL_SHARD = 16  # connections per pool shard (see HttpProvider._client_for_loop)
MAX_RESPONSE_BYTES = 16 * 1024 * 1024  # a reply's body (``max_response_bytes``), read as it comes
EXCERPT_CHARS = 200  # of a body that is not the API's error JSON
DETAIL_CHARS = 1000  # of the provider's own error message
PARAM_KEYS = (
    "temperature",
    "max_tokens",
    "top_p",
    "stop",
    "system",
    "reasoning_effort",
    "thinking_budget",
    "extra",
)


def fast_async_detection() -> None:
    """Make httpcore's per-lock ``import sniffio`` fail at once when sniffio is not installed.

    httpcore asks which async library runs (``current_async_library``) every time it sets up a
    lock, semaphore or event: several times per request. Without sniffio installed each of
    those is a failed import that searches every ``sys.path`` entry again (~36 us each, ~23 %
    of a request's CPU in the issue 18 profile). ``None`` in ``sys.modules`` is Python's own
    way to say "this module is absent": the import then raises ``ModuleNotFoundError`` at once,
    which httpcore, httpx and anyio all handle as "no sniffio, so asyncio". Nothing changes
    when sniffio is installed.
    """
    if "sniffio" not in sys.modules and importlib.util.find_spec("sniffio") is None:
        sys.modules["sniffio"] = None  # type: ignore[assignment]


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """A short, single-line excerpt of a response body: redacted first, then cut."""
    flat = " ".join(text.split())
    return sanitize(flat, limit) if flat else "(empty body)"


def parse_retry_after(
    headers: httpx.Headers | dict[str, str], now: datetime | None = None
) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date, counted
    from ``now``: the current time unless given)."""
    lower = {k.lower(): v for k, v in headers.items()}
    raw_ms = lower.get("retry-after-ms")
    if raw_ms:
        try:
            value = float(raw_ms) / 1000
            if value >= 0:
                return value
        except ValueError:
            pass
    raw = lower.get("retry-after")
    if not raw:
        return None
    raw = raw.strip()
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - (now or datetime.now(timezone.utc))).total_seconds())


def status_kind(status: int) -> tuple[bool, str]:
    """Whether another attempt may help, and the error's kind, for an HTTP error status (the
    table above): a live reply's, or the status a batch API gives one request's error."""
    if status == 429:
        return True, "rate_limit"
    if status in (408, 409) or status >= 500:
        return True, "server"
    if status in (401, 403):
        return False, "auth"
    return False, "http"


def shown_url(url: str) -> str:
    """``url`` as an error may show it: without a user, password or query string."""
    from urllib.parse import urlunsplit

    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]  # user:password@host:port -> host:port
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def stop_list(stop: Any) -> list[str]:
    if stop is None:
        return []
    return [stop] if isinstance(stop, str) else [str(s) for s in stop]


class HttpProvider:
    """Base class: subclasses set the class attributes and implement the wire format."""

    name = "http"
    default_base_url: str | None = None
    default_key_env: str | None = None  # env var / secrets-file key holding the API key
    other_key_envs: tuple[str, ...] = ()  # read in order when default_key_env is not set
    endpoint = ""  # appended to the base URL
    # Paid: every model needs a known price (the shipped table or `price:`; `price: 0` for a
    # local server), so a run never reports a silent $0.
    paid = True

    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec
        base = spec.options.get("base_url") or self.default_base_url or ""
        self.url = str(base).rstrip("/") + self.endpoint
        self.key_env: str | None = next(iter(self.key_names(spec)), None)
        self._client: httpx.AsyncClient | None = None  # the first shard (None until used)
        self._clients: list[httpx.AsyncClient] = []
        self._busy: list[int] = []  # requests in flight per shard
        self._per_shard = 0
        self._turn = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._headers: dict[str, str] | None = None
        self._target: httpx.URL | str = self.url  # an httpx.URL once the client exists
        self._secrets: list[str] = []
        self.max_response_bytes = int(spec.options.get("max_response_bytes") or MAX_RESPONSE_BYTES)
        self.max_output_bytes = int(spec.options.get("max_output_bytes") or MAX_OUTPUT_BYTES)

    # ---- validation -------------------------------------------------------------------------

    @classmethod
    def key_names(cls, spec: ModelSpec) -> tuple[str, ...]:
        """The secrets that may hold this model's API key, in lookup order (the first one set
        is sent): the one ``api_key_env`` names, else the provider's default; none for a
        provider that sends no key by default (``openai-compatible``)."""
        named = spec.options.get("api_key_env")
        if named:
            return (str(named),)
        return (cls.default_key_env, *cls.other_key_envs) if cls.default_key_env else ()

    @classmethod
    def secrets_needed(cls, spec: ModelSpec) -> list[SecretNeed]:
        """What this model's requests look up: its API key and each ``${NAME}`` of its
        headers, with the place in the config that asks for each."""
        needs = []
        names = cls.key_names(spec)
        if names:
            own = "api_key_env" in spec.options
            needs.append(SecretNeed(names, f"{spec.where}.api_key_env" if own else spec.where))
        for key, value in (spec.options.get("headers") or {}).items():
            for name in SECRET_REF.findall(str(value)):
                needs.append(SecretNeed((name,), f"{spec.where}.headers.{key}"))
        return needs

    @classmethod
    def check(cls, spec: ModelSpec, file: str | None = None) -> None:
        """Raise ConfigError for a bad model entry. Never needs a key or the network."""
        opts = spec.options
        base_url = opts.get("base_url")
        if base_url is None and cls.default_base_url is None:
            raise ConfigError(
                f"provider '{spec.provider}' needs a base_url",
                file=file,
                where=f"{spec.where}.base_url",
                fix="add base_url: the server's API root, e.g. http://localhost:8000/v1",
            )
        if base_url is not None and not re.match(r"^https?://[^/\s]+", str(base_url)):
            raise ConfigError(
                f"base_url {base_url!r} is not an http(s) URL",
                file=file,
                where=f"{spec.where}.base_url",
                fix="write the full URL, e.g. http://localhost:8000/v1",
            )
        if base_url is not None and "@" in urlsplit(str(base_url)).netloc:
            # stored in the run's config snapshot as written, and aiohttp refuses to send URL
            # credentials beside the key's Authorization header (every request failed)
            raise ConfigError(
                f"base_url {shown_url(str(base_url))!r} carries a user name or password "
                "(user:password@host), which a config must not hold",
                file=file,
                where=f"{spec.where}.base_url",
                fix="remove them from the URL; for Basic auth write headers: {Authorization: "
                '"Basic ${NAME}"} with NAME set in the environment or .evalwh.secrets.yaml',
            )
        headers = opts.get("headers")
        if headers is not None:
            if not isinstance(headers, dict):
                raise ConfigError(
                    "headers must be a mapping of header name to value",
                    file=file,
                    where=f"{spec.where}.headers",
                    fix="write headers: {X-Header: value}",
                )
            for key, value in headers.items():
                if not isinstance(value, str):
                    raise ConfigError(
                        "header values must be strings",
                        file=file,
                        where=f"{spec.where}.headers.{key}",
                        fix="quote the value",
                    )
                shape = key_shape(value)
                if shape is not None and not SECRET_REF.search(value):
                    raise ConfigError(
                        f"this header holds what looks like a {shape} API key",
                        file=file,
                        where=f"{spec.where}.headers.{key}",
                        fix='never put keys in a config: reference one as "${NAME}" and set NAME '
                        "in the environment or .evalwh.secrets.yaml",
                    )
        from evalwh.providers.capabilities import sampling_problem

        problem = sampling_problem(spec)
        if problem is not None:
            message, fix = problem
            raise ConfigError(message, file=file, where=f"{spec.where}.params", fix=fix)
        extra = spec.params.get("extra")
        if extra is not None and not isinstance(extra, dict):
            raise ConfigError(
                "params.extra must be a mapping",
                file=file,
                where=f"{spec.where}.params.extra",
                fix="write extra: {field: value}",
            )

    # ---- wire format (subclasses) -----------------------------------------------------------

    def auth_headers(self, key: str) -> dict[str, str]:
        raise NotImplementedError

    def base_headers(self) -> dict[str, str]:
        return {}

    def build_body(self, request: Request) -> dict[str, Any]:
        raise NotImplementedError

    def parse_body(self, data: Any, request: Request | None = None) -> Completion:
        """Turn a 2xx JSON body (the answer to ``request``) into a Completion; raise
        KeyError/TypeError/ValueError if malformed."""
        raise NotImplementedError

    def batch_api(self) -> BatchApi | None:
        """This model's batch endpoints (evalwh.providers.batching), or None when the
        provider has no batch API."""
        return None

    def error_detail(self, data: Any) -> str | None:
        """The provider's own error message from an error body, if it has one."""
        if isinstance(data, dict):
            err = data.get("error")
            if isinstance(err, dict):
                kind, message = err.get("type") or err.get("code"), err.get("message")
                if message:
                    return f"{kind}: {message}" if kind else str(message)
            elif isinstance(err, str) and err:
                return err
            for key in ("message", "detail"):
                if data.get(key):
                    value = data[key]
                    return value if isinstance(value, str) else excerpt(json.dumps(value))
        return None

    # ---- plumbing ---------------------------------------------------------------------------

    def _fail(
        self,
        message: str,
        *,
        retryable: bool,
        kind: str,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> ProviderError:
        """The error of a failed request, its secrets redacted. Whether another attempt may
        help and what kind of failure it was are always decided by the caller."""
        return ProviderError(
            redact(f"{self.name}: {message}", self._secrets),
            retryable=retryable,
            kind=kind,
            status=status,
            retry_after=retry_after,
        )

    def _missing_secret(self, name: str) -> ProviderError:
        return ProviderError(
            f"{self.name}: {name} is not set; export it or put it in .evalwh.secrets.yaml",
            retryable=False,
            kind="auth",
        )

    def _secret(self, name: str) -> str:
        try:
            value = get_secret(name)
        except ConfigError as exc:
            raise ProviderError(f"{self.name}: {exc}", retryable=False, kind="auth") from None
        if not value:
            raise self._missing_secret(name)
        self._secrets.append(value)
        return value

    def _resolve_headers(self) -> dict[str, str]:
        headers = {"user-agent": f"evalwh/{_evalwh_version}", **self.base_headers()}
        names = self.key_names(self.spec)
        if len(names) > 1:  # the first one set (Google: GEMINI_API_KEY, else GOOGLE_API_KEY)
            self.key_env = next((n for n in names if get_secret(n)), names[0])
        if self.key_env:
            headers.update(self.auth_headers(self._secret(self.key_env)))
        for key, value in (self.spec.options.get("headers") or {}).items():
            name = str(key)
            # header names are case-insensitive: `X-Api-Key` replaces our `x-api-key`, it is
            # not sent beside it
            for same in [k for k in headers if k.lower() == name.lower()]:
                del headers[same]
            headers[name] = SECRET_REF.sub(lambda m: self._secret(m.group(1)), str(value))
        return headers

    def _client_for_loop(self) -> httpx.AsyncClient:
        """A pooled keep-alive client, built on first use in the running event loop.

        The pool is split into shards of at most ``POOL_SHARD`` connections used in turn:
        httpx walks every connection of its pool on each request, which at 128 connections
        costs more CPU than a request's whole budget on 2 cores (benchmarks/README.md:
        38x the ideal wall time at concurrency 128, about 2x with shards). The shards share
        one SSL context (building one loads the CA bundle).
        """
        loop = asyncio.get_running_loop()
        if not self._clients or self._loop is not loop:
            # A client is bound to the event loop it first ran in; a new loop needs a new one.
            fast_async_detection()
            size = max(DEFAULT_MAX_CONNECTIONS, self.spec.max_concurrency or 0)
            # no TLS on an http:// URL: nothing to verify, so no CA bundle to load per shard
            verify: Any = ssl.create_default_context() if self.url.startswith("https") else False
            timeout = httpx.Timeout(self.spec.timeout_s, pool=None)
            # parsed once: a str URL is parsed again on every request (~0.1 ms), and headers
            # set on the client are normalised once instead of per request
            self._target = httpx.URL(self.url)
            headers = self._headers or {}
            if http_aiohttp.usable_for(self.url):  # one aiohttp pool: no walk over its connections
                shards, per = 1, size
                self._clients = [
                    httpx.AsyncClient(
                        timeout=timeout,
                        headers=headers,
                        transport=http_aiohttp.transport(verify, size, 30.0),
                        follow_redirects=False,
                    )
                ]
            else:
                shards = max(1, math.ceil(size / POOL_SHARD))
                per = math.ceil(size / shards)
                limits = httpx.Limits(
                    max_connections=per, max_keepalive_connections=per, keepalive_expiry=30.0
                )
                self._clients = [
                    httpx.AsyncClient(
                        verify=verify,
                        timeout=timeout,
                        headers=headers,
                        limits=limits,
                        follow_redirects=False,
                    )
                    for _ in range(shards)
                ]
            self._busy = [0] * shards
            self._per_shard = per
            self._client = self._clients[0]
            self._loop = loop
        # the first shard with a free connection, so sequential requests reuse one connection
        busy = self._busy
        self._turn = next(
            (i for i, n in enumerate(busy) if n < self._per_shard), busy.index(min(busy))
        )
        return self._clients[self._turn]

    async def post_json(self, body: dict[str, Any]) -> Any:
        """POST ``body``; the parsed JSON of a 2xx answer, or a ProviderError."""
        return (await self._post(body))[0]

    async def _post(self, body: dict[str, Any]) -> tuple[Any, float]:
        """:meth:`post_json`, and the request's own time in milliseconds: from sending it to
        the last byte of the answer (the client's set-up on first use is not in it)."""
        response, content, latency_ms = await self._exchange("POST", None, json=body)
        return self._json(response, content), latency_ms

    async def send(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        content: bytes | None = None,
        files: Any = None,
        params: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
        limit: int | None = None,
    ) -> Any:
        """One call to another endpoint of the same API (batch jobs, files): ``path`` is
        appended to the model's ``base_url`` (or the default one) unless it is a full URL.
        The parsed JSON of a 2xx answer; every failure is a ProviderError mapped as for a
        chat request (the table above). ``limit`` bounds the reply's bytes (default
        ``max_response_bytes``)."""
        response, body, _ = await self._exchange(
            method,
            self.api_url(path),
            json=json,
            content=content,
            files=files,
            params=params,
            headers=headers,
            limit=limit,
        )
        return self._json(response, body)

    async def send_lines(
        self, method: str, path: str, *, params: dict[str, str] | None = None
    ) -> AsyncIterator[bytes]:
        """The lines of a 2xx reply (a JSONL results file), each ``bytes`` without its line
        end, read as they come: a results file is never held whole. A line longer than
        ``max_response_bytes`` is a ``bad_response`` error."""
        if self._headers is None:
            self._headers = self._resolve_headers()
        client = self._client_for_loop()
        url = self.api_url(path)
        with self._mapped_errors():
            request = client.build_request(method, url, params=params)
            response = await client.send(request, stream=True)
            try:
                if not 200 <= response.status_code < 300:
                    content = await self._read_bounded(response)
                    text = content.decode(response.encoding or "utf-8", errors="replace")
                    raise self._status_error(response, text)
                line = bytearray()  # the line being read: only its own bytes are held
                async for chunk in response.aiter_bytes():
                    start = 0
                    while (end := chunk.find(b"\n", start)) != -1:
                        line += chunk[start:end]
                        start = end + 1
                        self._check_line(line, response.status_code)
                        if line.strip():
                            yield bytes(line).rstrip(b"\r")
                        line.clear()
                    line += chunk[start:]
                    self._check_line(line, response.status_code)
                if line.strip():
                    yield bytes(line).rstrip(b"\r")
            finally:
                await response.aclose()

    def _check_line(self, line: bytearray, status: int) -> None:
        if len(line) > self.max_response_bytes:
            raise self._too_long(f"has a line of {len(line):,}+ bytes", status)

    def api_url(self, path: str) -> str:
        """``path`` under the API's root (``base_url`` or the provider's default), or ``path``
        itself when it is a full URL (a results file the API named)."""
        if path.startswith(("http://", "https://")):
            return path
        base = self.spec.options.get("base_url") or self.default_base_url or ""
        return str(base).rstrip("/") + "/" + path.lstrip("/")

    async def _exchange(
        self,
        method: str,
        url: httpx.URL | str | None,
        *,
        json: Any = None,
        content: bytes | None = None,
        files: Any = None,
        params: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
        limit: int | None = None,
    ) -> tuple[httpx.Response, bytes, float]:
        """One request on the pooled client: its response, its body (bounded) and its own time
        in milliseconds. A non-2xx status is a ProviderError. ``url`` None: the model's
        chat endpoint."""
        if self._headers is None:
            self._headers = self._resolve_headers()
        client = self._client_for_loop()
        if url is None:
            url = self._target
        busy, shard = self._busy, self._turn
        busy[shard] += 1
        try:
            with self._mapped_errors():
                sent = time.perf_counter()
                request = client.build_request(
                    method,
                    url,
                    json=json,
                    content=content,
                    files=files,
                    params=params,
                    headers=headers,
                )
                response = await client.send(request, stream=True)
                try:
                    body = await self._read_bounded(response, limit)
                finally:
                    await response.aclose()
                latency_ms = (time.perf_counter() - sent) * 1000
        finally:
            busy[shard] -= 1
        if not 200 <= response.status_code < 300:
            text = body.decode(response.encoding or "utf-8", errors="replace")
            raise self._status_error(response, text)
        return response, body, latency_ms

    @contextlib.contextmanager
    def _mapped_errors(self) -> Iterator[None]:
        """httpx's failures as ProviderErrors (timeout, connection, other)."""
        try:
            yield
        except httpx.TimeoutException as exc:
            raise self._fail(
                f"request timed out after {self.spec.timeout_s:g}s ({type(exc).__name__})",
                retryable=True,
                kind="timeout",
            ) from None
        except httpx.ConnectError as exc:  # refused or unresolvable: nothing answers there
            raise self._fail(
                f"{cannot_connect(shown_url(self.url))} ({type(exc).__name__}: "
                f"{str(exc) or 'no detail'})",
                retryable=True,
                kind="connection",
            ) from None
        except (httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError) as exc:
            raise self._fail(
                f"connection failed ({type(exc).__name__}: {str(exc) or 'no detail'})",
                retryable=True,
                kind="connection",
            ) from None
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise self._fail(
                f"request failed ({type(exc).__name__}: {exc})", retryable=False, kind="http"
            ) from None

    def _json(self, response: httpx.Response, content: bytes) -> Any:
        """A 2xx body's JSON, or a ``bad_response`` error with an excerpt."""
        status = response.status_code
        text = content.decode(response.encoding or "utf-8", errors="replace")
        try:
            return json.loads(text)
        except ValueError:
            raise self._fail(
                f"HTTP {status} with a body that is not JSON: {excerpt(text)}",
                retryable=False,
                kind="bad_response",
                status=status,
            ) from None

    async def _read_bounded(self, response: httpx.Response, limit: int | None = None) -> bytes:
        """The reply's body, read (decompressed) while it comes, refused once it passes
        ``limit`` (``max_response_bytes``): a declared ``Content-Length`` over it before a byte
        is read."""
        limit = limit or self.max_response_bytes
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise self._too_long(f"declares {int(declared):,} bytes", response.status_code)
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise self._too_long(
                    f"passed {limit:,} bytes (reading stopped at {size:,})", response.status_code
                )
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def _too_long(self, how: str, status: int) -> ProviderError:
        return self._fail(
            f"HTTP {status}: the reply {how}, over max_response_bytes ({self.max_response_bytes:,})",
            retryable=False,
            kind="bad_response",
            status=status,
        )

    def _status_error(self, response: httpx.Response, text: str) -> ProviderError:
        return self.status_failure(response.status_code, text, response.headers)

    def status_failure(
        self, status: int, text: str, headers: httpx.Headers | dict[str, str] | None = None
    ) -> ProviderError:
        """The error of a reply with a non-2xx ``status`` and body ``text`` (``headers`` for
        its Retry-After): also the error of one request in a batch whose result carries the
        status its live request would have had."""
        try:
            detail = self.error_detail(json.loads(text))
        except ValueError:
            detail = None
        detail = sanitize(detail, DETAIL_CHARS, extra=self._secrets) if detail else excerpt(text)
        retryable, kind = status_kind(status)
        hint = ""
        if kind == "auth" and self.key_env:
            hint = f" {check_key(self.key_env)}"
        return self._fail(
            f"HTTP {status}{hint}: {detail}",
            retryable=retryable,
            retry_after=parse_retry_after(headers or {}) if retryable else None,
            status=status,
            kind=kind,
        )

    async def complete(self, request: Request) -> Completion:
        body = self.build_body(request)
        data, latency_ms = await self._post(body)
        completion = self.parse_reply(data, request)
        completion.latency_ms = latency_ms
        return completion

    def parse_reply(self, data: Any, request: Request | None = None) -> Completion:
        """:meth:`parse_body`, its answer cut to ``max_output_bytes``; a reply it cannot read
        is a ``bad_response`` error with an excerpt (a live answer, or one of a batch's)."""
        try:
            completion = self.parse_body(data, request)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            raw = json.dumps(data, ensure_ascii=False) if not isinstance(data, str) else data
            raise self._fail(
                f"unexpected response ({type(exc).__name__}: {exc}): {excerpt(raw)}",
                retryable=False,
                kind="bad_response",
                status=200,
            ) from None
        return cut_answer(completion, self.max_output_bytes)

    async def aclose(self) -> None:
        clients, self._clients, self._client = self._clients, [], None
        if self._loop is asyncio.get_running_loop():
            for client in clients:
                await client.aclose()
        self._loop = None


def merge_extra(body: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    """Shallow-merge ``params.extra`` into the body (provider-specific pass-through)."""
    extra = params.get("extra")
    if isinstance(extra, dict):
        body.update(extra)
    return body
