"""Datasources (docs/datasources.md): the protocol, registration, the built-ins, pages pulled as
the run needs them, what the run records, and resume refused."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import duckdb
import pytest

import evalwh
from evalwh.datasources import iter_pages, open_source, source_class
from evalwh.datasources.jsonl import JsonlGlobSource
from evalwh.datasources.sql import DuckDBSource
from evalwh.errors import ConfigError, UsageError
from tests.conftest import run_cli, write

HEAD = """
models: [{id: m, provider: mock, mock: {default: "{{ vars.q }}"}}]
variants: [{id: v, messages: [{role: user, content: "{{ q }}"}]}]
scorecard: [{name: exact, type: exact}]
"""

SOURCE_MODULE = '''
STATE = {"calls": [], "done": [0]}


class Counting:
    """n rows in pages of `page`; records how many cells were done at each page asked."""

    def __init__(self, params, root):
        self.n, self.page = params["n"], params["page"]

    def pages(self, cursor):
        start = cursor or 0
        STATE["calls"].append((start, STATE["done"][0]))
        rows = [
            {"id": f"c{i}", "q": f"x{i}", "expected": f"x{i}" if i % 3 else "no", "lang": i % 2}
            for i in range(start, min(start + self.page, self.n))
        ]
        nxt = start + self.page
        return rows, (nxt if nxt < self.n else None)


class Broken:
    def __init__(self, params, root):
        pass

    def pages(self, cursor):
        if cursor is None:
            return [{"id": "a", "q": "SECRETROW"}], 1
        raise ValueError("cannot parse SECRETROW")


class NoPages:
    def __init__(self, params, root):
        pass


class Checked:
    """Two rows written as cases, each with an exec check: a snippet and a mapping."""

    def __init__(self, params, root):
        self.bad = (params or {}).get("bad")

    def pages(self, cursor):
        if self.bad:
            return [{"id": "bad", "vars": {"q": "x"}, "check": {"nope": 1}}], None
        return [
            {"id": "ok", "vars": {"q": "x"}, "check": 'test "$(cat "$ANSWER")" = x'},
            {"id": "no", "vars": {"q": "y"}, "check": {"run": "exit 3", "timeout_s": 5}},
        ], None
'''


@pytest.fixture
def sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    import importlib
    import sys

    write(tmp_path / "mysources.py", SOURCE_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("mysources", None)
    return importlib.import_module("mysources")


def test_pages_are_pulled_as_the_run_needs_them(tmp_path: Path, sources: Any) -> None:
    cfg = write(
        tmp_path / "eval.yaml",
        HEAD
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
        HEAD
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


def test_the_digest_of_rows_changes_with_the_data(tmp_path: Path, sources: Any) -> None:
    def digest(n: int) -> str:
        cfg = write(
            tmp_path / f"e{n}.yaml",
            HEAD + f'cases: [{{source: "mysources:Counting", params: {{n: {n}, page: 7}}}}]\n',
        )
        run = evalwh.run_eval(cfg, output_dir=tmp_path / "o")
        view = evalwh.open_warehouse(tmp_path / "o" / "warehouse.duckdb")
        return str(json.loads(view.run(run.run_id)["datasources"])[0]["digest"])

    assert digest(10) == digest(10) != digest(11)


def test_resume_and_retry_of_a_datasource_run_are_refused(tmp_path: Path, sources: Any) -> None:
    cfg = write(
        tmp_path / "eval.yaml",
        HEAD + 'cases: [{source: "mysources:Counting", params: {n: 5, page: 2}}]\n',
    )
    run = evalwh.run_eval(cfg, output_dir=tmp_path / "o")
    for flag in ("--resume", "--retry-errors"):
        done = run_cli(
            "-o",
            str(tmp_path / "o"),
            "run",
            str(cfg),
            flag,
            run.run_id,
            env={"PYTHONPATH": str(tmp_path)},
        )
        assert done.returncode == 2, done.stderr
        assert f"{flag} refused" in done.stderr and "mysources:Counting" in done.stderr
        assert "could skip or" in done.stderr and "export the source to a file" in done.stderr
    # a file run of the same warehouse still resumes
    plain = write(tmp_path / "plain.yaml", HEAD + "cases: [{id: a, vars: {q: x}, expected: x}]\n")
    first = evalwh.run_eval(plain, output_dir=tmp_path / "o")
    again = evalwh.run_eval(plain, output_dir=tmp_path / "o", resume=first.run_id, force=True)
    assert again.run_id == first.run_id


def test_a_sharded_datasource_run_is_refused_before_the_source_is_read(
    tmp_path: Path, sources: Any
) -> None:
    """--shard over a datasource: every shard would read the whole live source again, and a
    shard started again skips stored cells (a resume): refused, exit 2, nothing read or
    created. The same config's file cases alone still shard."""
    from evalwh.errors import UsageError

    static = "  - {id: a, vars: {q: x}, expected: x}\n  - {id: b, vars: {q: y}, expected: y}\n"
    cfg = write(
        tmp_path / "eval.yaml",
        HEAD + 'cases:\n  - {source: "mysources:Counting", params: {n: 5, page: 2}}\n' + static,
    )
    done = run_cli(
        "-o",
        str(tmp_path / "o"),
        "run",
        str(cfg),
        "--shard",
        "1/2",
        "--run-id",
        "nightly",
        env={"PYTHONPATH": str(tmp_path)},
    )
    assert done.returncode == 2, done.stderr
    assert "--shard cannot split" in done.stderr and "mysources:Counting" in done.stderr
    with pytest.raises(UsageError, match="--shard cannot split") as caught:
        evalwh.run_eval(cfg, output_dir=tmp_path / "o", shard=(2, 2), run_id="nightly")
    assert caught.value.exit_code == 2
    assert sources.STATE["calls"] == []  # the source was never read
    assert not (tmp_path / "o" / "warehouse.duckdb").exists()  # no run was created
    plain = write(tmp_path / "plain.yaml", HEAD + "cases:\n" + static)
    whole = evalwh.run_eval(plain, output_dir=tmp_path / "o", shard=(1, 1), run_id="nightly")
    assert whole.concluded and whole.totals["n"] == 2 and whole.status == "completed"


