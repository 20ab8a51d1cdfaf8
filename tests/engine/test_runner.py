"""How the engine runs a plan (evalwh/engine/runner.py).

Whole runs through the public API: the global and per-model concurrency caps, failures
recorded (never fatal), retries, timeouts, determinism and the answer cache (which --no-cache
turns off, and whose key holds the case id the mock's rules depend on). They use ``Tracking``,
a provider registered as "tracking" for every test here, that records how many requests were
in flight per model and overall.

One request through ``Engine.call``, called directly on the mock provider or a scripted one:
the answer cache and what turns it off, the key's scope, the cost cap's refusal before a
request and its settlement after one, timeouts, deadlines, retries and Retry-After, and a
rate limit's effect on the adaptive limit. Prices there are whole dollars per token ($1 per
input token, nothing per output token: a reservation is the prompt's characters / 4).

The engine's parts between a plan and a request: an endpoint's pacing and limit, the engine's
defaults, the workers (every cell done and counted, the loop yielded to, the writer waited
for), one cell's error and judge cost, a Retry-After that pauses the model's other requests,
a deadline's error, and cases of a datasource that do not render."""

from __future__ import annotations

import asyncio
import heapq
import json
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import duckdb
import pytest

import evalwh
from evalwh import providers
from evalwh.config.loader import load_config
from evalwh.config.model import Case, ModelSpec, Price
from evalwh.config.outputs import OutputSpec
from evalwh.config.secrets import redact
from evalwh.engine import limits, runner
from evalwh.engine.budget import Budget
from evalwh.engine.execute import check_config
from evalwh.engine.limits import DEAD_ENDPOINT_AFTER
from evalwh.engine.plan import Filters, build_plan, request_hash, request_scope
from evalwh.engine.runner import (
    YIELD_EVERY,
    BudgetStop,
    CachedAnswer,
    Call,
    CellResult,
    Endpoint,
    Engine,
    error_text,
)
from evalwh.providers.base import Completion, ProviderError, Request
from tests.builders import case_of, eval_for
from tests.builders import eval_config as config
from tests.conftest import write
from tests.fakes.servers import FakeLLMServer, error, reply


class Tracking:
    """A provider that records how many requests were in flight, per model and overall."""

    in_flight: ClassVar[dict[str, int]] = {}
    peak: ClassVar[dict[str, int]] = {}
    calls: ClassVar[list[tuple[str, str, int]]] = []
    behaviour: ClassVar[dict[str, Any]] = {}

    def __init__(self, spec: Any) -> None:
        self.spec = spec

    @classmethod
    def reset(cls) -> None:
        cls.in_flight, cls.peak, cls.calls, cls.behaviour = {}, {}, [], {}

    async def complete(self, request: Request) -> Completion:
        model = request.model.id
        self.calls.append((model, request.case.id, request.attempt))
        for key in (model, "total"):
            self.in_flight[key] = self.in_flight.get(key, 0) + 1
            self.peak[key] = max(self.peak.get(key, 0), self.in_flight[key])
        try:
            action = self.behaviour.get(request.case.id)
            if callable(action):
                action = action(request)
            await asyncio.sleep(0.02 if action is None else 0)
            if isinstance(action, BaseException):
                raise action
            if isinstance(action, float):
                await asyncio.sleep(action)
            return Completion(text=str(request.case.expected), input_tokens=3, output_tokens=1)
        finally:
            for key in (model, "total"):
                self.in_flight[key] -= 1

    async def aclose(self) -> None:
        return None


@pytest.fixture(autouse=True)
def tracking_provider(monkeypatch: pytest.MonkeyPatch) -> type[Tracking]:
    monkeypatch.setitem(providers.BUILTIN, "tracking", f"{__name__}:Tracking")
    providers.available.cache_clear()
    Tracking.reset()
    yield Tracking
    providers.available.cache_clear()


def test_global_and_per_model_concurrency(tmp_path: Path) -> None:
    cfg = config(
        tmp_path,
        "  - {id: a, provider: tracking, max_concurrency: 2}\n  - {id: b, provider: tracking}",
        30,
        5,
    )
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert result.totals["n"] == 60 and result.totals["n_passed"] == 60
    assert Tracking.peak["a"] == 2
    assert Tracking.peak["total"] == 5  # the global cap is reached and never exceeded
    assert Tracking.peak["b"] <= 5


