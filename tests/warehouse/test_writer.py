"""Writing runs into the warehouse (evalwh/warehouse/writer.py), with the run writer called
directly on a real warehouse file: when a batch is due (full, old, or the heartbeat), what a
flush writes (and replaces, on a retry of errors), an empty flush, a lease another process
took, the response cache (one row per hash without a key, in the warehouse or its own file,
refreshed under --no-cache), the debug pause, the label of each write, typed batches, and the
JSON encoder. Whole runs are in tests/engine and tests/features/test_reliability.py."""

from __future__ import annotations

import datetime
import json
import logging
import math
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest

from evalwh.config.model import Case
from evalwh.engine.answers import CachedAnswer
from evalwh.engine.records import RowSink
from evalwh.warehouse import writer
from evalwh.warehouse.lake import LakeTarget
from evalwh.warehouse.store import Warehouse
from evalwh.warehouse.writer import LeaseLostError, RunWriter
from tests.builders import CELL_MODEL as MODEL
from tests.builders import cell_result as result
from tests.builders import lose_the_first_commit
from tests.warehouse.test_store import one_run, run_row, write_labels


def test_the_warehouse_json_encoder_writes_what_json_dumps_writes() -> None:
    """writer._json_encoder() builds the encoder once at import; called here directly so a
    mutant of it is live (mutmut switches mutants after import)."""
    from evalwh.warehouse.writer import _json_encoder

    encode = _json_encoder()
    when = datetime.date(2026, 1, 2)
    value = {"b": [1, 2.5, True, None], "a": 'Grüße "q" \\ 日本\n', "when": when, "n": {"x": {}}}
    assert encode(value) == json.dumps(value, ensure_ascii=False, default=str)
    assert encode(value) == (
        '{"b": [1, 2.5, true, null], "a": "Grüße \\"q\\" \\\\ 日本\\n", '
        '"when": "2026-01-02", "n": {"x": {}}}'
    )  # insertion order kept, ", " and ": " separators, non-ASCII as is, str() for the rest
    assert encode("plain\t") == '"plain\\t"' and encode(3) == "3" and encode(None) == "null"
    long = [{"k": "x" * 10}] * 20_000  # several chunks from the C encoder, joined with nothing
    assert encode(long) == json.dumps(long, ensure_ascii=False)
    # json.dumps's checks are kept: NaN and infinities as JSON5 words, a cycle and a key
    # that is no JSON key are errors (a scorer's details can hold any of these)
    assert encode([math.nan, math.inf, -math.inf]) == "[NaN, Infinity, -Infinity]"
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(ValueError, match=r"^Circular reference detected$"):
        encode(cycle)
    with pytest.raises(TypeError, match="keys must be str, int, float, bool or None"):
        encode({(1, 2): "tuple key"})


