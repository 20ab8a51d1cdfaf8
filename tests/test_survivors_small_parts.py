"""Small functions the larger tests reach only through a whole run, called directly: the
stored text of a failed request, the prompt text rule-matching reads, a provider error's
defaults, the price table's lookup, an HTTP provider's URL and its closing, the judge
placeholder and a judge's rationale, and the analysis helpers for keys and repeats.

Written from mutants that survived the mutation run (docs/testing.md).
"""

from __future__ import annotations

import asyncio
import logging
import time
from types import SimpleNamespace
from typing import Any

import pytest

from evalwh.analysis import repeats
from evalwh.analysis.runinfo import cluster_key, split_keys
from evalwh.config.model import Case, Criterion, ModelSpec, Price
from evalwh.config.secrets import redact
from evalwh.engine import limits
from evalwh.engine.execute import _finish
from evalwh.engine.records import RowSink
from evalwh.engine.runner import CachedAnswer, Call, error_text
from evalwh.providers import pricing
from evalwh.providers.base import ProviderError, message_text, prompt_text
from evalwh.providers.openai import OpenAICompatibleProvider
from evalwh.providers.pricing import table_price
from evalwh.scoring.judge import judge_criterion, parse_score
from evalwh.warehouse import writer


def test_a_failed_requests_text_names_its_status_once() -> None:
    def text(message: str, status: int | None) -> str:
        return error_text(ProviderError(message, status=status), redact)

    assert text("None of the servers answered", 503) == "HTTP 503: None of the servers answered"
    assert text("rate limited (429)", 429) == "rate limited (429)"
    assert text("connection reset", None) == "connection reset"


def test_the_prompt_text_is_each_message_by_role_a_blank_line_apart() -> None:
    messages = [
        {"role": "system", "content": [{"type": "text", "text": "be brief"}]},
        {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image"}]},
    ]
    assert prompt_text(messages) == "system: be brief\n\nuser: hi"


def test_a_provider_error_is_final_unless_it_says_otherwise() -> None:
    error = ProviderError("bad request")
    assert (error.retryable, error.retry_after, error.status, error.kind) == (
        False,
        None,
        None,
        "provider",
    )


def test_the_price_table_knows_exact_names_and_names_with_a_date_suffix() -> None:
    assert table_price("anthropic", "claude-sonnet-4-5") == Price(3.0, 15.0)
    assert table_price("anthropic", "claude-sonnet-4-5-20250929") == Price(3.0, 15.0)
    assert table_price("anthropic", "claude-sonnet-4-5-latest") == Price(3.0, 15.0)
    assert table_price("anthropic", "claude-sonnet") is None  # no guess from a prefix
    assert table_price("nobody", "claude-sonnet-4-5") is None


def compatible(base_url: str) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider(
        ModelSpec(id="m", provider="openai-compatible", model="x", options={"base_url": base_url})
    )


@pytest.mark.parametrize(
    ("base_url", "url"),
    [
        ("http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1/chat/completions"),
        ("http://127.0.0.1:9/v1//", "http://127.0.0.1:9/v1/chat/completions"),
        ("http://127.0.0.1:9/apiX/", "http://127.0.0.1:9/apiX/chat/completions"),
    ],
)
def test_the_endpoint_is_appended_to_the_base_url_without_its_trailing_slashes(
    base_url: str, url: str
) -> None:
    assert compatible(base_url).url == url


def test_a_request_goes_to_a_shard_with_a_free_connection_and_a_full_pool_still_serves(
    transport: str,
) -> None:
    # a run's concurrency may exceed the pool (100 connections unless the model's
    # max_concurrency is larger): a request then waits in the least busy shard, never fails
    provider = compatible("http://127.0.0.1:9/v1")

    async def main() -> None:
        first = provider._client_for_loop()
        clients, per = provider._clients, provider._per_shard
        assert (len(clients), per) == ((1, 100) if transport == "aiohttp" else (7, 15))
        assert provider._client_for_loop() is first  # sequential requests: the first shard
        provider._busy[0] = per  # the first shard is full
        expected = clients[0] if len(clients) == 1 else clients[1]
        assert provider._client_for_loop() is expected
        provider._busy[:] = [per] * len(clients)  # every shard is full
        provider._busy[-1] = per + 1
        assert provider._client_for_loop() is clients[0]  # the least busy
        await provider.aclose()

    asyncio.run(main())


def test_closing_a_provider_in_its_loop_closes_its_clients() -> None:
    provider = compatible("http://127.0.0.1:9/v1")

    async def main() -> list[Any]:
        provider._client_for_loop()
        clients = list(provider._clients)
        await provider.aclose()
        return clients

    clients = asyncio.run(main())
    assert clients and all(c.is_closed for c in clients)
    assert provider._clients == [] and provider._loop is None


def test_the_judge_placeholder_is_an_error_if_called_synchronously() -> None:
    crit = Criterion(name="j", type="llm-judge", options={"judge": "ref"})
    placeholder = judge_criterion(crit, None, "eval.yaml")
    result = placeholder("answer", Case(id="c"))
    assert (result.score, result.error) == (
        0.0,
        "llm-judge criteria are scored by the engine, not synchronously",
    )
    assert (placeholder.is_judge, placeholder.judge_id) == (True, "ref")


def test_a_judges_rationale_is_kept_with_its_score() -> None:
    result = parse_score('{"score": 4, "rationale": "names the capital"}', (1.0, 5.0))
    assert (result.score, result.rationale, result.details) == (
        0.75,
        "names the capital",
        {"raw_score": 4.0},
    )


def test_slice_keys_are_split_on_commas_in_text_and_in_lists() -> None:
    assert split_keys("lang, length,,lang") == ["lang", "length"]
    assert split_keys(["lang,topic", "length"]) == ["lang", "topic", "length"]
    assert split_keys("lang length") == ["lang length"]
    assert split_keys(None) == []


def test_the_cluster_key_is_read_only_from_an_analysis_mapping() -> None:
    assert cluster_key({"analysis": {"cluster": "doc"}}) == "doc"
    assert cluster_key({"analysis": "doc"}) is None
    assert cluster_key({}) is None


def test_repeat_statistics_and_flaky_cases_are_asked_of_the_run_given() -> None:
    asked: list[tuple[str, dict[str, Any]]] = []
    store = SimpleNamespace(query=lambda name, **params: asked.append((name, params)))
    repeats.repeat_stats(store, "r-1")
    repeats.flaky_cases(store, "r-1")
    assert asked == [("repeats", {"run_id": "r-1"}), ("flaky", {"run_id": "r-1"})]


def test_a_text_part_without_text_adds_nothing() -> None:
    message = {"content": [{"type": "text"}, {"type": "image"}, {"type": "text", "text": "a"}]}
    assert message_text(message) == "a"


def test_an_answer_is_cached_with_the_time_it_was_stored_in_microseconds() -> None:
    added: list[list[Any]] = []
    sink = RowSink(SimpleNamespace(add_cache=added.append), "r-1")  # type: ignore[arg-type]
    model = ModelSpec(id="m", provider="mock", model="small")
    before = time.time_ns() // 1000
    sink.remember("h1", model, CachedAnswer("out", 3, 4, 5.5))
    after = time.time_ns() // 1000
    (row,) = added
    assert row[:7] == ["h1", "mock", "small", "out", 3, 4, 5.5] and row[8] == "r-1"
    assert type(row[7]) is int and before <= row[7] <= after


def test_a_runs_end_is_recorded_with_everything_the_engine_knows() -> None:
    calls: list[tuple[Any, ...]] = []
    store = SimpleNamespace(finish_run=lambda *a, **k: calls.append((a, k)))
    _finish(store, "r-1", "completed", "tok", {"n": 1}, [{"name": "src"}], 5)
    assert calls == [
        (
            ("r-1", "completed", {"n": 1}),
            {"token": "tok", "datasources": [{"name": "src"}], "n_planned": 5},
        )
    ]


def test_a_failed_runs_end_that_cannot_be_recorded_is_logged_not_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def full_disk(*args: Any, **kwargs: Any) -> None:
        raise OSError("No space left on device")

    store = SimpleNamespace(finish_run=full_disk)
    with caplog.at_level(logging.WARNING, logger="evalwh.engine"):
        _finish(store, "r-1", "failed", None, {})
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
        ("evalwh.engine", "WARNING", "could not mark run r-1 failed: No space left on device")
    ]
    with pytest.raises(OSError, match="No space"):
        _finish(store, "r-1", "completed", None, {})