def test_failures_are_recorded_and_the_run_goes_on(tmp_path: Path) -> None:
    Tracking.behaviour.update(
        {
            "c1": ProviderError("bad request", retryable=False, status=400),
            "c2": RuntimeError("provider bug"),
        }
    )
    cfg = config(tmp_path, "  - {id: a, provider: tracking}", 10)
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert result.status == "completed"
    assert (
        result.totals["n"] == 10
        and result.totals["n_errors"] == 2
        and result.totals["n_passed"] == 8
    )
    rows = (
        evalwh.open_warehouse(tmp_path / "out" / "warehouse.duckdb")
        .sql(
            "SELECT case_id, error, error_kind, attempts, passed FROM cases WHERE error IS NOT NULL ORDER BY case_id"
        )
        .to_pylist()
    )
    assert rows == [
        {
            "case_id": "c1",
            "error": "HTTP 400: bad request",
            "error_kind": "provider",
            "attempts": 1,
            "passed": False,
        },
        {
            "case_id": "c2",
            "error": "RuntimeError: provider bug",
            "error_kind": "internal",
            "attempts": 1,
            "passed": False,
        },
    ]
    # a non-retryable error is asked once only
    assert sum(1 for m, c, _ in Tracking.calls if c == "c1") == 1


def test_transient_errors_are_retried_honouring_retry_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[tuple[int, float | None, float]] = []  # (attempt, Retry-After, seconds waited)
    real = runner.backoff_s

    def spy(attempt: int, retry_after: float | None) -> float:
        waits.append((attempt, retry_after, real(attempt, retry_after)))
        return waits[-1][2]

    monkeypatch.setattr(runner, "backoff_s", spy)

    def flaky(request: Request) -> Any:
        return (
            ProviderError("overloaded", retryable=True, retry_after=0.3, status=429)
            if request.attempt < 3
            else None
        )

    Tracking.behaviour["c0"] = flaky
    cfg = config(tmp_path, "  - {id: a, provider: tracking, max_retries: 3}", 1)
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert waits == [(1, 0.3, 0.3), (2, 0.3, 0.3)]  # two waits of Retry-After 0.3 s
    assert result.totals["n_passed"] == 1 and result.stats["retries"] == 2
    attempts = (
        evalwh.open_warehouse(tmp_path / "out" / "warehouse.duckdb")
        .sql("SELECT attempts FROM cases")
        .to_pylist()
    )
    assert attempts == [{"attempts": 3}]


def test_max_retries_zero_fails_fast(tmp_path: Path) -> None:
    Tracking.behaviour["c0"] = ProviderError("overloaded", retryable=True, status=503)
    cfg = config(tmp_path, "  - {id: a, provider: tracking, max_retries: 0}", 1)
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert result.totals["n_errors"] == 1 and len(Tracking.calls) == 1


def test_timeout_is_an_error_after_retries(tmp_path: Path) -> None:
    Tracking.behaviour["c0"] = 5.0  # sleeps far past the timeout
    cfg = config(tmp_path, "  - {id: a, provider: tracking, timeout_s: 0.05, max_retries: 1}", 2)
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    rows = (
        evalwh.open_warehouse(tmp_path / "out" / "warehouse.duckdb")
        .sql("SELECT error, error_kind, attempts FROM cases WHERE case_id = 'c0'")
        .to_pylist()
    )
    assert rows == [{"error": "timed out after 0.05 s", "error_kind": "timeout", "attempts": 2}]
    assert result.totals["n_passed"] == 1


