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
from pathlib import Path
from typing import Any

import pyarrow as pa

from evalwh.warehouse.connect import write_connection

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


Batch = tuple["pa.Table | None", "pa.Table | None", "pa.Table | None"]


def to_json(value: Any) -> str | None:
    if value is None:
        return None
    return json.dumps(value, ensure_ascii=False, default=str)


class _Columns:
    """Column-wise buffer: appending to lists is far cheaper than building dicts per row."""

    def __init__(self, columns: Sequence[tuple[str, pa.DataType]]) -> None:
        self.names = [name for name, _ in columns]
        self.schema = pa.schema(columns)
        self.data: list[list[Any]] = [[] for _ in columns]

    def __len__(self) -> int:
        return len(self.data[0])

    def append(self, row: Sequence[Any]) -> None:
        for column, value in zip(self.data, row, strict=True):
            column.append(value)

    def take(self) -> pa.Table | None:
        if not len(self):
            return None
        table = pa.Table.from_arrays(
            [pa.array(col, type=t) for col, t in zip(self.data, self.schema.types, strict=True)],
            schema=self.schema,
        )
        self.data = [[] for _ in self.names]
        return table


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
    ) -> None:
        self.path = path
        self.run_id = run_id
        self.batch_size = batch_size
        self.flush_interval_s = flush_interval_s
        self._cases = _Columns(CASE_COLUMNS)
        self._scores = _Columns(SCORE_COLUMNS)
        self._cache = _Columns(CACHE_COLUMNS)
        self.refresh_cache = refresh_cache
        self.replace = replace  # retrying errors: the new rows replace the stored ones
        self._lock = threading.Lock()
        self._last_flush = time.monotonic()
        self.rows_written = 0
        self.flushes = 0

    def add_case(self, row: Sequence[Any]) -> None:
        self._cases.append(row)

    def add_score(self, row: Sequence[Any]) -> None:
        self._scores.append(row)

    def add_cache(self, row: Sequence[Any]) -> None:
        self._cache.append(row)

    @property
    def pending(self) -> int:
        return len(self._cases)

    def due(self) -> bool:
        return self.pending >= self.batch_size or (
            self.pending > 0 and time.monotonic() - self._last_flush >= self.flush_interval_s
        )

    def take_batch(self) -> Batch:
        """Detach the buffered rows (call on the event loop; then flush in a thread)."""
        self._last_flush = time.monotonic()
        return self._cases.take(), self._scores.take(), self._cache.take()

    def flush(self, batch: Batch) -> None:
        """Write one batch in one transaction, waiting as long as needed for the file lock."""
        cases, scores, cache = batch
        if cases is None and scores is None and cache is None:
            return
        with self._lock, write_connection(self.path, wait_s=None) as con:
            con.execute("BEGIN TRANSACTION")
            try:
                if cases is not None and self.replace:
                    con.register("_evalwh_cases", cases)
                    for table in ("scores", "cases"):
                        con.execute(
                            f"DELETE FROM {table} USING _evalwh_cases b WHERE {table}.run_id = b.run_id "
                            f"AND {table}.variant = b.variant AND {table}.model = b.model "
                            f"AND {table}.case_id = b.case_id AND {table}.repeat = b.repeat"
                        )
                if cases is not None:
                    con.register("_evalwh_cases", cases)
                    con.execute("INSERT INTO cases BY NAME SELECT * FROM _evalwh_cases")
                    con.unregister("_evalwh_cases")
                if scores is not None:
                    con.register("_evalwh_scores", scores)
                    con.execute("INSERT INTO scores BY NAME SELECT * FROM _evalwh_scores")
                    con.unregister("_evalwh_scores")
                if cache is not None:
                    verb = "INSERT OR REPLACE" if self.refresh_cache else "INSERT OR IGNORE"
                    con.register("_evalwh_cache", cache)
                    # Two runs may fetch the same answer at once: first one in wins (or, when
                    # refreshing, last one in); DISTINCT ON guards duplicates inside one batch.
                    con.execute(
                        f"{verb} INTO response_cache BY NAME "
                        "SELECT DISTINCT ON (request_hash) * FROM _evalwh_cache"
                    )
                    con.unregister("_evalwh_cache")
                con.execute("UPDATE runs SET heartbeat_at = now() WHERE run_id = ?", [self.run_id])
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
        self.rows_written += cases.num_rows if cases is not None else 0
        self.flushes += 1
