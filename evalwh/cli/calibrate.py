"""`evalwh calibrate`: rank judges by their agreement with human labels."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

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
    by: Annotated[
        str | None,
        typer.Option("--by", metavar="KEY", help="Also kappa per value of this case metadata key."),
    ] = None,
    within: Annotated[
        float | None,
        typer.Option(
            "--within",
            metavar="N",
            min=0,
            help="Numeric labels: a score within N points agrees (default calibration.within "
            "or 1).",
        ),
    ] = None,
    labels_from: Annotated[
        str | None,
        typer.Option(
            "--labels-from",
            metavar="RUN",
            help="Use the labels stored with RUN by `evalwh labels import` or the viewer "
            "(default: the suite's newest run that has any).",
        ),
    ] = None,
) -> None:
    """Run each judge over the labelled cases and rank them by agreement with the labels."""
    from evalwh import api
    from evalwh.analysis.judging import flag_names
    from evalwh.cli.progress import progress_reporter

    path: Path = _config_path(config_file)
    with progress_reporter() as progress:
        data = api.calibrate(
            path,
            judges=judge or (),
            **STATE.where(),
            progress=progress,
            by=by,
            within=within,
            labels_from=labels_from,
        )
    if STATE.json:
        emit_json(data)
        return
    out().print(
        f"{len(data['judges'])} judge(s) over {data['labelled_cases']} labelled case(s)",
        markup=False,
    )
    out().print(data["labels"]["note"], markup=False)
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
        "flags",
        "run",
    ):
        table.add_column(
            name,
            justify="right"
            if name in ("rank", "kappa", "agreement", "flip rate", "labels")
            else "left",
        )
    for r in data["ranking"]:
        # numeric labels only: what the ranking ranks by (api.calibrate._rank_key) is the
        # weighted kappa and the within-N agreement, on the numeric labels' n
        numeric = bool(r.get("n_numeric")) and r["kappa"] is None
        table.add_row(
            str(r["rank"]),
            r["kind"],
            r["target"],
            r["judge"],
            f"{_kappa(r['weighted_kappa'])} weighted" if numeric else _kappa(r["kappa"]),
            r["kappa_band"] or "",
            f"{render.pct(r['within_agreement'])} within {r['within']:g}"
            if numeric
            else render.pct(r["agreement"]),
            render.pct(r["flip_rate"]),
            str(r["n_numeric"] if numeric else r["n_labels"]),
            " ".join(flag_names(r["flags"])),
            r["run_id"],
        )
    out().print(table)
    for r in data["ranking"]:
        if r.get("label_units"):
            out().print(f"{r['judge']} on {r['target']}: {r['label_units']}", markup=False)
    for r in data["ranking"]:
        if r.get("n_numeric"):
            out().print(
                f"{r['judge']} on {r['target']} (numeric labels, n={r['n_numeric']}): "
                f"weighted kappa {_kappa(r['weighted_kappa'])}, exact "
                f"{render.pct(r['exact_agreement'])}, within {r['within']:g} "
                f"{render.pct(r['within_agreement'])}",
                markup=False,
            )
    if data.get("by"):
        out().print(_slices(data["slices"], data["by"]))


def _kappa(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.2f}"


def _slices(rows: list[dict[str, Any]], key: str) -> Table:
    """Kappa per judge, task (comparison or criterion) and value of ``key``."""
    table = Table(title=f"kappa per task and {key}", title_justify="left")
    for name in ("judge", "kind", "task", key, "n", "kappa", "weighted kappa", "agreement"):
        table.add_column(
            name, justify="right" if name in ("n", "kappa", "weighted kappa") else "left"
        )
    for r in rows:
        numeric = r.get("n_numeric") and r.get("kappa") is None
        n = r["n_numeric"] if numeric else r.get("n", r.get("n_labels"))
        agreement = r["within_agreement"] if numeric else r.get("agreement")
        table.add_row(
            str(r["judge"]),
            str(r["kind"]),
            str(r["target"]),
            str(r["slice"]),
            str(n),
            _kappa(r.get("kappa")),
            _kappa(r.get("weighted_kappa")),
            render.pct(agreement),
        )
    return table
