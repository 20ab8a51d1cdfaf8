"""How long evalwh waits before it retries a request, pinned where mutation testing found it
loose (docs/testing.md): the backoff's curve and cap, a server's Retry-After in each of its
forms, and a key that cannot be read being an auth failure that is not retried."""

from __future__ import annotations

import time
from email.utils import formatdate

import pytest

from evalwh.engine import limits
from evalwh.engine.limits import MAX_RETRY_AFTER_S, backoff_s
from evalwh.providers.http import parse_retry_after

# --- backoff without a Retry-After: exponential from 0.5 s, capped at 30 s, jittered -----------


@pytest.fixture
def widest_jitter(monkeypatch: pytest.MonkeyPatch) -> list[tuple[float, float]]:
    """random.uniform at the top of its range, and the ranges it was asked for."""
    asked: list[tuple[float, float]] = []

    def uniform(low: float, high: float) -> float:
        asked.append((low, high))
        return high

    monkeypatch.setattr(limits.random, "uniform", uniform)
    return asked


@pytest.mark.parametrize(
    ("attempt", "seconds"), [(1, 0.5), (2, 1.0), (4, 4.0), (7, 30.0), (20, 30.0)]
)
def test_the_backoff_doubles_from_half_a_second_up_to_thirty(
    widest_jitter: list[tuple[float, float]], attempt: int, seconds: float
) -> None:
    assert backoff_s(attempt, None) == seconds
    assert widest_jitter == [(0.5, 1.0)]  # jitter: between half and all of the step


def test_the_backoff_takes_its_base_and_cap_from_the_caller(
    widest_jitter: list[tuple[float, float]],
) -> None:
    assert backoff_s(3, None, base=2.0, cap=5.0) == 5.0
    assert backoff_s(2, None, base=2.0, cap=5.0) == 4.0


@pytest.mark.parametrize(("given", "waited"), [(0.0, 0.0), (0.5, 0.5), (1e6, MAX_RETRY_AFTER_S)])
def test_a_retry_after_is_waited_as_given_even_zero_and_at_most_a_minute(
    widest_jitter: list[tuple[float, float]], given: float, waited: float
) -> None:
    assert backoff_s(5, given) == waited
    assert widest_jitter == []  # no jitter on a server's word


def test_a_negative_retry_after_falls_back_to_the_backoff(
    widest_jitter: list[tuple[float, float]],
) -> None:
    assert backoff_s(1, -1.0) == 0.5


# --- Retry-After as a server writes it ----------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after-ms": "0"}, 0.0),
        ({"retry-after-ms": "500"}, 0.5),
        ({"retry-after-ms": "-5", "Retry-After": "2"}, 2.0),
        ({"Retry-After-Ms": "250", "Retry-After": "9"}, 0.25),
    ],
)
def test_retry_after_ms_wins_when_it_is_a_number_of_zero_or_more(
    headers: dict[str, str], seconds: float
) -> None:
    assert parse_retry_after(headers) == seconds


def test_an_http_date_without_a_zone_is_read_as_utc() -> None:
    # RFC 5322's "-0000": the time is UTC, its source's zone unknown (Python: a naive datetime)
    header = formatdate(time.time() + 120)
    assert header.endswith("-0000")
    waited = parse_retry_after({"Retry-After": header})
    assert waited is not None and 100 <= waited <= 121


def test_an_http_date_with_a_zone_is_read_in_that_zone() -> None:
    header = formatdate(time.time() + 3600 + 120, localtime=False).replace("-0000", "+0100")
    waited = parse_retry_after({"Retry-After": header})
    assert waited is not None and 100 <= waited <= 121
