"""A provider's HTTP error as evalwh reports it, pinned where mutation testing found it loose
(docs/testing.md): the provider's own message in each shape providers write it, the key hint,
the retry wait of an error that is retried, the bound on a long message and the key it echoes.
Which statuses are retried is in test_providers_http.py."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from evalwh.providers.base import ProviderError
from evalwh.providers.http import DETAIL_CHARS
from tests.test_providers_http import make

KEY = "sk-ant-api03-" + "Q7eRrOrK3y" * 5


def provider(name: str = "anthropic") -> Any:
    return make(name, "http://127.0.0.1:9")  # never contacted: errors are built from replies


def failure(status: int, body: Any, prov: Any = None, **headers: str) -> ProviderError:
    text = body if isinstance(body, str) else json.dumps(body)
    prov = prov or provider()
    return prov._status_error(httpx.Response(status, headers=headers), text)  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ({"error": {"type": "invalid_request_error", "message": "bad"}}, "invalid_request_error: bad"),
        ({"error": {"code": "model_not_found", "message": "no such"}}, "model_not_found: no such"),
        ({"error": {"message": "plain"}}, "plain"),
        ({"error": "a string error"}, "a string error"),
        ({"error": "", "message": "the message key"}, "the message key"),
        ({"detail": "not found"}, "not found"),
        ({"detail": [{"loc": ["body"], "msg": "field required"}]},
         '[{"loc": ["body"], "msg": "field required"}]'),
    ],
)  # fmt: skip
def test_the_providers_own_message_is_read_from_each_shape_of_error_body(
    body: dict[str, Any], detail: str
) -> None:
    assert str(failure(400, body)) == f"anthropic: HTTP 400: {detail}"


def test_only_an_auth_failure_names_the_key_variable() -> None:
    assert str(failure(401, {"error": {"message": "denied"}})) == (
        "anthropic: HTTP 401 (check ANTHROPIC_API_KEY): denied"
    )
    assert str(failure(500, {"error": {"message": "down"}})) == "anthropic: HTTP 500: down"


def test_a_retry_after_is_kept_only_for_an_error_that_is_retried() -> None:
    assert failure(503, "busy", **{"Retry-After": "7"}).retry_after == 7.0
    assert failure(400, "bad", **{"Retry-After": "7"}).retry_after is None


def test_a_long_provider_message_is_cut_to_its_bound() -> None:
    message = str(failure(400, {"error": {"message": "y" * 5000}}))
    assert message == f"anthropic: HTTP 400: {'y' * DETAIL_CHARS}..."


def test_a_key_the_provider_echoes_at_the_cut_leaves_no_part_of_it() -> None:
    # Attack: an error body that echoes the key just where the message is cut. Redacting
    # after the cut would miss the key's first characters (the full value no longer matches).
    prov = provider()
    prov._secrets.append(KEY)  # what a request that sent the key has noted
    message = str(failure(400, {"error": {"message": "x" * (DETAIL_CHARS - 5) + KEY}}, prov))
    assert KEY[:5] not in message