def test_build_plan_refuses_a_shard_of_a_datasource_config(tmp_path: Path, sources: Any) -> None:
    from evalwh.config.loader import load_config
    from evalwh.engine.plan import Filters, build_plan
    from evalwh.errors import UsageError

    cfg = load_config(
        write(
            tmp_path / "eval.yaml",
            HEAD
            + "cases:\n"
            + '  - {source: "mysources:Counting", params: {n: 5, page: 2}}\n'
            + '  - {source: "mysources:Broken"}\n',
        )
    )
    assert build_plan(cfg, Filters()).streaming is False  # no reads opened: nothing streams
    with pytest.raises(UsageError) as info:
        build_plan(cfg, Filters(shard=(1, 2)))
    assert str(info.value) == (
        f"{cfg.path}: --shard cannot split a run whose cases come from a datasource "
        "(mysources:Counting, mysources:Broken): every shard would read the whole source "
        "again, and a shard started again would resume it, which a datasource run never "
        "does. Run it unsharded, or export the source to a case file (file: cases.jsonl) "
        "and shard that"
    )
    with pytest.raises(UsageError, match="--shard cannot split"):
        build_plan(cfg, Filters(shard=(1, 1)), sources=["opened"])


def test_a_failing_datasource_fails_the_run_naming_it(tmp_path: Path, sources: Any) -> None:
    cfg = write(tmp_path / "eval.yaml", HEAD + 'cases: [{source: "mysources:Broken"}]\n')
    with pytest.raises(ConfigError, match=r"datasource 'mysources:Broken' failed after 1 page"):
        evalwh.run_eval(cfg, output_dir=tmp_path / "o")
    with duckdb.connect(str(tmp_path / "o" / "warehouse.duckdb"), read_only=True) as con:
        assert con.execute("SELECT status FROM runs").fetchall() == [("failed",)]
    with pytest.raises(ConfigError) as caught:
        evalwh.run_eval(cfg, output_dir=tmp_path / "o", no_look=True)
    assert "ValueError" in str(caught.value) and "SECRETROW" not in str(caught.value)
    assert caught.value.exit_code == 2


