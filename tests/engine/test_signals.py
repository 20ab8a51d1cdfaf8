"""How a run answers SIGINT and SIGTERM (evalwh/engine/signals.py): the first signal stops new
cells and cancels the run after the grace, a second cancels at once, the handlers are removed
when the run ends and never installed outside the main thread, and the interruption error
carries the run and the signal. tests/features/test_reliability.py signals a run in a
subprocess; these signal this process (under a Python handler of the test's own, so a handler
that is not installed records the signal instead of ending pytest).
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from evalwh.engine import signals


@pytest.fixture
def net() -> Iterator[list[int]]:
    """A Python handler under the test's own (so a handler that is not installed records
    the signal instead of ending pytest), put back afterwards."""
    got: list[int] = []
    before = {sig: signal.getsignal(sig) for sig in signals.SIGNALS}
    for sig in signals.SIGNALS:
        signal.signal(sig, lambda number, frame: got.append(number))
    yield got
    for sig, handler in before.items():
        signal.signal(sig, handler)


async def _sleeper() -> None:
    await asyncio.sleep(30)


def _run(scenario: Any) -> Any:
    return asyncio.run(scenario())


@pytest.mark.parametrize("grace", [None, 2.5], ids=["GRACE_S", "given"])
def test_the_first_signal_stops_and_cancels_the_run_after_the_grace(
    grace: float | None, net: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(signals, "GRACE_S", 0.3)
    timers: list[tuple[float, Any]] = []  # what the handler left to the loop's timer

    async def scenario() -> tuple[list[str], int, bool, list[tuple[float, Any]]]:
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(_sleeper())
        real_call_later = loop.call_later

        def noted(delay: float, callback: Any, *args: Any) -> Any:
            if getattr(callback, "__self__", None) is task:  # the grace's timer: noted only,
                timers.append((delay, callback))  # the test runs it out itself
                return None
            return real_call_later(delay, callback, *args)

        monkeypatch.setattr(loop, "call_later", noted)
        stopped: list[int] = []
        caught: list[str] = []
        with signals.stop_on_signals(task, lambda: stopped.append(1), caught, grace):
            os.kill(os.getpid(), signal.SIGTERM)
            await asyncio.sleep(0.1)
            still_running = not task.done()  # in the grace, requests in flight go on
            set_up = list(timers)
            for _, callback in timers:  # the grace runs out
                callback()
            with pytest.raises(asyncio.CancelledError):
                await task
        return caught, len(stopped), still_running, set_up

    caught, stops, still_running, set_up = _run(scenario)
    assert caught == ["SIGTERM"] and stops == 1
    assert still_running
    # the run is cancelled once the grace is over (GRACE_S, 0.3 s here, unless the run gives
    # its own), not when its 30 s of work is done
    assert [delay for delay, _ in set_up] == [0.3 if grace is None else grace]
    assert net == []  # the run's handler took it, not the one under it


def test_a_second_signal_cancels_at_once(net: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(signals, "GRACE_S", 60.0)

    async def scenario() -> tuple[list[str], int]:
        task = asyncio.ensure_future(_sleeper())
        stopped: list[int] = []
        caught: list[str] = []
        with signals.stop_on_signals(task, lambda: stopped.append(1), caught):
            os.kill(os.getpid(), signal.SIGINT)
            await asyncio.sleep(0.05)
            assert not task.done()
            os.kill(os.getpid(), signal.SIGTERM)
            # cancelled, not the 30 s sleeper's end (nor the 60 s grace's): CancelledError
            with pytest.raises(asyncio.CancelledError):
                await task
        return caught, len(stopped)

    caught, stops = _run(scenario)
    assert caught == ["SIGINT", "SIGTERM"]
    assert stops == 1  # stop() once; the second signal only cancels


def test_sigterm_during_the_export_kills_instead_of_taking_the_sigint_path(
    net: list[int],
) -> None:
    """Bug: asyncio put SIGTERM back to its default when the run's handlers were removed, so
    a SIGTERM during the export killed the process where SIGINT was answered (exit 130): the
    handlers in place before the run (the command's, here the test's) are put back."""

    async def scenario() -> None:
        task = asyncio.ensure_future(_sleeper())
        with signals.stop_on_signals(task, lambda: None, []):
            pass
        task.cancel()

    before = {sig: signal.getsignal(sig) for sig in signals.SIGNALS}
    _run(scenario)
    assert {sig: signal.getsignal(sig) for sig in signals.SIGNALS} == before
    os.kill(os.getpid(), signal.SIGTERM)  # no longer the run's: the handler under it has it
    assert net == [signal.SIGTERM]


def test_without_a_handler_of_its_own_sigint_raises_after_the_run() -> None:
    # under asyncio.run the handler before the run is asyncio's own, which would take a signal
    # arriving as the run's task ends for a cancel of a finished task: Ctrl-C raises instead
    async def scenario() -> Any:
        task = asyncio.ensure_future(_sleeper())
        with signals.stop_on_signals(task, lambda: None, []):
            pass
        task.cancel()
        return signal.getsignal(signal.SIGINT)

    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        assert _run(scenario) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, before)


def test_sigterm_outside_the_run_loop_raises_like_ctrl_c() -> None:
    """Bug: outside the run's event loop (planning, the export) SIGTERM killed the process
    (no exit code 130, no message) while SIGINT raised KeyboardInterrupt: the command takes
    both the same way."""
    before = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        with signals.sigterm_like_sigint(), pytest.raises(KeyboardInterrupt) as raised:
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):  # the handler runs between bytecodes
                pass
        assert isinstance(raised.value, signals.Terminated)
        assert signals.signal_name(raised.value) == "SIGTERM"
        assert signals.signal_name(KeyboardInterrupt()) == "SIGINT"
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # put back after the block
    finally:
        signal.signal(signal.SIGTERM, before)


def test_a_handler_of_the_embedding_program_is_left_alone(net: list[int]) -> None:
    mine = signal.getsignal(signal.SIGTERM)
    with signals.sigterm_like_sigint():
        assert signal.getsignal(signal.SIGTERM) is mine
    assert signal.getsignal(signal.SIGTERM) is mine


def test_outside_the_main_thread_nothing_is_installed() -> None:
    # a run started from a worker thread (a notebook's executor, the MCP server) cannot take
    # signals; it must still run, without an error
    result: list[Any] = []

    def in_thread() -> None:
        async def scenario() -> list[str]:
            task = asyncio.ensure_future(_sleeper())
            caught: list[str] = []
            with signals.stop_on_signals(task, lambda: None, caught):
                await asyncio.sleep(0)
            task.cancel()
            return caught

        try:
            result.append(asyncio.run(scenario()))
        except Exception as exc:  # the assertion below shows it
            result.append(exc)

    thread = threading.Thread(target=in_thread)
    thread.start()
    thread.join(10)
    assert result == [[]]


def test_the_interruption_error_carries_the_run_and_the_signal() -> None:
    error = signals.RunInterrupted("stopped", run_id="r-1", signal_name="SIGTERM")
    assert error.exit_code == 130  # 128 + SIGINT, what a shell reports for Ctrl-C
    assert (error.run_id, error.signal_name, str(error)) == ("r-1", "SIGTERM", "stopped")
    described = error.to_dict()
    assert described["run_id"] == "r-1" and described["signal"] == "SIGTERM"
    assert described["message"] == "stopped"


def test_the_grace_is_the_documented_ten_seconds() -> None:
    # docs/troubleshooting.md: "requests in flight get up to 10 s to finish"
    assert signals.GRACE_S == 10.0
    assert signals.SIGNALS == (signal.SIGINT, signal.SIGTERM)


@pytest.mark.parametrize(("raw", "seconds"), [("", 10.0), ("1.5", 1.5), (" 0 ", 0.0), ("30", 30.0)])
def test_evalwh_interrupt_grace_s_sets_the_grace(
    raw: str, seconds: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALWH_INTERRUPT_GRACE_S", raw)
    assert signals.grace_s() == seconds


@pytest.mark.parametrize("raw", ["ten", "-1", "nan", "inf", "1e999"])
def test_a_grace_that_is_not_a_number_of_seconds_refuses_the_run_before_it_exists(
    raw: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import evalwh
    from evalwh.errors import UsageError
    from tests.conftest import write

    cfg = write(
        tmp_path / "eval.yaml",
        "models:\n  - {id: m, provider: mock}\n"
        "variants:\n  - {id: v, messages: [{role: user, content: '{{ q }}'}]}\n"
        "cases:\n  - {id: c, vars: {q: q}, expected: q}\n"
        "scorecard:\n  - {name: r, type: contains}\n",
    )
    monkeypatch.setenv("EVALWH_INTERRUPT_GRACE_S", raw)
    with pytest.raises(UsageError, match=r"EVALWH_INTERRUPT_GRACE_S=.* is not a number of seconds"):
        evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    db = tmp_path / "out" / "warehouse.duckdb"
    assert not db.exists() or evalwh.open_warehouse(db).runs() == []


def test_a_signal_mid_run_stops_new_cells_and_resume_finishes_the_rest(
    tmp_path: Path, net: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the engine's stop(), in this process: after SIGTERM no new cell starts, so far fewer
    # than the 120 cells are stored (without it, the 10 s grace would let all of them run).
    # The signal comes with the fifth answer (counted, not timed), the handlers installed.
    import duckdb

    import evalwh
    from tests.conftest import write

    def signalled_at_the_fifth(done: int, total: int, result: Any) -> None:
        if done == 5:
            os.kill(os.getpid(), signal.SIGTERM)

    cfg = write(
        tmp_path / "eval.yaml",
        "models:\n  - {id: m, provider: mock, mock: {latency_ms: 40}}\n"
        "variants:\n  - {id: v, messages: [{role: user, content: '{{ q }}'}]}\n"
        "cases:\n"
        + "".join(f"  - {{id: c{i}, vars: {{q: q{i}}}, expected: x}}\n" for i in range(120))
        + "scorecard:\n  - {name: r, type: contains, value: x}\n"
        "settings:\n  concurrency: 2\n",
    )
    with pytest.raises(signals.RunInterrupted) as stopped:
        evalwh.run_eval(cfg, output_dir=tmp_path / "o", progress=signalled_at_the_fifth)
    assert stopped.value.signal_name == "SIGTERM" and stopped.value.exit_code == 130
    db = str(tmp_path / "o" / "warehouse.duckdb")
    with duckdb.connect(db, read_only=True) as con:
        status, stored = con.execute(
            "SELECT status, (SELECT count(*) FROM cases) FROM runs"
        ).fetchone() or (None, None)
    assert status == "interrupted"
    assert 0 < stored < 60, stored  # five cells and the two in flight
    assert net == []
    resumed = evalwh.run_eval(cfg, output_dir=tmp_path / "o", resume=stopped.value.run_id)
    assert resumed.totals["n"] == 120


@pytest.mark.parametrize("second", [True, False], ids=["second-signal", "grace-runs-out"])
def test_a_run_cancelled_mid_cell_ends_interrupted_named_after_the_first_signal(
    tmp_path: Path, net: list[int], monkeypatch: pytest.MonkeyPatch, second: bool
) -> None:
    # the first SIGTERM stops new cells; the cells in flight are cancelled by a second signal,
    # or when the grace runs out: the run still ends as interrupted, named after the first
    import duckdb

    import evalwh
    from tests.conftest import write

    real = signals.stop_on_signals

    @contextmanager
    def signalled_installed(*args: Any) -> Iterator[None]:
        with real(*args):
            loop = asyncio.get_running_loop()
            loop.call_later(0.2, os.kill, os.getpid(), signal.SIGTERM)
            if second:
                loop.call_later(0.3, os.kill, os.getpid(), signal.SIGINT)
            yield

    monkeypatch.setattr(signals, "GRACE_S", 0.5)
    monkeypatch.setattr(signals, "stop_on_signals", signalled_installed)
    cfg = write(
        tmp_path / "eval.yaml",
        "models:\n  - {id: m, provider: mock, mock: {latency_ms: 5000}}\n"
        "variants:\n  - {id: v, messages: [{role: user, content: '{{ q }}'}]}\n"
        "cases:\n  - {id: c1, vars: {q: one}}\n  - {id: c2, vars: {q: two}}\n"
        "scorecard:\n  - {name: r, type: contains, value: x}\n",
    )
    with pytest.raises(signals.RunInterrupted) as stopped:
        evalwh.run_eval(cfg, output_dir=tmp_path / "o")
    assert stopped.value.signal_name == "SIGTERM"
    with duckdb.connect(str(tmp_path / "o" / "warehouse.duckdb"), read_only=True) as con:
        assert con.execute("SELECT status FROM runs").fetchall() == [("interrupted",)]
        # the 5 s cells were cancelled in flight (not waited for, nor the 10 s grace): no row
        assert con.execute("SELECT count(*) FROM cases").fetchall() == [(0,)]
    assert net == []
