"""Pairwise judging after the matrix: each pair of answers is judged in both orders.

A comparison names a baseline and a candidate side (a model, a variant, or both); the other
axis ranges over the run's cells, so ``{model: a}`` vs ``{model: b}`` pairs (v, a) with (v, b)
for every variant v. A pair is eligible when both sides answered, passed their exec check
and every criterion in ``require``. An ineligible pair is not judged: a side that passed
beats one that failed, two failed sides tie, and the pair is excluded from the win rate.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

from evalwh.config.model import Case, Comparison, EvalConfig, Side
from evalwh.config.secrets import redact
from evalwh.engine.runner import Engine, error_text

Cell = tuple[str, str, str, int]


def _sides(
    comparison: Comparison, cells: dict[Cell, dict[str, Any]]
) -> Iterator[tuple[Cell, Cell]]:
    base, cand = comparison.baseline, comparison.candidate
    for cell in sorted(cells):
        variant, model, case_id, repeat = cell
        if not _matches(base, variant, model):
            continue
        other = (cand.variant or variant, cand.model or model, case_id, repeat)
        if other in cells and other != cell:
            yield cell, other


def _matches(side: Side, variant: str, model: str) -> bool:
    return (side.model is None or side.model == model) and (
        side.variant is None or side.variant == variant
    )


def _ok(row: dict[str, Any], require: tuple[str, ...]) -> tuple[bool, str | None]:
    if row["error"] is not None:
        return False, "no answer (request failed)"
    if row["check_passed"] is False:
        return False, "its exec check failed"
    missing = [name for name in require if name not in row["criteria_passed"]]
    if missing:
        return False, f"failed required criterion {', '.join(missing)}"
    return True, None


async def judge_pairs(
    engine: Engine, config: EvalConfig, run_id: str, rows: list[dict[str, Any]]
) -> list[list[Any]]:
    """Judge every pair of every comparison; return the pair rows (writer column order)."""
    from evalwh.scoring.judge import combine, input_text, parse_winner

    cells = {(r["variant"], r["model"], r["case_id"], r["repeat"]): r for r in rows}
    cases = {c.id: c for c in config.cases}
    now = datetime.now(timezone.utc)

    async def one(comparison: Comparison, base_cell: Cell, cand_cell: Cell) -> list[Any]:
        runtime = engine.judges[comparison.judge]
        base, cand = cells[base_cell], cells[cand_cell]
        base_ok, base_why = _ok(base, comparison.require)
        cand_ok, cand_why = _ok(cand, comparison.require)
        case: Case = cases[base_cell[2]]
        row: dict[str, Any] = {
            "verdict_ab": None,
            "verdict_ba": None,
            "rationale_ab": None,
            "rationale_ba": None,
            "error": None,
            "cost": None,
            "flipped": False,
        }
        if not (base_ok and cand_ok):
            verdict = "baseline" if base_ok else ("candidate" if cand_ok else "tie")
            reasons = [
                f"baseline: {base_why}" if base_why else "",
                f"candidate: {cand_why}" if cand_why else "",
            ]
            excluded = "; ".join(r for r in reasons if r)
        else:
            question = input_text(json.loads(base["messages"]))
            verdicts: list[tuple[str, str | None]] = []
            cost, errors = 0.0, []
            for a, b in ((base["output"], cand["output"]), (cand["output"], base["output"])):
                prompt = runtime.prompts.pair(case, question, a, b)
                call = await engine.call(
                    runtime.endpoint, prompt, case, f"pairwise:{comparison.name}"
                )
                cost += (call.cost(runtime.endpoint.model) or 0.0) if not call.cached else 0.0
                if call.answer is None:
                    assert call.error is not None
                    verdicts.append(("invalid", None))
                    errors.append(f"judge call failed: {error_text(call.error, engine.redact)}")
                    continue
                winner, rationale = parse_winner(call.answer.output)
                if winner == "invalid":
                    # redacted before the cut, so a key across it leaves no prefix
                    quoted = redact(call.answer.output)[:160]
                    errors.append(f"judge reply has no usable verdict: {quoted!r}")
                if rationale is not None and config.redact_outputs:
                    rationale = redact(rationale)  # model output, stored like an answer
                verdicts.append((winner, rationale))
            (v_ab, r_ab), (v_ba, r_ba) = verdicts
            verdict, flipped = combine(v_ab, v_ba)
            row.update(
                verdict_ab=_side_word(v_ab, first="baseline"),
                verdict_ba=_side_word(v_ba, first="candidate"),
                rationale_ab=r_ab,
                rationale_ba=r_ba,
                cost=cost,
                flipped=flipped,
            )
            excluded = None
            if errors:
                row["error"] = "; ".join(errors)
                excluded = "the judge gave no usable verdict"
        eligible = excluded is None
        return [
            run_id,
            comparison.name,
            base_cell[2],
            base_cell[3],
            base_cell[0],
            base_cell[1],
            cand_cell[0],
            cand_cell[1],
            comparison.judge,
            runtime.endpoint.model.model,
            row["verdict_ab"],
            row["verdict_ba"],
            verdict,
            row["flipped"],
            eligible,
            excluded,
            base_ok,
            cand_ok,
            row["rationale_ab"],
            row["rationale_ba"],
            row["error"],
            base["metadata"],
            row["cost"],
            now,
        ]

    jobs = [one(c, b, k) for c in config.pairwise for b, k in _sides(c, cells)]
    return list(await asyncio.gather(*jobs))


def _side_word(verdict: str, *, first: str) -> str:
    """A verdict in one order (A/B/tie/invalid) as the side it names."""
    second = "candidate" if first == "baseline" else "baseline"
    return {"A": first, "B": second, "tie": "tie"}.get(verdict, "invalid")
