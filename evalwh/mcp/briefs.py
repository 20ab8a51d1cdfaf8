"""Token-frugal answers for agents (``evalwh mcp``): summaries first, drill-down on demand.

Pure shaping over what evalwh.api returns, plus the two rules an agent-facing server needs:
config paths stay inside a root folder, and runs stay under a cost cap (evalwh.engine.budget).
Nothing here imports the MCP SDK; evalwh/mcp/server.py only registers these as tools.

The shapes:

- summaries (``run_brief``, ``get_run(detail="summary")``, ``compare_brief``) carry the
  matrix, totals with their n and 95% interval, the gate verdict, the judge calibration flags
  (``headline_eligible`` and the ``UNCALIBRATED`` / ``FLIPPY`` reasons) and never an output;
- pages (``case_page``) list cases ``page_size`` at a time with ``total``, ``pages`` and
  ``next_page``; the ``failures`` detail names the failing criteria without outputs, the
  ``full`` detail adds each output cut to ``preview_chars``;
- one cell (``case_brief``) is the only answer with whole texts; a string longer than
  ``max_chars`` is cut and ends with a marker that gives its full length, and
  ``truncated`` maps each cut field to its full length.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evalwh.analysis.judging import flag_lines
from evalwh.analysis.nolook import NOTICE, is_no_look
from evalwh.mcp.shaping import NOTE_CHARS, SLICES, clip, clip_tree, num, parsed, plain, plain_dict
from evalwh.reports.fmt import ENDINGS, endings

if TYPE_CHECKING:
    from evalwh.api import RunResult, WarehouseView


def cell_brief(row: Mapping[str, Any]) -> dict[str, Any]:
    """One (variant, model) cell of the matrix: pass rate with its n and 95% interval."""
    return {
        "variant": row["variant"],
        "model": row["model"],
        "n": row["n"],
        "n_cases": row.get("n_cases"),
        "passed": row["n_passed"],
        "pass_rate": num(row["pass_rate"]),
        "ci95": [num(row["pass_rate_lo"]), num(row["pass_rate_hi"])],
        "score": num(row["mean_score"]),
        "errors": row["n_errors"],
        "cost_usd": num(row.get("cost_usd")),
        "p50_ms": num(row.get("p50_latency_ms"), 3),
        "queued_p95_ms": num(row.get("p95_queued_ms"), 3),
    }


def endings_brief(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The cells whose answers did not all simply stop: counts with their n and one line."""
    keys = [key for key, _ in ENDINGS]
    return [
        {
            "variant": r["variant"],
            "model": r["model"],
            "n": r["n"],
            **{k.removeprefix("n_"): r[k] for k in keys if r.get(k)},
            "text": endings(dict(r)),
        }
        for r in rows
    ]


def totals_brief(t: Mapping[str, Any]) -> dict[str, Any]:
    n, passed = int(t.get("n") or 0), int(t.get("n_passed") or 0)
    return {
        "n": n,
        "n_cases": t.get("n_cases"),
        "passed": passed,
        "failed": n - passed,
        "pass_rate": num(t.get("pass_rate")),
        "ci95": [num(t.get("pass_rate_lo")), num(t.get("pass_rate_hi"))],
        "score": num(t.get("mean_score")),
        "errors": t.get("n_errors"),
        "cached": t.get("n_cached"),
        "cost_usd": num(t.get("cost_usd")),
        "input_tokens": num(t.get("input_tokens")),
        "output_tokens": num(t.get("output_tokens")),
    }


