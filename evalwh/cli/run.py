"""`evalwh run` and `evalwh validate`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from evalwh.cli import render, render_analysis
from evalwh.cli.state import STATE, emit_json, err, note, out, with_globals
from evalwh.reports.fmt import part_label

if TYPE_CHECKING:
    from evalwh.api import DryRun, RunResult

ConfigArg = Annotated[
    Path | None,
    typer.Argument(
        metavar="CONFIG",
        help="The eval config (default: -c, else ./eval.yaml).",
        show_default=False,
    ),
]
ModelOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--model",
        "--models",
        "-m",
        metavar="ID",
        help="Only this model id (repeatable, or a,b; wildcards); provider/model adds that "
        "model to the matrix.",
    ),
]
FakeOpt = Annotated[
    bool,
    typer.Option(
        "--fake",
        help="Answer every model with the deterministic mock (same ids, prices kept): no key.",
    ),
]
VariantOpt = Annotated[
    list[str] | None,
    typer.Option("--variant", metavar="ID", help="Only this variant id (repeatable; wildcards)."),
]
CaseOpt = Annotated[
    list[str] | None,
    typer.Option("--case", metavar="ID", help="Only this case id (repeatable; wildcards)."),
]
NoLookOpt = Annotated[
    bool,
    typer.Option(
        "--no-look",
        help="Eyes-off evaluation: store and show no case data, outputs or rationales "
        "(as privacy.no_look: true; docs/no-look.md).",
    ),
]

BaselineOpt = Annotated[
    str | None,
    typer.Option(
        "--baseline",
        metavar="RUN",
        help="Judge thresholds.regression against RUN instead of the pinned baseline.",
    ),
]


def _config_path(config: Path | None) -> Path:
    from evalwh.api import default_config_path

    return default_config_path(config or STATE.config)


@with_globals
def run(
    config_file: ConfigArg = None,
    model: ModelOpt = None,
    variant: VariantOpt = None,
    case: CaseOpt = None,
    fake: FakeOpt = False,
    label: Annotated[
        str | None,
        typer.Option("--label", "-l", metavar="LABEL", help="A name to find this run by."),
    ] = None,
    concurrency: Annotated[
        int | None,
        typer.Option("--concurrency", min=1, metavar="N", help="Requests in flight at once."),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="Validate, render every prompt, count requests; call nothing."
        ),
    ] = False,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Bypass the response cache (and refresh it).")
    ] = False,
    repeat: Annotated[
        int | None,
        typer.Option(
            "--repeat",
            "-n",
            min=1,
            metavar="N",
            help="Sample every cell N times (default: settings.repeat or 1).",
        ),
    ] = None,
    max_cost: Annotated[
        float | None,
        typer.Option(
            "--max-cost",
            min=0,
            metavar="USD",
            help="Refuse (exit 4) when the estimate exceeds this.",
        ),
    ] = None,
    resume: Annotated[
        str | None,
        typer.Option(
            "--resume",
            metavar="RUN",
            help="Continue a killed run; stored cells are not asked again.",
        ),
    ] = None,
    retry_errors: Annotated[
        str | None,
        typer.Option(
            "--retry-errors",
            metavar="RUN",
            help="Re-run only the cells of RUN that ended in an error.",
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="With --resume/--retry-errors: take over a run whose owner cannot be verified "
            "(another host, fresh heartbeat).",
        ),
    ] = False,
    baseline: BaselineOpt = None,
    shard: Annotated[
        str | None,
        typer.Option(
            "--shard",
            metavar="K/N",
            help="Run the K-th of N shards (cases split by a stable hash of their id); "
            "needs --run-id.",
        ),
    ] = None,
    run_id: Annotated[
        str | None,
        typer.Option(
            "--run-id",
            metavar="RUN",
            help="With --shard: the run every shard writes to (the same on every shard).",
        ),
    ] = None,
    no_look: NoLookOpt = False,
    batch: Annotated[
        bool,
        typer.Option(
            "--batch",
            help="Ask uncached requests through the providers' batch APIs: about half the "
            "price, answers within 24 h (docs/batch.md).",
        ),
    ] = False,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html",
            metavar="PATH",
            help="Also write the run's HTML report (one self-contained file) here.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Run the eval matrix, store every result in the warehouse and judge the thresholds."""
    from evalwh import api
    from evalwh.warehouse.shards import parse_shard

    path = _config_path(config_file)
    shard_of = parse_shard(shard) if shard is not None else None
    selection: dict[str, Any] = {
        "models": model or (),
        "variants": variant or (),
        "cases": case or (),
    }
    if dry_run and html is not None:
        from evalwh.errors import UsageError

        raise UsageError(
            "--html writes the page of a run: drop it or --dry-run (which writes nothing)"
        )
    if dry_run:
        plan = api.validate(
            path,
            **STATE.where(),
            repeat=repeat,
            max_cost=max_cost,
            no_cache=no_cache,
            fake=fake,
            no_look=no_look,
            batch=batch,
            **selection,
        )
        if STATE.json:
            emit_json({"dry_run": True, **plan.to_dict()})
            return
        _print_plan(plan, dry=True)
        return

    from evalwh.cli.progress import batch_progress, progress_reporter

    with progress_reporter() as progress:
        result = api.run_eval(
            path,
            label=label,
            concurrency=concurrency,
            no_cache=no_cache,
            repeat=repeat,
            max_cost=max_cost,
            resume=resume,
            retry_errors=retry_errors,
            force=force,
            baseline=baseline,
            **STATE.where(),
            progress=progress,
            on_estimate=lambda est: note(render.estimate_line(est.to_dict())),
            fake=fake,
            shard=shard_of,
            run_id=run_id,
            no_look=no_look,
            html=html,
            batch=batch,
            on_batch=None if STATE.quiet or STATE.json else batch_progress(),
            **selection,
        )
    print_result(result, label=label)


