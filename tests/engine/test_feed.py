"""The streaming feed of a datasource run (evalwh/engine/feed.py), called directly: the batches
of the config's own cases, what a source's read records (pages, rows, digest), a source's
failure as a config error, the cells and cases the feed counts, its end markers after an
early stop, the bounded answer cache and the checks of a streamed batch.

Then whole datasource runs through the public API (their `mysources` classes come from the
`sources` fixture in tests/conftest.py): pages pulled only as the run needs them, the progress
of a run of unknown size, a failing source that fails the run naming it, case filters and
unrenderable rows, the streaming cache, and a run stopped at its cost cap reading no further
pages.

Last, a case file too large to hold, streamed through the same feed: the cases it holds at
once, counted.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import gc
import hashlib
import json
import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import duckdb
import pytest

import evalwh
from evalwh.config.model import Case, SourceSpec
from evalwh.engine import feed
from evalwh.engine.feed import BoundedCache, CaseFeed, SourceRead, case_batches, with_checks
from evalwh.errors import ConfigError
from evalwh.scoring.checks import CheckSpec
from tests.builders import DATASOURCE_HEAD
from tests.conftest import write

SPEC = SourceSpec("mine", {}, {}, "cases[1]")


class Pages:
    """A datasource: the given pages, then (optionally) a failure."""

    def __init__(self, pages: list[list[dict[str, Any]]], fail: Exception | None = None):
        self.pages_left, self.fail = list(pages), fail

    def pages(self, cursor: Any) -> tuple[list[dict[str, Any]], Any]:
        if not self.pages_left:
            assert self.fail is not None
            raise self.fail
        rows = self.pages_left.pop(0)
        return rows, (None if not self.pages_left and self.fail is None else "more")


def plan(
    cases: list[Case], sources: tuple[SourceRead, ...] = (), patterns: tuple[str, ...] = ()
) -> Any:
    return SimpleNamespace(cases=cases, sources=list(sources), case_patterns=list(patterns))


def test_the_configs_own_cases_go_in_batches_of_1000_in_order() -> None:
    cases = [Case(id=f"c{i}") for i in range(2500)]
    batches = list(case_batches(plan(cases)))
    assert [len(b) for b in batches] == [1000, 1000, 500]
    assert [c.id for b in batches for c in b] == [c.id for c in cases]


def test_a_sources_pages_are_filtered_then_prepared() -> None:
    rows = [[{"id": "a1", "q": 1}, {"id": "b1", "q": 2}], [{"id": "b2", "q": 3}]]
    read = SourceRead(SPEC, Pages(rows))
    seen: list[list[str]] = []

    def prepare(batch: list[Case]) -> list[Case]:
        seen.append([c.id for c in batch])
        return [Case(id=c.id.upper()) for c in batch]

    batches = list(case_batches(plan([Case(id="own")], (read,), ("a*",)), prepare))
    assert [[c.id for c in b] for b in batches] == [["own"], ["A1"]]
    assert seen == [["a1"]]  # a page the filter empties is neither prepared nor queued


def test_a_read_records_its_pages_rows_and_a_digest_of_the_rows() -> None:
    when = dt.datetime(2026, 12, 2, 5, 30, tzinfo=dt.timezone.utc)
    pages = [
        [{"id": "a", "b": 1, "at": when}, {"id": "b", "b": 2, "at": when}],
        [{"b": 3, "id": "c"}],
    ]
    read = SourceRead(SourceSpec("mine", {"table": "t"}, {}, "cases[1]"), Pages(pages))
    assert [[c.id for c in b] for b in read.batches()] == [["a", "b"], ["c"]]
    expected = hashlib.sha256()
    for row in [*pages[0], {"id": "c", "b": 3}]:  # keys in any order: the same digest
        expected.update(json.dumps(row, sort_keys=True, default=str).encode() + b"\n")
    assert read.record() == {
        "name": "mine",
        "params": {"table": "t"},
        "where": "cases[1]",
        "rows_read": 3,
        "pages": 2,
        "complete": True,
        "digest": "sha256:" + expected.hexdigest(),
    }


def test_a_source_with_its_own_digest_is_recorded_by_it() -> None:
    class Digested(Pages):
        def digest(self) -> str:
            return "etag:42"

    read = SourceRead(SPEC, Digested([[{"id": "a"}]]))
    list(read.batches())
    assert read.record()["digest"] == "etag:42"


@pytest.mark.parametrize(
    ("quiet", "detail"), [(False, "row 3 is 'private text'"), (True, "details withheld (no-look)")]
)
def test_a_sources_failure_is_a_config_error_naming_it_and_how_far_it_got(
    quiet: bool, detail: str
) -> None:
    read = SourceRead(SPEC, Pages([[{"id": "a"}]], RuntimeError("row 3 is 'private text'")), quiet)
    with pytest.raises(ConfigError) as info:
        list(read.batches())
    error = info.value
    assert (error.message, error.where, error.fix) == (
        f"datasource 'mine' failed after 1 page(s): RuntimeError: {detail}",
        "cases[1]",
        "check the datasource's params and that what it reads is reachable; a datasource run"
        " cannot be resumed, start it again",
    )


def test_a_reads_first_page_is_checked_for_the_mapping_and_later_pages_are_not() -> None:
    missing = SourceRead(
        SourceSpec("mine", {}, {"vars": ["gone"]}, "cases[1]"), Pages([[{"id": "a"}]])
    )
    with pytest.raises(ConfigError, match="missing column 'gone'"):
        list(missing.batches())
    # a later page's first row may lack a mapped column: its value is None
    lang = SourceSpec("mine", {}, {"metadata": ["lang"]}, "cases[1]")
    read = SourceRead(lang, Pages([[{"id": "a", "lang": "en"}], [{"id": "b"}], [{"id": "c"}]]))
    assert [c.metadata for b in read.batches() for c in b] == [
        {"lang": "en"},
        {"lang": None},
        {"lang": None},
    ]


def test_a_no_look_read_quotes_no_value_of_a_bad_row() -> None:
    rows = [[{"id": "a", "vars": {}, "metadata": "private words"}]]
    with pytest.raises(ConfigError) as shown:
        list(SourceRead(SPEC, Pages(rows)).batches())
    assert "private words" in shown.value.message
    with pytest.raises(ConfigError) as quiet:
        list(SourceRead(SPEC, Pages(rows), quiet=True).batches())
    assert "private words" not in quiet.value.message


def cell_plan(models: int = 2, repeats: int = 1, unwanted: str | None = None) -> Any:
    variant = SimpleNamespace(variant=SimpleNamespace(id="v"))
    return SimpleNamespace(
        variants=[variant],
        models=[SimpleNamespace(id=f"m{i}") for i in range(models)],
        repeats=repeats,
        wanted=lambda cell: cell[2] != unwanted,
    )


def drain(feed_: CaseFeed) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for model_id, queue in feed_.queues.items():
        out[model_id] = []
        while not queue.empty():
            out[model_id].append(queue.get_nowait())
    return out


def test_the_feed_counts_the_cases_and_cells_it_hands_out() -> None:
    batches = [[Case(id="a"), Case(id="b")], [Case(id="c")]]
    feed_ = CaseFeed(
        cell_plan(models=2, repeats=2, unwanted="b"), iter(batches), {"m0": 50, "m1": 50}
    )

    asyncio.run(feed_.produce(lambda: False))
    assert (feed_.cases, feed_.queued) == (3, 2 * 2 * 2)  # b's cells are not wanted
    queued = drain(feed_)
    assert [(c[1].id, c[2]) for c in queued["m0"] if c is not None] == [
        ("a", 0),
        ("a", 1),
        ("c", 0),
        ("c", 1),
    ]
    assert queued["m0"][-50:] == [None] * 50  # an end marker per worker


def test_a_stopped_feed_still_ends_every_workers_queue() -> None:
    batches = iter([[Case(id="a"), Case(id="b")], [Case(id="c")]])
    feed_ = CaseFeed(cell_plan(models=1), batches, {"m0": 3})
    calls = iter([False, True])  # stopped after the first case

    asyncio.run(feed_.produce(lambda: next(calls, True)))
    assert (feed_.cases, feed_.queued) == (1, 1)
    assert [c if c is None else c[1].id for c in drain(feed_)["m0"]] == ["a", None, None, None]


def test_a_page_nobody_waits_for_never_logs_its_error(caplog: pytest.LogCaptureFixture) -> None:
    # a datasource's message may quote a row, and a no-look run writes none to the terminal:
    # the failure of a page read ahead is always retrieved, even when the feed has stopped
    def failing() -> Any:
        raise RuntimeError("row 9 is 'private text'")
        yield  # pragma: no cover

    async def main() -> None:
        future = feed._fetch(failing())
        for _ in range(500):  # the read fails at once; 5 s at most
            if future.done():
                break
            await asyncio.sleep(0.01)
        assert future.done()
        del future
        gc.collect()

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        asyncio.run(main())
        gc.collect()
    assert "private text" not in caplog.text
    assert "never retrieved" not in caplog.text


def test_the_answer_cache_keeps_the_newest_entries() -> None:
    cache = BoundedCache(limit=2)
    cache["a"], cache["b"] = 1, 2
    cache["c"] = 3
    assert dict(cache) == {"b": 2, "c": 3}
    assert BoundedCache().limit == feed.CACHE_ENTRIES


def test_a_streamed_batchs_checks_are_parsed_and_a_batch_without_any_is_kept() -> None:
    prepare = with_checks("eval.yaml")
    plain = [Case(id="a"), Case(id="b")]
    assert prepare(plain) is plain
    mixed = [Case(id="a", check='test -s "$ANSWER"'), Case(id="b")]
    out = prepare(mixed)
    assert out[0].check == CheckSpec(run='test -s "$ANSWER"')
    assert out[1] is mixed[1]
    with pytest.raises(ConfigError) as info:
        prepare([Case(id="x", source="src row 1", check={"nope": 1})])
    assert info.value.where == "src row 1 check.nope"


def test_pages_are_pulled_as_the_run_needs_them(tmp_path: Path, sources: Any) -> None:
    cfg = write(
        tmp_path / "eval.yaml",
        DATASOURCE_HEAD
        + """
