"""Stop a run cleanly on Ctrl-C (SIGINT) or SIGTERM.

While a run executes, the first signal asks the engine to stop: no new cell starts, the
requests in flight get up to ``GRACE_S`` seconds to finish (``EVALWH_INTERRUPT_GRACE_S``
when set: :func:`grace_s`; so a resume never pays for an answer twice), every answer received is flushed, the run is marked ``interrupted`` and
:class:`RunInterrupted` (exit code 130) says how to continue. A second signal cancels the
requests in flight at once (what was received is still flushed).

Outside the run's event loop (planning, the export, the summary) the command takes both
signals the same way too: :func:`sigterm_like_sigint` makes SIGTERM raise :class:`Terminated`,
a KeyboardInterrupt, as SIGINT raises KeyboardInterrupt, so either ends with exit code 130
instead of SIGTERM killing the process where SIGINT is answered. When the run ends,
:func:`stop_on_signals` puts back the handlers that were there before it (asyncio alone would
leave SIGTERM at its default, killing the process during the export).
"""

from __future__ import annotations

import math
import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from evalwh.errors import EvalwhError, UsageError

if TYPE_CHECKING:
    import asyncio

SIGNALS = (signal.SIGINT, signal.SIGTERM)
GRACE_S = 10.0
GRACE_ENV = "EVALWH_INTERRUPT_GRACE_S"


class RunInterrupted(EvalwhError):
    """The run was stopped by a signal after flushing what was answered (exit code 130)."""

    exit_code = 130

    def __init__(self, message: str, *, run_id: str, signal_name: str) -> None:
        super().__init__(message)
        self.run_id = run_id
        self.signal_name = signal_name

    def to_dict(self) -> dict[str, object]:
        return {**super().to_dict(), "run_id": self.run_id, "signal": self.signal_name}


class Terminated(KeyboardInterrupt):
    """SIGTERM outside a run's event loop, raised where SIGINT raises KeyboardInterrupt."""

    signal_name = "SIGTERM"


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated()


@contextmanager
def sigterm_like_sigint() -> Iterator[None]:
    """For the block (main thread only, and only where SIGTERM has its default action): SIGTERM
    raises :class:`Terminated` as SIGINT raises KeyboardInterrupt; the handler is put back."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL
    ):
        yield
        return
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def grace_s() -> float:
    """Seconds the requests in flight get after the first signal: ``EVALWH_INTERRUPT_GRACE_S``
    when set (a number, 0 or more), else ``GRACE_S``. Read as a run starts, so a bad value
    is refused before the run exists."""
    raw = os.environ.get(GRACE_ENV, "").strip()
    if not raw:
        return GRACE_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise UsageError(
            f"{GRACE_ENV}={raw!r} is not a number of seconds (0 or more): unset it for the "
            f"default {GRACE_S:g} s"
        )
    return value


def signal_name(interrupt: BaseException) -> str:
    """The signal an interrupting exception stands for (KeyboardInterrupt: SIGINT)."""
    return str(getattr(interrupt, "signal_name", "SIGINT"))


def _restorable(handler: Any) -> bool:
    """A handler to put back after the run: not asyncio.Runner's own SIGINT handler, which
    would take a signal arriving as the run's task ends for a cancel of a finished task (and
    so lose it); asyncio's default_int_handler is what stays then."""
    return getattr(getattr(handler, "func", None), "__name__", "") != "_on_sigint"


@contextmanager
def stop_on_signals(
    task: asyncio.Task[object],
    stop: Callable[[], None],
    caught: list[str],
    grace: float | None = None,
) -> Iterator[None]:
    """On SIGINT/SIGTERM (main thread only) call ``stop`` and cancel ``task`` after ``grace``
    seconds (default GRACE_S); on a second signal cancel it at once. Each signal's name is
    appended to ``caught``. The handlers that were there before are put back at the end."""
    import asyncio  # here: the command imports this module to start, without asyncio

    loop = asyncio.get_running_loop()
    installed = []
    before = {sig: signal.getsignal(sig) for sig in SIGNALS}

    def on_signal(sig: signal.Signals) -> None:
        caught.append(sig.name)
        if len(caught) == 1:
            stop()
            loop.call_later(GRACE_S if grace is None else grace, task.cancel)
        else:
            task.cancel()

    for sig in SIGNALS:
        try:
            loop.add_signal_handler(sig, on_signal, sig)
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
            pass
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)  # asyncio's defaults: SIGINT raises, SIGTERM kills
            previous = before[sig]
            if previous is not None and _restorable(previous):
                signal.signal(sig, previous)
