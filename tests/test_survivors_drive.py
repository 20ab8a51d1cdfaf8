"""How a run and its writer take turns (evalwh.engine.execute._drive), with a stand-in engine
and writer: a batch that falls due while the engine waits for the writer is flushed (no
deadlock, no wait of a second), one flush at a time and never an empty one mid-run, and a
cancelled run is cancelled, waited for and flushed to its last row.

Written from mutants that survived the mutation run (docs/testing.md); whole runs that flush
many batches are in test_warehouse.py and test_datasources.py.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from evalwh.engine.execute import _drive


class Writer:
    """RunWriter's side of the turn-taking: rows pend until a batch is due, a flush takes
    ``takes`` seconds in a thread, and two flushes must never overlap."""

    def __init__(self, batch_size: int, takes: float = 0.0) -> None:
        self.batch_size, self.takes = batch_size, takes
        self.pending: list[Any] = []
        self.batches: list[Any] = []
        self._flushing = threading.Lock()

    def due(self) -> bool:
        return len(self.pending) >= self.batch_size

    def full(self) -> bool:  # the engine's backpressure: no more rows until a flush
        return len(self.pending) >= self.batch_size

    def take_batch(self) -> list[Any]:
        batch, self.pending = self.pending, []
        return batch

    def flush(self, batch: Any) -> None:
        assert self._flushing.acquire(blocking=False), "two flushes at once"
        try:
            time.sleep(self.takes)
            self.batches.append(batch)
        finally:
            self._flushing.release()


class Engine:
    """Adds ``rows`` rows, waiting (as the workers do) while the writer is full."""

    def __init__(self, writer: Writer, rows: int | None) -> None:
        self.writer, self.rows = writer, rows
        self.cancelled = False

    async def run(self) -> str:
        row = 0
        try:
            while self.rows is None or row < self.rows:
                while self.writer.full():
                    await asyncio.sleep(0.005)
                self.writer.pending.append(row)
                row += 1
                await asyncio.sleep(0.001 if self.rows is None else 0)
        except asyncio.CancelledError:
            self.cancelled = True
            self.writer.pending.append("the cell in flight")  # finished while stopping
            raise
        return "stats"


def flushed_in_turn(batches: list[Any]) -> bool:
    """Each full batch once, in order, and no empty flush but the one after the run (the last
    batch falls due as the run ends: the run's own last flush may take it)."""
    return [b for b in batches if b] == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]] and (
        [] not in batches[:-1]
    )


def test_batches_due_while_the_engine_waits_are_flushed_in_turn_and_in_time() -> None:
    writer = Writer(batch_size=2)
    started = time.monotonic()
    stats = asyncio.run(asyncio.wait_for(_drive(Engine(writer, 10), writer), timeout=30))  # type: ignore[arg-type]
    assert stats == "stats"
    assert flushed_in_turn(writer.batches)
    # a due batch waits for the next 10 ms wake-up (30 ms in all here), not for a second
    assert time.monotonic() - started < 1.0
    slower = Writer(batch_size=2, takes=0.01)  # the engine waits while a flush runs
    asyncio.run(asyncio.wait_for(_drive(Engine(slower, 10), slower), timeout=30))  # type: ignore[arg-type]
    assert flushed_in_turn(slower.batches)


def test_a_cancelled_run_is_cancelled_waited_for_and_flushed_to_its_last_row() -> None:
    writer = Writer(batch_size=10_000)  # no batch falls due: every row is in the last flush
    engine = Engine(writer, rows=None)

    async def cancel_midway() -> None:
        driving = asyncio.ensure_future(_drive(engine, writer))  # type: ignore[arg-type]
        while len(writer.pending) < 5:
            await asyncio.sleep(0.001)
        driving.cancel()
        with pytest.raises(asyncio.CancelledError):
            await driving

    asyncio.run(asyncio.wait_for(cancel_midway(), timeout=30))
    assert engine.cancelled
    assert len(writer.batches) == 1
    last = writer.batches[0]
    assert last[-1] == "the cell in flight" and last[:-1] == list(range(len(last) - 1))