def test_registration_errors_name_the_entry_and_the_fix(tmp_path: Path, sources: Any) -> None:
    for source, message in (
        ("nosuch", "unknown datasource 'nosuch'"),
        ("mysources:Missing", "cannot import datasource 'mysources:Missing'"),
        ("mysources:NoPages", r"has no pages\(cursor\) method"),
    ):
        cfg = write(tmp_path / "eval.yaml", HEAD + f'cases: [{{source: "{source}"}}]\n')
        with pytest.raises(ConfigError, match=message) as caught:
            evalwh.validate(cfg, output_dir=tmp_path / "o")
        assert "cases[0].source" in str(caught.value)
    assert source_class("sql") is source_class("duckdb") is DuckDBSource
    assert source_class("jsonl-glob") is JsonlGlobSource


def test_an_entry_point_registers_a_datasource(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib.metadata import EntryPoint

    import evalwh.datasources as registry

    point = EntryPoint("tickets", "evalwh.datasources.jsonl:JsonlGlobSource", "evalwh.datasources")
    monkeypatch.setattr(registry, "entry_points", lambda group: [point])
    registry.available.cache_clear()
    try:
        assert registry.source_class("tickets") is JsonlGlobSource
        assert registry.available()["duckdb"] == registry.BUILTIN["duckdb"]
    finally:
        registry.available.cache_clear()


def test_duckdb_keyset_and_offset_paging(tmp_path: Path) -> None:
    import duckdb

    duckdb.sql(
        f"COPY (SELECT i AS id, 'q' || i AS q FROM range(25) t(i) ORDER BY random()) "
        f"TO '{tmp_path / 'c.parquet'}' (FORMAT parquet)"
    )
    keyset = DuckDBSource(
        {"query": "SELECT * FROM 'c.parquet'", "key": "id", "page_size": 10}, tmp_path
    )
    pages = list(iter_pages(keyset))
    assert [len(p) for p in pages] == [10, 10, 5]
    assert [r["id"] for p in pages for r in p] == list(range(25))  # in key order
    offset = DuckDBSource({"query": "SELECT * FROM 'c.parquet'", "page_size": 5}, tmp_path)
    rows, cursor = offset.pages(None)
    assert len(rows) == 5 and cursor == 5
    rows, cursor = offset.pages(20)
    assert len(rows) == 5 and cursor == 25  # a full last page: one more (empty) page ends it
    assert offset.pages(25) == ([], None)
    everything = [r["id"] for p in iter_pages(offset) for r in p]
    assert sorted(everything) == list(range(25)) and len(everything) == 25


def test_duckdb_source_checks_its_params(tmp_path: Path) -> None:
    for params, message in (
        ({}, "needs a query"),
        ({"query": "SELECT 1", "page_size": 0}, "page_size must be"),
        ({"query": "SELECT 1", "page_size": 100_001}, "page_size must be"),
        ({"query": "SELECT 1", "limit": 3}, "unknown duckdb datasource parameter"),
    ):
        with pytest.raises(ConfigError, match=message):
            DuckDBSource(params, tmp_path)
    assert DuckDBSource({"query": "SELECT 1", "page_size": 100_000}, tmp_path).page_size == 100_000
    with pytest.raises(ConfigError, match="no column 'nope'"):
        DuckDBSource({"query": "SELECT 1 AS a", "key": "nope", "page_size": 1}, tmp_path).pages(
            None
        )


def test_jsonl_glob_reads_shards_in_order_across_pages(tmp_path: Path) -> None:
    texts = []
    for shard in range(3):
        lines = [json.dumps({"id": f"s{shard}-{i}", "q": i}) for i in range(4)]
        texts.append("\n".join(lines[:2]) + "\n\n" + "\n".join(lines[2:]) + "\n")
        write(tmp_path / "shards" / f"{shard}.jsonl", texts[-1])
    source = JsonlGlobSource({"pattern": "shards/*.jsonl", "page_size": 5}, tmp_path)
    pages = list(iter_pages(source))
    assert [len(p) for p in pages] == [5, 5, 2]  # blank lines skipped, pages span shards
    assert [r["id"] for p in pages for r in p] == [f"s{s}-{i}" for s in range(3) for i in range(4)]
    expected = hashlib.sha256("".join(texts).encode()).hexdigest()
    assert source.digest() == f"sha256:{expected}"


def test_jsonl_glob_errors_name_the_file_and_line(tmp_path: Path) -> None:
    write(tmp_path / "a.jsonl", '{"id": 1}\n[1]\n')
    with pytest.raises(ConfigError, match=r"a\.jsonl:2.*not a JSON object"):
        list(iter_pages(JsonlGlobSource({"pattern": "*.jsonl"}, tmp_path)))
    with pytest.raises(ConfigError, match="no file matches"):
        JsonlGlobSource({"pattern": "none/*.jsonl"}, tmp_path)


def test_case_filter_mapping_and_unrenderable_rows(tmp_path: Path) -> None:
    rows = [{"id": f"r{i}", "q": f"a{i}", "expected": f"a{i}"} for i in range(6)]
    rows[4] = {"id": "r4", "other": 1}  # no `q`: its prompt does not render
    write(tmp_path / "s" / "0.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")
    cfg = write(
        tmp_path / "eval.yaml",
        HEAD + "cases: [{source: jsonl-glob, params: {pattern: 's/*.jsonl', page_size: 2}}]\n",
    )
    picked = evalwh.run_eval(cfg, output_dir=tmp_path / "o", cases=["r1", "r2"])
    assert picked.totals["n"] == 2 and picked.totals["n_passed"] == 2
    whole = evalwh.run_eval(cfg, output_dir=tmp_path / "o")
    assert whole.totals["n"] == 6 and whole.totals["n_errors"] == 1
    (error,) = whole.errors
    assert error["error_kind"] == "render" and "q" in error["error"]


JUDGED = """
models: [{id: m, provider: mock, mock: {default: "an answer"}}]
variants: [{id: v, messages: [{role: user, content: "{{ q }}"}]}]
judges:
  - id: j
    model: {id: jm, provider: mock, mock: {default: '{"score": 1, "reason": "fine"}'}}
    messages: [{role: user, content: "on {{ topic }}: {{ output }}"}]
scorecard: [{name: good, type: llm-judge, judge: j}]
cases: [{source: jsonl-glob, params: {pattern: 's/*.jsonl'}}]
"""


@pytest.mark.parametrize("no_look", [False, True])
def test_a_row_the_judges_prompt_cannot_render_errs_that_criterion_not_the_run(
    tmp_path: Path, no_look: bool
) -> None:
    """A datasource row is read during the run, after the checks: a row without a variable
    the judge's template uses ends as that criterion's error, naming the config, the judge's
    message and the variable (a no-look run stores no message), and the other rows are judged."""
    rows = [{"id": "r1", "q": "a", "topic": "maths"}, {"id": "r2", "q": "b"}]
    write(tmp_path / "s" / "0.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")
    cfg = write(tmp_path / "eval.yaml", JUDGED + ("privacy: {no_look: true}\n" if no_look else ""))
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "o")
    assert result.status == "completed" and result.totals["n"] == 2
    stored = duckdb_rows(
        tmp_path / "o" / "warehouse.duckdb",
        "SELECT case_id, score, passed, error FROM scores ORDER BY case_id",
    )
    assert stored[0] == ("r1", 1.0, True, None)
    case_id, score, passed, error = stored[1]
    assert (case_id, score, passed) == ("r2", 0.0, False)
    if no_look:  # a no-look run stores that a criterion erred, never its message
        assert error == "error"
    else:
        prefix = f"judge 'j' prompt did not render: {tmp_path / 'eval.yaml'}: judges[0].messages[0]"
        assert error.startswith(prefix) and "'topic' is undefined" in error