settings: {concurrency: 2, batch_size: 10}
cases: [{source: "mysources:Counting", params: {n: 600, page: 20}, metadata: [lang]}]
""",
    )
    done = sources.STATE["done"]
    totals: set[int] = set()

    def progress(n: int, total: int, result: object) -> None:
        done[0] = n
        totals.add(total)

    result = evalwh.run_eval(cfg, output_dir=tmp_path / "o", progress=progress)
    assert totals == {0}  # streamed: the total is unknown until the source is read
    calls = sources.STATE["calls"]
    assert [start for start, _ in calls] == list(range(0, 600, 20))  # every page, once, in order
    # page k is asked for only once the cells before the page ahead of it are done: the feed
    # holds one page, prefetches one, and queues a few cells (2 per worker)
    for k, (_, finished) in enumerate(calls):
        assert finished >= (k - 2) * 20 - 4, (k, finished)
    assert result.totals["n"] == 600 and result.totals["n_passed"] == 400
    run = evalwh.open_warehouse(tmp_path / "o" / "warehouse.duckdb").run(result.run_id)
    (record,) = json.loads(run["datasources"])
    assert record["name"] == "mysources:Counting" and record["params"] == {"n": 600, "page": 20}
    assert (record["rows_read"], record["pages"], record["complete"]) == (600, 30, True)
    assert record["digest"].startswith("sha256:") and run["n_planned"] == 600
    slices = evalwh.open_warehouse(tmp_path / "o" / "warehouse.duckdb").slice(result.run_id, "lang")
    assert sorted(slices["n"].to_list())[-2:] == [300, 300]  # metadata mapped from columns


def test_progress_has_no_total_while_a_datasource_is_read_beside_inline_cases(
    tmp_path: Path, sources: Any
) -> None:
    # the inline cells are known up front, the source's are not: the total stays unknown (0)
    # rather than counting the inline cells alone
    cfg = write(
        tmp_path / "eval.yaml",
        DATASOURCE_HEAD
        + """
