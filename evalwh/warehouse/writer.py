"""Batched writes of case and score rows: Arrow batches into DuckDB, one transaction each.

The engine hands every finished cell to :meth:`RunWriter.add`; rows are buffered and flushed
when ``batch_size`` rows are waiting or ``flush_interval_s`` has passed (on a DuckLake the
lake's larger sizes, :func:`evalwh.warehouse.lake.flush_sizes`). A flush opens the warehouse,
inserts the batch and appends the run's heartbeat in one transaction, and closes the file
again, so other processes can read between flushes. A crash loses at most the rows not yet
flushed.

While a run runs its writer only appends: a flush inserts rows and never updates or deletes a
row another writer may touch (the heartbeat is a row of ``run_beats``, not an update of
``runs``; on a lake, answers are appended to the response cache, ``--no-cache`` or not,
never swapped for or checked against the stored ones).
On a DuckLake a delete conflicts with every concurrent insert into the same table, so a shared
row updated per flush made writers retry each other's commits. The exception is
``replace`` (``--retry-errors``), which deletes the run's own errored rows before writing their
new answers; on a lake that delete can still conflict and is retried like any commit.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

import duckdb
import pyarrow as pa

from evalwh.errors import WarehouseError
from evalwh.warehouse.connect import memory_limit, register_stream, write_transaction
from evalwh.warehouse.lake import Backoff, Location, is_lake
from evalwh.warehouse.lease import HOST
from evalwh.warehouse.runkeys import insert_rows

# A debugging switch for crash tests: sleep this long inside each flush's transaction, after
# its rows are inserted and before it commits (documented in docs/troubleshooting.md).
FLUSH_PAUSE_ENV = "EVALWH_DEBUG_FLUSH_PAUSE_S"
# The DuckDB memory limit a flush runs within first. Within the warehouse's 2 GB, DuckDB keeps
# every block a flush reads: the response cache's check (an answer already stored wins) reads
# the whole cache's request hashes, so at a million cached answers a flush of 2,000 cases took
# +90-110 MB instead of +40-60 MB (benchmarks/README.md, "Streamed case files"). Within this
# limit DuckDB drops those blocks as it goes and a flush stays near +40 MB whatever the cache
# holds. A flush that cannot fit (very long answers) is rolled back and written again within
# the warehouse's limit, and counted (RunWriter.memory_retries). Its COMMIT (and the checkpoint
# DuckDB may run there or at close) is never within this limit.
FLUSH_MEMORY_LIMIT = "32MB"


class LeaseLostError(WarehouseError):
    """Another process took the run over (``--resume --force``): this writer must stop."""


CASE_COLUMNS: Sequence[tuple[str, pa.DataType]] = (
    ("run_id", pa.string()),
    ("variant", pa.string()),
    ("model", pa.string()),
    ("case_id", pa.string()),
    ("repeat", pa.int32()),
    ("vars", pa.string()),
    ("expected", pa.string()),
    ("metadata", pa.string()),
    ("human_label", pa.string()),
    ("messages", pa.string()),
    ("output", pa.string()),
    ("error", pa.string()),
    ("error_kind", pa.string()),
    ("latency_ms", pa.float64()),
    ("input_tokens", pa.int64()),
    ("output_tokens", pa.int64()),
    ("cost_usd", pa.float64()),
    ("cached", pa.bool_()),
    ("request_hash", pa.string()),
    ("attempts", pa.int32()),
    ("score", pa.float64()),
    ("passed", pa.bool_()),
    ("created_at", pa.timestamp("us", tz="UTC")),
    ("judge_cost_usd", pa.float64()),
    ("check_passed", pa.bool_()),
    ("check_exit_code", pa.int32()),
    ("check_output", pa.string()),
    ("check_error", pa.string()),
    ("attachments", pa.string()),
    ("queued_ms", pa.float64()),
    # why the answer ended and its token kinds (migration 0012; evalwh.providers.base)
    ("finish_reason", pa.string()),
    ("refusal", pa.string()),
    ("tool_calls", pa.string()),
    ("reasoning", pa.string()),
    ("reasoning_tokens", pa.int64()),
    ("cache_read_tokens", pa.int64()),
    ("cache_write_tokens", pa.int64()),
    ("extra", pa.string()),  # the provider's raw values (stop_reason, finish_reason, ...)
)
SCORE_COLUMNS: Sequence[tuple[str, pa.DataType]] = (
    ("run_id", pa.string()),
    ("variant", pa.string()),
    ("model", pa.string()),
    ("case_id", pa.string()),
    ("repeat", pa.int32()),
    ("criterion", pa.string()),
    ("scorer", pa.string()),
    ("score", pa.float64()),
    ("passed", pa.bool_()),
    ("weight", pa.float64()),
    ("required", pa.bool_()),
    ("details", pa.string()),
    ("rationale", pa.string()),
    ("error", pa.string()),
    ("judge_model", pa.string()),
    ("raw_score", pa.float64()),
    ("cost_usd", pa.float64()),
)
PAIR_COLUMNS: Sequence[tuple[str, pa.DataType]] = (
    ("run_id", pa.string()),
    ("comparison", pa.string()),
    ("case_id", pa.string()),
    ("repeat", pa.int32()),
    ("baseline_variant", pa.string()),
    ("baseline_model", pa.string()),
    ("candidate_variant", pa.string()),
    ("candidate_model", pa.string()),
    ("judge", pa.string()),
    ("judge_model", pa.string()),
    ("verdict_ab", pa.string()),
    ("verdict_ba", pa.string()),
    ("verdict", pa.string()),
    ("flipped", pa.bool_()),
    ("eligible", pa.bool_()),
    ("excluded_reason", pa.string()),
    ("baseline_ok", pa.bool_()),
    ("candidate_ok", pa.bool_()),
    ("rationale_ab", pa.string()),
    ("rationale_ba", pa.string()),
    ("error", pa.string()),
    ("metadata", pa.string()),
    ("cost_usd", pa.float64()),
    ("created_at", pa.timestamp("us", tz="UTC")),
)
CACHE_COLUMNS: Sequence[tuple[str, pa.DataType]] = (
    ("request_hash", pa.string()),
    ("provider", pa.string()),
    ("model", pa.string()),
    ("output", pa.string()),
    ("input_tokens", pa.int64()),
    ("output_tokens", pa.int64()),
    ("latency_ms", pa.float64()),
    ("created_at", pa.timestamp("us", tz="UTC")),
    ("run_id", pa.string()),
    ("wire", pa.string()),  # CachedAnswer.wire: why it ended, token kinds
)
# a tool loop's steps (migration 0013; evalwh.engine.toolloop.Turn)
TURN_COLUMNS: Sequence[tuple[str, pa.DataType]] = (
    ("run_id", pa.string()),
    ("variant", pa.string()),
    ("model", pa.string()),
    ("case_id", pa.string()),
    ("repeat", pa.int32()),
    ("seq", pa.int32()),
    ("turn", pa.int32()),
    ("role", pa.string()),
    ("content", pa.string()),
    ("tool_name", pa.string()),
    ("call_id", pa.string()),
    ("arguments", pa.string()),
    ("result", pa.string()),
    ("error", pa.string()),
    ("args_valid", pa.bool_()),
    ("latency_ms", pa.float64()),
    ("input_tokens", pa.int64()),
    ("output_tokens", pa.int64()),
    ("cost_usd", pa.float64()),
    ("cached", pa.bool_()),
    ("finish_reason", pa.string()),
    ("created_at", pa.timestamp("us", tz="UTC")),
)
CASES_SCHEMA = pa.schema(CASE_COLUMNS)
SCORES_SCHEMA = pa.schema(SCORE_COLUMNS)


# Rows detached from the buffers (cases, scores, cache, turns); flush() turns them into Arrow.
# Pairwise verdicts are not buffered: they come after the cells, all at once (write_pairs).
Batch = tuple[list[Sequence[Any]], list[Sequence[Any]], list[Sequence[Any]], list[Sequence[Any]]]
Tables = tuple["pa.Table | None", "pa.Table | None", "pa.Table | None", "pa.Table | None"]


def _json_encoder() -> Any:
    """``json.dumps(value, ensure_ascii=False, default=str)``, minus its per-call set-up: the
    C encoder json.dumps would build (with a fresh circular-reference memo each call)."""
    from json.encoder import (  # type: ignore[attr-defined]  # the C accelerator, untyped
        c_make_encoder,
        encode_basestring,
    )

    if c_make_encoder is None:  # pragma: no cover - a Python without the _json accelerator
        return json.JSONEncoder(ensure_ascii=False, default=str).encode

    def encode(value: Any) -> str:
        if type(value) is str:
            return encode_basestring(value)  # what JSONEncoder.encode does for a str
        chunks = c_make_encoder({}, str, encode_basestring, None, ": ", ", ", False, False, True)(
            value, 0
        )
        return "".join(chunks)

    return encode


_encode_json = _json_encoder()


def to_json(value: Any) -> str | None:
    if value is None:
        return None
    encoded: str = _encode_json(value)
    return encoded


class _Columns:
    """Row buffer for one table: appending a row is one list append; the rows become an
    Arrow table (column by column) only when a batch is written, off the event loop.

    Timestamp values may be datetimes or integers (microseconds since the epoch, UTC): the
    engine's rows carry integers, far cheaper to take and to convert.
    """

    def __init__(self, columns: Sequence[tuple[str, pa.DataType]]) -> None:
        self.names = [name for name, _ in columns]
        self.schema = pa.schema(columns)
        self.width = len(self.names)
        self.rows: list[Sequence[Any]] = []

    def __len__(self) -> int:
        return len(self.rows)

    def append(self, row: Sequence[Any]) -> None:
        if len(row) != self.width:
            raise ValueError(f"a row of {len(row)} values for {self.width} columns")
        self.rows.append(row)

    def take_rows(self) -> list[Sequence[Any]]:
        rows, self.rows = self.rows, []
        return rows

    def table(self, rows: list[Sequence[Any]]) -> pa.Table | None:
        if not rows:
            return None
        # column by column (zip(*rows) slows down more than linearly on big batches)
        return pa.Table.from_arrays(
            [
                pa.array(list(map(itemgetter(i), rows)), type=t)
                for i, t in enumerate(self.schema.types)
            ],
            schema=self.schema,
        )

    def take(self) -> pa.Table | None:
        return self.table(self.take_rows())


class RunWriter:
    """Buffers rows for one run and flushes them in batches (thread-safe ``flush``)."""

    def __init__(
        self,
        path: Location,
        run_id: str,
        *,
        batch_size: int = 2000,
        flush_interval_s: float = 1.0,
        refresh_cache: bool = False,
        replace: bool = False,
        token: str | None = None,
        heartbeat_s: float = 30.0,
        cache_path: Location | None = None,
        flushed: Callable[[list[Sequence[Any]]], None] | None = None,
        backoff: Backoff | None = None,
    ) -> None:
        self.path = path
        # waits between retries of a conflicting lake commit; counts them (the run's totals)
        self.backoff = backoff if backoff is not None else Backoff()
        # told the case rows of each batch once it is stored (the answer journal's mark)
        self.flushed = flushed
        # the response cache's own file (settings.cache_dir); None: the warehouse holds it
        self.cache_path = cache_path if cache_path is not None and cache_path != path else None
        self.run_id = run_id
        self.token = token  # the run's lease: every flush checks it is still ours
        self.heartbeat_s = heartbeat_s  # an idle run still beats this often
        self.batch_size = batch_size
        # cases the engine may hold unwritten before it waits for the writer: one batch (with
        # the batch being flushed, two). A million-case run peaked at 364 MB with four
        # batches, 282 MB with one, at ~10 % less throughput under load (benchmarks/README.md)
        self.max_pending = max(batch_size, 1)
        self.flush_interval_s = flush_interval_s
        self._cases = _Columns(CASE_COLUMNS)
        self._scores = _Columns(SCORE_COLUMNS)
        self._cache = _Columns(CACHE_COLUMNS)
        self._turns = _Columns(TURN_COLUMNS)
        self.refresh_cache = refresh_cache
        self.replace = replace  # retrying errors: the new rows replace the stored ones
        self._lock = threading.Lock()
        self._last_flush = self._last_beat = time.monotonic()
        self.rows_written = 0
        self.flushes = 0
        self._pause_s = float(os.environ.get(FLUSH_PAUSE_ENV) or 0)
        self.on_lake = is_lake(path)
        # a flush's DuckDB limit (None: the warehouse's own). Never on a lake (_limited): its
        # connection belongs to the lake's DuckDB instance, whose limit a SET changes for good
        self.memory_limit: str | None = FLUSH_MEMORY_LIMIT
        self.memory_retries = 0  # flushes written again within the warehouse's limit

    def add_case(self, row: Sequence[Any]) -> None:
        self._cases.append(row)

    def add_score(self, row: Sequence[Any]) -> None:
        self._scores.append(row)

    def add_cache(self, row: Sequence[Any]) -> None:
        self._cache.append(row)

    def add_turn(self, row: Sequence[Any]) -> None:
        """One step of a tool loop's transcript (written with its cell's batch)."""
        self._turns.append(row)

    @property
    def pending(self) -> int:
        return len(self._cases)

    def beat_due(self) -> bool:
        return time.monotonic() - self._last_beat >= self.heartbeat_s

    def due(self) -> bool:
        return (
            self.pending >= self.batch_size
            or (self.pending > 0 and time.monotonic() - self._last_flush >= self.flush_interval_s)
            or self.beat_due()
        )

    def take_batch(self) -> Batch:
        """Detach the buffered rows (call on the event loop; then flush in a thread)."""
        self._last_flush = time.monotonic()
        return (
            self._cases.take_rows(),
            self._scores.take_rows(),
            self._cache.take_rows(),
            self._turns.take_rows(),
        )

    def write_pairs(self, rows: list[list[Any]], comparisons: list[str]) -> None:
        """Replace a run's pairwise verdicts for these comparisons, in one transaction, with
        the judge's new answers for the response cache (replacing cached ones under
        ``--no-cache``, as :meth:`flush` does)."""
        buffer = _Columns(PAIR_COLUMNS)
        for row in rows:
            buffer.append(row)
        table = buffer.take()
        cache = self._cache.take()

        def body(con: Any) -> None:
            self._beat(con)
            con.execute(
                "DELETE FROM pairs WHERE run_id = ? AND list_contains(?, comparison)",
                [self.run_id, comparisons],
            )
            if table is not None:
                _append(con, "pairs", table)
            if cache is not None and self.cache_path is None:
                _insert_cache(con, cache, replace=self.refresh_cache, append=self.on_lake)

        with self._lock:
            write_transaction(
                self.path, body, what=f"write pairs of run {self.run_id}", backoff=self.backoff
            )
        if cache is not None and self.cache_path is not None:
            self._write_cache_file(cache, replace=self.refresh_cache)

    def _write_cache_file(self, cache: pa.Table, *, replace: bool) -> None:
        """Cache rows into the cache's own DuckDB file (``settings.cache_dir``), one
        transaction, after the rows that used the answers: a crash in between only loses
        cache hits."""
        assert self.cache_path is not None
        self._limited(
            self.cache_path,
            lambda con: _insert_cache(con, cache, replace=replace),
            what="write the response cache",
        )

    def _limited(self, path: Location, body: Callable[[Any], None], *, what: str) -> None:
        """``body`` in one write transaction within ``memory_limit`` (FLUSH_MEMORY_LIMIT); one
        that cannot fit is rolled back and written again within the warehouse's limit."""
        limit = None if is_lake(path) else self.memory_limit

        def within(con: Any) -> None:
            con.execute(f"SET memory_limit = '{limit}'")
            body(con)
            # The commit within the warehouse's limit: it may checkpoint, and a checkpoint
            # that runs out of memory invalidates the database after the commit was logged
            # (its batch then neither safely retried nor known to be lost).
            con.execute(f"SET memory_limit = '{memory_limit()}'")

        if limit is None:
            write_transaction(path, body, what=what, backoff=self.backoff)
            return
        try:
            write_transaction(path, within, what=what, backoff=self.backoff)
        except duckdb.OutOfMemoryException:
            self.memory_retries += 1  # nothing was committed: the transaction rolled back
            write_transaction(path, body, what=what, backoff=self.backoff)

    @property
    def retries(self) -> int:
        """Conflicting commits retried so far (0 on a file: its writers take turns)."""
        return self.backoff.retries

    def _beat(self, con: Any, rows: int = 0) -> None:
        """Append a heartbeat, in the batch's transaction, if the lease is still ours (a read
        of the run's row, then an insert: no row is updated, see the module's docstring).
        ``rows``: the case rows this transaction adds."""
        held = con.execute(
            "SELECT 1 FROM runs WHERE run_id = ? "
            "AND (CAST(? AS VARCHAR) IS NULL OR lease_token = ?)",
            [self.run_id, self.token, self.token],
        ).fetchall()
        if held:
            con.execute(
                "INSERT INTO run_beats (run_id, beat_at, lease_token, host, pid, rows_written, "
                "retries) VALUES (?, now(), ?, ?, ?, ?, ?)",
                [
                    self.run_id,
                    self.token,
                    HOST,
                    os.getpid(),
                    self.rows_written + rows,
                    self.backoff.retries,
                ],
            )
        else:
            raise LeaseLostError(
                f"run {self.run_id} was taken over by another process "
                "(`evalwh run --resume RUN --force`); this process stopped writing it"
            )
        self._last_beat = time.monotonic()

    def flush(self, batch: Batch) -> None:
        """Write one batch in one transaction, waiting as long as needed for the file lock."""
        self.write(self.tables(batch))
        if self.flushed is not None and batch[0]:
            self.flushed(batch[0])

    def tables(self, batch: Batch) -> Tables:
        """A batch's rows as Arrow tables (cases, scores, cache, turns; None when empty)."""
        return (
            self._cases.table(batch[0]),
            self._scores.table(batch[1]),
            self._cache.table(batch[2]),
            self._turns.table(batch[3]),
        )

    def write(self, tables: Tables) -> None:
        """Insert Arrow tables in one transaction on a short-lived connection."""
        cases, scores, cache, turns = tables
        empty = cases is None and scores is None and cache is None and turns is None
        if empty and not self.beat_due():
            return

        def body(con: Any) -> None:
            # One DuckDB thread: a flush runs beside the engine (busy on the other core), and a
            # second thread only contends with it; alone, one thread writes a batch as fast.
            con.execute("SET threads = 1")
            self._beat(con, cases.num_rows if cases is not None else 0)
            if cases is not None and self.replace:
                for table in ("scores", "turns", "cases"):
                    register_stream(con, "_evalwh_cases", cases)  # a stream is read once
                    con.execute(
                        f"DELETE FROM {table} USING _evalwh_cases b WHERE {table}.run_id = b.run_id "
                        f"AND {table}.variant = b.variant AND {table}.model = b.model "
                        f"AND {table}.case_id = b.case_id AND {table}.repeat = b.repeat"
                    )
            if cases is not None:
                _append(con, "cases", cases)
            if scores is not None:
                _append(con, "scores", scores)
            if turns is not None:
                _append(con, "turns", turns)
            if cache is not None and self.cache_path is None:
                # Two runs may fetch the same answer at once: see _insert_cache.
                _insert_cache(con, cache, replace=self.refresh_cache, append=self.on_lake)
            if self._pause_s > 0:
                time.sleep(self._pause_s)

        with self._lock:
            self._limited(self.path, body, what=f"flush run {self.run_id}")
        if cache is not None and self.cache_path is not None:
            self._write_cache_file(cache, replace=self.refresh_cache)
        self.rows_written += cases.num_rows if cases is not None else 0
        self.flushes += 1