def gate_brief(rules: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The verdict and the failing rules only."""
    failed = [
        {
            k: num(v)
            for k, v in r.items()
            if k
            in (
                "kind",
                "scope",
                "target",
                "metric",
                "op",
                "limit",
                "value",
                "n",
                "baseline",
                "message",
            )
        }
        for r in rules
        if not r["passed"]
    ]
    return {"passed": not failed, "rules": len(rules), "failed": failed}


def errors_brief(errors: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "error": clip(str(e["error"]), NOTE_CHARS),
            "kind": e.get("error_kind"),
            "n": e["n"],
            "examples": list(e.get("examples") or [])[:3],
        }
        for e in errors
    ]


def judging_brief(data: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Judge calibration first, then the win rates, with the same flags as the CLI:
    ``headline_eligible`` is false and ``flags`` says why (``UNCALIBRATED: ...``,
    ``LOW-N: ...``, ``FLIPPY: ...``) when a win rate is not a headline; ``flags`` at the top
    holds every flagged comparison and llm-judge criterion."""
    if not data:
        return None
    comparisons = []
    for c in data.get("comparisons") or []:
        comparisons.append(
            {
                "comparison": c["comparison"],
                "judge": c["judge"],
                "candidate": c["candidate"],
                "baseline": c["baseline"],
                "kappa": num(c["kappa"]),
                "kappa_band": c.get("kappa_band"),
                "n_labels": c["n_labels"],
                "calibrated": c["calibrated"],
                "win_rate": num(c["win_rate"]),
                "ci95": [num(c["win_rate_lo"]), num(c["win_rate_hi"])],
                "win_rate_p": num(c["win_rate_p"]),
                "verdict": c["verdict"],
                "n_cases": c["n_cases"],
                "cases_won": c["cases_won"],
                "cases_tied": c["cases_tied"],
                "cases_lost": c["cases_lost"],
                "n": c["n"],
                "candidate_wins": c["candidate_wins"],
                "baseline_wins": c["baseline_wins"],
                "ties": c["ties"],
                "flip_rate": num(c["flip_rate"]),
                "headline_eligible": bool(c["headline_eligible"]),
                "flags": list(c.get("flags") or []),
            }
        )
    pointwise = [
        {
            "criterion": p["criterion"],
            "kappa": num(p.get("kappa")),
            "agreement": num(p.get("agreement")),
            "n_labels": p.get("n_labels"),
            "label_units": p.get("label_units"),
            "flags": list(p.get("flags") or []),
        }
        for p in data.get("pointwise") or []
        if p.get("n_labels") or p.get("n_numeric")
    ]
    return {
        "calibration": plain(data.get("calibration")),
        "comparisons": comparisons,
        "pointwise": pointwise,
        "flags": {k: list(v) for k, v in (data.get("flags") or {}).items()},
    }


def _flags(judging: Mapping[str, Any] | None) -> tuple[bool, list[str]]:
    """A run's top-level flags: every flagged judged number (analysis.judging's one set, as
    ``pairwise:<name>: FLIPPY: ...`` lines); ``headline_eligible`` is false when any."""
    if not judging:
        return True, []
    flags = flag_lines(judging["flags"])
    return not flags, flags


def _next(run_id: str, failed: int, why: str | None = None) -> list[str]:
    """The next steps: first, for a failed run, its cause and the command that re-runs it
    (evalwh.api.hints.next_step), then the tools to read it with."""
    steps = [why] if why else []
    if failed:
        steps.append(
            f"get_run(run='{run_id}', detail='failures') pages the {failed} failing case(s)"
        )
    steps.append(f"compare_runs(a='baseline', b='{run_id}') for the paired deltas")
    return steps


def run_brief(
    result: RunResult, *, label: str | None = None, cap_usd: float | None = None
) -> dict[str, Any]:
    """What run_eval answers: the summary of the new run, never an output."""
    judging = judging_brief(result.pairwise)
    eligible, flags = _flags(judging)
    totals = totals_brief(result.totals)
    return plain_dict(
        {
            "run_id": result.run_id,
            "status": result.status,
            "stop_reason": result.stop_reason,
            "suite": result.suite,
            "label": label,
            "matrix": [cell_brief(r) for r in result.summary],
            "endings": endings_brief(result.endings),
            "totals": totals,
            "failures": totals["failed"],
            "cost_usd": totals["cost_usd"],
            "estimate_usd": num((result.estimate or {}).get("cost_usd")),
            "cap_usd": cap_usd,
            "requests": result.stats.get("requests"),
            "cache_hits": result.stats.get("cache_hits"),
            "errors": errors_brief(result.errors),
            "gate": gate_brief(result.gate),
            "headline_eligible": eligible,
            "flags": flags,
            "judging": judging,
            "next": _next(result.run_id, totals["failed"], result.next),
            "notes": [NOTICE] if result.no_look else [],
            "no_look": result.no_look,
        }
    )


def _run_head(run: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("run_id", "label", "suite", "status", "started_at", "finished_at", "n_planned")
    return {**{k: run.get(k) for k in keys}, "no_look": is_no_look(run)}


def show_brief(data: Mapping[str, Any]) -> dict[str, Any]:
    """``get_run(detail="summary")``: WarehouseView.show without cases or outputs."""
    run = data["run"]
    judging = judging_brief(data.get("pairwise"))
    eligible, flags = _flags(judging)
    totals = totals_brief(data["totals"])
    return plain_dict(
        {
            "run": _run_head(run),
            "matrix": [cell_brief(r) for r in data["summary"]],
            "endings": endings_brief(data.get("endings") or []),
            "totals": totals,
            "criteria": [
                {
                    "criterion": c["criterion"],
                    "scorer": c["scorer"],
                    "required": c["required"],
                    "n": c["n"],
                    "passed": c["n_passed"],
                    "pass_rate": num(c["pass_rate"]),
                    "ci95": [num(c["pass_rate_lo"]), num(c["pass_rate_hi"])],
                    "scorer_errors": c.get("n_errors"),
                }
                for c in data.get("criteria") or []
            ],
            "errors": errors_brief(data.get("errors") or []),
            "gate": gate_brief(data.get("gate") or []),
            "headline_eligible": eligible,
            "flags": flags,
            "judging": judging,
            "next": _next(
                run["run_id"],
                totals["failed"],
                data.get("next") if run["status"] == "failed" else None,
            ),
            **({"notice": NOTICE} if is_no_look(run) else {}),
        }
    )


def _failed_criteria(criteria: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    return [
        {
            "criterion": c["criterion"],
            "score": num(c["score"]),
            "required": c["required"],
            **({"error": clip(str(c["error"]), NOTE_CHARS)} if c.get("error") else {}),
        }
        for c in criteria or []
        if not c["passed"]
    ]


def case_row(row: Mapping[str, Any], *, output_chars: int | None = None) -> dict[str, Any]:
    """One case in a page: its verdict and failing criteria; with ``output_chars`` also the
    output (cut) and the expected answer."""
    out: dict[str, Any] = {
        "variant": row["variant"],
        "model": row["model"],
        "case_id": row["case_id"],
        "repeat": row["repeat"],
        "passed": row["passed"],
        "score": num(row["score"]),
        "error": clip(str(row["error"]), NOTE_CHARS) if row.get("error") else None,
        "failed": _failed_criteria(row.get("criteria")),
    }
    if output_chars is not None:
        output = row.get("output")
        out["output"] = clip(output, output_chars) if isinstance(output, str) else output
        out["output_chars"] = len(output) if isinstance(output, str) else 0
        expected = parsed(row.get("expected"))
        out["expected"] = (
            clip(expected, output_chars)
            if isinstance(expected, str)
            else clip_tree(expected, output_chars)
        )
    return out


def _delta(row: Mapping[str, Any], metric: str) -> dict[str, Any] | None:
    if row.get(f"{metric}_delta") is None and row.get(f"{metric}_a") is None:
        return None
    return {
        "a": num(row.get(f"{metric}_a")),
        "b": num(row.get(f"{metric}_b")),
        "delta": num(row.get(f"{metric}_delta")),
        "ci95": [num(row.get(f"{metric}_lo")), num(row.get(f"{metric}_hi"))],
        **({"p": num(row[f"{metric}_p"])} if row.get(f"{metric}_p") is not None else {}),
    }


def delta_brief(row: Mapping[str, Any], *, cost: bool = False) -> dict[str, Any]:
    """One compared row (run, cell, criterion or slice): B minus A with its 95% interval."""
    out: dict[str, Any] = {
        "target": row.get("target"),
        "n": row.get("n"),
        "verdict": row.get("verdict"),
        "pass_rate": _delta(row, "pass_rate"),
        "score": _delta(row, "score"),
        "fixed": row.get("n_fixed"),
        "broken": row.get("n_broken"),
    }
    if cost:
        out["cost_usd"] = _delta(row, "cost_usd")
    return out


def compare_brief(
    data: Mapping[str, Any],
    *,
    slices: int = SLICES,
    judging: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A Comparison.to_dict() without the standard-error columns: deltas with intervals,
    the worst ``slices`` slices and the movers."""
    all_slices = list(data.get("slices") or [])
    movers = [
        {
            k: (clip(str(v), NOTE_CHARS) if k == "error_b" and v else num(v))
            for k, v in m.items()
            if k
            in (
                "movement",
                "case_id",
                "variant",
                "model",
                "repeat",
                "score_a",
                "score_b",
                "criteria_broken",
                "criteria_fixed",
                "error_b",
            )
        }
        for m in data.get("movers") or []
    ]
    out = {
        "a": _run_head(data["a"]),
        "b": _run_head(data["b"]),
        "overall": delta_brief(data["overall"], cost=True),
        "cells": [
            {"variant": r["variant"], "model": r["model"], **delta_brief(r, cost=True)}
            for r in data.get("cells") or []
        ],
        "criteria": [delta_brief(r) for r in data.get("criteria") or []],
        "slices": [delta_brief(r) for r in all_slices[:slices]],
        "slices_total": len(all_slices),
        "movers": movers,
        "notes": list(data.get("notes") or []),
        "no_look": bool(data.get("no_look")),
    }
    if judging:
        out["calibration"] = dict(judging)
    return plain_dict(out)


def _snapshot_uses_judges(run: Mapping[str, Any]) -> bool:
    snapshot = parsed(run.get("config_snapshot"))
    return isinstance(snapshot, dict) and bool(snapshot.get("pairwise") or snapshot.get("judges"))


def judging_for(view: WarehouseView, run_id: str) -> dict[str, Any] | None:
    """The calibration flags of a stored run that used judges (None otherwise)."""
    if not _snapshot_uses_judges(view.run(run_id)):
        return None
    judging = judging_brief(view.judging(run_id))
    eligible, flags = _flags(judging)
    return {"headline_eligible": eligible, "flags": flags, "judging": judging}
