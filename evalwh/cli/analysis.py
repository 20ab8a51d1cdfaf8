"""`evalwh compare`, `baseline set|list|remove`, `gate`, `repeats`, `sql`, `export`.

Each command parses its options, calls one WarehouseView method and renders the answer
(evalwh/cli/render_analysis.py). `--json` gives the same numbers as the tables.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from evalwh.cli.state import STATE, emit_json, note, out, with_globals

if TYPE_CHECKING:
    from evalwh.api import WarehouseView

RUN_HELP = (
    "A run id, a unique prefix, a label, 'latest', 'previous', 'latest~N', 'git:REF' or a "
    "baseline name."
)
RunArg = Annotated[str, typer.Argument(help=RUN_HELP)]
BaselineOpt = Annotated[
    str | None,
    typer.Option(
        "--baseline",
        "-b",
        help="The run to compare with (default: the pinned baseline).",
        show_default=False,
    ),
]


def _warehouse() -> WarehouseView:
    from evalwh import api

    config = STATE.config
    if config is None and Path("eval.yaml").is_file():
        config = Path("eval.yaml")
    return api.open_warehouse(config=config, **STATE.where())


@with_globals
def compare(
    run_a: Annotated[
        str, typer.Argument(metavar="A", help="The run to compare against. " + RUN_HELP)
    ],
    run_b: Annotated[
        str, typer.Argument(metavar="B", help="The run to judge (default: latest).")
    ] = "latest",
    by: Annotated[
        str | None,
        typer.Option(
            "--by",
            help="Slice by these metadata keys combined (comma-separated; default: each "
            "metadata key on its own).",
            show_default=False,
        ),
    ] = None,
    cluster: Annotated[
        str | None,
        typer.Option(
            "--cluster",
            help="Cluster-robust standard errors over this metadata key ('case_id': over "
            "the repeats of a case); default: the config's analysis.cluster.",
            show_default=False,
        ),
    ] = None,
    movers: Annotated[
        int, typer.Option("--movers", min=0, help="How many moved cases to list, worst first.")
    ] = 20,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html",
            metavar="PATH",
            help="Also write the compare page (one self-contained HTML file) here.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Compare run B with run A: paired deltas with 95% intervals per cell, criterion and slice,
    and the cases that moved."""
    from evalwh.cli.render_analysis import print_comparison

    wh = _warehouse()
    with wh.reading():  # one read connection for the command
        result = wh.compare(run_a, run_b, by=by, cluster=cluster, movers=movers)
        data = result.to_dict()
        if html is not None:
            data["report"] = str(wh.compare_report(result, out=html))
    if STATE.json:
        emit_json(data)
        return
    print_comparison(data)
    if html is not None:
        note(f"wrote {data['report']}")


@with_globals
def gate(
    run: RunArg = "latest",
    baseline: BaselineOpt = None,
    all_rules: Annotated[
        bool, typer.Option("--all", help="List the rules that passed too.")
    ] = False,
) -> None:
    """Judge a stored run by the thresholds it was run with (absolute and regression versus
    the baseline); exit 1 when one fails."""
    from evalwh.cli.render_analysis import print_gate_result

    result = _warehouse().gate(run, baseline=baseline)
    if STATE.json:
        emit_json(result.to_dict())
    else:
        print_gate_result(result.to_dict(), verbose=all_rules)
    if not result.passed:
        raise typer.Exit(1)


@with_globals
def repeats(run: RunArg = "latest") -> None:
    """Repeat statistics of a run sampled several times per case: pass@k, pass^k, per-case
    spread and the flaky cases."""
    from evalwh.cli.render_analysis import print_repeats

    wh = _warehouse()
    with wh.reading():  # one read connection for the command
        stats, flaky = wh.repeats(run).to_dicts(), wh.flaky(run).to_dicts()
        data = {
            "run_id": wh.resolve(run),
            "repeats": max((r["max_repeats"] for r in stats), default=0),
            "stats": stats,
            "flaky": flaky,
        }
    if STATE.json:
        emit_json(data)
        return
    print_repeats(data)