def test_a_pairwise_comparison_over_a_datasource_is_refused_at_its_key(tmp_path: Path) -> None:
    write(tmp_path / "s" / "0.jsonl", '{"id": "r1", "q": "a"}\n')
    cfg = write(
        tmp_path / "eval.yaml",
        JUDGED.replace("{id: m, provider", "{id: m2, provider: mock}, {id: m, provider")
        + "pairwise:\n  - {name: p, judge: j, baseline: {model: m}, candidate: {model: m2}}\n",
    )
    with pytest.raises(ConfigError) as info:
        evalwh.load_config(cfg)
    error = info.value
    assert (error.where, error.line, error.column) == ("pairwise", 11, 3)  # its list
    assert error.message.startswith("pairwise comparisons need every case in the config")
    assert error.fix is not None and "`evalwh compare A B`" in error.fix


def duckdb_rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    import duckdb

    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute(sql).fetchall()


def test_a_row_that_is_not_a_mapping_is_an_error(tmp_path: Path) -> None:
    from evalwh.config.datasets import datasource_cases
    from evalwh.config.model import SourceSpec

    with pytest.raises(ConfigError, match="page 1 row 2"):
        datasource_cases(SourceSpec("x", where="cases[0]"), [{"id": 1}, [1]], 1, checked=False)
    with pytest.raises(ConfigError, match="missing column 'lang'"):
        spec = SourceSpec("x", mapping={"metadata": ["lang"]}, where="cases[0]")
        datasource_cases(spec, [{"id": 1}], 1, checked=False)
    spec = SourceSpec("x", mapping={"metadata": ["lang"]}, where="cases[0]")
    assert datasource_cases(spec, [{"id": 1}], 2, checked=True)[0].metadata == {"lang": None}


