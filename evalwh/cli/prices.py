"""`evalwh prices [--for eval.yaml]`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from evalwh.cli import render
from evalwh.cli.state import STATE, emit_json, out, with_globals

PRICE_KEYS = ("input_per_mtok", "output_per_mtok", "cache_read_per_mtok", "cache_write_per_mtok")


@with_globals
def prices(
    for_config: Annotated[
        Path | None,
        typer.Option(
            "--for",
            metavar="CONFIG",
            help="Also each model's price in this config and the run's estimate.",
        ),
    ] = None,
    fake: Annotated[
        bool, typer.Option("--fake", help="Estimate as `evalwh run --fake` would.")
    ] = False,
) -> None:
    """The dated price table (its date and source); with --for, a config's prices and estimate."""
    from evalwh import api

    data = api.prices(for_config, **STATE.where(), fake=fake)
    if STATE.json:
        emit_json(data)
        return
    console = out()
    console.print(f"prices as of {data['as_of']}, {data['unit']}", markup=False)
    console.print(f"source: {data['source']}", markup=False, style="dim")
    console.print(f"batch: {data['batch']}", markup=False, style="dim")
    if "for" not in data:
        console.print(_table(data["table"], ("provider", "model")))
        return
    mine = data["for"]
    console.print(f"config: {mine['config']}", markup=False)
    console.print(_table(mine["models"], ("id", "provider", "model", "source")))
    console.print(render.estimate_line(mine["estimate"]), markup=False)
    for row in mine["estimate"]["by_model"]:
        cost = render.usd(row["cost_usd"]) if row["cost_usd"] is not None else "no price"
        console.print(f"  {row['model']}: {row['calls']} call(s), {cost}", markup=False)


def _table(rows: list[dict[str, object]], keys: tuple[str, ...]) -> Table:
    table = Table()
    for key in keys:
        table.add_column(key)
    table.add_column("input $/Mtok", justify="right")
    table.add_column("output $/Mtok", justify="right")
    table.add_column("cache read", justify="right")  # "–": billed as input
    table.add_column("cache write", justify="right")
    table.add_column("batch", justify="right")  # the batch price as a share of the list price
    for r in rows:
        cells = [str(r[k]) for k in keys]
        price = [r[k] for k in PRICE_KEYS]
        factor = r.get("batch_factor")
        batch = "–" if factor is None or factor == 1 else f"{100 * float(str(factor)):g} %"
        table.add_row(*cells, *("–" if p is None else f"{p:g}" for p in price), batch)
    return table
