"""`evalwh cache info` and `evalwh cache clear`."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from evalwh.cli.runs import config_for_reads
from evalwh.cli.state import STATE, emit_json, out, with_globals

app = typer.Typer(help="Inspect or clear the response cache.", no_args_is_help=True)


@app.command("info")
@with_globals
def info() -> None:
    """Entries, size and age of the response cache, and what its key covers."""
    from evalwh import api

    data = api.cache_info(config=config_for_reads(), output_dir=STATE.output_dir)
    if STATE.json:
        emit_json(data)
        return
    out().print(
        f"{data['entries']} cached answer(s), {data['text_bytes']:,} bytes of text, "
        f"in {data['warehouse']} ({data['warehouse_bytes']:,} bytes)",
        markup=False,
    )
    if data["by_model"]:
        table = Table()
        for name in ("provider", "model", "entries", "text bytes", "oldest", "newest"):
            table.add_column(name, justify="right" if name in ("entries", "text bytes") else "left")
        for r in data["by_model"]:
            table.add_row(
                r["provider"],
                r["model"],
                str(r["entries"]),
                f"{r['text_bytes']:,}",
                r["oldest"].strftime("%Y-%m-%d %H:%M"),
                r["newest"].strftime("%Y-%m-%d %H:%M"),
            )
        out().print(table)
    art = data["artifacts"]
    out().print(
        f"artifacts: {art['files']} stored file(s), {art['bytes']:,} bytes, in {art['folder']}",
        markup=False,
    )
    out().print(f"key: {data['key']}", markup=False)


@app.command("clear")
@with_globals
def clear(
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="Only this provider model name.")
    ] = None,
    older_than: Annotated[
        float | None,
        typer.Option("--older-than", metavar="DAYS", min=0, help="Only entries older than this."),
    ] = None,
) -> None:
    """Delete cached answers; stored runs are untouched. The next run asks the models again."""
    from evalwh import api

    removed = api.cache_clear(
        model=model,
        older_than_days=older_than,
        config=config_for_reads(),
        output_dir=STATE.output_dir,
    )
    if STATE.json:
        emit_json({"removed": removed})
        return
    out().print(f"removed {removed} cached answer(s)", markup=False)