def _append(con: Any, table: str, rows: Any) -> None:
    """Insert an Arrow batch into ``table`` by column name."""
    view = f"_evalwh_{table}"
    register_stream(con, view, rows)
    insert_rows(con, table, view)
    con.unregister(view)


def _insert_cache(con: Any, cache: Any, *, replace: bool, append: bool = False) -> None:
    """New answers into the response cache, one row per request hash. The table has no key
    (migration 0009: DuckDB loaded and rewrote a key's whole index on every insert, so each
    flush cost memory and time that grew with the cache), so the rule is kept here: a batch's
    duplicates collapse (DISTINCT ON); an answer already stored wins (two runs fetching the
    same request at once: first one in), unless ``replace`` (--no-cache), where the new one
    replaces it. Both joins build their hash table on the batch, never on the cache.

    ``append`` (a DuckLake): the batch's answers are appended without reading the stored
    cache, replacing or not: a delete would conflict with every other writer's insert into the
    cache, and the anti-join read every stored request hash from object storage (with the
    table's catalog round trips) at every flush, a cost growing with the cache. Where a hash
    has several answers (two runs fetched one request, or ``--no-cache``) the lookup takes the
    newest (``sql/cache_lookup.sql``)."""
    register_stream(con, "_evalwh_cache", cache)
    fresh = "SELECT DISTINCT ON (request_hash) * FROM _evalwh_cache"
    if append:
        con.execute(f"INSERT INTO response_cache BY NAME {fresh}")
    elif replace:
        con.execute(
            "DELETE FROM response_cache WHERE request_hash IN "
            "(SELECT request_hash FROM _evalwh_cache)"
        )
        register_stream(con, "_evalwh_cache", cache)  # a stream is read once
        con.execute(f"INSERT INTO response_cache BY NAME {fresh}")
    else:
        con.execute(
            f"INSERT INTO response_cache BY NAME SELECT * FROM ({fresh}) f WHERE NOT EXISTS "
            "(SELECT 1 FROM response_cache r WHERE r.request_hash = f.request_hash)"
        )
    con.unregister("_evalwh_cache")
