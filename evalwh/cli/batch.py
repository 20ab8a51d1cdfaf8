"""`evalwh batch status|wait|cancel RUN`: a run's provider batch jobs (docs/batch.md)."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from evalwh.cli import render
from evalwh.cli.runs import config_for_reads
from evalwh.cli.state import STATE, emit_json, note, out, with_globals

app = typer.Typer(help="A batch run's provider jobs: status, wait, cancel.", no_args_is_help=True)
RunArg = Annotated[
    str,
    typer.Argument(help="A run id, a unique prefix, a label, 'latest' or 'previous'."),
]


@app.command("status")
@with_globals
def status(run: RunArg = "latest") -> None:
    """Each batch job of RUN as last recorded: state, requests and their outcomes."""
    from evalwh.api import batches

    _show(batches.status(run, config=config_for_reads(), **STATE.where()))


@app.command("wait")
@with_globals
def wait(run: RunArg = "latest") -> None:
    """Poll RUN's open jobs until each has ended (the run itself must not be live)."""
    from evalwh.api import batches
    from evalwh.cli.progress import batch_progress

    data = batches.wait(run, config=config_for_reads(), **STATE.where(), on_poll=batch_progress())
    _show(data)
    if not STATE.json:
        note(
            f"store the answers with `evalwh run CONFIG --resume {data['run_id']}` "
            "(nothing is submitted again)"
        )


@app.command("cancel")
@with_globals
def cancel(run: RunArg = "latest") -> None:
    """Ask the providers to cancel RUN's open jobs (finished requests keep their answers)."""
    from evalwh.api import batches

    _show(batches.cancel(run, config=config_for_reads(), **STATE.where()))


def _show(data: dict[str, Any]) -> None:
    if STATE.json:
        emit_json(data)
        return
    jobs = data["jobs"]
    if not jobs:
        out().print(f"run {data['run_id']} has no batch jobs", markup=False)
        return
    out().print(f"run {data['run_id']}: {render.batch_line(jobs)}", markup=False)
    table = Table()
    for column in ("job", "model", "state", "requests", "succeeded", "errored", "expired"):
        table.add_column(column)
    table.add_column("submitted")
    for job in jobs:
        counts = job["counts"]
        table.add_row(
            job["job_id"],
            job["model"],
            job["state"],
            str(job["requests"]),
            *(str(counts.get(k, "–")) for k in ("succeeded", "errored", "expired")),
            str(job["submitted_at"] or ""),
        )
    out().print(table)
