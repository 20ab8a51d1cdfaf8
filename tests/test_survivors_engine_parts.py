"""The engine's parts between a plan and a request, called directly: an endpoint's pacing and
limit, the engine's defaults, the workers (every cell done and counted, the loop yielded to,
the writer waited for), one cell's error and judge cost, and a Retry-After that pauses the
model's other requests.

Written from mutants that survived the mutation run (docs/testing.md); whole runs through
these parts are in test_engine.py, test_adaptive.py and test_datasources.py.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from evalwh import providers
from evalwh.config.loader import load_config
from evalwh.config.model import Case, ModelSpec
from evalwh.engine import runner
from evalwh.engine.budget import Budget
from evalwh.engine.execute import check_config
from evalwh.engine.limits import AdaptiveLimit, RatePacer
from evalwh.engine.plan import Filters, build_plan
from evalwh.engine.runner import (
    YIELD_EVERY,
    BudgetStop,
    CachedAnswer,
    Call,
    CellResult,
    Endpoint,
    Engine,
)
from evalwh.providers.base import Completion, ProviderError
from tests.test_survivors_engine_call import engine


def model(id: str = "m", **fields: Any) -> ModelSpec:
    return ModelSpec(
        id=id, provider="mock", model=id, options={"mock": {"default": "hi"}}, **fields
    )


MESSAGES = [{"role": "user", "content": [{"type": "text", "text": "q"}]}]


def endpoint(spec: ModelSpec) -> Endpoint:
    return Endpoint.for_model(spec, providers.create(spec))


# -- an endpoint ----------------------------------------------------------------------------


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
    assert endpoint(spec).limit is None  # a model runs min(max_concurrency, concurrency) workers
    unbounded = model()
    assert Endpoint.for_model(unbounded, providers.create(unbounded), limited=True).limit is None


def test_an_endpoint_paces_its_models_requests_per_minute() -> None:
    assert endpoint(model(requests_per_minute=120)).pacer.interval == 0.5
    assert endpoint(model()).pacer.interval == 0.0


def test_a_pacer_spaces_request_starts_by_its_interval() -> None:
    assert RatePacer(1200).interval == pytest.approx(0.05)
    assert RatePacer(None).interval == 0.0 and RatePacer(0).interval == 0.0

    async def three() -> list[float]:
        pacer, starts = RatePacer(1200), []
        for _ in range(3):
            await pacer.wait()
            starts.append(time.monotonic())
        return starts

    first, second, third = asyncio.run(three())
    assert second - first >= 0.045 and third - second >= 0.045  # a sleep never ends early


def test_an_adaptive_limits_peak_counts_requests_in_flight_from_none() -> None:
    limit = AdaptiveLimit(3)
    assert limit.peak == 0  # nothing sent yet

    async def two() -> None:
        await limit.acquire()
        await limit.acquire()
        limit.release()

    asyncio.run(two())
    assert (limit.peak, limit.in_flight) == (2, 1)


# -- the engine's defaults --------------------------------------------------------------------

CONFIG = """\
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
    text = CONFIG.replace("CASES", rows).replace("OUTPUT", output)
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
    ep = endpoint(spec)
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
    ep = endpoint(spec)
    key = asyncio.run(engine(ep).call(ep, MESSAGES, Case(id="c"), "v")).key
    stored = CachedAnswer("from the warehouse", 1, 1, 1.0)
    eng = engine(ep, cache={key: stored})
    served = asyncio.run(eng.call(ep, MESSAGES, Case(id="c"), "v"))
    assert (served.cached, served.answer) == (True, stored)
    assert eng.stats.requests == 0


def test_only_a_model_with_adaptive_concurrency_gets_an_adaptive_limit() -> None:
    adaptive, fixed = model("a", max_concurrency=3), model("f", adaptive_concurrency=False)
    eps = {"a": endpoint(adaptive), "f": endpoint(fixed)}
    Engine(SimpleNamespace(models=[adaptive, fixed]), eps, None, None, concurrency=8)  # type: ignore[arg-type]
    assert eps["a"].adaptive is not None and eps["a"].adaptive.ceiling == 3
    assert eps["f"].adaptive is None


def test_an_engine_is_halted_by_a_stop_or_by_its_cost_cap() -> None:
    spec = model()
    eng = engine(endpoint(spec))
    assert not eng._halted()
    eng.stop()
    assert eng._halted()  # no cap at all: the stop alone halts
    capped = Budget(cap=1.0)
    eng = engine(endpoint(spec), budget=capped)
    assert not eng._halted()
    assert not capped.reserve(2.0)  # over the cap: the budget stops
    assert eng._halted()


# -- the workers ------------------------------------------------------------------------------


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
        plan, {"a": endpoint(plan.models[0])}, scorecard, lambda r: None, concurrency=1,
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
        plan, {"a": endpoint(plan.models[0])}, scorecard, first_only, concurrency=1,
        batches=iter([streamed]),
    )  # fmt: skip

    async def main() -> set[asyncio.Task[Any]]:
        await eng.run()
        return asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]

    assert asyncio.run(main()) == set()
    assert eng.stats.done == 1
    assert eng.feed is not None and 1 < eng.feed.queued < 20  # stopped before the whole page


# -- one cell ---------------------------------------------------------------------------------


def cell_engine(tmp_path: Path, answer: Call, **kw: Any) -> tuple[Engine, Any, list[Any]]:
    schema = ", output_schema: {schema: {type: object}, name: reply}"
    plan, scorecard = planned(tmp_path, 1, ("a",), schema)
    eng = Engine(plan, {"a": endpoint(plan.models[0])}, scorecard, None, concurrency=1, **kw)  # type: ignore[arg-type]
    asked: list[Any] = []

    async def call(*args: Any) -> Call:
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

    async def score(output: str, case: Case, messages: Any) -> tuple[Any, float, None]:
        return scored, 0.25, None

    eng._score = score  # type: ignore[method-assign]
    result = one_cell(eng, plan)
    assert (result.judge_cost_usd, result.scored, result.output) == (0.25, scored, "hi")


# -- a Retry-After ------------------------------------------------------------------------------


class LimitedOnce:
    """Answers 429 with a Retry-After to the first request, then answers every request; notes
    when each request arrived."""

    structured_output = False

    def __init__(self, retry_after: float) -> None:
        self.retry_after = retry_after
        self.arrived: list[tuple[str, float]] = []
        self.limited = asyncio.Event()

    async def complete(self, request: Any) -> Completion:
        self.arrived.append((request.case.id, time.monotonic()))
        if len(self.arrived) == 1:
            self.limited.set()
            raise ProviderError(
                "429", retryable=True, retry_after=self.retry_after, kind="rate_limit", status=429
            )
        return Completion(text="ok", input_tokens=1, output_tokens=1)


def test_a_retry_after_pauses_the_models_other_requests_too() -> None:
    spec = ModelSpec(id="m", provider="limited", model="m", max_retries=2)
    provider = LimitedOnce(retry_after=1.0)
    ep = Endpoint.for_model(spec, provider)  # type: ignore[arg-type]
    eng = engine(ep, reuse=False)

    async def both() -> None:
        first = asyncio.create_task(eng.call(ep, MESSAGES, Case(id="first"), "v"))
        await provider.limited.wait()  # the first request has its 429
        await eng.call(ep, MESSAGES, Case(id="second"), "v")
        await first

    asyncio.run(both())
    limited_at = provider.arrived[0][1]
    second_at = next(at for case, at in provider.arrived if case == "second")
    assert second_at - limited_at >= 0.9  # the server's Retry-After held it back
