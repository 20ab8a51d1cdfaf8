"""`evalwh list`, `evalwh show`, `evalwh init`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from evalwh.cli import render, render_analysis
from evalwh.cli.state import STATE, emit_json, note, out, with_globals

if TYPE_CHECKING:
    from evalwh.api import WarehouseView


def config_for_reads(suite: str | None = None) -> Path | None:
    """-c, else the config file or folder ``suite`` names, else ./eval.yaml when present:
    its settings may move the warehouse."""
    if STATE.config is not None:
        return STATE.config
    if suite is not None and Path(suite).exists():
        return Path(suite)
    return Path("eval.yaml") if Path("eval.yaml").is_file() else None


def _warehouse(suite: str | None = None) -> WarehouseView:
    from evalwh import api

    return api.open_warehouse(config=config_for_reads(suite), **STATE.where())


@with_globals
def list_runs(
    limit: Annotated[
        int, typer.Option("--limit", "-n", min=1, help="How many runs, newest first.")
    ] = 20,
) -> None:
    """List the runs in the warehouse, newest first."""
    rows = _warehouse().runs(limit=limit)
    if STATE.json:
        emit_json({"runs": rows})
        return
    if not rows:
        note("no runs yet: start one with `evalwh run`")
        return
    out().print(render.runs_table(rows))
    if any(r["status"] == "interrupted" for r in rows):
        note(
            "an interrupted run (killed, or its export unfinished) continues, and its export is "
            "repaired, with: evalwh run CONFIG --resume RUN (a datasource run cannot be "
            "resumed: start it again, see `evalwh show RUN`)"
        )


@with_globals
def show(
    run: Annotated[
        str,
        typer.Argument(
            help="A run id, a unique prefix, a label, 'latest', 'previous', 'latest~N' or "
            "'git:REF'."
        ),
    ] = "latest",
    failures: Annotated[
        bool, typer.Option("--failures", "-f", help="List the failing cases.")
    ] = False,
    case: Annotated[
        str | None, typer.Option("--case", help="Everything about one case id.")
    ] = None,
    by: Annotated[
        str | None,
        typer.Option(
            "--by",
            help="Slice by case metadata keys (comma-separated: lang,length): n and pass "
            "rate per slice.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Show a stored run: the matrix, criteria, thresholds, and failing cases on request."""
    _print_run(_warehouse(), run, failures=failures, case=case, by=by)


def _print_run(
    view: WarehouseView, run: str, *, failures: bool, case: str | None, by: str | None
) -> None:
    with view.reading():  # one read connection for the command
        data = view.show(run, failures=failures, case_id=case)
        if by:
            data["slices"] = view.slice(data["run"]["run_id"], by).to_dicts()
    if STATE.json:
        emit_json(data)
        return
    r = data["run"]
    title = (
        f"run {r['run_id']}"
        + (f" ({r['label']})" if r["label"] else "")
        + f" — {r['suite']} — {r['status']}"
    )
    if r["status"] != "completed":
        title += f" ({data['totals']['n']}/{r['n_planned']} cases stored)"
    out().print(title, style="bold", markup=False)
    if data.get("notice"):
        note(data["notice"])
    if data.get("next"):
        note(data["next"])
    out().print(render.summary_table(data["summary"]))
    render.print_endings(data.get("endings") or [])
    out().print(render.totals_line(data["totals"]))
    if data.get("commit_retries"):
        note(f"{data['commit_retries']} conflicting lake commit(s) retried while it ran")
    files = render.attachments_line(data.get("attachments") or [])
    if files:
        out().print(files, markup=False)
    if data["criteria"]:
        out().print(render.criteria_table(data["criteria"]))
    if by:
        from evalwh.cli.render_analysis import slices_table

        out().print(slices_table(data["slices"], by))
    render.print_errors(data["errors"])
    render.print_judging(data.get("pairwise"))
    render_analysis.print_gate(data["gate"])
    for c in data["cases"]:
        render.case_block(c, full=case is not None)
    if failures and not data["cases"]:
        out().print("no failing cases", style="green")


@with_globals
def last(
    suite: Annotated[
        str | None,
        typer.Argument(
            metavar="SUITE",
            help="A config file or folder, or a suite name as `evalwh list` shows it: the "
            "newest run of that suite (default: the newest run of any).",
            show_default=False,
        ),
    ] = None,
    failures: Annotated[
        bool, typer.Option("--failures", "-f", help="List the failing cases.")
    ] = False,
) -> None:
    """The newest run, or the newest run of SUITE: short for `evalwh show RUN`."""
    view = _warehouse(suite)
    with view.reading():  # one read connection for the command
        run = "latest" if suite is None else view.resolve_suite(suite)
        _print_run(view, run, failures=failures, case=None, by=None)


@with_globals
def init(
    folder: Annotated[Path, typer.Argument(help="Where to create the eval.")] = Path("."),
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing files.")] = False,
) -> None:
    """Scaffold a working eval (mock provider) to start from."""
    from evalwh import api

    written = api.init_project(folder, force=force)
    if STATE.json:
        emit_json({"created": [str(p) for p in written]})
        return
    for path in written:
        out().print(f"created {path}", markup=False)
    target = written[0]
    out().print(f"next: evalwh run {target}", markup=False)


@with_globals
def migrate() -> None:
    """Upgrade the warehouse to this evalwh's schema (read commands never change the file)."""
    from evalwh import api

    done = api.migrate_warehouse(config=config_for_reads(), **STATE.where())
    if STATE.json:
        emit_json(done)
        return
    if done["from_version"] == done["to_version"]:
        out().print(f"{done['warehouse']} is up to date (schema version {done['to_version']})")
    else:
        out().print(
            f"migrated {done['warehouse']} from schema version {done['from_version']} "
            f"to {done['to_version']}",
            markup=False,
        )
