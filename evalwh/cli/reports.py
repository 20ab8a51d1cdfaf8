"""`evalwh decide` and `evalwh labels import`: the decision log entry of a run and human
labels from the HTML report's labelling tab. Each parses, calls one WarehouseView method and
prints."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from evalwh.cli.analysis import RunArg, _warehouse
from evalwh.cli.state import STATE, emit_json, note, out, with_globals


@with_globals
def decide(
    run: RunArg = "latest",
    append: Annotated[
        Path | None,
        typer.Option(
            "--append",
            metavar="FILE",
            help="Append the entry to FILE (e.g. DECISIONS.md) instead of printing it.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Write the DECISIONS.md entry of a run: its headline numbers with intervals, the gate,
    the calibration status, and an empty Decision and Because."""
    result = _warehouse().decide(run, append=append)
    if STATE.json:
        emit_json(result)
    elif append is None:
        sys.stdout.write(result["text"])
    else:
        note(f"appended the entry of run {result['run_id']} to {append}")


labels_app = typer.Typer(
    name="labels",
    help="Human labels for judge calibration, from the HTML report's Label tab.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@labels_app.command("import")
@with_globals
def labels_import(
    file: Annotated[
        Path, typer.Argument(help="A YAML file with a `labels:` list (the report's download).")
    ],
    run: RunArg = "latest",
) -> None:
    """Store the labels of FILE with RUN (replacing its labels of the same case and
    comparison, or case and criterion); its calibration counts them from then on."""
    result = _warehouse().import_labels(file, run)
    if STATE.json:
        emit_json(result)
        return
    out().print(
        f"stored {result['imported']} label(s) with run {result['run_id']} "
        f"({result['replaced']} replaced)",
        markup=False,
    )