cases:
  - {id: inline, vars: {q: a}, expected: a}
  - {source: "mysources:Counting", params: {n: 4, page: 2}}
""",
    )
    seen: list[tuple[int, int]] = []
    result = evalwh.run_eval(
        cfg, output_dir=tmp_path / "o", progress=lambda n, total, r: seen.append((n, total))
    )
    assert result.totals["n"] == 5
    assert sorted(seen) == [(n, 0) for n in range(1, 6)]


def test_a_failing_datasource_fails_the_run_naming_it(tmp_path: Path, sources: Any) -> None:
    cfg = write(tmp_path / "eval.yaml", DATASOURCE_HEAD + 'cases: [{source: "mysources:Broken"}]\n')
    with pytest.raises(ConfigError, match=r"datasource 'mysources:Broken' failed after 1 page"):
        evalwh.run_eval(cfg, output_dir=tmp_path / "o")
    with duckdb.connect(str(tmp_path / "o" / "warehouse.duckdb"), read_only=True) as con:
        assert con.execute("SELECT status FROM runs").fetchall() == [("failed",)]
    with pytest.raises(ConfigError) as caught:
        evalwh.run_eval(cfg, output_dir=tmp_path / "o", no_look=True)
    assert "ValueError" in str(caught.value) and "SECRETROW" not in str(caught.value)
    assert caught.value.exit_code == 2


def test_case_filter_mapping_and_unrenderable_rows(tmp_path: Path) -> None:
    rows = [{"id": f"r{i}", "q": f"a{i}", "expected": f"a{i}"} for i in range(6)]
    rows[4] = {"id": "r4", "other": 1}  # no `q`: its prompt does not render
    write(tmp_path / "s" / "0.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")
    cfg = write(
        tmp_path / "eval.yaml",
        DATASOURCE_HEAD
        + "cases: [{source: jsonl-glob, params: {pattern: 's/*.jsonl', page_size: 2}}]\n",
    )
    picked = evalwh.run_eval(cfg, output_dir=tmp_path / "o", cases=["r1", "r2"])
    assert picked.totals["n"] == 2 and picked.totals["n_passed"] == 2
    whole = evalwh.run_eval(cfg, output_dir=tmp_path / "o")
    assert whole.totals["n"] == 6 and whole.totals["n_errors"] == 1
    (error,) = whole.errors
    assert error["error_kind"] == "render" and "q" in error["error"]


def test_the_streaming_cache_keeps_the_newest_entries() -> None:
    from evalwh.engine.feed import BoundedCache

    cache = BoundedCache(3)
    for i in range(5):
        cache[f"k{i}"] = i
    assert list(cache) == ["k2", "k3", "k4"]
    cache["k5"] = 5
    assert len(cache) == 3 and "k2" not in cache


def test_a_run_stopped_at_its_cost_cap_reads_no_further_pages(tmp_path: Path, sources: Any) -> None:
    priced = DATASOURCE_HEAD.replace(
        'mock: {default: "{{ vars.q }}"}}',
        "params: {max_tokens: 5}, price: {input_per_mtok: 1000, output_per_mtok: 1000}, "
        'mock: {default: "{{ vars.q }}"}}',
    )
    cfg = write(
        tmp_path / "eval.yaml",
        priced
        + """
