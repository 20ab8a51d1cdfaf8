"""`evalwh import promptfoo FILE` and `evalwh import inspect LOG...`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evalwh.cli.runs import config_for_reads
from evalwh.cli.state import STATE, emit_json, out, with_globals

app = typer.Typer(
    help="Import runs from other tools (promptfoo, inspect_ai) into the warehouse.",
    no_args_is_help=True,
)

SuiteOpt = Annotated[
    str | None,
    typer.Option("--suite", help="The suite name (default: the tool's suite/task name)."),
]
LabelOpt = Annotated[str | None, typer.Option("--label", "-l", help="A label for the run.")]
CaseIdOpt = Annotated[
    str | None,
    typer.Option(
        "--case-id",
        metavar="TEMPLATE",
        help="Case ids from {id}, {index}, {vars.NAME}, {metadata.NAME} (default: {id}).",
    ),
]
VariantOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--variant", metavar="[OLD=]NEW", help="Rename a variant (NEW alone: every variant)."
    ),
]
ModelOpt = Annotated[
    list[str] | None,
    typer.Option("--model", metavar="[OLD=]NEW", help="Rename a model (NEW alone: every model)."),
]


def _import(
    tool: str,
    paths: list[Path],
    suite: str | None,
    label: str | None,
    case_id: str | None,
    variant: list[str] | None,
    model: list[str] | None,
) -> None:
    from evalwh import api

    done = api.import_results(
        tool,
        paths,
        suite=suite,
        label=label,
        case_id=case_id,
        variants=variant or [],
        models=model or [],
        config=config_for_reads(),
        **STATE.where(),
    )
    if STATE.json:
        emit_json({"imported": done})
        return
    for r in done:
        version = f" {r['version']}" if r["version"] else ""
        if r["added"]:
            line = (
                f"imported {r['file']} ({r['tool']}{version}) as run {r['run_id']}: "
                f"{r['n_cases']} case row(s), {r['n_scores']} score row(s)"
            )
            if r["n_redacted"]:
                line += f"; {r['n_redacted']} value(s) held a key or secret, stored as ***"
        else:
            line = f"{r['file']} was imported before as run {r['run_id']}: nothing added"
        out().print(line, markup=False)


@app.command("promptfoo")
@with_globals
def promptfoo(
    file: Annotated[Path, typer.Argument(help="The output of `promptfoo eval -o results.json`.")],
    suite: SuiteOpt = None,
    label: LabelOpt = None,
    case_id: CaseIdOpt = None,
    variant: VariantOpt = None,
    model: ModelOpt = None,
) -> None:
    """Import a promptfoo results file as one run."""
    _import("promptfoo", [file], suite, label, case_id, variant, model)


@app.command("inspect")
@with_globals
def inspect_logs(
    logs: Annotated[list[Path], typer.Argument(help="inspect_ai logs (.eval or .json).")],
    suite: SuiteOpt = None,
    label: LabelOpt = None,
    case_id: CaseIdOpt = None,
    variant: VariantOpt = None,
    model: ModelOpt = None,
) -> None:
    """Import inspect_ai eval logs, one run per log."""
    _import("inspect", logs, suite, label, case_id, variant, model)