def test_mock_is_deterministic_and_the_cache_reproduces_scores(
    quickstart: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    first = evalwh.run_eval(quickstart, output_dir=out, no_cache=True)
    second = evalwh.run_eval(quickstart, output_dir=out, no_cache=True)
    third = evalwh.run_eval(quickstart, output_dir=out)
    key = ("variant", "model", "n", "n_passed", "n_errors", "mean_score")
    for a, b, c in zip(first.summary, second.summary, third.summary, strict=True):
        assert [a[k] for k in key] == [b[k] for k in key] == [c[k] for k in key]
    # errors are never cached: the only calls of the cached rerun are the two injected failures
    assert third.stats["cache_hits"] == first.totals["n"] - first.totals["n_errors"]
    assert third.stats["requests"] == first.totals["n_errors"]
    wh = evalwh.open_warehouse(out / "warehouse.duckdb")
    outputs = wh.sql(
        "SELECT run_id, list(output ORDER BY variant, model, case_id) AS o FROM cases GROUP BY run_id"
    ).to_pylist()
    assert len({tuple(r["o"]) for r in outputs}) == 1


def _same_prompt_config(tmp_path: Path) -> Path:
    """Four cases whose rendered prompt is the same text (their vars differ only in a key the
    template does not use); the mock answers case c2 by a rule of its own."""
    models = """\
  - id: m
    provider: mock
    mock:
      rules:
        - when: {case: c2}
          reply: "per-case rule"
        - reply: "same"
  - {id: t, provider: tracking}"""
    cases = "\n".join(
        f"  - {{id: c{i}, vars: {{q: 'same', tag: '{i}'}}, expected: 'same'}}" for i in range(4)
    )
    return config(tmp_path, models, cases=cases)


def test_no_cache_sends_every_request_even_for_identical_prompts(tmp_path: Path) -> None:
    # bug: --no-cache answered cases 1..3 from case 0's answer (cached=true, attempts=0)

    cfg = _same_prompt_config(tmp_path)
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out", no_cache=True)
    assert sorted(c for m, c, _ in Tracking.calls if m == "t") == ["c0", "c1", "c2", "c3"]
    with duckdb.connect(str(tmp_path / "out" / "warehouse.duckdb"), read_only=True) as con:
        rows = con.execute(
            "SELECT model, case_id, cached, attempts, output FROM cases WHERE run_id = ? "
            "ORDER BY model, case_id",
            [result.run_id],
        ).fetchall()
    assert all(not cached and attempts == 1 for _, _, cached, attempts, _ in rows)
    # the mock's per-case rule fires although c2's prompt equals the others'
    assert [out for m, _, _, _, out in rows if m == "m"] == [
        "same",
        "same",
        "per-case rule",
        "same",
    ]


def test_the_mock_never_shares_an_answer_across_cases_with_the_cache_on(tmp_path: Path) -> None:
    # bug: the response-cache key ignored the case id the mock's rules depend on
    cfg = _same_prompt_config(tmp_path)
    first = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    again = evalwh.run_eval(cfg, output_dir=tmp_path / "out")

    with duckdb.connect(str(tmp_path / "out" / "warehouse.duckdb"), read_only=True) as con:
        for run_id in (first.run_id, again.run_id):
            outputs = con.execute(
                "SELECT output FROM cases WHERE run_id = ? AND model = 'm' ORDER BY case_id",
                [run_id],
            ).fetchall()
            assert [o for (o,) in outputs] == ["same", "same", "per-case rule", "same"]


# -- one request through Engine.call ----------------------------------------------------------

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


def test_an_answer_replayed_from_the_journal_is_not_asked_even_under_no_cache() -> None:
    """A resumed run's journaled answer (evalwh.engine.journal) stands for the request: no
    request is sent, even with reuse off (--no-cache: it was paid for by this run), and it is
    not a cache hit."""
    ep = endpoint()
    key = request_hash(ep.identity, text(8), 0, scope=request_scope(ep.model, "v", "c1"))
    kept = Call(key, CachedAnswer("journaled", 3, 4, 5.0), None, False, 2, 1.5, True)
    eng = engine(ep, reuse=False, replay={key: kept})
    got = call(eng, ep, text(8))
    assert got is kept and (got.cached, got.attempts, got.replayed) == (False, 2, True)
    assert (eng.stats.requests, eng.stats.cache_hits, eng.stats.replayed) == (0, 0, 1)
    other = call(eng, ep, text(8), case="c2")  # not journaled: asked
    assert other.answer is not None and other.answer.output == "hello" and eng.stats.requests == 1


def test_every_answer_is_handed_to_the_journal_with_its_attempts_and_wait() -> None:
    """The journal hook sees each answer as it arrives (before scoring), once per answer."""
    seen: list[tuple[Any, ...]] = []
    journal = SimpleNamespace(answered=lambda *args: seen.append(args))
    ep = endpoint()
    eng = engine(ep, journal=journal)
    sent = call(eng, ep, text(8))
    call(eng, ep, text(8))  # a cache hit: not an arrival
    assert len(seen) == 1
    key, spec, answer, attempts, queued_ms = seen[0]
    assert (key, spec, answer, attempts) == (sent.key, ep.model, sent.answer, 1)
    assert queued_ms == sent.queued_ms


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


def test_an_answer_marks_the_endpoint_reachable_and_carries_its_latency(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ticks = iter([7.0, 7.01])  # the provider took 10 ms
    monkeypatch.setattr(
        runner, "time", SimpleNamespace(monotonic=time.monotonic, perf_counter=lambda: next(ticks))
    )
    eng, ep = scripted(0.01)
    answered = send(eng, ep)
    assert ep.answered is True
    assert answered.answer is not None and answered.answer.latency_ms is not None
    assert answered.answer.latency_ms == pytest.approx(10.0)


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


def test_a_timeout_past_the_deadline_gives_up_naming_the_attempts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bounds: list[float | None] = []  # the time each attempt was given
    real = runner._with_timeout

    def spy(awaitable: Any, seconds: float | None) -> Any:
        bounds.append(seconds)
        return real(awaitable, seconds)

    monkeypatch.setattr(runner, "_with_timeout", spy)
    eng, ep = scripted(5.0, timeout_s=5.0, deadline_s=0.05)
    late = send(eng, ep)
    assert len(bounds) == 1 and bounds[0] is not None
    assert bounds[0] <= 0.05  # the attempt was cut at the deadline, not given its 5 s timeout
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


def test_a_providers_own_time_on_the_wire_is_the_latency(monkeypatch: pytest.MonkeyPatch) -> None:
    """An HTTP provider times its request from sending it to the last byte: that is kept, not
    the engine's span of the call (which holds the client's set-up and the body's building)."""
    ticks = iter([10.0, 10.25])
    monkeypatch.setattr(runner.time, "perf_counter", lambda: next(ticks))

    class Timed:
        async def complete(self, request: Request) -> Completion:
            return Completion(text="ok", input_tokens=1, output_tokens=1, latency_ms=7.5)

    ep = Endpoint.for_model(ModelSpec(id="m", provider="timed", model="m"), Timed())  # type: ignore[arg-type]
    answered = send(engine(ep, reuse=False), ep)
    assert answered.answer is not None and answered.answer.latency_ms == 7.5
    assert answered.queued_ms is not None and answered.queued_ms >= 0.0


# -- an endpoint and the engine's defaults ----------------------------------------------------


def model(id: str = "m", **fields: Any) -> ModelSpec:
    return ModelSpec(
        id=id, provider="mock", model=id, options={"mock": {"default": "hi"}}, **fields
    )


MESSAGES = [{"role": "user", "content": [{"type": "text", "text": "q"}]}]


def endpoint_of(spec: ModelSpec) -> Endpoint:
    return Endpoint.for_model(spec, providers.create(spec))


def test_a_judges_endpoint_holds_its_max_concurrency_and_a_models_leaves_it_to_its_workers() -> (
    None
):
    spec = model(max_concurrency=2)
    judge = Endpoint.for_model(spec, providers.create(spec), limited=True)
    assert judge.limit is not None
    asyncio.run(judge.limit.acquire())
    assert not judge.limit.locked()  # one of two taken
    asyncio.run(judge.limit.acquire())
    assert judge.limit.locked()  # a third request waits
    assert endpoint_of(spec).limit is None  # a model runs min(max_concurrency, concurrency) workers
    unbounded = model()
    assert Endpoint.for_model(unbounded, providers.create(unbounded), limited=True).limit is None


def test_an_endpoint_paces_its_models_requests_per_minute() -> None:
    assert endpoint_of(model(requests_per_minute=120)).pacer.interval == 0.5
    assert endpoint_of(model()).pacer.interval == 0.0


PARTS_CONFIG = """\
name: parts
models:
  - {id: a, provider: mock, mock: {default: hi}}
  - {id: b, provider: mock, mock: {default: hi}}
variants:
  - {id: v, messages: [{role: user, content: "{{ q }}"}]OUTPUT}
cases:
CASES
scorecard:
  - {name: has, type: contains, value: hi}
"""


def planned(
    tmp_path: Path, cases: int, models: tuple[str, ...] = ("a", "b"), output: str = ""
) -> Any:
    rows = "\n".join(f"  - {{id: c{i}, vars: {{q: question {i}}}}}" for i in range(cases))
    text = PARTS_CONFIG.replace("CASES", rows).replace("OUTPUT", output)
    (tmp_path / "eval.yaml").write_text(text, encoding="utf-8")
    scorecard, config = check_config(load_config(tmp_path / "eval.yaml"))
    return build_plan(config, Filters(models=models)), scorecard


class Timed:
    """A provider that answers after ``seconds`` (a slow model beside a fast one)."""

    structured_output = False

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    async def complete(self, request: Any) -> Completion:
        await asyncio.sleep(self.seconds)
        return Completion(text="hi", input_tokens=1, output_tokens=1)

    async def aclose(self) -> None:
        return None


def test_an_engine_reuses_answers_keeps_errors_readable_and_has_no_feed_until_a_run() -> None:
    spec = model()
    ep = endpoint_of(spec)
    kept: list[tuple[str, str]] = []
    eng = engine(ep, remember=lambda key, m, answer: kept.append((key, answer.output)))
    assert (eng.reuse, eng.no_look, eng.feed, eng.budget, eng.backpressure) == (
        True, False, None, None, None,
    )  # fmt: skip
    sent = asyncio.run(eng.call(ep, MESSAGES, Case(id="c"), "v"))
    assert kept == [(sent.key, "hi")]  # a new answer is handed over to be stored
    again = asyncio.run(eng.call(ep, MESSAGES, Case(id="c"), "v"))
    assert (again.cached, eng.stats.requests) == (True, 1)


def test_a_given_cache_is_the_one_read() -> None:
    spec = model()
    ep = endpoint_of(spec)
    key = asyncio.run(engine(ep).call(ep, MESSAGES, Case(id="c"), "v")).key
    stored = CachedAnswer("from the warehouse", 1, 1, 1.0)
    eng = engine(ep, cache={key: stored})
    served = asyncio.run(eng.call(ep, MESSAGES, Case(id="c"), "v"))
    assert (served.cached, served.answer) == (True, stored)
    assert eng.stats.requests == 0


def test_only_a_model_with_adaptive_concurrency_gets_an_adaptive_limit() -> None:
    adaptive, fixed = model("a", max_concurrency=3), model("f", adaptive_concurrency=False)
    eps = {"a": endpoint_of(adaptive), "f": endpoint_of(fixed)}
    Engine(SimpleNamespace(models=[adaptive, fixed]), eps, None, None, concurrency=8)  # type: ignore[arg-type]
    assert eps["a"].adaptive is not None and eps["a"].adaptive.ceiling == 3
    assert eps["f"].adaptive is None


def test_an_engine_is_halted_by_a_stop_or_by_its_cost_cap() -> None:
    spec = model()
    eng = engine(endpoint_of(spec))
    assert not eng._halted()
    eng.stop()
    assert eng._halted()  # no cap at all: the stop alone halts
    capped = Budget(cap=1.0)
    eng = engine(endpoint_of(spec), budget=capped)
    assert not eng._halted()
    assert not capped.reserve(2.0)  # over the cap: the budget stops
    assert eng._halted()


# -- the workers -----------------------------------------------------------------------------


def test_every_cell_of_every_model_is_done_and_counted_though_one_model_is_slower(
    tmp_path: Path,
) -> None:
    plan, scorecard = planned(tmp_path, 6)
    plan.models[0] = replace(plan.models[0], max_concurrency=1)  # one worker, 20 ms a cell
    rows: list[CellResult] = []
    eps = {
        "a": Endpoint.for_model(plan.models[0], Timed(0.02)),
        "b": Endpoint.for_model(plan.models[1], Timed(0.0)),  # done long before a
    }
    eng = Engine(plan, eps, scorecard, rows.append, concurrency=8)
    stats = asyncio.run(eng.run())
    assert stats.done == 12 and len(rows) == 12
    assert sorted(r.model.id for r in rows) == ["a"] * 6 + ["b"] * 6
    assert [r.model.id for r in rows][-1] == "a"


def test_a_worker_yields_to_the_loop_every_yield_every_cells_and_waits_out_a_full_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # cached or mock answers never suspend: without the yield one worker would hold the loop
    plan, scorecard = planned(tmp_path, 2 * YIELD_EVERY, ("a",))
    real = asyncio.sleep
    slept: list[tuple[float, int]] = []  # (seconds, cells done at that moment)
    polls = iter([False, True, True, False])  # the writer is full after the second cell

    def full() -> bool:
        return next(polls, False)

    eng = Engine(
        plan, {"a": endpoint_of(plan.models[0])}, scorecard, lambda r: None, concurrency=1,
        backpressure=full,
    )  # fmt: skip

    async def recorded(seconds: float, *args: Any) -> Any:
        slept.append((seconds, eng.stats.done))
        return await real(0, *args)

    monkeypatch.setattr(runner.asyncio, "sleep", recorded)
    asyncio.run(eng.run())
    assert slept == [(0.005, 2), (0, YIELD_EVERY), (0, 2 * YIELD_EVERY)]


def test_a_stopped_streaming_run_leaves_no_task_behind_and_keeps_its_feed(
    tmp_path: Path,
) -> None:
    # the feed's producer waits to queue more cells when the workers stop: it is cancelled
    # and waited for, and the feed stays readable (an interrupted run stores its queued count)
    plan, scorecard = planned(tmp_path, 1, ("a",))
    streamed = [Case(id=f"s{i}", vars={"q": f"streamed {i}"}) for i in range(20)]
    eng: Engine | None = None

    def first_only(result: CellResult) -> None:
        assert eng is not None
        eng.stop()

    eng = Engine(
        plan, {"a": endpoint_of(plan.models[0])}, scorecard, first_only, concurrency=1,
        batches=iter([streamed]),
    )  # fmt: skip

    async def main() -> set[asyncio.Task[Any]]:
        await eng.run()
        return asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]

    assert asyncio.run(main()) == set()
    assert eng.stats.done == 1
    assert eng.feed is not None and 1 < eng.feed.queued < 20  # stopped before the whole page


# -- one cell --------------------------------------------------------------------------------


def cell_engine(tmp_path: Path, answer: Call, **kw: Any) -> tuple[Engine, Any, list[Any]]:
    schema = ", output_schema: {schema: {type: object}, name: reply}"
    plan, scorecard = planned(tmp_path, 1, ("a",), schema)
    eng = Engine(plan, {"a": endpoint_of(plan.models[0])}, scorecard, None, concurrency=1, **kw)  # type: ignore[arg-type]
    asked: list[Any] = []

    async def call(*args: Any, key: str | None = None) -> Call:
        asked.append(args)
        return answer

    eng.call = call  # type: ignore[method-assign]
    return eng, plan, asked


def one_cell(eng: Engine, plan: Any, repeat: int = 0) -> CellResult:
    ep = eng.endpoints["a"]
    return asyncio.run(eng._cell(ep, plan.variants[0], plan.cases[0], repeat))


def failed(error: ProviderError) -> Call:
    return Call("k", None, error, False, 1)


def test_a_failed_cell_is_counted_and_keeps_the_error_or_in_no_look_its_class(
    tmp_path: Path,
) -> None:
    refused = ProviderError("prompt too long: my secret prompt", status=400, kind="provider")
    eng, plan, asked = cell_engine(tmp_path, failed(refused))
    first, second = one_cell(eng, plan, 3), one_cell(eng, plan)
    assert eng.stats.errors == 2
    assert (first.error, first.error_kind, first.output) == (
        "HTTP 400: prompt too long: my secret prompt", "provider", None,
    )  # fmt: skip
    assert first.repeat == 3 and second.scored.passed is False
    variant = plan.variants[0].variant
    assert variant.output is not None
    assert asked[0][3:] == (variant.id, 3, variant.output)  # the repeat and the output spec

    eng, plan, _ = cell_engine(tmp_path, failed(refused), no_look=True)
    assert one_cell(eng, plan).error == "HTTP 400 (provider)"


def test_a_request_refused_by_the_cost_cap_stores_no_cell(tmp_path: Path) -> None:
    capped = ProviderError("the cost cap of $1 would be passed", kind="budget")
    eng, plan, _ = cell_engine(tmp_path, failed(capped))
    with pytest.raises(BudgetStop):
        one_cell(eng, plan)
    assert eng.stats.errors == 0


def test_a_cells_judge_cost_is_what_its_judged_criteria_cost(tmp_path: Path) -> None:
    answered = Call("k", CachedAnswer("hi", 1, 1, 5.0), None, False, 1)
    eng, plan, _ = cell_engine(tmp_path, answered)
    eng.scorecard = SimpleNamespace(judged=[("tone", "j")])  # type: ignore[assignment]
    scored = SimpleNamespace(criteria=[], passed=True)

    async def score(
        output: str, case: Case, messages: Any, calls: Any = None, transcript: Any = None
    ) -> tuple[Any, float, None]:
        return scored, 0.25, None

    eng._score = score  # type: ignore[method-assign]
    result = one_cell(eng, plan)
    assert (result.judge_cost_usd, result.scored, result.output) == (0.25, scored, "hi")


# -- a Retry-After ---------------------------------------------------------------------------


class VirtualTime:
    """A clock that moves only while every task sleeps: ``sleep`` (patched in for
    asyncio.sleep) waits until the clock reaches its end, and ``advance`` (a task) moves the
    clock to the earliest end once nothing else is ready to run. Sleeps overlap as real ones
    do, and no test waits for them."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.timers: list[tuple[float, int, asyncio.Future[None]]] = []
        self.real_sleep = asyncio.sleep

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float, result: Any = None) -> Any:
        if seconds <= 0:
            await self.real_sleep(0)
            return result
        future = asyncio.get_running_loop().create_future()
        heapq.heappush(self.timers, (self.now + seconds, len(self.timers), future))
        await future
        return result

    async def advance(self) -> None:
        while True:
            for _ in range(50):  # every task that can run does, before the clock moves
                await self.real_sleep(0)
            if self.timers:
                self.now, _, future = heapq.heappop(self.timers)
                if not future.done():
                    future.set_result(None)


class LimitedOnce:
    """Answers 429 with a Retry-After to the first request, then answers every request; notes
    when each request arrived (on ``clock``)."""

    structured_output = False

    def __init__(self, retry_after: float, clock: Any = time.monotonic) -> None:
        self.retry_after, self.clock = retry_after, clock
        self.arrived: list[tuple[str, float]] = []
        self.limited = asyncio.Event()

    async def complete(self, request: Any) -> Completion:
        self.arrived.append((request.case.id, self.clock()))
        if len(self.arrived) == 1:
            self.limited.set()
            raise ProviderError(
                "429", retryable=True, retry_after=self.retry_after, kind="rate_limit", status=429
            )
        return Completion(text="ok", input_tokens=1, output_tokens=1)


def test_a_retry_after_pauses_the_models_other_requests_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = VirtualTime()  # the engine's and the limit's clock and sleeps
    monkeypatch.setattr(limits, "time", SimpleNamespace(monotonic=clock.monotonic))
    monkeypatch.setattr(
        runner, "time", SimpleNamespace(monotonic=clock.monotonic, perf_counter=clock.monotonic)
    )
    monkeypatch.setattr(asyncio, "sleep", clock.sleep)
    spec = ModelSpec(id="m", provider="limited", model="m", max_retries=2)
    provider = LimitedOnce(retry_after=1.0, clock=clock.monotonic)
    ep = Endpoint.for_model(spec, provider)  # type: ignore[arg-type]
    eng = engine(ep, reuse=False)

    async def both() -> tuple[Call, Call, float]:
        hand = asyncio.ensure_future(clock.advance())
        first = asyncio.create_task(eng.call(ep, MESSAGES, Case(id="first"), "v"))
        await provider.limited.wait()  # the first request has its 429
        asked = clock.monotonic()
        second = await eng.call(ep, MESSAGES, Case(id="second"), "v")
        hand.cancel()
        return await first, second, asked

    first, second, second_asked = asyncio.run(both())
    limited_at = provider.arrived[0][1]
    second_at = next(at for case, at in provider.arrived if case == "second")
    assert second_at - limited_at >= 0.9  # the server's Retry-After held it back
    # the pause is the second call's queued time, not its latency (the answer took no time);
    # the first call's back-off is its own queued time
    assert second.queued_ms == pytest.approx((second_at - second_asked) * 1000)
    assert second.queued_ms == pytest.approx(1000.0)
    assert second.answer is not None and second.answer.latency_ms == 0.0
    assert (first.attempts, first.queued_ms) == (2, pytest.approx(1000.0))
    assert first.answer is not None and first.answer.latency_ms == 0.0


# Beyond the server's own time, what a request may take on loopback: anything below the
# smallest wait injected below (the 1 s back-off; the set-up is 2 s), so a latency that held
# either would show, while a loaded machine (load 27 on 2 cores once took > 500 ms) does not.
LOOPBACK_MS = 999.0


def test_a_backed_off_request_leaves_the_others_latency_at_the_servers_own_time(
    tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bug (issue 45): latency_ms held time that was not the request's own (a run's p95 went
    from 176 to 1,035 ms on an instant server). Now it is the kept attempt's time from sending
    to the last byte, checked against the server's own time for that request (stamped by the
    fake server); the waits are queued_ms.

    The runner's clock is the real one plus the waits injected here: the back-off's sleep
    moves it by the seconds asked at once (the test waits for nothing and counts the wait
    exactly), and the HTTP client's set-up on first use moves it by 2 s, as a slow set-up
    (importing the transport, loading CA certificates) would."""
    skew: list[float] = []

    class Clock:  # the runner's `time`
        monotonic = staticmethod(lambda: time.monotonic() + sum(skew))
        perf_counter = staticmethod(lambda: time.perf_counter() + sum(skew))

    class Waits:  # the runner's `asyncio`: a sleep moves the clock on instead of waiting
        def __getattr__(self, name: str) -> object:
            return getattr(asyncio, name)

        @staticmethod
        async def sleep(delay: float) -> None:
            skew.append(delay)
            await asyncio.sleep(0)

    from evalwh.providers.http import HttpProvider

    set_up = HttpProvider._client_for_loop

    def slow_set_up(self: HttpProvider) -> Any:
        if not self._clients:
            skew.append(2.0)
        return set_up(self)

    monkeypatch.setattr(runner, "time", Clock)
    monkeypatch.setattr(runner, "asyncio", Waits())
    monkeypatch.setattr(HttpProvider, "_client_for_loop", slow_set_up)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-anthropic-0000")
    server.latency = 0.02
    backed_off: list[int] = []

    def overloaded_once(req: Any) -> Any:  # case c0003's first request: 529, retry after 1 s
        if case_of(req) == "question 3" and not backed_off:
            backed_off.append(req.index)
            return error(529, retry_after=1)
        return None

    server.responder = overloaded_once
    block = (
        f"  - {{id: m, provider: anthropic, model: claude-3-5-haiku-20241022, "
        f"base_url: '{server.url}'}}"
    )
    cfg = eval_for(tmp_path, block, 8, concurrency=4)
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert result.totals["n_passed"] == 8
    assert skew == [2.0, 1.0]  # the set-up, then the back-off: asked once, for 1 s
    kept = {case_of(r): r for r in server.requests if r.behavior == "reply"}
    rows = (
        evalwh.open_warehouse(tmp_path / "out" / "warehouse.duckdb")
        .sql("SELECT case_id, attempts, latency_ms, queued_ms FROM cases ORDER BY case_id")
        .to_pylist()
    )
    for row in rows:
        handled = kept[f"question {int(row['case_id'][1:])}"].handled_ms
        assert handled is not None and handled >= 20.0  # the server's latency is in its time
        # the client's span holds the server's; beyond it only the loopback
        assert handled - 1.0 <= row["latency_ms"] <= handled + LOOPBACK_MS, row
        if row["case_id"] == "c0003":
            assert row["attempts"] == 2
            assert 1000.0 <= row["queued_ms"] < 1000.0 + LOOPBACK_MS
        else:
            assert row["attempts"] == 1
            assert 0.0 <= row["queued_ms"] < LOOPBACK_MS


# -- a deadline's error and unrenderable datasource cases ------------------------------------


def test_a_call_past_its_deadline_names_the_last_error_and_is_final() -> None:
    from evalwh.engine.runner import _past_deadline

    model = ModelSpec(id="m", provider="mock", model="m", deadline_s=1.5)
    error = _past_deadline(model, 3, ProviderError("HTTP 500"))
    assert str(error) == (
        "gave up after 3 attempt(s): the call's deadline_s of 1.5 s (retries and waits "
        "included) would pass; last error: HTTP 500"
    )
    assert (error.retryable, error.kind) == (False, "deadline")
    assert str(_past_deadline(model, 1)) == (
        "gave up after 1 attempt(s): the call's deadline_s of 1.5 s (retries and waits "
        "included) would pass"
    )


SOURCE_HEAD = """
models: [{id: m, provider: mock, mock: {default: "{{ vars.q }}"}}]
variants: [{id: v, messages: [{role: user, content: "{{ q }}"}]}]
scorecard: [{name: exact, type: exact}]
cases: [{source: jsonl-glob, params: {pattern: 's/*.jsonl', page_size: 2}}]
"""


def source_eval(tmp_path: Path) -> Path:
    rows = [{"id": "r0", "q": "a", "expected": "a"}, {"id": "r1", "x": 1}, {"id": "r2", "x": 2}]
    write(tmp_path / "s" / "0.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")
    return write(tmp_path / "eval.yaml", SOURCE_HEAD)


def test_each_unrenderable_case_is_an_uncached_unattempted_error(tmp_path: Path) -> None:
    result = evalwh.run_eval(source_eval(tmp_path), output_dir=tmp_path / "o")
    assert result.stats["errors"] == 2
    assert result.totals["n_errors"] == 2 and result.totals["n_cached"] == 0
    rows = (
        evalwh.open_warehouse(tmp_path / "o" / "warehouse.duckdb")
        .sql(
            "SELECT case_id, cached, request_hash, attempts, error_kind FROM cases "
            "WHERE error IS NOT NULL ORDER BY case_id"
        )
        .to_pylist()
    )
    assert rows == [
        {"case_id": c, "cached": False, "request_hash": "", "attempts": 0, "error_kind": "render"}
        for c in ("r1", "r2")
    ]


def test_an_unrenderable_case_in_a_no_look_run_keeps_no_message(tmp_path: Path) -> None:
    result = evalwh.run_eval(source_eval(tmp_path), output_dir=tmp_path / "o", no_look=True)
    assert [(e["error"], e["error_kind"], e["n"]) for e in result.errors] == [
        ("render error", "render", 2)
    ]


def test_a_failed_requests_text_names_its_status_once() -> None:
    def text(message: str, status: int | None) -> str:
        return error_text(ProviderError(message, status=status), redact)

    assert text("None of the servers answered", 503) == "HTTP 503: None of the servers answered"
    assert text("rate limited (429)", 429) == "rate limited (429)"
    assert text("connection reset", None) == "connection reset"


def test_a_calls_cost_is_its_tokens_at_the_models_price() -> None:
    priced = ModelSpec(id="m", provider="mock", model="m", price=Price(1.0, 2.0))
    answered = Call("h", CachedAnswer("o", 1_000_000, 500_000, None), None, False, 1)
    assert answered.cost(priced) == 2.0
    assert Call("h", None, None, False, 1).cost(priced) is None
    assert answered.cost(ModelSpec(id="m", provider="mock", model="m")) is None


REFUSED = "ConnectError: [Errno 111] Connection refused"


def local_endpoint() -> Endpoint:
    return Endpoint.for_model(ModelSpec("m", "openai-compatible", "local"), None)  # type: ignore[arg-type]


def fail(ep: Endpoint, times: int, text: str = REFUSED, kind: str = "connection") -> None:
    for _ in range(times):
        ep.note_failure(ProviderError(text, kind=kind))


@pytest.mark.parametrize(
    "text", [REFUSED, "ConnectError: name or service not known", "connection REFUSED by peer"]
)
def test_a_refused_connection_counts_by_either_word(text: str) -> None:
    ep = local_endpoint()
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
    ep = local_endpoint()
    fail(ep, DEAD_ENDPOINT_AFTER, text, kind)
    assert (ep.refused, ep.unreachable) == (0, None)


def test_the_endpoint_is_given_up_at_exactly_the_limit_with_the_first_count_kept() -> None:
    ep = local_endpoint()
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
    ep = local_endpoint()
    ep.answered = True
    fail(ep, DEAD_ENDPOINT_AFTER * 2)
    assert (ep.refused, ep.unreachable) == (0, None)


def test_repeats_are_rows_and_cache_entries(tmp_path: Path, server: FakeLLMServer) -> None:
    block = f"  - {{id: m, provider: openai-compatible, model: local, base_url: '{server.openai_url}', price: 0}}"
    cfg = eval_for(tmp_path, block, 5)
    first = evalwh.run_eval(cfg, output_dir=tmp_path / "out", repeat=3)
    assert first.totals["n"] == 15 and server.count == 15
    second = evalwh.run_eval(cfg, output_dir=tmp_path / "out", repeat=3)
    assert second.stats["cache_hits"] == 15 and server.count == 15
    with duckdb.connect(str(tmp_path / "out" / "warehouse.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM response_cache").fetchone() == (15,)
        assert con.execute(
            f"SELECT count(DISTINCT repeat) FROM cases WHERE run_id = '{first.run_id}'"
        ).fetchone() == (3,)


def test_no_cache_bypasses_and_refreshes(tmp_path: Path, server: FakeLLMServer) -> None:
    block = f"  - {{id: m, provider: openai-compatible, model: local, base_url: '{server.openai_url}', price: 0}}"
    cfg = eval_for(tmp_path, block, 4)
    evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    server.default = reply("fresh")
    evalwh.run_eval(cfg, output_dir=tmp_path / "out", no_cache=True)
    assert server.count == 8
    third = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert server.count == 8 and third.totals["n_passed"] == 0  # the refreshed answers came back
