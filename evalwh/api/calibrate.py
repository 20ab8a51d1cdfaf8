"""`evalwh calibrate`: run each judge (judge-prompt variant) over the labelled cases and rank
the judges by their agreement with the human labels.

Every judge under ``judges:`` (or the ones asked for) takes the place of the judge in every
pairwise comparison and llm-judge criterion, one run per judge, restricted to the cases that
carry a label. Answers come from the response cache after the first run, so only the judge
calls are new. Ranking: Cohen's kappa (undefined last), then raw agreement, then flip rate.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalwh.errors import UsageError


def judge_variants(data: dict[str, Any], judge_id: str) -> dict[str, Any]:
    """The config data with ``judge_id`` judging every comparison and llm-judge criterion."""
    out = copy.deepcopy(data)
    for comparison in out.get("pairwise") or []:
        comparison["judge"] = judge_id
    for criterion in out.get("scorecard") or []:
        if criterion.get("type") == "llm-judge":
            criterion["judge"] = judge_id
    return out


def _rank_key(r: dict[str, Any]) -> tuple[Any, ...]:
    """Kappa first (the weighted kappa for numeric labels), then agreement, then flip rate."""
    kappa = r["kappa"] if r["kappa"] is not None else r.get("weighted_kappa")
    agreement = r["agreement"] if r["agreement"] is not None else r.get("within_agreement")
    return (
        r["kind"],
        r["target"],
        kappa is None,
        -(kappa or 0),
        -(agreement or 0),
        r["flip_rate"] or 0,
    )


def calibrate(
    config: str | Path,
    *,
    judges: Sequence[str] = (),
    output_dir: str | Path | None = None,
    progress: Any = None,
    by: str | None = None,
    within: float | None = None,
    warehouse: str | Path | None = None,
    labels_from: str | None = None,
) -> dict[str, Any]:
    """Run every judge (or the given ones) over the labelled cases; rank them by agreement
    with the human labels (Cohen's kappa, then raw agreement, then flip rate).

    Numeric pointwise labels also get exact and within-``within`` agreement (default
    ``calibration.within``, else 1) and the weighted kappa of the ordinal scale
    (``calibration.weights``). ``by`` (a case metadata key) adds ``slices``: the same figures
    per value of the key, per judge and task (comparison or criterion). ``labels_from`` (a
    run reference) takes the imported labels of that run rather than the suite's newest."""
    from evalwh.analysis.judging import report as judging_report
    from evalwh.api.run import run_eval, settings_for
    from evalwh.config.loader import build_config, load_config
    from evalwh.warehouse.store import Warehouse

    base = load_config(config)
    known = [j.id for j in base.judges]
    chosen = list(judges) or known
    unknown = [j for j in chosen if j not in known]
    if unknown:
        raise UsageError(
            f"unknown judge(s) {', '.join(unknown)} (the config has: {', '.join(known) or 'none'})"
        )
    if not chosen:
        raise UsageError("the config defines no judges to calibrate (add them under `judges:`)")
    store = Warehouse(settings_for(base, output_dir=output_dir, warehouse=warehouse).warehouse)
    imported, labels = _imported(store, base, labels_from)
    labelled = sorted(
        {lb.case_id for lb in base.labels}
        | {lb.case_id for lb in base.point_labels}
        | {c.id for c in base.cases if c.human_label is not None}
        | {lb.case_id for _, lb in imported}
    )
    if not labelled:
        raise UsageError(
            "no labels to calibrate against: add `labels:` or `human_label` on cases, or "
            f"store labels with a run of this suite (`evalwh labels import`). {labels['note']}"
        )
    if within is not None and within < 0:
        raise UsageError(f"--within must be 0 or more points, got {within:g}")
    rows: list[dict[str, Any]] = []
    slices: list[dict[str, Any]] = []
    for judge_id in chosen:
        judged = build_config(judge_variants(base.raw, judge_id), base.path, None)
        result = run_eval(
            judged,
            cases=labelled,
            label=f"calibrate:{judge_id}",
            output_dir=output_dir,
            warehouse=warehouse,
            progress=progress,
        )
        for who in sorted({who for who, _ in imported}):
            store.replace_labels(result.run_id, [lb for w, lb in imported if w == who], by=who)
        report = result.pairwise or {"comparisons": [], "pointwise": []}
        if by is not None or within is not None or imported:
            report = judging_report(store, result.run_id, judged.raw, by=by, within=within)
            slices += [
                {"judge": judge_id, "kind": "pairwise", "target": r["comparison"], **r}
                for r in report.get("slices", [])
            ]
            slices += [
                {"judge": judge_id, "kind": "pointwise", "target": r["criterion"], **r}
                for r in report.get("pointwise_slices", [])
            ]
        for c in report["comparisons"]:
            rows.append(
                {
                    "judge": judge_id,
                    "kind": "pairwise",
                    "target": c["comparison"],
                    "n_labels": c["n_labels"],
                    "kappa": c["kappa"],
                    "kappa_band": c["kappa_band"],
                    "agreement": c["agreement"],
                    "flip_rate": c["flip_rate"],
                    "calibrated": c["calibrated"],
                    "flags": c["flags"],
                    "run_id": result.run_id,
                }
            )
        for p in report["pointwise"]:
            rows.append(
                {
                    "judge": judge_id,
                    "kind": "pointwise",
                    "target": p["criterion"],
                    "n_labels": p["n_labels"],
                    "kappa": p["kappa"],
                    "kappa_band": None,
                    "agreement": p["agreement"],
                    "flip_rate": None,
                    "calibrated": None,
                    "flags": p["flags"],
                    "label_units": p["label_units"],
                    "run_id": result.run_id,
                    "n_numeric": p["n_numeric"],
                    "exact_agreement": p["exact_agreement"],
                    "within": p["within"],
                    "within_agreement": p["within_agreement"],
                    "weighted_kappa": p["weighted_kappa"],
                }
            )
    rows.sort(key=_rank_key)
    rank: dict[tuple[str, str], int] = {}
    for row in rows:
        key = (row["kind"], row["target"])
        rank[key] = rank.get(key, 0) + 1
        row["rank"] = rank[key]
    return {
        "config": str(base.path),
        "labelled_cases": len(labelled),
        "labels": labels,
        "judges": chosen,
        "ranking": rows,
        "by": by,
        "slices": slices,
    }


def _imported(
    store: Any, base: Any, labels_from: str | None
) -> tuple[list[tuple[str, Any]], dict[str, Any]]:
    """The labels stored with a run of this suite by `evalwh labels import` or the viewer, as
    (who, Label or PointLabel), and what was used: ``{"config", "imported", "imported_from",
    "left_out", "note"}``. Labels of cases the config no longer has are left out."""
    from evalwh.config.model import Label, PointLabel
    from evalwh.reports.fmt import json_value

    n_config = (
        len(base.labels)
        + len(base.point_labels)
        + sum(c.human_label is not None for c in base.cases)
    )
    rows: list[dict[str, Any]] = []
    if store.exists:
        ref = store.resolve(labels_from) if labels_from else None
        rows = store.query("imported_labels", suite=base.name, run_id=ref).to_pylist()
    elif labels_from:
        raise UsageError(f"--labels-from {labels_from}: the warehouse {store.path} has no runs")
    known = None if base.sources else {c.id for c in base.cases}
    out: list[tuple[str, Any]] = []
    for r in rows:
        if known is not None and r["case_id"] not in known:
            continue
        if r["kind"] == "pairwise":
            out.append(
                (r["labelled_by"], Label(r["comparison"], r["case_id"], r["prefer"], r["note"]))
            )
        elif r["comparison"] is not None:
            label = PointLabel(
                r["comparison"],
                r["case_id"],
                json_value(r["label"]),
                r["note"],
                r["variant"],
                r["model"],
                r["repeat"],
            )
            out.append((r["labelled_by"], label))
    source = rows[0]["run_id"] if rows else None
    left_out = len(rows) - len(out)
    if source:
        note = (
            f"{len(out)} label(s) stored with run {source} (`evalwh labels import` or the "
            f"viewer) are used besides the config's {n_config}; each replaces the config's "
            "label of the same item"
        )
        if left_out:
            note += f"; {left_out} name cases this config no longer has and are left out"
    else:
        where = f"run {labels_from}" if labels_from else f"any run of suite {base.name!r}"
        note = (
            f"no labels stored with {where} by `evalwh labels import` or the viewer: only "
            f"the config's {n_config} label(s) count"
        )
    used = {
        "config": n_config,
        "imported": len(out),
        "imported_from": source,
        "left_out": left_out,
        "note": note,
    }
    return out, used