settings: {concurrency: 1, batch_size: 10, max_cost_usd: 0.05}
cases: [{source: "mysources:Counting", params: {n: 600, page: 20}}]
""",
    )
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "o")
    assert result.status == "stopped"
    run = evalwh.open_warehouse(tmp_path / "o" / "warehouse.duckdb").run(result.run_id)
    (record,) = json.loads(run["datasources"])
    # the page in hand and the one read ahead, not the other 28
    assert record["complete"] is False and record["pages"] <= 3 and record["rows_read"] <= 60
    assert len(sources.STATE["calls"]) == record["pages"]


def test_a_streamed_case_file_holds_two_batches_and_three_cells_a_worker_at_most(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # count, not RSS: every Case read from the file is tracked by a weak reference, and the
    # live ones are counted each time the reader makes one (the loader's first pass and the
    # run's batches alike)
    import weakref

    from evalwh.config import streamed

    monkeypatch.setattr(streamed, "STREAM_AT", 100)
    monkeypatch.setattr(feed, "STATIC_BATCH", 20)
    live: dict[int, weakref.ref[Case]] = {}  # a Case is not hashable: keyed by its id()
    most = [0]
    read = streamed.file_cases

    def counted(*args: Any, **kw: Any) -> Any:
        for case in read(*args, **kw):
            key = id(case)
            live[key] = weakref.ref(case, lambda _, key=key: live.pop(key, None))
            most[0] = max(most[0], len(live))
            yield case

    monkeypatch.setattr(streamed, "file_cases", counted)
    rows = [{"id": f"c{i}", "q": f"x{i}", "expected": f"x{i}"} for i in range(200)]
    write(tmp_path / "big.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    cfg = write(
        tmp_path / "eval.yaml",
        DATASOURCE_HEAD
        + "settings: {concurrency: 2, batch_size: 50}\ncases: [{file: big.jsonl}]\n",
    )
    seen: list[int] = []
    result = evalwh.run_eval(
        cfg, output_dir=tmp_path / "o", progress=lambda n, total, r: seen.append(total)
    )
    assert result.totals["n"] == 200 and result.totals["n_passed"] == 200
    assert set(seen) == {200}  # counted by the first pass: the progress knows its total
    # the batch being queued, the one read ahead, and per worker two queued cells and one
    # in flight: a bound set by the batch and the concurrency, whatever the file's length
    assert 0 < most[0] <= 2 * 20 + 3 * 2, most[0]
    run = evalwh.open_warehouse(tmp_path / "o" / "warehouse.duckdb").run(result.run_id)
    (record,) = json.loads(run["datasources"])
    assert (record["name"], record["rows_read"], record["pages"]) == ("file", 200, 10)
    assert record["complete"] and record["digest"].startswith("sha256:")


def test_a_streamed_case_files_cached_rerun_reads_the_cache_once_a_batch_and_replays_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a rerun of a streamed case file: one cache query per batch of cases (3 batches of 10),
    # not one per case, its hits replayed without a worker; every stored value as the run
    # that asked stored it
    from evalwh.config import streamed
    from tests.engine.test_execute import (
        REPLAY_CONFIG,
        _stored,
        cells_through_workers,
        queries_asked,
    )

    monkeypatch.setattr(streamed, "STREAM_AT", 30)
    monkeypatch.setattr(feed, "STATIC_BATCH", 10)
    rows = [{"id": f"c{i}", "q": f"what is {i}?", "expected": f"{2 * i}"} for i in range(30)]
    write(tmp_path / "big.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    head, _, tail = REPLAY_CONFIG.partition("cases:\n")
    cfg = write(
        tmp_path / "eval.yaml",
        head + "cases: [{file: big.jsonl}]\n" + tail[tail.index("scorecard:") :],
    )
    asked = queries_asked(monkeypatch)
    first = evalwh.run_eval(cfg, output_dir=tmp_path / "o")
    assert first.stats["requests"] == 120  # 30 cases x 2 variants x 2 models
    # the first run found no answer of its models in the cache: its batches are not looked up
    # (each lookup would scan the cache the run is filling)
    assert asked.count("cache_lookup") == 0
    asked.clear()

    worked = cells_through_workers(monkeypatch)
    again = evalwh.run_eval(cfg, output_dir=tmp_path / "o")
    assert (again.stats["cache_hits"], again.stats["requests"]) == (120, 0)
    assert asked.count("cache_lookup") == 3
    assert worked == []
    db = tmp_path / "o" / "warehouse.duckdb"
    for table in ("cases", "scores"):
        assert _stored(db, again.run_id, table) == _stored(db, first.run_id, table)
    run = evalwh.open_warehouse(db).run(again.run_id)
    assert run["n_planned"] == 120
