"""One request through the engine (evalwh.engine.runner.Engine.call), called directly on the
mock provider: the answer cache and what turns it off, the key's scope, the cost cap's refusal
before a request and its settlement after one.

Written from mutants that survived the mutation run (docs/testing.md). Whole runs with a cache
and a cap are in test_engine.py and test_datasources.py.
"""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

import pytest

from evalwh import providers
from evalwh.config.model import Case, ModelSpec, Price
from evalwh.config.outputs import OutputSpec
from evalwh.engine import runner
from evalwh.engine.budget import Budget
from evalwh.engine.plan import request_hash, request_scope
from evalwh.engine.runner import CachedAnswer, Call, Endpoint, Engine
from evalwh.providers.base import Completion, ProviderError

# $1 per input token, nothing per output token: a reservation is the prompt's characters / 4
PRICE = Price(input_per_mtok=1e6, output_per_mtok=0.0)


def endpoint(price: Price | None = None) -> Endpoint:
    model = ModelSpec(
        id="m", provider="mock", model="m", price=price, options={"mock": {"default": "hello"}}
    )
    return Endpoint.for_model(model, providers.create(model))


def engine(ep: Endpoint, **kw: Any) -> Engine:
    plan = SimpleNamespace(models=[ep.model])
    return Engine(plan, {"m": ep}, None, None, concurrency=4, **kw)  # type: ignore[arg-type]


def text(chars: int) -> list[dict[str, Any]]:
    return [{"role": "user", "content": [{"type": "text", "text": "x" * chars}]}]


def call(
    eng: Engine, ep: Endpoint, messages: Any, case: str = "c1", variant: str = "v", repeat: int = 0
) -> Call:
    return asyncio.run(eng.call(ep, messages, Case(id=case), variant, repeat))


def test_a_cached_answer_is_served_without_a_request_unless_reuse_is_off() -> None:
    ep = endpoint()
    eng = engine(ep)
    sent = call(eng, ep, text(8))
    assert (sent.cached, sent.attempts, sent.answer is not None) == (False, 1, True)
    assert sent.key == request_hash(
        ep.identity, text(8), 0, scope=request_scope(ep.model, "v", "c1")
    )
    stored = CachedAnswer("from the cache", 3, 4, 5.0)
    eng.cache[sent.key] = stored
    hit = call(eng, ep, text(8))
    assert (hit.key, hit.answer, hit.error, hit.cached, hit.attempts) == (
        sent.key, stored, None, True, 0,
    )  # fmt: skip
    call(eng, ep, text(8))
    assert (eng.stats.cache_hits, eng.stats.requests) == (2, 1)
    fresh = engine(ep, cache={sent.key: stored}, reuse=False)  # --no-cache
    again = call(fresh, ep, text(8))
    assert (again.cached, again.answer.output if again.answer else None) == (False, "hello")


def test_a_mock_requests_key_depends_on_its_case_variant_and_repeat() -> None:
    ep = endpoint()
    eng = engine(ep)
    keys = {
        call(eng, ep, text(8)).key,
        call(eng, ep, text(8), case="c2").key,
        call(eng, ep, text(8), variant="w").key,
        call(eng, ep, text(8), repeat=1).key,
    }
    assert len(keys) == 4


def test_a_request_the_cap_would_cross_is_not_sent() -> None:
    ep = endpoint(PRICE)
    budget = Budget(cap=9.5)
    eng = engine(ep, budget=budget)
    refused = call(eng, ep, text(40))  # 40 characters: 10 tokens, $10
    assert (refused.answer, refused.cached, refused.attempts) == (None, False, 0)
    assert refused.error is not None
    assert (refused.error.kind, refused.error.retryable) == ("budget", False)
    assert str(refused.error) == f"not sent: {budget.reason}"
    assert eng.stats.requests == 0 and budget.reserved == 0.0


def test_a_sent_request_settles_its_reservation_with_what_it_cost() -> None:
    ep = endpoint(PRICE)
    budget = Budget(cap=100.0)
    eng = engine(ep, budget=budget)
    sent = call(eng, ep, text(40))
    assert sent.error is None and sent.answer is not None
    assert budget.reserved == 0.0
    assert budget.spent == sent.cost(ep.model) == 12.0  # the mock counts 12 input tokens
    # the cost is remembered as the model's largest: a one-token reservation is raised to it
    assert budget.reservation(ep.model, 4) == 12.0


class Echo:
    """A provider that answers with what evalwh asked: the repeat and whether a schema came."""

    structured_output = True  # JSON by schema is asked natively

    def __init__(self) -> None:
        self.requests: list[Any] = []

    async def complete(self, request: Any) -> Completion:
        self.requests.append(request)
        return Completion(
            text=f"{request.repeat} {request.output is not None}", input_tokens=1, output_tokens=1
        )


