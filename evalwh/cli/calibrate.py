"""`evalwh calibrate`: rank judges by their agreement with human labels."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from evalwh.cli import render
from evalwh.cli.run import ConfigArg, _config_path
from evalwh.cli.state import STATE, emit_json, out, with_globals


@with_globals
def calibrate(
    config_file: ConfigArg = None,
    judge: Annotated[
        list[str] | None, typer.Option("--judge", "-j", help="Only this judge id (repeatable).")
    ] = None,
) -> None:
    """Run each judge over the labelled cases and rank them by agreement with the labels."""
    from evalwh import api
    from evalwh.cli.progress import progress_reporter

    path: Path = _config_path(config_file)
    with progress_reporter() as progress:
        data = api.calibrate(path, judges=judge or (), **STATE.where(), progress=progress)
    if STATE.json:
        emit_json(data)
        return
    out().print(
        f"{len(data['judges'])} judge(s) over {data['labelled_cases']} labelled case(s)",
        markup=False,
    )
    table = Table()
    for name in (
        "rank",
        "kind",
        "compares",
        "judge",
        "kappa",
        "band",
        "agreement",
        "flip rate",
        "labels",
        "run",
    ):
        table.add_column(
            name,
            justify="right"
            if name in ("rank", "kappa", "agreement", "flip rate", "labels")
            else "left",
        )
    for r in data["ranking"]:
        table.add_row(
            str(r["rank"]),
            r["kind"],
            r["target"],
            r["judge"],
            "undefined" if r["kappa"] is None else f"{r['kappa']:.2f}",
            r["kappa_band"] or "",
            render.pct(r["agreement"]),
            render.pct(r["flip_rate"]),
            str(r["n_labels"]),
            r["run_id"],
        )
    out().print(table)