def test_the_warehouse_json_encoder_without_the_c_accelerator(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A Python built without _json gets json's own encoder, with the same output."""
    import json.encoder

    from evalwh.warehouse.writer import _json_encoder

    monkeypatch.setattr(json.encoder, "c_make_encoder", None)
    encode = _json_encoder()
    value = {"a": "Grüße 日本", "when": datetime.date(2026, 1, 2), "n": [1, None]}
    assert encode(value) == '{"a": "Grüße 日本", "when": "2026-01-02", "n": [1, null]}'


@pytest.fixture
def path(tmp_path: Path) -> Path:
    where = tmp_path / "w.duckdb"
    Warehouse(where).create_run(run_row(lease_token="tok"))
    return where


def rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def flush_one(run_writer: RunWriter, output: str, case_id: str = "c1") -> None:
    cell = result(Case(id=case_id))
    cell.output = output
    RowSink(run_writer, run_writer.run_id)(cell)
    run_writer.flush(run_writer.take_batch())


def test_a_batch_is_due_when_full_when_old_or_when_the_heartbeat_is(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [1000.0]
    monkeypatch.setattr(writer.time, "monotonic", lambda: clock[0])
    run_writer = RunWriter(path, "r-1", batch_size=3, flush_interval_s=1.0, heartbeat_s=30.0)
    row = [None] * len(writer.CASE_COLUMNS)
    assert run_writer.due() is False
    clock[0] = 1001.0
    assert run_writer.due() is False  # old enough, but nothing to write
    run_writer.add_case(row)
    clock[0] = 1000.5
    assert run_writer.due() is False  # one row, not yet a second old
    clock[0] = 1001.0
    assert run_writer.due() is True
    clock[0] = 1000.0
    run_writer.add_case(row)
    assert run_writer.due() is False
    run_writer.add_case(row)
    assert run_writer.due() is True  # a full batch, at once
    run_writer.take_batch()
    clock[0] = 1029.9
    assert run_writer.due() is False
    clock[0] = 1030.0
    assert run_writer.due() is True  # nothing to write, but the heartbeat is due


def test_by_default_a_row_waits_at_most_a_second_and_one_batch_is_the_most_held(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [1000.0]
    monkeypatch.setattr(writer.time, "monotonic", lambda: clock[0])
    run_writer = RunWriter(path, "r-1")  # a run's writer sets no flush interval
    run_writer.add_case([None] * len(writer.CASE_COLUMNS))
    clock[0] = 1000.99
    assert run_writer.due() is False
    clock[0] = 1001.0
    assert run_writer.due() is True
    # the engine waits for the writer once a batch is pending: one batch, never less than a row
    assert [RunWriter(path, "r-1", batch_size=n).max_pending for n in (1, 0, 500)] == [1, 1, 500]


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


def test_a_batch_converts_each_value_to_its_columns_type_and_refuses_one_of_another_type() -> None:
    """Typed conversion, not inference then a cast: integers are microseconds in a timestamp
    column, and a number in a text column is a bug to surface, not text to store as "1"."""
    columns = writer._Columns(
        [("t", pa.timestamp("us", tz="UTC")), ("n", pa.float64()), ("s", pa.string())]
    )
    table = columns.table([(1_700_000_000_000_000, 1, None), (0, 2.5, "x")])
    assert table is not None and table.schema == columns.schema
    assert table.column("n").to_pylist() == [1.0, 2.5]
    assert [t.isoformat() for t in table.column("t").to_pylist()] == [
        "2023-11-14T22:13:20+00:00",
        "1970-01-01T00:00:00+00:00",
    ]
    with pytest.raises(pa.ArrowTypeError):
        columns.table([(0, 1.0, 1)])


def test_a_flush_appends_and_a_retry_of_errors_replaces_the_cells_rows(path: Path) -> None:
    first = RunWriter(path, "r-1", token="tok")
    flush_one(first, "old")
    flush_one(first, "other", "c2")
    assert (first.rows_written, first.flushes) == (2, 2)
    retry = RunWriter(path, "r-1", token="tok", replace=True)
    flush_one(retry, "new")
    assert rows(path, "SELECT case_id, output FROM cases ORDER BY case_id") == [
        ("c1", "new"),
        ("c2", "other"),
    ]
    assert rows(path, "SELECT case_id, count(*) FROM scores GROUP BY ALL ORDER BY 1") == [
        ("c1", 1),
        ("c2", 1),
    ]
    again = RunWriter(path, "r-1", token="tok")  # not a retry: the rows add up
    flush_one(again, "newer")
    assert rows(path, "SELECT count(*) FROM cases WHERE case_id = 'c1'") == [(2,)]


def test_the_flushed_hook_hears_a_batchs_case_rows_once_they_are_stored(path: Path) -> None:
    """The answer journal's mark: told only after the batch's transaction committed (the
    rows are readable by then), never for an empty batch."""
    heard: list[list[Any]] = []

    def flushed(case_rows: list[Any]) -> None:
        stored = rows(path, "SELECT case_id FROM cases ORDER BY case_id")
        heard.append([(r[3], (r[3],) in stored) for r in case_rows])

    run_writer = RunWriter(path, "r-1", token="tok", flushed=flushed)
    flush_one(run_writer, "one")
    run_writer.flush(run_writer.take_batch())  # nothing buffered: no word
    flush_one(run_writer, "two", "c2")
    assert heard == [[("c1", True)], [("c2", True)]]


def test_an_empty_flush_writes_nothing_until_the_heartbeat_is_due(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [1000.0]
    monkeypatch.setattr(writer.time, "monotonic", lambda: clock[0])
    run_writer = RunWriter(path, "r-1", token="tok", heartbeat_s=30.0)
    beats = "SELECT run_id, lease_token, rows_written, retries FROM run_beats"
    run_writer.write((None, None, None, None))
    assert run_writer.flushes == 0 and rows(path, beats) == []
    clock[0] = 1030.0
    run_writer.write((None, None, None, None))
    assert run_writer.flushes == 1
    assert rows(path, beats) == [("r-1", "tok", 0, 0)]  # appended; the run's row is untouched


def test_a_lease_another_process_took_stops_the_writes(path: Path) -> None:
    with pytest.raises(LeaseLostError) as info:
        flush_one(RunWriter(path, "r-1", token="someone else's"), "x")
    assert str(info.value) == (
        "run r-1 was taken over by another process (`evalwh run --resume RUN --force`); this"
        " process stopped writing it"
    )
    assert rows(path, "SELECT count(*) FROM cases") == [(0,)]


@pytest.mark.parametrize(("pause", "slept"), [("0.5", [0.5]), ("0", []), ("", [])])
def test_the_debug_pause_holds_each_flush_open(
    path: Path, monkeypatch: pytest.MonkeyPatch, pause: str, slept: list[float]
) -> None:
    monkeypatch.setenv(writer.FLUSH_PAUSE_ENV, pause)
    pauses: list[float] = []
    monkeypatch.setattr(writer.time, "sleep", pauses.append)
    flush_one(RunWriter(path, "r-1", token="tok"), "x")
    assert pauses == slept


def test_a_flush_is_labelled_with_its_run(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    labels = write_labels(monkeypatch, writer)
    flush_one(RunWriter(path, "r-1", token="tok"), "x")
    assert labels == ["flush run r-1"]


def cached_answers(db: Path) -> list[tuple[str, str]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(
            "SELECT request_hash, output FROM response_cache "
            "WHERE request_hash IN ('h1', 'h2') ORDER BY ALL"
        ).fetchall()


def cache_keys(db: Path) -> tuple[int, ...] | None:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(
            "SELECT count(*) FROM duckdb_constraints() WHERE table_name = 'response_cache' "
            "AND constraint_type = 'PRIMARY KEY'"
        ).fetchone()


def test_a_flush_reads_within_its_own_memory_limit_and_one_that_cannot_fit_is_written_once(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Within the warehouse's 2 GB DuckDB kept every block a flush read (the response cache's
        check reads all its hashes: +45 MB a flush at a million cached answers), so a flush's
        statements run within FLUSH_MEMORY_LIMIT. A batch that cannot fit there (here: 200 answers
        of 20 KB within 1 MB) is rolled back and written again within the warehouse's limit:
        stored once, not twice, and counted; each flush tries its own limit first. The commit (and
    the checkpoint DuckDB may run there) is within the warehouse's limit."""
    limits: list[str] = []
    real = writer._append

    def noting(con: Any, table: str, rows: Any) -> None:
        limits.append(con.execute("SELECT current_setting('memory_limit')").fetchone()[0])
        real(con, table, rows)

    monkeypatch.setattr(writer, "_append", noting)
    at_commit: list[str] = []
    real_transaction = writer.write_transaction

    def committing(where: Any, body: Any, **options: Any) -> Any:
        def then_commit(con: Any) -> None:
            body(con)
            at_commit.append(con.execute("SELECT current_setting('memory_limit')").fetchone()[0])

        return real_transaction(where, then_commit, **options)

    monkeypatch.setattr(writer, "write_transaction", committing)
    scratch = duckdb.connect()
    scratch.execute(f"SET memory_limit = '{writer.FLUSH_MEMORY_LIMIT}'")
    small = scratch.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    scratch.close()
    run_writer = RunWriter(path, "r-1", token="tok")
    flush_one(run_writer, "short")
    assert limits == [small, small] and run_writer.memory_retries == 0  # cases, scores
    # never the COMMIT: a checkpoint there that ran out of memory (a million-case run's did)
    # invalidates the database after the commit was logged, a batch neither lost nor retried
    assert at_commit == [memory_limit_of_a_write_connection(path)]

    run_writer.memory_limit = "1MB"
    sink = RowSink(run_writer, "r-1")
    for i in range(200):
        cell = result(Case(id=f"long-{i}"))
        cell.output = "x" * 20_000
        sink(cell)
    limits.clear()
    run_writer.flush(run_writer.take_batch())
    assert run_writer.memory_retries == 1
    assert limits[0] != limits[-1] and limits[-1] == memory_limit_of_a_write_connection(path)
    assert rows(path, "SELECT count(*), count(DISTINCT case_id) FROM cases") == [(201, 201)]
    assert rows(path, "SELECT count(*) FROM scores") == [(201,)]
    assert rows(path, "SELECT max(rows_written) FROM run_beats") == [(201,)]
    run_writer.memory_limit = writer.FLUSH_MEMORY_LIMIT
    flush_one(run_writer, "short again", "c2")
    assert run_writer.memory_retries == 1 and limits[-1] == small  # each flush tries it first


def test_every_flush_sends_the_same_statements_and_keeps_no_row_after_it(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a flush does must not grow with the flushes before it (a million-line run makes
    500): four flushes of five answers each send the very same statements, and the writer
    holds no row once each is written. (The cache check's statement still reads every cached
    hash: its memory is bounded by FLUSH_MEMORY_LIMIT, its reads grow with the cache.)"""
    sent = record_writes(monkeypatch)
    run_writer = RunWriter(path, "r-1", token="tok")
    sink = RowSink(run_writer, "r-1")
    per_flush = []
    for n in range(4):
        for k in range(5):
            cell = result(Case(id=f"c{n}-{k}"))
            sink(cell)
            sink.remember(f"h{n}-{k}", MODEL, CachedAnswer(f"answer {n}-{k}", 1, 2, 3.0))
        assert run_writer.pending == 5
        sent.clear()
        run_writer.flush(run_writer.take_batch())
        per_flush.append(list(sent))
        assert run_writer.pending == 0 and run_writer.take_batch() == ([], [], [], [])
    assert per_flush[1:] == [per_flush[0]] * 3
    assert rows(path, "SELECT count(*) FROM cases") == [(20,)]
    assert rows(path, "SELECT count(*) FROM response_cache") == [(20,)]


def memory_limit_of_a_write_connection(path: Path) -> str:
    from evalwh.warehouse.connect import write_connection

    with write_connection(path) as con:
        value: str = con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    return value


@pytest.mark.parametrize("where", ["warehouse", "cache file"])
def test_the_response_cache_keeps_one_row_per_hash_without_a_key(
    tmp_path: Path, where: str
) -> None:
    """Migration 0009 dropped the key (DuckDB rewrote its whole index on every flush); the
    writer keeps the hash unique, in the warehouse and in a separate cache file alike:
    duplicates in a batch collapse, an answer already stored wins, a refresh replaces it."""
    from datetime import datetime, timezone

    from evalwh.warehouse.writer import RunWriter

    db, run_id = one_run(tmp_path)
    cache = db if where == "warehouse" else tmp_path / "cache" / "cache.duckdb"
    kwargs = {} if where == "warehouse" else {"cache_path": cache}
    now = datetime.now(timezone.utc)

    def answer(writer: RunWriter, key: str, output: str) -> None:
        writer.add_cache([key, "mock", "m", output, 1, 1, 1.0, now, run_id, None])

    writer = RunWriter(db, run_id, **kwargs)  # type: ignore[arg-type]
    answer(writer, "h1", "first")
    answer(writer, "h1", "first")  # the same request twice in one batch
    answer(writer, "h2", "other")
    writer.flush(writer.take_batch())
    answer(writer, "h1", "second")  # another run fetched it too: the stored one stays
    writer.flush(writer.take_batch())
    assert cached_answers(cache) == [("h1", "first"), ("h2", "other")]
    refresh = RunWriter(db, run_id, refresh_cache=True, **kwargs)  # type: ignore[arg-type]
    answer(refresh, "h1", "fresh")
    answer(refresh, "h1", "fresh")
    refresh.flush(refresh.take_batch())
    assert cached_answers(cache) == [("h1", "fresh"), ("h2", "other")]
    assert cache_keys(cache) == (0,)


@pytest.mark.parametrize("where", ["warehouse", "cache file"])
def test_the_pairwise_judges_answers_are_cached_and_refreshed_like_the_cells_answers(
    tmp_path: Path, where: str
) -> None:
    """The pairwise judge's replies reach the response cache with the verdicts: a stored
    answer wins; under --no-cache (refresh) the fresh answer replaces it, as for the cells
    (it once stayed the old one, so the next cached run reused the answer the user had asked
    to refresh)."""
    from datetime import datetime, timezone

    from evalwh.warehouse.writer import RunWriter

    db, run_id = one_run(tmp_path, n=1)
    cache = db if where == "warehouse" else tmp_path / "cache" / "cache.duckdb"
    kwargs = {} if where == "warehouse" else {"cache_path": cache}
    now = datetime.now(timezone.utc)

    def judge_pairs(refresh: bool, output: str) -> None:
        writer = RunWriter(db, run_id, refresh_cache=refresh, **kwargs)  # type: ignore[arg-type]
        writer.add_cache(["h1", "mock", "judge", output, 1, 1, 1.0, now, run_id, None])
        writer.write_pairs([], ["a-vs-b"])

    judge_pairs(False, "first")
    assert cached_answers(cache) == [("h1", "first")]
    judge_pairs(False, "second")  # another run asked the same: the stored answer stays
    assert cached_answers(cache) == [("h1", "first")]
    judge_pairs(True, "fresh")
    assert cached_answers(cache) == [("h1", "fresh")]


def test_answers_go_to_the_cache_file_when_it_is_its_own(path: Path, tmp_path: Path) -> None:
    cache_file = tmp_path / "cache.duckdb"
    run_writer = RunWriter(path, "r-1", token="tok", cache_path=cache_file)
    RowSink(run_writer, "r-1").remember("h1", MODEL, CachedAnswer("out", 1, 2, 3.0))
    run_writer.flush(run_writer.take_batch())
    assert rows(cache_file, "SELECT request_hash, output FROM response_cache") == [("h1", "out")]
    assert rows(path, "SELECT count(*) FROM response_cache") == [(0,)]
    assert (run_writer.rows_written, run_writer.flushes) == (0, 1)  # no case row was written


def test_a_cache_file_that_is_the_warehouse_is_no_file_of_its_own(
    path: Path, tmp_path: Path
) -> None:
    assert RunWriter(path, "r-1", cache_path=path).cache_path is None
    assert RunWriter(path, "r-1").cache_path is None
    assert (
        RunWriter(path, "r-1", cache_path=tmp_path / "c.duckdb").cache_path == tmp_path / "c.duckdb"
    )


def test_a_cache_batch_is_unregistered_once_inserted() -> None:
    # a view left behind would hold the batch (a consumed stream) for the connection's life
    con = duckdb.connect()
    con.execute("CREATE TABLE response_cache (request_hash VARCHAR, output VARCHAR)")
    for replace in (False, True):
        batch = pa.table({"request_hash": ["h"], "output": [f"replace={replace}"]})
        writer._insert_cache(con, batch, replace=replace)
        left = "SELECT view_name FROM duckdb_views() WHERE view_name ILIKE '%evalwh_cache%'"
        assert con.execute(left).fetchall() == []
    assert con.execute("SELECT * FROM response_cache").fetchall() == [("h", "replace=True")]
    con.close()


def test_pairwise_verdicts_that_lost_a_lake_race_are_retried_and_logged_by_run(
    file_catalog_lake: LakeTarget, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The same for a run's pairwise verdicts: the debug log names the run they belong to."""
    from evalwh.warehouse import connect
    from evalwh.warehouse.writer import RunWriter

    store = Warehouse(file_catalog_lake)
    connect.write_transaction(
        store.path,
        lambda con: con.execute(
            "INSERT INTO runs (run_id, suite, status, config_hash, dataset_hash, n_planned, "
            "started_at, evalwh_version) VALUES ('p1', 's', 'running', 'h', 'd', 1, now(), 't')"
        ),
        what="seed a run",
    )
    tries = lose_the_first_commit(monkeypatch)
    with caplog.at_level(logging.DEBUG, logger="evalwh.warehouse"):
        RunWriter(store.path, "p1").write_pairs([], ["a-vs-b"])
    assert len(tries) == 2
    retried = [r.getMessage() for r in caplog.records if "DuckLake conflict" in r.getMessage()]
    assert len(retried) == 1
    assert retried[0].startswith("write pairs of run p1: DuckLake conflict (try 1), retrying")


class Recording:
    """A connection that records the text of every statement sent through it."""

    def __init__(self, con: Any, sent: list[str]) -> None:
        self._con, self._sent = con, sent

    def execute(self, sql: str, *args: Any) -> Any:
        self._sent.append(" ".join(sql.split()))
        return self._con.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)


def record_writes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every statement the writer sends inside its transactions from now on."""
    real, sent = writer.write_transaction, []

    def recording(path: Any, body: Any, **options: Any) -> Any:
        return real(path, lambda con: body(Recording(con, sent)), **options)

    monkeypatch.setattr(writer, "write_transaction", recording)
    return sent


@pytest.mark.parametrize("no_cache", [False, True], ids=["cache", "no-cache"])
def test_lake_writers_only_append_while_their_runs_run(
    file_catalog_lake: LakeTarget, monkeypatch: pytest.MonkeyPatch, no_cache: bool
) -> None:
    """Attack on throughput, not on data: a shared row updated per flush (the heartbeat in
    `runs`) or a delete (`--no-cache` swapping cached answers) conflicts on a DuckLake with
    every other writer's commit. Two writers of two runs interleave three flushes each,
    answering the same requests: every statement either sends reads or inserts, no row is
    lost or doubled, no commit was retried, and the newest answer is the one the cache
    gives back."""
    from evalwh.engine.execute import cache_lookup

    store = Warehouse(file_catalog_lake)  # the module's lake: runs and hash of this test's own
    ids = [f"{'n' if no_cache else 'c'}-{k}" for k in (1, 2)]
    shared = f"h-{ids[0]}"
    for run_id in ids:
        store.create_run(run_row(run_id=run_id, lease_token=f"tok-{run_id}"))
    sent = record_writes(monkeypatch)
    writers = {
        run_id: RunWriter(store.path, run_id, token=f"tok-{run_id}", refresh_cache=no_cache)
        for run_id in ids
    }
    for n in range(3):
        for run_id, run_writer in writers.items():
            sink = RowSink(run_writer, run_id)
            for k in range(4):
                cell = result(Case(id=f"c{n}-{k}"))
                cell.output = f"{run_id} answer {n}"
                sink(cell)
            sink.remember(shared, MODEL, CachedAnswer(f"{run_id} answer {n}", 1, 2, 3.0))
            run_writer.flush(run_writer.take_batch())
    # the SQL each statement runs, its comments left out; the connection's temporary macros
    # (run_key, for the rows' keys) change no row
    bare = [
        " ".join(line for line in s.splitlines() if not line.lstrip().startswith("--")).strip()
        for s in sent
    ]
    verbs = {
        s.split()[0].upper()
        for s in bare
        if s and not s.upper().startswith("CREATE OR REPLACE TEMP MACRO")
    }
    assert verbs <= {"SET", "SELECT", "INSERT"}, sorted(verbs)
    # the lake's DuckDB instance outlives a flush: its memory limit is left alone
    assert not [s for s in sent if "memory_limit" in s]
    assert any(s.startswith("INSERT INTO run_beats") for s in sent)
    mine = "run_id IN (?, ?)"
    counted = store.sql(
        "SELECT run_id, count(*) AS n, count(DISTINCT case_id) AS distinct_cases FROM cases "
        f"WHERE {mine} GROUP BY run_id ORDER BY run_id",
        ids,
    ).to_pylist()
    assert counted == [{"run_id": i, "n": 12, "distinct_cases": 12} for i in ids]
    beats = store.sql(
        "SELECT run_id, list(rows_written ORDER BY rows_written) AS rows, max(retries) AS retries "
        f"FROM run_beats WHERE {mine} GROUP BY run_id ORDER BY run_id",
        ids,
    ).to_pylist()
    assert beats == [{"run_id": i, "rows": [4, 8, 12], "retries": 0} for i in ids]
    assert [w.retries for w in writers.values()] == [0, 0]
    answer = cache_lookup(store, [shared])[shared].output
    # each flush appends its answer beside the stored ones (no flush reads the stored cache,
    # --no-cache or not): the newest is the one given back
    assert answer == f"{ids[1]} answer 2"
    newest = store.sql("SELECT max(beat_at) AS b FROM run_beats WHERE run_id = ?", [ids[0]])
    assert store.run_row(ids[0])["heartbeat_at"] == newest["b"][0].as_py()


def test_a_lake_flush_that_lost_a_race_is_retried_and_counted_in_its_beat(
    file_catalog_lake: LakeTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalwh.warehouse.lake import Backoff

    store = Warehouse(file_catalog_lake)
    store.create_run(run_row(run_id="raced", lease_token="tok"))
    waits: list[float] = []
    run_writer = RunWriter(
        store.path, "raced", token="tok", backoff=Backoff(sleep=waits.append, random=lambda: 0.5)
    )
    tries = lose_the_first_commit(monkeypatch)
    flush_one(run_writer, "x")
    assert (len(tries), waits, run_writer.retries) == (2, [0.05], 1)
    flush_one(run_writer, "y", "c2")  # the count runs on over the run's flushes
    beats = "SELECT rows_written, retries FROM run_beats WHERE run_id = 'raced' ORDER BY 1"
    assert store.sql(beats).to_pylist() == [
        {"rows_written": 1, "retries": 1},
        {"rows_written": 2, "retries": 1},
    ]


def test_a_lake_flush_sends_every_statement_inside_its_transaction_and_reads_no_stored_cache(
    file_catalog_lake: LakeTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fixed cost of a lake commit (issue 50), counted on the statements a flush sends
    through its lake cursor: the cursor is pointed at the lake inside the flush's transaction
    (a ``USE`` before ``BEGIN`` read the catalog's snapshot in a PostgreSQL transaction of its
    own: 6 of a flush's 52 statements), and nothing reads the stored response cache (its
    anti-join read every stored request hash from object storage at every flush, a cost that
    grew with the cache): the batch's answers are appended."""
    from evalwh.warehouse import lake as lakemod

    store = Warehouse(file_catalog_lake)
    store.create_run(run_row(run_id="counted", lease_token="tok"))
    run_writer = RunWriter(store.path, "counted", token="tok")
    flush_one(run_writer, "warm")  # the process's attach and the schema check come first
    sent: list[str] = []
    real = lakemod.cursor
    monkeypatch.setattr(lakemod, "cursor", lambda *a, **k: Recording(real(*a, **k), sent))
    for n in range(2):
        sink = RowSink(run_writer, "counted")
        sink(result(Case(id=f"c{n}")))
        sink.remember(f"h-counted-{n}", MODEL, CachedAnswer(f"answer {n}", 1, 2, 3.0))
        run_writer.flush(run_writer.take_batch())
    # the first word of each statement, the connection's temporary macros (run_key) left out
    firsts = [s.split()[0].upper() for s in sent if "CREATE OR REPLACE TEMP MACRO" not in s]
    one_flush = ["BEGIN", "USE", "SET", "SELECT", "INSERT", "INSERT", "INSERT", "INSERT", "COMMIT"]
    assert firsts == one_flush * 2
    assert sent[1] == "USE lake"
    cache = [s for s in sent if "response_cache" in s]
    assert cache == ["INSERT INTO response_cache BY NAME SELECT DISTINCT ON (request_hash) * "
                     "FROM _evalwh_cache"] * 2  # fmt: skip
    stored = "SELECT count(*) AS n FROM response_cache WHERE request_hash LIKE 'h-counted-%'"
    assert store.sql(stored).to_pylist() == [{"n": 2}]