def test_a_request_carries_its_repeat_and_schema_and_the_schema_is_in_its_key() -> None:
    model = ModelSpec(id="m", provider="echo", model="m", price=PRICE)
    echo = Echo()
    ep = Endpoint.for_model(model, echo)  # type: ignore[arg-type]
    schema = OutputSpec({"type": "object"})
    for budget in (None, Budget(cap=100.0)):  # with and without a cost cap
        eng = engine(ep, budget=budget, reuse=False)
        plain = asyncio.run(eng.call(ep, text(8), Case(id="c1"), "judge:j"))  # repeat: 0
        shaped = asyncio.run(eng.call(ep, text(8), Case(id="c1"), "v", 2, schema))
        assert (plain.answer.output if plain.answer else None) == "0 False"
        assert (shaped.answer.output if shaped.answer else None) == "2 True"
        assert plain.key == request_hash(ep.identity, text(8), 0, scope="")
        assert shaped.key == request_hash(
            ep.identity, text(8), 2, scope=request_scope(model, "v", "c1", schema)
        )
        assert plain.key != shaped.key


class Scripted:
    """A provider that plays a script: per attempt, an error to raise or seconds to take."""

    structured_output = False

    def __init__(self, *steps: Any) -> None:
        self.steps = list(steps)
        self.attempts: list[int] = []  # the attempt number each request carried

    async def complete(self, request: Any) -> Completion:
        self.attempts.append(request.attempt)
        step = self.steps.pop(0) if self.steps else 0.0
        if isinstance(step, ProviderError):
            raise step
        await asyncio.sleep(step)
        return Completion(text="ok", input_tokens=1, output_tokens=1)


def scripted(*steps: Any, **limits: Any) -> tuple[Engine, Endpoint]:
    model = ModelSpec(id="m", provider="scripted", model="m", **limits)
    ep = Endpoint.for_model(model, Scripted(*steps))  # type: ignore[arg-type]
    return engine(ep, reuse=False), ep


def send(eng: Engine, ep: Endpoint) -> Call:
    return asyncio.run(eng.call(ep, text(8), Case(id="c1"), "v"))


def test_an_answer_marks_the_endpoint_reachable_and_carries_its_latency() -> None:
    eng, ep = scripted(0.01)
    answered = send(eng, ep)
    assert ep.answered is True
    assert answered.answer is not None and answered.answer.latency_ms is not None
    assert 5.0 <= answered.answer.latency_ms < 5000.0


def test_an_unreachable_endpoint_gets_no_request() -> None:
    eng, ep = scripted()
    ep.unreachable = "m: connection refused 3 times in a row; no more requests are sent"
    dead = send(eng, ep)
    assert (dead.answer, dead.cached, dead.attempts) == (None, False, 0)
    assert dead.error is not None
    assert (str(dead.error), dead.error.kind, dead.error.retryable) == (
        ep.unreachable, "unreachable", False,
    )  # fmt: skip
    assert eng.stats.requests == 0


def test_a_deadline_passed_before_the_first_attempt_sends_nothing() -> None:
    eng, ep = scripted(deadline_s=0.0)
    late = send(eng, ep)
    assert (late.answer, late.cached, late.attempts) == (None, False, 0)
    assert late.error is not None and late.error.kind == "deadline"
    assert str(late.error) == (
        "gave up after 0 attempt(s): the call's deadline_s of 0 s (retries and waits included)"
        " would pass"
    )


def test_a_timeout_past_the_deadline_gives_up_naming_the_attempts() -> None:
    eng, ep = scripted(5.0, timeout_s=5.0, deadline_s=0.05)
    started = time.monotonic()
    late = send(eng, ep)
    assert time.monotonic() - started < 0.8  # the attempt was cut at the deadline
    assert (late.cached, late.attempts) == (False, 1)
    assert late.error is not None and late.error.kind == "deadline"
    assert str(late.error).startswith("gave up after 1 attempt(s): the call's deadline_s of 0.05 s")


def test_a_timeout_within_the_deadline_is_retried() -> None:
    eng, ep = scripted(5.0, 5.0, timeout_s=0.05, max_retries=1, deadline_s=30.0)
    failed = send(eng, ep)
    assert failed.attempts == 2 and eng.stats.retries == 1
    assert failed.error is not None
    assert (str(failed.error), failed.error.kind) == ("timed out after 0.05 s", "timeout")


