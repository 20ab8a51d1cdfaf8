"""The engine's reads of the response cache (evalwh.engine.execute), called directly: the
answers of a run's planned requests, the replies of its judge models, the streaming cache
that holds them, and the output tokens an estimate assumes.

Written from mutants that survived the mutation run (docs/testing.md). The cached reruns
end to end are in test_engine.py and test_judging.py.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from evalwh.config.model import ModelSpec
from evalwh.engine import execute
from evalwh.engine.execute import _bounded, _output_tokens, cache_lookup, judge_cache
from evalwh.engine.feed import BoundedCache
from evalwh.engine.runner import CachedAnswer
from evalwh.warehouse.connect import write_connection
from evalwh.warehouse.store import Warehouse

NOW = datetime(2026, 12, 2, tzinfo=timezone.utc)


def warehouse(tmp_path: Path) -> Warehouse:
    path = tmp_path / "w.duckdb"
    with write_connection(path) as con:
        for h, provider, model, out, i, o, lat in [
            ("h1", "mock", "small", "one", 10, 2, 5.5),
            ("h2", "mock", "small", "two", None, None, None),
            ("h3", "mock", "judge", '{"score": 1}', 30, 4, 7.0),
            ("h4", "openai", "judge", '{"score": 0}', 31, 5, 8.0),
        ]:
            con.execute(
                "INSERT INTO response_cache (request_hash, provider, model, output, input_tokens,"
                " output_tokens, latency_ms, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [h, provider, model, out, i, o, lat, NOW],
            )
    return Warehouse(path)


def test_the_cache_answers_exactly_the_planned_requests_with_their_counts(tmp_path: Path) -> None:
    store = warehouse(tmp_path)
    assert cache_lookup(store, ["h1", "h2", "nope"]) == {
        "h1": CachedAnswer("one", 10, 2, 5.5),
        "h2": CachedAnswer("two", None, None, None),
    }
    assert cache_lookup(store, []) == {}
    assert cache_lookup(Warehouse(tmp_path / "none.duckdb"), ["h1"]) == {}  # nothing run yet


def test_the_cache_read_waits_for_another_writer_without_a_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a run never fails because another process is flushing into the same warehouse: it
    # waits as long as a flush of its own would (wait_s=None), not the readers' 30 s
    from evalwh.warehouse import connect

    waits: list[float | None] = []
    real = connect.read_connection

    def spy(path: Any, *, wait_s: float | None = 30.0) -> Any:
        waits.append(wait_s)
        return real(path, wait_s=wait_s)

    monkeypatch.setattr(connect, "read_connection", spy)
    assert set(cache_lookup(warehouse(tmp_path), ["h1"])) == {"h1"}
    assert waits == [None]


def test_a_judge_models_cached_replies_are_read_by_provider_and_model(tmp_path: Path) -> None:
    store = warehouse(tmp_path)
    judge = ModelSpec(id="j", provider="mock", model="judge")
    assert judge_cache(store, [judge]) == {"h3": CachedAnswer('{"score": 1}', 30, 4, 7.0)}
    other = ModelSpec(id="k", provider="openai", model="judge")
    assert set(judge_cache(store, [judge, other])) == {"h3", "h4"}
    assert judge_cache(Warehouse(tmp_path / "none.duckdb"), [judge]) == {}


def test_a_streaming_runs_cache_keeps_every_answer_found_before_it_starts() -> None:
    found = {f"h{i}": CachedAnswer(str(i), None, None, None) for i in range(5)}
    bounded = _bounded(found)
    assert isinstance(bounded, BoundedCache)
    assert bounded.limit == 5 + BoundedCache.default_limit
    assert dict(bounded) == found


def test_an_estimate_assumes_max_tokens_or_the_default_output() -> None:
    assert (
        _output_tokens(ModelSpec(id="m", provider="mock", model="m", params={"max_tokens": 64}))
        == 64
    )
    assert (
        _output_tokens(ModelSpec(id="m", provider="mock", model="m"))
        == execute.DEFAULT_OUTPUT_TOKENS
    )
