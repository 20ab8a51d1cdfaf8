"""Rich renderings of API results. No logic beyond formatting."""

from __future__ import annotations

import json
from typing import Any

from rich.table import Table
from rich.text import Text

from evalwh.cli.state import err, out
from evalwh.reports.fmt import cases_note, endings, part_label, win_counts, win_rate


def pct(x: float | None) -> str:
    if x is None:
        return "–"
    return f"{100 * x + 0.0:.1f}%" if abs(x) >= 5e-5 else "0.0%"  # no "-0.0%" from rounding


def rate(row: dict[str, Any]) -> str:
    """Pass rate with n and its 95% interval (Wilson, or CLT over cases with repeats): never a
    rate without its n."""
    if not row.get("n"):
        return "– (n=0)"
    return f"{pct(row['pass_rate'])} [{ci(row)}] ({row['n_passed']}/{row['n']}{cases_note(row)})"


def ms(x: float | None) -> str:
    return "–" if x is None else (f"{x:.0f} ms" if x < 10_000 else f"{x / 1000:.1f} s")


def usd(x: float | None) -> str:
    if x is None:
        return "–"
    return f"${x:.4f}" if x < 1 else f"${x:.2f}"


def num(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def waited(queued_ms: float | None) -> bool:
    """A request waited to be sent long enough to show (a pace, a slot, a back-off)."""
    return queued_ms is not None and queued_ms >= 1.0


def summary_table(rows: list[dict[str, Any]]) -> Table:
    """The matrix; a "queued p95" column (the time requests waited before they were sent)
    joins p50/p95 latency when a cell's requests waited."""
    queued = any(waited(r.get("p95_queued_ms")) for r in rows)
    table = Table(show_lines=False)
    table.add_column("variant", no_wrap=True)
    table.add_column("model", no_wrap=True)
    names = ("pass", "95% CI", "n", "score", "errors", "p50", "p95")
    for name in (*names, *(("queued p95",) if queued else ()), "cost"):
        table.add_column(name, justify="right", no_wrap=True)
    for r in rows:
        errors = Text(str(r["n_errors"]), style="red" if r["n_errors"] else "")
        table.add_row(
            r["variant"],
            r["model"],
            pct(r["pass_rate"]),
            ci(r),
            f"{r['n_passed']}/{r['n']}{cases_note(r)}",
            num(r["mean_score"]),
            errors,
            ms(r["p50_latency_ms"]),
            ms(r["p95_latency_ms"]),
            *((ms(r.get("p95_queued_ms")),) if queued else ()),
            usd(r["cost_usd"]),
        )
    return table


def ci(row: dict[str, Any]) -> str:
    """``54.7%–80.1%``; ``undefined`` for one case with mixed repeats (no spread to measure)."""
    if not row.get("n"):
        return "–"
    if row.get("pass_rate_lo") is None:
        return "undefined"
    return f"{pct(row['pass_rate_lo'])}–{pct(row['pass_rate_hi'])}"


def totals_line(t: dict[str, Any]) -> str:
    cached = f", {t['n_cached']} cached" if t.get("n_cached") else ""
    uncached = (
        f" (uncached {usd(t['cost_uncached_usd'])})"
        if t.get("n_cached") and t.get("cost_uncached_usd")
        else ""
    )
    return (
        f"overall: {rate(t)}  score {num(t['mean_score'])}  errors {t['n_errors']}/{t['n']}{cached}  "
        f"cost {usd(t['cost_usd'])}{uncached}"
        + (f", judges {usd(t['judge_cost_usd'])}" if t.get("judge_cost_usd") else "")
    )


def print_endings(rows: list[dict[str, Any]]) -> None:
    """Cells whose answers did not all simply stop: ``v × m: 3 truncated, 1 refused (of 40
    answers)``."""
    for r in rows:
        out().print(f"{r['variant']} × {r['model']}: {endings(r)}", markup=False)


def print_errors(groups: list[dict[str, Any]]) -> None:
    """Failed requests grouped by message, so a permanent failure is named, not just counted."""
    if not groups:
        return
    total = sum(g["n"] for g in groups)
    out().print(Text(f"errors: {total} case(s) failed to get an answer", style="bold red"))
    for g in groups[:10]:
        examples = ", ".join(g["examples"][:3]) + (" …" if g["n"] > 3 else "")
        out().print(f"  {g['n']} case(s): {clip(g['error'], 200)}  ({examples})", markup=False)
    if len(groups) > 10:
        out().print(f"  … and {len(groups) - 10} more kinds of error", markup=False)


def estimate_line(e: dict[str, Any]) -> str:
    """The cost estimate printed before a run (and by --dry-run)."""
    cached = f" ({e['cached']} of {e['cells']} from the cache)" if e["cached"] else ""
    more = " + the datasource's cases (unknown until read)" if e.get("datasources") else ""
    if e.get("streamed_cells"):
        more += f" + {e['streamed_cells']:,} cell(s) of streamed case files (not priced)"
    line = f"estimate: {e['calls']} call(s){cached}{more}, up to ~{usd(e['cost_usd'])}"
    batch = e.get("batch")
    if batch is None:
        return line
    line += f"; batch: about {usd(e['cost_usd'])} (live {usd(e['live_cost_usd'])})"
    return "\n".join([line, *(f"  runs live: {why}" for why in batch["live"])])


def batch_line(jobs: list[dict[str, Any]]) -> str:
    """Batch jobs while a run waits on them: how many are open, and the requests done."""
    total = sum(j["requests"] for j in jobs)
    counts: dict[str, int] = {}
    for job in jobs:
        for name, n in job["counts"].items():
            counts[name] = counts.get(name, 0) + n
    done = sum(counts.get(k, 0) for k in ("succeeded", "errored", "expired", "cancelled"))
    states: dict[str, int] = {}
    for job in jobs:
        states[job["state"]] = states.get(job["state"], 0) + 1
    shown = ", ".join(f"{n} {state}" for state, n in sorted(states.items()))
    failed = counts.get("errored", 0) + counts.get("expired", 0)
    return f"batch: {len(jobs)} job(s) ({shown}), {done}/{total} request(s) done" + (
        f", {failed} failed or expired" if failed else ""
    )


def criteria_table(rows: list[dict[str, Any]]) -> Table:
    table = Table(title="criteria", title_justify="left")
    for name in (
        "criterion",
        "type",
        "weight",
        "required",
        "pass",
        "95% CI",
        "n",
        "mean",
        "scorer errors",
    ):
        table.add_column(
            name, justify="left" if name in ("criterion", "type") else "right", no_wrap=True
        )
    for r in rows:
        table.add_row(
            r["criterion"],
            r["scorer"] + (f" ({r['mode']})" if r.get("mode") else ""),
            f"{r['weight']:g}",
            "yes" if r["required"] else "no",
            pct(r["pass_rate"]),
            ci(r),
            f"{r['n_passed']}/{r['n']}{cases_note(r)}",
            num(r["mean_score"]),
            str(r["n_errors"]),
        )
    return table


def clip(text: str | None, limit: int = 300) -> str:
    if text is None:
        return ""
    return text if len(text) <= limit else text[:limit] + f"… [{len(text)} chars]"


def attachments_line(rows: list[dict[str, Any]]) -> str | None:
    """``files: photo 2 x image/png (1,234 bytes) in 4 case row(s)`` for a run's files."""
    if not rows:
        return None
    return "files: " + "; ".join(
        f"{r['name']} {r['files']} x {r['media_type']} ({r['bytes']:,} bytes) in "
        f"{r['case_rows']} case row(s)"
        for r in rows
    )


def case_block(c: dict[str, Any], *, full: bool) -> None:
    status = Text(
        "PASS" if c["passed"] else ("ERROR" if c["error"] else "FAIL"),
        style="green" if c["passed"] else "bold red",
    )
    header = Text()
    header.append(status)
    header.append(f" {c['case_id']}  {c['variant']} × {c['model']}")
    if c["repeat"]:
        header.append(f"  repeat {c['repeat']}")
    header.append(f"  score {num(c['score'])}")
    if c.get("cached"):
        header.append("  (cached)", style="dim")
    out().print(header)
    limit = 10_000 if full else 300
    no_look = "output" not in c  # a no-look run's case: ids, scores and error classes only
    if c["error"]:
        out().print(
            f"  error: {c['error']} (after {c['attempts']} attempt(s))", style="red", markup=False
        )
    elif not no_look:
        out().print(f"  output: {clip(c['output'], limit)}", markup=False)
    if c.get("expected") is not None:
        out().print(f"  expected: {clip(c['expected'], limit)}", markup=False)
    for s in c.get("criteria") or []:
        mark = "✓" if s["passed"] else "✗"
        detail = (
            f" — {s['error']}"
            if s.get("error")
            else (
                f" — {clip(s['details'], 200)}"
                if s.get("details") and (full or not s["passed"])
                else ""
            )
        )
        out().print(
            f"  {mark} {s['criterion']} ({s['scorer']}) {num(s['score'], 2)}{detail}", markup=False
        )
    for name, f in (json.loads(c["attachments"]) if c.get("attachments") else {}).items():
        out().print(
            f"  file {name}: {f['media_type']}, {f['bytes']:,} bytes, sha256 {f['sha256'][:12]}",
            markup=False,
        )
    if full:
        if not no_look:
            out().print(f"  vars: {c['vars']}", markup=False)
        out().print(f"  metadata: {c['metadata']}", markup=False)
        for m in json.loads(c.get("messages") or "[]"):
            text = "".join(part_label(p) for p in m["content"])
            out().print(f"  [{m['role']}] {text}", markup=False)
        queued = f" (+{ms(c.get('queued_ms'))} queued)" if waited(c.get("queued_ms")) else ""
        out().print(
            f"  latency {ms(c['latency_ms'])}{queued}, tokens {c['input_tokens']}/"
            f"{c['output_tokens']}, cost {usd(c['cost_usd'])}",
            markup=False,
        )


def runs_table(rows: list[dict[str, Any]]) -> Table:
    table = Table(title=None)
    for name in (
        "run",
        "label",
        "suite",
        "status",
        "started",
        "cases",
        "pass rate (passed/n)",
        "errors",
        "cost",
    ):
        table.add_column(name, justify="right" if name in ("cases", "errors", "cost") else "left")
    colours = {"completed": "green", "running": "yellow", "interrupted": "red", "failed": "red"}
    for r in rows:
        progress = f"{r['n']}/{r['n_planned']}" if r["n"] != r["n_planned"] else str(r["n"])
        rate_text = f"{pct(r['pass_rate'])} ({r['n_passed']}/{r['n']})" if r["n"] else "–"
        started = r["started_at"].strftime("%Y-%m-%d %H:%M") if r.get("started_at") else ""
        table.add_row(
            r["run_id"],
            r["label"] or "",
            r["suite"],
            Text(r["status"], style=colours.get(r["status"], "")),
            started,
            progress,
            rate_text,
            str(r["n_errors"]),
            usd(r["cost_usd"]),
        )
    return table


def warn(message: str) -> None:
    err().print(Text(message, style="yellow"))


def print_judging(data: dict[str, Any] | None) -> None:
    """Pairwise comparisons: calibration first, then the win rate (flagged when not a headline);
    then the llm-judge criteria's calibration and flags (analysis.judging's one set)."""
    from evalwh.analysis.judging import flag_lines, flag_names

    if not data:
        return
    for c in data["comparisons"]:
        head = Text(f"pairwise {c['comparison']}: ", style="bold")
        head.append(
            f"{c['candidate']} (candidate) vs {c['baseline']} (baseline), judge {c['judge']}"
        )
        out().print(head)
        if c["kappa"] is None:
            cal = f"kappa undefined on {c['n_labels']} label(s)"
        else:
            cal = (
                f"kappa {c['kappa']:.2f} ({c['kappa_band']}) on {c['n_labels']} label(s); "
                f"agreement {pct(c['agreement'])}, base rate {pct(c['base_rate'])}"
            )
        out().print(f"  calibration: {cal}", markup=False)
        if c["confusion"]:
            order = ("baseline", "candidate", "tie")
            cells = {(x["human"], x["judge"]): x["n"] for x in c["confusion"]}
            out().print("    human \\ judge    baseline  candidate        tie", markup=False)
            for h in order:
                counts = "".join(f"{cells.get((h, j), 0):>11}" for j in order)
                out().print(f"    {h:<13}{counts}", markup=False)
        flag = Text(" " + " ".join(flag_names(c["flags"])), style="bold red")
        line = Text(
            f"  win rate: {win_rate(c)} ({win_counts(c)}; ties count half; "
            f"{c['n_excluded']} pair(s) excluded)"
        )
        line.append(flag)
        out().print(line)
        flip = Text(f"  flip rate: {pct(c['flip_rate'])} ({c['n_flipped']}/{c['n']})")
        if c["flip_flagged"]:
            flip.append(" FLIPPY", style="bold red")
        out().print(flip)
        out().print(
            f"  eligible for judging: baseline {pct(c['baseline_eligible_rate'])}, "
            f"candidate {pct(c['candidate_eligible_rate'])} of {c['n_pairs']} pair(s)",
            markup=False,
        )
        for reason in c["flags"]:
            out().print(f"  {reason}", style="red", markup=False)
    for p in data.get("pointwise") or []:
        if not p["n_labels"] and not p["n_numeric"]:
            continue
        kappa = "undefined" if p["kappa"] is None else f"{p['kappa']:.2f}"
        out().print(
            f"judge calibration of {p['criterion']}: kappa {kappa}, agreement {pct(p['agreement'])} "
            f"(n={p['n_labels']})"
            + (
                f"; exact {pct(p['exact_agreement'])}, within {p['within']:g} "
                f"{pct(p['within_agreement'])}, weighted kappa "
                + ("undefined" if p["weighted_kappa"] is None else f"{p['weighted_kappa']:.2f}")
                + f" (n={p['n_numeric']}, {p['weights']} weights)"
                if p["n_numeric"]
                else ""
            )
            + (f"; {p['label_units']}" if p.get("label_units") else ""),
            markup=False,
        )
    judged = {k: v for k, v in (data.get("flags") or {}).items() if k.startswith("criterion:")}
    for reason in flag_lines(judged):
        out().print(reason, style="red", markup=False)