def print_result(result: RunResult, *, label: str | None = None) -> None:
    """A run's (or a concluded sharded run's) result, then its exit code."""
    if STATE.json:
        emit_json(result.to_dict())
    elif not result.concluded:
        out().print(
            f"shard {result.shard} of run {result.run_id} stored its cells "
            f"({result.totals['n']} of the run's cells are in); the last shard, or "
            f"`evalwh finish {result.run_id}`, concludes the run and judges its gate",
            markup=False,
        )
    else:
        title = f"run {result.run_id}" + (f" ({label})" if label else "") + f" — {result.suite}"
        out().print(title, style="bold", markup=False)
        out().print(render.summary_table(result.summary))
        render.print_endings(result.endings)
        out().print(render.totals_line(result.totals))
        if result.stats.get("retries"):
            note(f"{result.stats['retries']} transient failure(s) retried")
        if result.stats.get("commit_retries"):
            note(f"{result.stats['commit_retries']} conflicting lake commit(s) retried")
        render.print_errors(result.errors)
        render.print_judging(result.pairwise)
        render_analysis.print_gate(result.gate)
        note(
            f"warehouse: {result.warehouse}"
            + (f"   exports: {result.exports}" if result.exports else "")
        )
        if result.report:
            note(f"report: {result.report}")
        if result.no_look:
            note("no-look run: no case data, outputs or rationales were stored (docs/no-look.md)")
        if result.totals["n_errors"]:
            note(f"see the errors: evalwh show {result.run_id} --failures")
    if result.failure:  # on stderr in --json mode too, like every error
        err().print(f"error: {result.failure}", markup=False)
        if result.next:
            note(result.next)
    if result.stop_reason is not None:
        note(f"run stopped: {result.stop_reason}")
    if result.exit_code:
        raise typer.Exit(result.exit_code)


@with_globals
def finish(
    run: Annotated[str, typer.Argument(metavar="RUN", help="The sharded run to conclude.")],
    partial: Annotated[
        bool,
        typer.Option("--partial", help="Conclude it even though some shards stored nothing."),
    ] = False,
    baseline: BaselineOpt = None,
) -> None:
    """Conclude a sharded run once its shards are in: export, status, and the gate, once."""
    from evalwh.api.shards import finish_run
    from evalwh.cli.runs import config_for_reads

    result = finish_run(
        run,
        partial=partial,
        baseline=baseline,
        config=config_for_reads(),
        **STATE.where(),
    )
    print_result(result)


def _print_plan(p: DryRun, *, dry: bool) -> None:
    console = out()
    console.print(f"config: {p.config}", markup=False)
    console.print(
        f"{p.requests} request(s): {len(p.variants)} variant(s) × {len(p.models)} model(s) × "
        f"{p.cases} case(s)" + (f" × {p.repeats} repeat(s)" if p.repeats > 1 else ""),
        markup=False,
    )
    if p.streamed_files:
        files = ", ".join(f"{f['file']} ({f['cases']:,} cases)" for f in p.streamed_files)
        console.print(
            f"streamed case files: {files} (read in batches while the run goes: their cases "
            "are in the count; their tokens and cost are not estimated, the cost cap holds on "
            "actual spend)",
            markup=False,
        )
    if p.datasources:
        console.print(
            f"datasources: {', '.join(p.datasources)} (read while the run goes: their cases "
            "are not in the count or the estimate; the cost cap holds on actual spend)",
            markup=False,
        )
    if p.no_look:
        console.print("no-look: no sample prompt is shown", markup=False)
    for warning in p.warnings:
        render.warn(f"warning: {warning['message']}")
    console.print(f"variants: {', '.join(p.variants)}", markup=False)
    console.print(f"models:   {', '.join(p.models)}", markup=False)
    if p.estimate:
        console.print(render.estimate_line(p.estimate), markup=False)
        for row in p.estimate["by_model"]:
            cost = render.usd(row["cost_usd"]) if row["cost_usd"] is not None else "no price"
            unknown = row.get("not_estimated")
            console.print(
                f"  {row['model']}: {row['calls']} call(s), {row['cached']} cached, "
                f"~{row['input_tokens']} in / ~{row['output_tokens']} out tokens, {cost}"
                + (
                    f" + {unknown} attached file(s) not estimated (the cost is a lower bound)"
                    if unknown
                    else ""
                ),
                markup=False,
            )
    if dry and p.sample:
        s = p.sample
        console.print(f"sample prompt ({s['variant']} × case {s['case']}):", markup=False)
        for m in s["messages"]:
            text = "".join(part_label(part) for part in m["content"])
            console.print(f"  [{m['role']}] {text}", markup=False)
    if dry:
        console.print("dry run: nothing was called or written", style="dim")


@with_globals
def validate(
    config_file: ConfigArg = None,
    model: ModelOpt = None,
    variant: VariantOpt = None,
    case: CaseOpt = None,
    fake: FakeOpt = False,
    no_look: NoLookOpt = False,
) -> None:
    """Check a config end to end (schema, files, templates for every case, scorers, API
    keys); call nothing."""
    from evalwh import api

    plan = api.validate(
        _config_path(config_file),
        models=model or (),
        variants=variant or (),
        cases=case or (),
        **STATE.where(),
        fake=fake,
        no_look=no_look,
    )
    if STATE.json:
        emit_json({"valid": True, **plan.to_dict()})
        return
    out().print("valid", style="green")
    _print_plan(plan, dry=False)