def test_a_calls_cost_is_its_tokens_at_the_models_price() -> None:
    priced = ModelSpec(id="m", provider="mock", model="m", price=Price(1.0, 2.0))
    answered = Call("h", CachedAnswer("o", 1_000_000, 500_000, None), None, False, 1)
    assert answered.cost(priced) == 2.0
    assert Call("h", None, None, False, 1).cost(priced) is None
    assert answered.cost(ModelSpec(id="m", provider="mock", model="m")) is None


def test_a_heartbeat_is_due_once_its_interval_has_passed(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [100.0]
    monkeypatch.setattr(writer.time, "monotonic", lambda: clock[0])
    run_writer = writer.RunWriter(tmp_path / "w.duckdb", "r-1", heartbeat_s=30.0)
    clock[0] = 129.9
    assert run_writer.beat_due() is False
    clock[0] = 130.0
    assert run_writer.beat_due() is True


def test_a_row_of_the_wrong_width_is_refused_with_both_counts(tmp_path: Any) -> None:
    run_writer = writer.RunWriter(tmp_path / "w.duckdb", "r-1")
    width = len(writer.CASE_COLUMNS)
    with pytest.raises(ValueError) as info:
        run_writer.add_case([1, 2])
    assert str(info.value) == f"a row of 2 values for {width} columns"


def test_an_exact_dated_entry_wins_over_its_undated_name(monkeypatch: pytest.MonkeyPatch) -> None:
    table = {"providers": {"p": {"m-20250101": [1.0, 2.0], "m": [3.0, 4.0]}}}
    monkeypatch.setattr(pricing, "price_table", lambda: table)
    assert table_price("p", "m-20250101") == Price(1.0, 2.0)
    assert table_price("p", "m-20260101") == Price(3.0, 4.0)


def test_a_paced_model_spaces_its_request_starts_by_its_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock, slept = [100.0], []
    monkeypatch.setattr(limits.time, "monotonic", lambda: clock[0])

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr(limits.asyncio, "sleep", sleep)
    pacer = limits.RatePacer(60)  # one request a second

    async def main() -> None:
        for _ in range(3):
            await pacer.wait()
        clock[0] = 105.0  # idle for a while: the next start is at once
        await pacer.wait()
        await limits.RatePacer(None).wait()  # no pace: never waits

    asyncio.run(main())
    assert slept == [1.0, 2.0]
