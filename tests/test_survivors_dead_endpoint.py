"""A model whose endpoint cannot be reached, pinned where mutation testing found it loose
(docs/testing.md): which failures count as a refused connection, that the count gives up at
exactly DEAD_ENDPOINT_AFTER and only before any answer, and the message the run stores."""

from __future__ import annotations

import pytest

from evalwh.config.model import ModelSpec
from evalwh.engine.limits import DEAD_ENDPOINT_AFTER
from evalwh.engine.runner import Endpoint
from evalwh.providers.base import ProviderError

REFUSED = "ConnectError: [Errno 111] Connection refused"


def endpoint() -> Endpoint:
    return Endpoint.for_model(ModelSpec("m", "openai-compatible", "local"), None)  # type: ignore[arg-type]


def fail(ep: Endpoint, times: int, text: str = REFUSED, kind: str = "connection") -> None:
    for _ in range(times):
        ep.note_failure(ProviderError(text, kind=kind))


@pytest.mark.parametrize(
    "text", [REFUSED, "ConnectError: name or service not known", "connection REFUSED by peer"]
)
def test_a_refused_connection_counts_by_either_word(text: str) -> None:
    ep = endpoint()
    fail(ep, 1, text)
    assert ep.refused == 1


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("ReadTimeout: the server did not answer in 5 s", "connection"),  # reached, then slow
        (REFUSED, "server"),  # an HTTP error that merely quotes the words
    ],
)
def test_other_failures_are_not_counted(text: str, kind: str) -> None:
    ep = endpoint()
    fail(ep, DEAD_ENDPOINT_AFTER, text, kind)
    assert (ep.refused, ep.unreachable) == (0, None)


def test_the_endpoint_is_given_up_at_exactly_the_limit_with_the_first_count_kept() -> None:
    ep = endpoint()
    fail(ep, DEAD_ENDPOINT_AFTER - 1)
    assert (ep.refused, ep.unreachable) == (DEAD_ENDPOINT_AFTER - 1, None)
    fail(ep, 1)
    message = (
        f"endpoint unreachable: the first {DEAD_ENDPOINT_AFTER} connection attempts to model "
        f"'m' failed ({REFUSED}); its remaining cells were not requested"
    )
    assert ep.unreachable == message
    fail(ep, 3, "ConnectError: another text")
    assert ep.refused == DEAD_ENDPOINT_AFTER + 3 and ep.unreachable == message


def test_an_endpoint_that_answered_once_is_never_given_up() -> None:
    ep = endpoint()
    ep.answered = True
    fail(ep, DEAD_ENDPOINT_AFTER * 2)
    assert (ep.refused, ep.unreachable) == (0, None)
