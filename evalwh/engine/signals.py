"""Stop a run cleanly on Ctrl-C (SIGINT) or SIGTERM.

While a run executes, both signals cancel the run's main task instead of killing the process:
the engine stops asking, the answers already received are flushed, the run is marked
``interrupted`` and :class:`RunInterrupted` (exit code 130) says how to continue. A second
signal during that clean-up is left to the default handler (a second Ctrl-C still stops).
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from contextlib import contextmanager

from evalwh.errors import EvalwhError

SIGNALS = (signal.SIGINT, signal.SIGTERM)


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
def cancel_on_signals(task: asyncio.Task[object], caught: list[str]) -> Iterator[None]:
    """Cancel ``task`` on SIGINT/SIGTERM (main thread only), noting the signal in ``caught``."""
    loop = asyncio.get_running_loop()
    installed = []

    def stop(sig: signal.Signals) -> None:
        caught.append(sig.name)
        for s in installed:  # a second signal falls back to the default behaviour
            loop.remove_signal_handler(s)
        task.cancel()

    for sig in SIGNALS:
        try:
            loop.add_signal_handler(sig, stop, sig)
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
            pass
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