@with_globals
def sql(
    query: Annotated[str, typer.Argument(help="One read-only query; '-' reads it from stdin.")],
    format: Annotated[
        str, typer.Option("--format", "-f", help="table, csv or json (--json: json).")
    ] = "table",
    limit: Annotated[
        int, typer.Option("--limit", "-n", min=0, help="At most this many rows (0: all).")
    ] = 1000,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            min=0,
            help="Stop the query after this many seconds, fetching included (default: the "
            "setting query_timeout_s, 30; 0: no limit).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Run one read-only SQL query over the warehouse (SELECT, WITH, DESCRIBE, SHOW ...).

    Rows are written as they are read, so -n 0 over a large result stays within memory."""
    from evalwh.cli.render_analysis import write_sql_result
    from evalwh.errors import UsageError

    if format not in ("table", "csv", "json"):
        raise UsageError(f"unknown --format {format!r}: use table, csv or json")
    text = sys.stdin.read() if query == "-" else query
    kind = "json" if STATE.json else format
    with _warehouse().stream_sql(text, timeout_s=timeout) as (schema, batches):
        truncated = write_sql_result(schema, batches, kind, limit or None)
    if truncated:
        note(f"showing the first {limit} rows; raise --limit (0: all) for more")


@with_globals
def export(
    run: RunArg = "latest",
    format: Annotated[
        str | None,
        typer.Option(
            "--format",
            "-f",
            help="json (default), csv, md, parquet, junit or html.",
            show_default=False,
        ),
    ] = None,
    out_path: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Write here (parquet: the folder that gets cases/ and scores/; default: the "
            "warehouse's exports/). Without it, text formats go to stdout.",
            show_default=False,
        ),
    ] = None,
    every: Annotated[
        bool,
        typer.Option(
            "--all",
            help="Export every concluded run as Parquet (instead of RUN), moving exports of "
            "the older layout (exports/run_id=<id>/) into cases/ and scores/.",
        ),
    ] = False,
    baseline: BaselineOpt = None,
    csv_formulas: Annotated[
        str,
        typer.Option(
            "--csv-formulas",
            help="csv: 'neutralise' prefixes cells starting with = + - @ with ' so a "
            "spreadsheet does not run them; 'keep' leaves them as they are.",
        ),
    ] = "neutralise",
) -> None:
    """Export a stored run (json, csv, md PR comment, parquet, junit, html page); nothing is
    re-run."""
    from evalwh.errors import UsageError

    if every:
        if format not in (None, "parquet") or run != "latest":
            raise UsageError(
                "--all exports every run as Parquet: give no RUN and no other --format"
            )
        written = _warehouse().export_all(out=out_path)
        if STATE.json:
            emit_json(written.to_dict())
            return
        note(f"wrote {len(written.run_ids)} run(s) to {written.path}/{{cases,scores}}/")
        return
    result = _warehouse().export(
        run, format or "json", out=out_path, baseline=baseline, csv_formulas=csv_formulas
    )
    if STATE.json:
        emit_json({**result.to_dict(), "content": result.text})
        return
    if result.text is not None:
        sys.stdout.write(result.text)
    elif result.format == "parquet":
        note(f"wrote {result.path}/{{cases,scores}}/run_id={result.run_id}/")
    else:
        note(f"wrote {result.path}")


# -- evalwh baseline set | list | remove -------------------------------------------------------
baseline_app = typer.Typer(
    name="baseline",
    help="Pin a run as a named baseline (default name: baseline); list or remove pins.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
NameOpt = Annotated[
    str, typer.Option("--name", help="The baseline's name (a run reference from then on).")
]


@baseline_app.command("set")
@with_globals
def baseline_set(run: RunArg, name: NameOpt = "baseline") -> None:
    """Pin NAME to RUN (replacing an earlier pin of that name)."""
    row = _warehouse().set_baseline(run, name)
    if STATE.json:
        emit_json(row)
        return
    moved = f" (was {row['previous_run_id']})" if row.get("previous_run_id") else ""
    label = f" ({row['label']})" if row.get("label") else ""
    out().print(f"baseline '{name}' → run {row['run_id']}{label}{moved}", markup=False)
    if row.get("status") != "completed":
        note(f"note: run {row['run_id']} is {row.get('status')}, not completed")


@baseline_app.command("list")
@with_globals
def baseline_list() -> None:
    """List the pinned baselines with their runs."""
    from evalwh.cli.render_analysis import baselines_table

    rows = _warehouse().baselines()
    if STATE.json:
        emit_json({"baselines": rows})
        return
    if not rows:
        note("no baseline pinned: pin one with `evalwh baseline set RUN`")
        return
    out().print(baselines_table(rows))


@baseline_app.command("remove")
@with_globals
def baseline_remove(
    name: Annotated[str, typer.Argument(help="The baseline name to unpin.")] = "baseline",
) -> None:
    """Unpin a baseline (the run itself stays)."""
    row = _warehouse().remove_baseline(name)
    if STATE.json:
        emit_json({"removed": row})
        return
    out().print(f"removed baseline '{name}' (run {row['run_id']} stays)", markup=False)