def test_open_source_places_its_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="needs a pattern"):
        open_source("jsonl-glob", {}, tmp_path)
    cfg = write(tmp_path / "eval.yaml", HEAD + "cases: [{source: jsonl-glob, params: {}}]\n")
    with pytest.raises(ConfigError) as caught:
        evalwh.validate(cfg, output_dir=tmp_path / "o")
    assert "cases[0].params.pattern" in str(caught.value) and str(cfg) in str(caught.value)


def test_an_mcp_client_may_not_use_a_datasource(tmp_path: Path) -> None:
    from evalwh.config.confinement import ConfinementError, load_confined

    write(tmp_path / "s" / "0.jsonl", '{"id": 1, "q": "x"}\n')
    cfg = write(
        tmp_path / "eval.yaml",
        HEAD + "cases: [{source: jsonl-glob, params: {pattern: '../*/s/*.jsonl'}}]\n",
    )
    with pytest.raises(ConfinementError) as caught:
        load_confined(cfg, tmp_path, allow_code=False)
    keys = {v.key for v in caught.value.violations}
    assert keys == {"cases[0].source", "cases[0].params.pattern"}
    inside = write(
        tmp_path / "in.yaml", HEAD + "cases: [{source: jsonl-glob, params: {pattern: 's/*'}}]\n"
    )
    assert load_confined(inside, tmp_path, allow_code=True).sources[0].name == "jsonl-glob"


