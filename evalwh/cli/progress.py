"""Progress display: a rich bar on a terminal, plain lines otherwise, nothing with -q/--json."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from evalwh.cli.state import STATE, err


@contextmanager
def progress_reporter(total_hint: str = "cases") -> Iterator[Any]:
    if STATE.quiet or STATE.json:
        yield None
        return
    if err().is_terminal:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        bar = Progress(
            TextColumn("[bold]running"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"),
            TimeRemainingColumn(),
            console=err(),
            transient=True,
        )
        task = bar.add_task("run", total=None, status="")
        errors = 0

        def update(done: int, total: int, result: Any) -> None:
            nonlocal errors
            errors += result.error is not None
            bar.update(  # total 0: a datasource run, whose size is unknown until read
                task,
                completed=done,
                total=total or None,
                status=f"errors {errors}" if errors else "",
            )

        with bar:
            yield update
        return

    last = [0.0]
    failed = [0]

    def plain(done: int, total: int, result: Any) -> None:
        failed[0] += result.error is not None
        now = time.monotonic()
        if done == total or now - last[0] >= 2.0:
            last[0] = now
            shown = f"{done}/{total} ({100 * done / total:.0f}%)" if total > 0 else f"{done} done"
            sys.stderr.write(f"progress: {shown}, errors {failed[0]}\n")
            sys.stderr.flush()

    yield plain


def batch_progress() -> Any:
    """A line on stderr after each round of polls of batch jobs whose states or counts
    changed (none with -q or --json)."""
    from evalwh.cli import render
    from evalwh.cli.state import note

    last: list[str] = [""]

    def show(jobs: list[Any]) -> None:
        line = render.batch_line([j.__dict__ for j in jobs])
        if line != last[0]:
            last[0] = line
            note(line)

    return show
