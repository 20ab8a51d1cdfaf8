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


def calibrate(
    config: str | Path,
    *,
    judges: Sequence[str] = (),
    output_dir: str | Path | None = None,
    progress: Any = None,
) -> dict[str, Any]:
    """Run every judge (or the given ones) over the labelled cases; rank them by agreement
    with the human labels (Cohen's kappa, then raw agreement, then flip rate)."""
    from evalwh.api.run import run_eval
    from evalwh.config.loader import build_config, load_config

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
    labelled = sorted(
        {lb.case_id for lb in base.labels}
        | {lb.case_id for lb in base.point_labels}
        | {c.id for c in base.cases if c.human_label is not None}
    )
    if not labelled:
        raise UsageError("no labels to calibrate against: add `labels:` or `human_label` on cases")
    rows: list[dict[str, Any]] = []
    for judge_id in chosen:
        judged = build_config(judge_variants(base.raw, judge_id), base.path, None)
        result = run_eval(
            judged,
            cases=labelled,
            label=f"calibrate:{judge_id}",
            output_dir=output_dir,
            progress=progress,
        )
        report = result.pairwise or {"comparisons": [], "pointwise": []}
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
                    "run_id": result.run_id,
                }
            )
    rows.sort(
        key=lambda r: (
            r["kind"],
            r["target"],
            r["kappa"] is None,
            -(r["kappa"] or 0),
            -(r["agreement"] or 0),
            r["flip_rate"] or 0,
        )
    )
    rank: dict[tuple[str, str], int] = {}
    for row in rows:
        key = (row["kind"], row["target"])
        rank[key] = rank.get(key, 0) + 1
        row["rank"] = rank[key]
    return {
        "config": str(base.path),
        "labelled_cases": len(labelled),
        "judges": chosen,
        "ranking": rows,
    }
