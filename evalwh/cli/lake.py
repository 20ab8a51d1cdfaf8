"""`evalwh lake push`, `lake pull` and `lake maintain`: runs between a local file and the
shared DuckLake warehouse, and the lake's own compaction and snapshot expiry."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from evalwh.cli.runs import config_for_reads
from evalwh.cli.state import STATE, emit_json, note, out, with_globals

if TYPE_CHECKING:
    from evalwh.api.lake import Transfer

app = typer.Typer(
    help="Move runs to and from a shared DuckLake warehouse; maintain it.", no_args_is_help=True
)
LocalOpt = Annotated[
    Path | None,
    typer.Option(
        "--local",
        metavar="FILE",
        help="The local warehouse file (default: <output dir>/warehouse.duckdb).",
        show_default=False,
    ),
]


@app.command("push")
@with_globals
def push(
    since: Annotated[
        str | None,
        typer.Option("--since", metavar="RUN", help="Only runs started at or after RUN."),
    ] = None,
    local: LocalOpt = None,
) -> None:
    """Copy finished local runs into the lake (a run already there is skipped)."""
    from evalwh.api import lake

    result = lake.push(since=since, local=local, config=config_for_reads(), **STATE.where())
    _report(result, "pushed", "into")
    if result.unfinished:
        note(
            f"{len(result.unfinished)} unfinished run(s) not pushed (running or interrupted: "
            f"resume or finish them first): {', '.join(result.unfinished[:5])}"
        )


@app.command("pull")
@with_globals
def pull(
    runs: Annotated[list[str], typer.Argument(metavar="RUN...", help="Runs to bring back.")],
    local: LocalOpt = None,
) -> None:
    """Copy lake runs into the local warehouse file, for offline analysis."""
    from evalwh.api import lake

    result = lake.pull(runs, local=local, config=config_for_reads(), **STATE.where())
    _report(result, "pulled", "into")


def _report(result: Transfer, verb: str, into: str) -> None:
    if STATE.json:
        emit_json(result.to_dict())
        return
    target = result.lake if verb == "pushed" else result.local
    out().print(
        f"{verb} {len(result.copied)} run(s) {into} {target} "
        f"({result.rows.get('cases', 0)} case rows, {result.rows.get('scores', 0)} score rows)",
        markup=False,
    )
    if result.present:
        note(f"{len(result.present)} run(s) already there, skipped")


@app.command("maintain")
@with_globals
def maintain(
    expire_days: Annotated[
        float,
        typer.Option(
            "--expire-days",
            min=0,
            metavar="DAYS",
            help="Expire snapshots older than this (time travel before it is gone).",
        ),
    ] = 7.0,
) -> None:
    """Compact the lake's small files and expire old snapshots (DuckLake's own functions)."""
    from evalwh.api import lake

    steps = lake.maintain(expire_days=expire_days, config=config_for_reads(), **STATE.where())
    if STATE.json:
        emit_json({"steps": steps})
        return
    for step in steps:
        out().print(f"{step['step']}: {step['rows']}", markup=False)
