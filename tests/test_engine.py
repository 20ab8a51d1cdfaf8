"""The engine: limits, failures recorded (never fatal), retries, timeouts, determinism, cache."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest

import evalwh
from evalwh import providers
from evalwh.providers.base import Completion, ProviderError, Request
from tests.conftest import write


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


def config(
    tmp_path: Path, models: str, n_cases: int = 30, concurrency: int = 5, cases: str = ""
) -> Path:
    cases = cases or "\n".join(
        f"  - {{id: c{i}, vars: {{q: '{i}'}}, expected: '{i}'}}" for i in range(n_cases)
    )
    return write(
        tmp_path / "eval.yaml",
        f"""\
settings: {{concurrency: {concurrency}}}
models:
{models}
variants:
  - id: v
    messages: [{{role: user, content: "{{{{ q }}}}"}}]
cases:
{cases}
scorecard:
  - {{name: exact, type: exact}}
""",
    )


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


def test_transient_errors_are_retried_honouring_retry_after(tmp_path: Path) -> None:
    def flaky(request: Request) -> Any:
        return (
            ProviderError("overloaded", retryable=True, retry_after=0.3, status=429)
            if request.attempt < 3
            else None
        )

    Tracking.behaviour["c0"] = flaky
    cfg = config(tmp_path, "  - {id: a, provider: tracking, max_retries: 3}", 1)
    started = time.monotonic()
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert time.monotonic() - started >= 0.6  # two waits of Retry-After 0.3 s
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


def test_filters_and_repeats(quickstart: Path, tmp_path: Path) -> None:
    result = evalwh.run_eval(
        quickstart,
        models=["mock-large"],
        variants=["ter*"],
        cases=["geo-1", "math-*"],
        repeat=2,
        output_dir=tmp_path / "out",
    )
    assert [(r["variant"], r["model"], r["n"]) for r in result.summary] == [
        ("terse", "mock-large", 14)
    ]


def test_unknown_filter_is_a_usage_error(quickstart: Path, tmp_path: Path) -> None:
    from evalwh.errors import UsageError

    with pytest.raises(UsageError, match="--model nope matches no model"):
        evalwh.run_eval(quickstart, models=["nope"], output_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()


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
    import duckdb

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
    import duckdb

    with duckdb.connect(str(tmp_path / "out" / "warehouse.duckdb"), read_only=True) as con:
        for run_id in (first.run_id, again.run_id):
            outputs = con.execute(
                "SELECT output FROM cases WHERE run_id = ? AND model = 'm' ORDER BY case_id",
                [run_id],
            ).fetchall()
            assert [o for (o,) in outputs] == ["same", "same", "per-case rule", "same"]