def test_a_rate_limit_halves_the_adaptive_limit() -> None:
    limited = ProviderError("429", retryable=True, retry_after=0.01, kind="rate_limit")
    eng, ep = scripted(limited, 0.0, max_retries=2)
    assert ep.adaptive is not None and ep.adaptive.limit == 4.0  # the engine's concurrency
    answered = send(eng, ep)
    assert answered.answer is not None and answered.attempts == 2
    assert (ep.adaptive.decreases, ep.adaptive.limit) == (1, 2.5)  # halved, then one answer


def test_retries_carry_their_attempt_number_and_are_counted() -> None:
    busy = ProviderError("503", retryable=True, retry_after=0.01, kind="provider")
    eng, ep = scripted(busy, busy, 0.0, max_retries=3)
    answered = send(eng, ep)
    assert answered.answer is not None and answered.attempts == 3
    assert ep.provider.attempts == [1, 2, 3]  # type: ignore[attr-defined]
    assert (eng.stats.requests, eng.stats.retries) == (3, 2)


def test_a_retry_waits_what_the_server_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[int, float | None]] = []
    real = runner.backoff_s

    def spy(attempt: int, retry_after: float | None) -> float:
        asked.append((attempt, retry_after))
        return real(attempt, retry_after)

    monkeypatch.setattr(runner, "backoff_s", spy)
    eng, ep = scripted(ProviderError("429", retryable=True, retry_after=0.02), 0.0)
    send(eng, ep)
    assert asked == [(1, 0.02)]


def test_a_retry_after_longer_than_evalwh_waits_ends_the_call() -> None:
    too_long = runner.MAX_RETRY_AFTER_S + 1
    error = ProviderError("429 slow down", retryable=True, retry_after=too_long, status=429,
                          kind="rate_limit")  # fmt: skip
    eng, ep = scripted(error, max_retries=3)
    ended = send(eng, ep)
    assert (ended.cached, ended.attempts) == (False, 1)
    assert ended.error is not None
    assert str(ended.error) == (
        f"429 slow down (the server asked to retry after {too_long:g} s, longer than the"
        f" {runner.MAX_RETRY_AFTER_S:g} s evalwh waits)"
    )
    assert (ended.error.retryable, ended.error.status, ended.error.kind) == (
        False,
        429,
        "rate_limit",
    )
    # exactly the longest wait is waited for, unless the deadline comes first
    at_most = ProviderError("429", retryable=True, retry_after=runner.MAX_RETRY_AFTER_S)
    eng, ep = scripted(at_most, deadline_s=1.0, max_retries=3)
    late = send(eng, ep)
    assert late.error is not None and late.error.kind == "deadline"


def test_a_retry_that_would_pass_the_deadline_is_not_waited_for() -> None:
    busy = ProviderError("503 busy", retryable=True, retry_after=0.5, status=503)
    eng, ep = scripted(busy, deadline_s=0.3, max_retries=3)
    late = send(eng, ep)
    assert (late.cached, late.attempts, eng.stats.retries) == (False, 1, 0)
    assert late.error is not None
    assert (late.error.kind, late.error.retryable) == ("deadline", False)
    assert str(late.error) == (
        "gave up after 1 attempt(s): the call's deadline_s of 0.3 s (retries and waits"
        " included) would pass; last error: 503 busy"
    )


def test_a_provider_bug_is_a_final_internal_error() -> None:
    eng, ep = scripted(max_retries=3)

    async def broken(request: Any) -> Completion:
        raise ValueError("boom")

    ep.provider.complete = broken  # type: ignore[method-assign]
    failed = send(eng, ep)
    assert (failed.attempts, failed.cached) == (1, False) and failed.error is not None
    assert (str(failed.error), failed.error.kind, failed.error.retryable) == (
        "ValueError: boom", "internal", False,
    )  # fmt: skip


def test_a_prompted_schema_is_sent_as_an_instruction_not_as_a_schema() -> None:
    model = ModelSpec(id="m", provider="echo", model="m")
    echo = Echo()
    ep = Endpoint.for_model(model, echo)  # type: ignore[arg-type]
    eng = engine(ep, reuse=False)
    prompted = OutputSpec({"type": "object"}, mode="prompted")
    answer = asyncio.run(eng.call(ep, text(8), Case(id="c1"), "v", 0, prompted))
    assert answer.answer is not None and answer.answer.output == "0 False"
    sent = echo.requests[-1].messages[-1]["content"][-1]["text"]
    assert sent == "\n\n" + prompted.instruction()


def test_a_latency_is_the_providers_time_in_milliseconds(monkeypatch: pytest.MonkeyPatch) -> None:
    ticks = iter([10.0, 10.25])
    monkeypatch.setattr(runner.time, "perf_counter", lambda: next(ticks))
    eng, ep = scripted(0.0)
    answered = send(eng, ep)
    assert answered.answer is not None and answered.answer.latency_ms == 250.0
