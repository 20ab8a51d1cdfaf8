"""What the batch adapters (batch_anthropic, batch_google) share in reading a provider's batch
replies: each request's outcome as a :class:`~evalwh.providers.batching.BatchResult`, and the
checks on what a reply names (job ids, file names) before it goes into a URL.

A provider's reply is untrusted: a job id or file name it gives is put into a request path
only when it has the API's shape (no ``/``, ``..``, ``?`` or ``#`` smuggled in), and a
results line that cannot be read is that one request's ``bad_response``, never an exception
for the job.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from evalwh.providers.base import ProviderError, Request
from evalwh.providers.batching import BatchResult

if TYPE_CHECKING:
    from evalwh.providers.http import HttpProvider

# what an error says of a line it could not read
LINE_EXCERPT = 200


def answer(
    provider: HttpProvider, custom_id: str, data: Any, request: Request | None
) -> BatchResult:
    """A request's answer as the live provider parses it (``parse_reply``: the same
    completion, tokens and finish reason); an answer it cannot read is a ``bad_response``."""
    try:
        return BatchResult(custom_id, completion=provider.parse_reply(data, request))
    except ProviderError as exc:
        return BatchResult(custom_id, error=exc)


def failed(
    provider: HttpProvider,
    custom_id: str,
    message: str,
    *,
    kind: str,
    retryable: bool,
    status: int | None = None,
) -> BatchResult:
    """A request of the job that did not give an answer (its secrets redacted)."""
    error = provider._fail(message, retryable=retryable, kind=kind, status=status)
    return BatchResult(custom_id, error=error)


def refused(
    provider: HttpProvider, custom_id: str, error: dict[str, Any], status: int | None
) -> BatchResult:
    """A request the API answered with an error object (``error``: the reply's whole error
    body, as ``error_detail`` reads it); ``status`` the HTTP status the live API gives that
    error, which decides the kind and whether a retry may help as for a live reply."""
    from evalwh.config.secrets import sanitize
    from evalwh.providers.http import DETAIL_CHARS, status_kind

    retryable, kind = status_kind(status) if status is not None else (False, "http")
    detail = provider.error_detail(error) or "no error message"
    detail = sanitize(detail, DETAIL_CHARS, extra=provider._secrets)
    return failed(
        provider,
        custom_id,
        f"batch request failed: {detail}",
        kind=kind,
        retryable=retryable,
        status=status,
    )


def unreadable(provider: HttpProvider, custom_id: str, what: str, raw: bytes | str) -> BatchResult:
    """A results line (or entry) that is not what the API documents: ``bad_response``."""
    from evalwh.providers.http import excerpt

    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
    return failed(
        provider,
        custom_id,
        f"batch result {what}: {excerpt(text, LINE_EXCERPT)}",
        kind="bad_response",
        retryable=False,
        status=200,
    )


def read_line(raw: bytes, id_field: str) -> tuple[str | None, dict[str, Any] | None]:
    """A JSONL results line: its request's id (``id_field``) and the object, or (the id when
    the broken line still shows one, None) for a line that is not a JSON object."""
    try:
        data = json.loads(raw)
    except ValueError:
        data = None
    if isinstance(data, dict):
        found = data.get(id_field)
        return (found if isinstance(found, str) and found else None), data
    seen = re.search(
        rb'"' + re.escape(id_field.encode()) + rb'"\s*:\s*"([A-Za-z0-9_-]{1,64})"', raw
    )
    return (seen.group(1).decode() if seen else None), None


def checked_name(provider: HttpProvider, value: Any, shape: re.Pattern[str], what: str) -> str:
    """``value`` when it is a string of ``shape`` (a job id, a file name the API gave),
    else a ``bad_response`` error: it never goes into a URL unchecked."""
    if isinstance(value, str) and shape.fullmatch(value):
        return value
    from evalwh.providers.http import excerpt

    raise provider._fail(
        f"the API named a {what} evalwh will not put in a URL: {excerpt(repr(value), 80)}",
        retryable=False,
        kind="bad_response",
    )


def count(value: Any) -> int:
    """A request count from a reply: an int, or an int64 as JSON writes it (a string of
    digits); anything else is 0."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return 0