def test_validate_counts_no_datasource_cases_and_shows_no_sample_in_no_look(
    tmp_path: Path,
) -> None:
    write(tmp_path / "s" / "0.jsonl", '{"id": 1, "q": "x"}\n')
    cfg = write(
        tmp_path / "eval.yaml",
        HEAD + "cases: [{id: a, vars: {q: y}}, {source: jsonl-glob, params: {pattern: 's/*'}}]\n",
    )
    dry = evalwh.validate(cfg, output_dir=tmp_path / "o")
    assert dry.cases == 1 and dry.datasources == ["jsonl-glob"] and dry.sample is not None
    assert evalwh.validate(cfg, output_dir=tmp_path / "o", no_look=True).sample is None
    with pytest.raises(UsageError, match="no-look"):
        evalwh.api.render_prompt(
            write(tmp_path / "nl.yaml", cfg.read_text() + "privacy: {no_look: true}\n"), "v", "a"
        )


def test_the_streaming_cache_keeps_the_newest_entries() -> None:
    from evalwh.engine.feed import BoundedCache

    cache = BoundedCache(3)
    for i in range(5):
        cache[f"k{i}"] = i
    assert list(cache) == ["k2", "k3", "k4"]
    cache["k5"] = 5
    assert len(cache) == 3 and "k2" not in cache


def test_progress_of_a_run_of_unknown_size() -> None:
    from evalwh.mcp.tools import ProgressThrottle

    throttle = ProgressThrottle()
    due = [n for n in range(1, 3001) if throttle.due(n, 0)]
    assert due == [1, 1000, 2000, 3000]  # not one notification per cell
    known = ProgressThrottle(steps=4)
    assert [n for n in range(1, 9) if known.due(n, 8)] == [1, 2, 4, 6, 8]


def test_an_export_that_does_not_fit_its_memory_limit_retries_with_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import evalwh.warehouse.store as store

    cfg = write(tmp_path / "eval.yaml", HEAD + "cases: [{id: a, vars: {q: x}, expected: x}]\n")
    monkeypatch.setattr(store, "EXPORT_MEMORY_LIMIT", "1MB")  # no export sorts in 1 MB
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "o")
    assert result.status == "completed"
    assert (Path(result.exports or "") / "cases.parquet").is_file()
    monkeypatch.setattr(store, "EXPORT_MEMORY_RETRY", "1MB")
    with pytest.raises(Exception, match="Out of Memory"):
        evalwh.run_eval(cfg, output_dir=tmp_path / "o2")


def test_a_run_stopped_at_its_cost_cap_reads_no_further_pages(tmp_path: Path, sources: Any) -> None:
    priced = HEAD.replace(
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


@pytest.mark.skipif(os.name == "nt", reason="exec checks need a POSIX shell")
def test_a_streamed_rows_exec_checks_are_parsed_and_run(tmp_path: Path, sources: Any) -> None:
    cfg = write(tmp_path / "eval.yaml", HEAD + 'cases: [{source: "mysources:Checked"}]\n')
    evalwh.run_eval(cfg, output_dir=tmp_path / "o")
    with duckdb.connect(str(tmp_path / "o" / "warehouse.duckdb"), read_only=True) as con:
        rows = con.execute(
            "SELECT case_id, check_passed, check_exit_code, error FROM cases ORDER BY case_id"
        ).fetchall()
    assert rows == [("no", False, 3, None), ("ok", True, 0, None)]


def test_a_streamed_rows_bad_check_is_refused_naming_the_row_and_the_config(
    tmp_path: Path, sources: Any
) -> None:
    cases = 'cases: [{source: "mysources:Checked", params: {bad: true}}]\n'
    cfg = write(tmp_path / "eval.yaml", HEAD + cases)
    with pytest.raises(ConfigError) as info:
        evalwh.run_eval(cfg, output_dir=tmp_path / "o")
    assert (info.value.file, info.value.where) == (
        str(cfg),
        "datasource mysources:Checked (cases[0]) page 1 row 1 check.nope",
    )
    assert info.value.message == "unknown key(s) in check: nope"
