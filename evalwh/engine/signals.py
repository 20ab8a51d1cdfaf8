"""Stop a run cleanly on Ctrl-C (SIGINT) or SIGTERM.

While a run executes, the first signal asks the engine to stop: no new cell starts, the
requests in flight get up to ``GRACE_S`` seconds to finish (so a resume never pays for an
answer twice), every answer received is flushed, the run is marked ``interrupted`` and
:class:`RunInterrupted` (exit code 130) says how to continue. A second signal cancels the
requests in flight at once (what was received is still flushed).
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from evalwh.errors import EvalwhError

SIGNALS = (signal.SIGINT, signal.SIGTERM)
GRACE_S = 10.0


class RunInterrupted(EvalwhError):
    """The run was stopped by a signal after flushing what was answered (exit code 130)."""

    exit_code = 130

    def __init__(self, message: str, *, run_id: str, signal_name: str) -> None:
        super().__init__(message)
        self.run_id = run_id
        self.signal_name = signal_name

    def to_dict(self) -> dict[str, object]:
        return {**super().to_dict(), "run_id": self.run_id, "signal": self.signal_name}


@contextmanager
def stop_on_signals(
    task: asyncio.Task[object], stop: Callable[[], None], caught: list[str]
) -> Iterator[None]:
    """On SIGINT/SIGTERM (main thread only) call ``stop`` and cancel ``task`` after GRACE_S;
    on a second signal cancel it at once. Each signal's name is appended to ``caught``."""
    loop = asyncio.get_running_loop()
    installed = []

    def on_signal(sig: signal.Signals) -> None:
        caught.append(sig.name)
        if len(caught) == 1:
            stop()
            loop.call_later(GRACE_S, task.cancel)
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
            loop.remove_signal_handler(sig)
