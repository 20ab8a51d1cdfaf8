"""Batched writes of case and score rows: Arrow batches into DuckDB, one transaction each.

The engine hands every finished cell to :meth:`RunWriter.add`; rows are buffered and flushed
when ``batch_size`` rows are waiting or ``flush_interval_s`` has passed. A flush opens the
warehouse, inserts the batch and bumps the run's heartbeat in one transaction, and closes the
file again, so other processes can read between flushes. A crash loses at most the rows not
yet flushed.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from operator import itemgetter
from pathlib import Path
from typing import Any

import pyarrow as pa

from evalwh.errors import WarehouseError
from evalwh.warehouse.connect import transaction, write_connection


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
)
CASES_SCHEMA = pa.schema(CASE_COLUMNS)
SCORES_SCHEMA = pa.schema(SCORE_COLUMNS)


# Rows detached from the buffers (cases, scores, cache, pairs); flush() turns them into Arrow.
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
        path: Path,
        run_id: str,
        *,
        batch_size: int = 2000,
        flush_interval_s: float = 1.0,
        refresh_cache: bool = False,
        replace: bool = False,
        token: str | None = None,
        heartbeat_s: float = 30.0,
    ) -> None:
        self.path = path
        self.run_id = run_id
        self.token = token  # the run's lease: every flush checks it is still ours
        self.heartbeat_s = heartbeat_s  # an idle run still beats this often
        self.batch_size = batch_size
        # rows the engine may buffer while a flush is in flight, before it waits for it
        self.max_pending = 4 * max(batch_size, 1)
        self.flush_interval_s = flush_interval_s
        self._cases = _Columns(CASE_COLUMNS)
        self._scores = _Columns(SCORE_COLUMNS)
        self._cache = _Columns(CACHE_COLUMNS)
        self._pairs = _Columns(PAIR_COLUMNS)
        self.refresh_cache = refresh_cache
        self.replace = replace  # retrying errors: the new rows replace the stored ones
        self._lock = threading.Lock()
        self._last_flush = self._last_beat = time.monotonic()
        self.rows_written = 0
        self.flushes = 0

    def add_case(self, row: Sequence[Any]) -> None:
        self._cases.append(row)

    def add_score(self, row: Sequence[Any]) -> None:
        self._scores.append(row)

    def add_cache(self, row: Sequence[Any]) -> None:
        self._cache.append(row)

    def add_pair(self, row: Sequence[Any]) -> None:
        self._pairs.append(row)

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
            self._pairs.take_rows(),
        )

    def write_pairs(self, rows: list[list[Any]], comparisons: list[str]) -> None:
        """Replace a run's pairwise verdicts for these comparisons, in one transaction."""
        buffer = _Columns(PAIR_COLUMNS)
        for row in rows:
            buffer.append(row)
        table = buffer.take()
        cache = self._cache.take()
        with self._lock, write_connection(self.path, wait_s=None) as con, transaction(con):
            self._beat(con)
            con.execute(
                "DELETE FROM pairs WHERE run_id = ? AND list_contains(?, comparison)",
                [self.run_id, comparisons],
            )
            if table is not None:
                _append(con, "pairs", table)
            if cache is not None:
                _append(con, "response_cache", cache, "INSERT OR IGNORE")

    def _beat(self, con: Any) -> None:
        """Renew the heartbeat, in the batch's transaction, if the lease is still ours."""
        held = con.execute(
            "UPDATE runs SET heartbeat_at = now() WHERE run_id = ? "
            "AND (CAST(? AS VARCHAR) IS NULL OR lease_token = ?) RETURNING 1",
            [self.run_id, self.token, self.token],
        ).fetchall()
        if not held:
            raise LeaseLostError(
                f"run {self.run_id} was taken over by another process "
                "(`evalwh run --resume RUN --force`); this process stopped writing it"
            )
        self._last_beat = time.monotonic()

    def flush(self, batch: Batch) -> None:
        """Write one batch in one transaction, waiting as long as needed for the file lock."""
        self.write(self.tables(batch))

    def tables(self, batch: Batch) -> Tables:
        """A batch's rows as Arrow tables (cases, scores, cache, pairs; None when empty)."""
        return (
            self._cases.table(batch[0]),
            self._scores.table(batch[1]),
            self._cache.table(batch[2]),
            self._pairs.table(batch[3]),
        )

    def write(self, tables: Tables) -> None:
        """Insert Arrow tables in one transaction on a short-lived connection."""
        cases, scores, cache, pairs = tables
        empty = cases is None and scores is None and cache is None and pairs is None
        if empty and not self.beat_due():
            return
        with self._lock, write_connection(self.path, wait_s=None) as con:
            # One DuckDB thread: a flush runs beside the engine (busy on the other core), and a
            # second thread only contends with it; alone, one thread writes a batch as fast.
            con.execute("SET threads = 1")
            with transaction(con):
                self._beat(con)
                if cases is not None and self.replace:
                    con.register("_evalwh_cases", cases)
                    for table in ("scores", "cases"):
                        con.execute(
                            f"DELETE FROM {table} USING _evalwh_cases b WHERE {table}.run_id = b.run_id "
                            f"AND {table}.variant = b.variant AND {table}.model = b.model "
                            f"AND {table}.case_id = b.case_id AND {table}.repeat = b.repeat"
                        )
                if cases is not None:
                    _append(con, "cases", cases)
                if scores is not None:
                    _append(con, "scores", scores)
                if pairs is not None:
                    _append(con, "pairs", pairs)
                if cache is not None:
                    # Two runs may fetch the same answer at once: first one in wins (or, when
                    # refreshing, last one in)
                    verb = "INSERT OR REPLACE" if self.refresh_cache else "INSERT OR IGNORE"
                    _append(con, "response_cache", cache, verb)
        self.rows_written += cases.num_rows if cases is not None else 0
        self.flushes += 1


def _append(con: Any, table: str, rows: Any, verb: str = "INSERT") -> None:
    """Insert an Arrow batch into ``table`` by column name; the response cache keeps one row
    per request hash (DISTINCT ON guards duplicates inside one batch)."""
    view = f"_evalwh_{table}"
    con.register(view, rows)
    distinct = "DISTINCT ON (request_hash) " if table == "response_cache" else ""
    con.execute(f"{verb} INTO {table} BY NAME SELECT {distinct}* FROM {view}")
    con.unregister(view)
