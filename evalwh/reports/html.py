"""The run page and the compare page: gather from the named queries, render with Jinja2.

Every number on a page comes from the query or analysis function the CLI prints it from
(``run_totals``, ``summary``, ``criteria``, ``slice``, ``case_list``, ``pair_list``,
``analysis.judging.report``, ``analysis.gate.judge``, ``analysis.compare.compare``); this
module only shapes rows for display (worst first, long texts cut with their full length
kept) and renders. Untrusted text (outputs, case data, rationales) reaches the page only
through Jinja2's autoescaping or as embedded JSON with ``<``, ``>`` and ``&`` escaped; the
script builds the interactive parts with ``textContent``, never ``innerHTML``.

The page's Content-Security-Policy allows no network request at all (``default-src
'none'``), inline styles, data: images, and exactly one script: the hash of
``templates/report.js``.
"""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import date, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalwh.analysis.judging import flag_lines, flag_names, run_flags
from evalwh.analysis.nolook import NOTICE, is_no_look
from evalwh.analysis.runinfo import snapshot_of
from evalwh.reports import fmt
from evalwh.reports.attachments import Inliner, artifact_folder
from evalwh.reports.fmt import MAX_TEXT, cut, json_value, part_label
from evalwh.reports.labels import judge_scales
from evalwh.reports.transcripts import for_run_page

if TYPE_CHECKING:
    import jinja2

    from evalwh.analysis.compare import Comparison
    from evalwh.warehouse.store import Warehouse

TEMPLATES = Path(__file__).resolve().parent / "templates"
MAX_ROWS = 20_000  # case rows embedded (failures first); the page says how many were left out
TEXT_BUDGET = 8_000_000  # characters of outputs and prompts a page embeds, about
NOJS_ROWS = 100  # case rows rendered as plain HTML for reading without the script
LATENCY_BINS = 20


# -- rendering ------------------------------------------------------------------------------
def _encode(value: Any) -> Any:
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    return str(value)


def embed_json(data: Any) -> str:
    """JSON safe inside ``<script type="application/json">``: no ``<``, ``>`` or ``&`` left
    raw, so no text can close the element or open a comment."""
    text = json.dumps(data, default=_encode, ensure_ascii=False, separators=(",", ":"))
    for raw, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return text


@cache
def _asset(name: str) -> str:
    return (TEMPLATES / name).read_text(encoding="utf-8")


def script_hash() -> str:
    """The CSP source of the page's one script (``'sha256-...'``)."""
    digest = hashlib.sha256(_asset("report.js").encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


# the page's icon, inline: a browser asks no server for /favicon.ico (a 404 in the viewer)
FAVICON_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">'
    '<rect width="16" height="16" rx="3" fill="#2458c6"/>'
    '<path d="M4 8.5l2.5 2.5L12 5.5" fill="none" stroke="#fff" stroke-width="2"/></svg>'
)


def favicon() -> str:
    """The page icon as a ``data:`` URI (the CSP's ``img-src data:`` allows it)."""
    from urllib.parse import quote

    return "data:image/svg+xml," + quote(FAVICON_SVG, safe="=:/")


def csp() -> str:
    return (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        f"script-src {script_hash()}; base-uri 'none'; form-action 'none'"
    )


@cache
def _env() -> jinja2.Environment:
    import jinja2
    from markupsafe import Markup

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        pct=fmt.pct,
        pts=fmt.pts,
        num=fmt.num,
        usd=fmt.usd,
        rate=fmt.rate,
        endings=fmt.endings,
        win_rate=fmt.win_rate,
        win_counts=fmt.win_counts,
        delta=fmt.delta,
        rule_text=fmt.rule_text,
        p_value=fmt.p_value,
        ms=lambda x: "–" if x is None else f"{0 if abs(x) < 0.5 else x:,.0f} ms",
        x=lambda v, width=300: f"{max(0.0, min(1.0, v or 0.0)) * width:.1f}",
    )
    env.globals.update(
        css=lambda: Markup(_asset("report.css")),
        script=lambda: Markup(_asset("report.js")),
        csp=csp,
        favicon=favicon,
        compare_test=fmt.compare_test,
        compare_rule=fmt.compare_rule,
        pairwise_rule=fmt.pairwise_rule,
        json=lambda data: Markup(embed_json(data)),
        cell_label=lambda r: f"{r['variant']} × {r['model']}",
        target_label=lambda r: (
            f"{r['variant']} × {r['model']}" if r.get("scope") == "cell" else str(r["target"])
        ),
    )
    return env


def render(template: str, **context: Any) -> str:
    return _env().get_template(template).render(**context)


# -- shaping helpers ------------------------------------------------------------------------
def messages_text(messages: Any) -> str:
    """Rendered messages as ``[role] text`` lines (a file part as ``[image photo: image/png]``)."""
    lines = []
    for message in json_value(messages) or []:
        content = message.get("content")
        if isinstance(content, str):
            text = content
        else:
            text = "".join(part_label(p) for p in content or [] if isinstance(p, dict))
        lines.append(f"[{message.get('role', '?')}] {text}")
    return "\n".join(lines)


def worst_first(rows: list[dict[str, Any]], key: str = "pass_rate") -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: (r.get(key) is None, r.get(key) or 0.0))


def duration_s(run: dict[str, Any]) -> float | None:
    start, end = run.get("started_at"), run.get("finished_at")
    if isinstance(start, datetime) and isinstance(end, datetime):
        return (end - start).total_seconds()
    return None


# -- the run page ---------------------------------------------------------------------------
def uncalibrated(judging: dict[str, Any] | None) -> dict[str, list[str]]:
    """Every flagged judged number of a run (``analysis.judging.report``'s ``flags``:
    ``{"pairwise:<name>" or "criterion:<name>": [reason, ...]}``; empty without a judge)."""
    return dict(judging["flags"]) if judging else {}


def _present(values: dict[str, Any]) -> dict[str, Any]:
    """The keys that hold something (a 10,000-case page is mostly nulls otherwise)."""
    return {k: v for k, v in values.items() if v is not None}


def text_limit(rows: int) -> int:
    """Characters kept of each output and prompt when ``rows`` case rows are embedded: the
    page holds about TEXT_BUDGET characters of them, each between 500 and MAX_TEXT."""
    return max(500, min(MAX_TEXT, TEXT_BUDGET // max(rows, 1)))


NO_LOOK_KEYS = frozenset({"o", "ol", "exp", "rat", "det"})  # what a no-look row never has


def _case_row(
    row: dict[str, Any], limit: int = MAX_TEXT, *, no_look: bool = False
) -> dict[str, Any]:
    """One case row for the page's script. A no-look run's row has no output, reference,
    rationale or details key at all: the page says why instead of showing blanks."""
    hidden = NO_LOOK_KEYS if no_look else frozenset()
    output = row["output"]
    latency = row["latency_ms"]
    fields = {
        "v": row["variant"],
        "m": row["model"],
        "c": row["case_id"],
        "r": row["repeat"],
        "ok": bool(row["passed"]),
        "s": row["score"],
        "e": cut(row["error"], limit),
        "ek": row["error_kind"],
        "o": cut(output, limit),
        "ol": len(output) if output is not None else 0,
        "lat": round(latency, 2) if latency is not None else None,
        "q": row.get("queued_ms"),
        "cost": row["cost_usd"],
        "cached": bool(row["cached"]),
        "att": row["attempts"],
        "meta": json_value(row["metadata"]) or {},
        "exp": cut(json_value(row["expected"]), 500),
        "crit": [
            {
                k: v
                for k, v in _present(
                    {
                        "n": c["criterion"],
                        "sc": c["score"],
                        "p": bool(c["passed"]),
                        "req": bool(c["required"]),
                        "err": cut(c["error"]),
                        "rat": cut(c["rationale"]),
                        "det": cut(c["details"], 1000),
                        "j": c["judge_model"],
                    }
                ).items()
                if k not in hidden
            }
            for c in row["criteria"] or []
        ],
    }
    return _present({k: v for k, v in fields.items() if k not in hidden})


RUN_PARTS = frozenset({"criteria", "slices", "cases"})  # what a page may load on its own


def run_data(
    store: Warehouse,
    run_id: str,
    *,
    max_rows: int = MAX_ROWS,
    parts: frozenset[str] = RUN_PARTS,
) -> dict[str, Any]:
    """Everything the run page shows, from the named queries the CLI uses.

    ``parts`` names the sections gathered here: the viewer leaves ``criteria``, ``slices``
    and ``cases`` to requests of their own (:func:`criteria_data`, :func:`slices_data`,
    :func:`cases_data`; the criteria are still read when a judge's calibration flags need
    them), the file report has them all.
    """
    from evalwh.analysis.gate import judge
    from evalwh.analysis.judging import report

    row = store.run_row(run_id)
    no_look = is_no_look(row)
    config = snapshot_of(row)
    run = {k: v for k, v in row.items() if k not in ("config_snapshot", "totals", "filters")}
    run["duration_s"] = duration_s(row)
    judged = bool(config.get("pairwise") or config.get("judges"))
    keys = _keys(store, run_id) if judged or "slices" in parts else None
    judging = None
    if judged:
        judging = report(store, run_id, config)
        judging["by_slice"] = [
            {"key": key, **r}
            for key in keys or []
            for r in store.query("calibration_slices", run_id=run_id, key=key).to_pylist()
        ]
    criteria = (
        store.query("criteria", run_id=run_id).to_pylist()
        if judged or "criteria" in parts
        else None
    )
    flags = uncalibrated(judging)
    for c in criteria or []:
        c["flag"] = flags.get(f"criterion:{c['criterion']}")
    latency: dict[str, list[dict[str, Any]]] = {}
    for r in store.query("latency_histogram", run_id=run_id, bins=LATENCY_BINS).to_pylist():
        latency.setdefault(f"{r['variant']} × {r['model']}", []).append(r)
    totals = store.query("run_totals", run_id=run_id).to_pylist()[0]
    n_rows = totals["n"]
    inline = Inliner(artifact_folder(store))
    labelled = judging and not no_look  # the labelling tabs show outputs to a person
    pairs = store.query("pair_list", run_id=run_id).to_pylist() if labelled else []
    points = store.query("point_list", run_id=run_id).to_pylist() if labelled else []
    scales = judge_scales(config, {p["criterion"] for p in points})
    n_answers = sum(len(p["answers"]) for p in points)
    data = {
        "run": run,
        "config_name": config.get("name"),
        "totals": totals,
        "summary": store.query("summary", run_id=run_id).to_pylist(),
        "endings": store.query("finish_reasons", run_id=run_id).to_pylist(),
        "gate": judge(store, run_id, config).to_dict(),
        "judging": judging,
        "flags": flags,
        "latency": latency,
        "latency_bins": LATENCY_BINS,
        "n_rows": n_rows,
        "rows_shown": min(n_rows, max_rows),
        "max_text": text_limit(min(n_rows, max_rows)),
        "pairs": [_pair_row(p, text_limit(2 * len(pairs)), inline) for p in pairs],
        "points": [_point_row(p, scales, text_limit(n_answers), inline) for p in points],
        "notice": NOTICE if no_look else None,
    }
    if "cases" in parts:
        cases = cases_data(store, run_id, max_rows=max_rows, no_look=no_look, inline=inline)
        data.update(
            rows=cases["rows"],
            prompts=cases["prompts"],
            attached=cases["attached"],
            transcripts=cases["transcripts"],
            max_text=cases["max_text"],
        )
    data["files"] = inline.inlined()
    if criteria is not None:
        data["criteria"] = worst_first(criteria)
    if keys is not None:
        data["keys"] = keys
    if "slices" in parts:
        data["slices"] = _slices(store, run_id, keys or [])
    data["decision"] = decision_entry(data)
    return data


def _keys(store: Warehouse, run_id: str) -> list[str]:
    from evalwh.analysis.slices import metadata_keys

    return metadata_keys(store, [run_id])


def _slices(store: Warehouse, run_id: str, keys: list[str]) -> list[dict[str, Any]]:
    """The run cut by each metadata key on its own (sql/slice.sql), worst slice first."""
    slices = []
    for key in keys:  # each a key the run's cases carry (no check_keys query per key)
        rows = store.query("slice", run_id=run_id, keys=[key]).to_pylist()
        slices.append(
            {
                "key": key,
                "rows": worst_first([r for r in rows if r["variant"] is None]),
                "cells": [r for r in rows if r["variant"] is not None],
            }
        )
    return slices


def cases_data(
    store: Warehouse,
    run_id: str,
    *,
    max_rows: int = MAX_ROWS,
    no_look: bool | None = None,
    inline: Inliner | None = None,
) -> dict[str, Any]:
    """The run page's case rows (sql/case_list.sql, failures first, at most ``max_rows``)
    shaped for the page's script, with the rendered prompts they share, the files each
    prompt attached (``attached``, same keys), the images inlined (``files``: sha256 ->
    data: URI; :mod:`evalwh.reports.attachments`) and the tool loops' transcripts
    (``transcripts``: :mod:`evalwh.reports.transcripts`; none in a no-look run)."""
    shown = (
        store.query(
            "case_list", run_id=run_id, only_failures=False, case_id=None, limit=max_rows
        ).to_pylist()
        if max_rows
        else []
    )
    limit = text_limit(len(shown))
    if no_look is None:  # a section on its own reads the run row; run_data has it already
        no_look = is_no_look(store.run_row(run_id))
    prompts = {
        f"{r['variant']}\u0000{r['case_id']}": cut(messages_text(r["messages"]), limit)
        for r in shown
        if not no_look
    }
    inline = inline or Inliner(artifact_folder(store))
    attached = {
        f"{r['variant']}\u0000{r['case_id']}": files
        for r in shown
        if not no_look and (files := inline.files(r["messages"]))
    }
    return {
        "run_id": run_id,
        "rows": [_case_row(r, limit, no_look=no_look) for r in shown],
        "prompts": prompts,
        "attached": attached,
        "transcripts": {} if no_look else for_run_page(store, run_id, shown),
        "files": inline.inlined(),
        "max_text": limit,
    }


def criteria_data(store: Warehouse, run_id: str) -> dict[str, Any]:
    """The run page's criteria table on its own: sql/criteria.sql worst first, with each
    judged criterion's calibration flag."""
    from evalwh.analysis.judging import report

    config = snapshot_of(store.run_row(run_id))
    criteria = store.query("criteria", run_id=run_id).to_pylist()
    judging = (
        report(store, run_id, config) if config.get("pairwise") or config.get("judges") else None
    )
    flags = uncalibrated(judging)
    for c in criteria:
        c["flag"] = flags.get(f"criterion:{c['criterion']}")
    return {"run_id": run_id, "criteria": worst_first(criteria)}


def slices_data(store: Warehouse, run_id: str) -> dict[str, Any]:
    """The run page's slices on their own: the run cut by each metadata key."""
    keys = _keys(store, run_id)
    return {"run_id": run_id, "keys": keys, "slices": _slices(store, run_id, keys)}


def _pair_row(
    p: dict[str, Any], limit: int = MAX_TEXT, inline: Inliner | None = None
) -> dict[str, Any]:
    out = {
        "comparison": p["comparison"],
        "case": p["case_id"],
        "prompt": cut(messages_text(p["messages"]), limit),
        "att": inline.files(p["messages"]) if inline else [],
        "expected": cut(json_value(p["expected"]), 500),
        "baseline": f"{p['baseline_variant']} × {p['baseline_model']}",
        "candidate": f"{p['candidate_variant']} × {p['candidate_model']}",
        "verdict": p["verdict"],
        "verdict_ab": p["verdict_ab"],
        "verdict_ba": p["verdict_ba"],
        "flipped": bool(p["flipped"]),
        "eligible": bool(p["eligible"]),
        "rationale_ab": cut(p["rationale_ab"]),
        "rationale_ba": cut(p["rationale_ba"]),
        "human": p["human"],
    }
    for side in ("baseline", "candidate"):
        text = p[f"{side}_output"]
        out[f"{side}_output"] = cut(text, limit)
        out[f"{side}_len"] = len(text) if text is not None else 0
        out[f"{side}_error"] = cut(p[f"{side}_error"])
    return out


def _point_row(
    p: dict[str, Any],
    scales: dict[str, tuple[float, float]],
    limit: int = MAX_TEXT,
    inline: Inliner | None = None,
) -> dict[str, Any]:
    """One pointwise labelling item: a case and criterion with its answers, each labelled on
    its own (``v``, ``m``, ``r`` name the answer in the labels YAML; ``name``, variant × model,
    is shown only on unblinding). ``human`` is a stored label of the whole case, judged
    against the majority of its ``n_answers`` answers."""
    return {
        "criterion": p["criterion"],
        "case": p["case_id"],
        "scale": list(scales.get(p["criterion"], (0.0, 1.0))),
        "prompt": cut(messages_text(p["messages"]), limit),
        "att": inline.files(p["messages"]) if inline else [],
        "expected": cut(json_value(p["expected"]), 500),
        "judge_passed": p["judge_passed"],
        "judge_raw": p["judge_raw_score"],
        "n_answers": p["n_answers"],
        "human": json_value(p["human"]),
        "answers": [
            _present(
                {
                    "name": f"{a['variant']} × {a['model']}",
                    "v": a["variant"],
                    "m": a["model"],
                    "r": a["repeat"],
                    "human": json_value(a["human"]),
                    "o": cut(a["output"], limit),
                    "len": len(a["output"]) if a["output"] is not None else 0,
                    "e": cut(a["error"]),
                    "ok": bool(a["passed"]),
                    "raw": a["raw_score"],
                    "rat": cut(a["rationale"]),
                    "jerr": cut(a["judge_error"]),
                }
            )
            for a in p["answers"]
        ],
    }


def script_data(data: dict[str, Any]) -> dict[str, Any]:
    """What the run page's script reads (embedded as JSON), from :func:`run_data`."""
    keep = (
        "rows",
        "prompts",
        "attached",
        "transcripts",
        "files",
        "pairs",
        "points",
        "flags",
        "keys",
        "max_text",
    )
    return {"run_id": data["run"]["run_id"], **{k: data[k] for k in keep if k in data}}


def render_run(store: Warehouse, run_id: str, *, max_rows: int = MAX_ROWS) -> str:
    data = run_data(store, run_id, max_rows=max_rows)
    return render(
        "run.html.j2", d=data, page_data=script_data(data), nojs_rows=data["rows"][:NOJS_ROWS]
    )


# -- the decision log -----------------------------------------------------------------------
def decision_entry(data: dict[str, Any], comparison: dict[str, Any] | None = None) -> str:
    """A DECISIONS.md entry for a run (and its comparison, if any): numbers, no adjectives."""
    run, totals, gate = data["run"], data["totals"], data["gate"]
    started = run.get("started_at")
    day = started.date().isoformat() if isinstance(started, datetime) else str(started)[:10]
    label = f" ({run['label']})" if run.get("label") else ""
    lines = [
        f"## {day} · {run['suite']} · run {run['run_id']}",
        "",
        f"- Run: {run['run_id']}{label}, status {run['status']}",
        f"- Config hash: {run['config_hash']}; dataset hash: {run['dataset_hash']}; "
        f"git commit: {run.get('git_commit') or '–'}",
        f"- Pass rate: {fmt.rate(totals)}; mean score {fmt.num(totals['mean_score'])}; "
        f"errors {totals['n_errors']}/{totals['n']}; cost {fmt.usd(totals['cost_usd'])} "
        f"(judges {fmt.usd(totals['judge_cost_usd'])})",
    ]
    lines += [f"- {c['variant']} × {c['model']}: {fmt.rate(c)}" for c in data["summary"]]
    if gate["rules"]:
        failed = [r for r in gate["rules"] if not r["passed"]]
        lines.append(
            f"- Gate: {'passed' if not failed else 'failed'} "
            f"({len(gate['rules']) - len(failed)}/{len(gate['rules'])} rules passed)"
        )
        lines += [f"  - failed: {fmt.rule_text(r)}" for r in failed]
    else:
        lines.append("- Gate: no thresholds configured")
    judging = data.get("judging")
    if judging:
        for c in judging["comparisons"]:
            status = "calibrated" if not c["flags"] else ", ".join(flag_names(c["flags"]))
            kappa = fmt.num(c["kappa"], 2)
            lines.append(
                f"- Pairwise {c['comparison']} (judge {c['judge']}): kappa {kappa} "
                f"({c['kappa_band']}) on {c['n_labels']} label(s), {status}; win rate "
                f"{fmt.win_rate(c)} ({fmt.win_counts(c)}); flip rate {fmt.pct(c['flip_rate'])}"
            )
        lines += [f"- {line}" for line in flag_lines(data["flags"])]
    if comparison:
        o = comparison["overall"]
        lines.append(
            f"- Versus run {comparison['a']['run_id']}: pass rate {fmt.delta(o, 'pass_rate')} "
            f"(n={o.get('n')} paired), score {fmt.delta(o, 'score', 'abs')}, "
            f"fixed {o.get('n_fixed')}, broken {o.get('n_broken')}"
        )
    lines += ["", "Decision:", "", "Because:", ""]
    return "\n".join(lines)


def decide(store: Warehouse, ref: str, append: str | Path | None = None) -> dict[str, Any]:
    """The DECISIONS.md entry for run ``ref`` and the run's judge flags (the ones the entry
    lists); appended to ``append`` when given."""
    run_id = store.resolve(ref)
    data = run_data(store, run_id, max_rows=0, parts=frozenset())
    text = decision_entry(data)
    if append is not None:
        path = Path(append)
        before = path.read_text(encoding="utf-8") if path.exists() else ""
        sep = (
            ""
            if not before or before.endswith("\n\n")
            else ("\n" if before.endswith("\n") else "\n\n")
        )
        with path.open("a", encoding="utf-8") as f:
            f.write(sep + text)
    return {
        "run_id": run_id,
        "text": text,
        "path": str(append) if append is not None else None,
        "flags": data["flags"],
    }


# -- the compare page -----------------------------------------------------------------------
COMPARE_PARTS = frozenset({"criteria", "slices", "movers"})  # what a page may load on its own
# tool use on a page (docs/tools.md): a tool's name may be one a model made up (an unknown
# tool's call is stored under the name it asked for), so names, sequences and rows are bounded
MAX_TOOL_ROWS = 200  # per variant x model x tool rows shown (most new failures first)
MAX_SEQUENCE = 50  # tools of a cell's sequence shown on each side
MAX_TOOL_NAME = 200  # characters of a tool's name shown
# each compare part: the deltas' scopes it needs and whether it needs the movers
_PART_SCOPES = {"criteria": ("criterion",), "slices": ("slice",), "movers": ()}


def compare_data(
    store: Warehouse, cmp: Comparison, parts: frozenset[str] = COMPARE_PARTS
) -> dict[str, Any]:
    """The compare page: sql/compare.sql's deltas (pass rate, score, cost, latency) and
    movers, both runs' totals and the regression gate of B judged against A.

    ``parts`` names the sections gathered here: the viewer leaves ``criteria``, ``slices``
    and ``movers`` to requests of their own (:func:`compare_section`), whose ``cmp`` then
    holds the run and cell scopes only; the file report has them all.
    """
    from evalwh.analysis.gate import judge

    a, b = cmp.a["run_id"], cmp.b["run_id"]
    data = _compare_parts(cmp, parts)
    if "movers" in parts:
        data["files"] = movers_in_context(store, cmp, data["movers"])
    data["totals_a"] = store.query("run_totals", run_id=a).to_pylist()[0]
    data["gate"] = judge(store, b, baseline=a).to_dict()
    run_b = run_data(store, b, max_rows=0, parts=frozenset())  # B's flags and decision entry
    data["totals_b"] = run_b["totals"]
    flags = {**run_flags(store, a), **run_b["flags"]}
    for row in data.get("criteria", []):
        row["flag"] = flags.get(f"criterion:{row['target']}")
    data["flags"] = flags
    data["decision"] = decision_entry(run_b, data)
    return data


def _compare_parts(cmp: Comparison, parts: frozenset[str]) -> dict[str, Any]:
    """``cmp`` as the page's data, with the ``parts`` named: criteria and slices worst
    first, the movers' outputs cut."""
    data = cmp.to_dict()
    for name in COMPARE_PARTS - parts:
        del data[name]
    for name in ("criteria", "slices"):
        if name in parts:
            data[name] = worst_first(data[name], "pass_rate_delta")
    for m in data.get("movers", []):
        for side in ("a", "b"):
            if f"output_{side}" not in m:
                continue  # a no-look side: the comparison dropped the outputs (its notes say so)
            text = m[f"output_{side}"]
            m[f"len_{side}"] = len(text) if text is not None else 0
            m[f"output_{side}"] = cut(text)
    tool_use_shown(data)
    return data


def tool_use_shown(data: dict[str, Any]) -> None:
    """The comparison's tool use as a page shows it: at most :data:`MAX_TOOL_ROWS` tools
    (``tools_left_out`` counts the rest), each name cut, each cell's sequences cut to
    :data:`MAX_SEQUENCE` tools (``more_a`` / ``more_b`` count the rest)."""
    tools = data["tools"]
    data["tools_left_out"] = max(0, len(tools) - MAX_TOOL_ROWS)
    data["tools"] = tools[:MAX_TOOL_ROWS]
    for r in data["tools"]:
        r["tool"] = _tool_name(r["tool"])
    for c in data["tool_cells"]:
        for side in ("a", "b"):
            names = c[f"tools_{side}"]
            c[f"more_{side}"] = max(0, len(names) - MAX_SEQUENCE)
            c[f"tools_{side}"] = [_tool_name(n) for n in names[:MAX_SEQUENCE]]


def _tool_name(name: str) -> str:
    """A tool's name cut to :data:`MAX_TOOL_NAME` characters, ``…`` marking a cut."""
    return name if len(name) <= MAX_TOOL_NAME else name[:MAX_TOOL_NAME] + "…"


def movers_in_context(
    store: Warehouse, cmp: Comparison, movers: list[dict[str, Any]]
) -> dict[str, str]:
    """Give each mover what its case asked (sql/case_context.sql): ``prompt`` (run B's
    rendered messages; ``prompt_a`` too when run A asked otherwise), ``vars``, ``expected``
    and ``att``, the attached files. Returns the images inlined (sha256 -> data: URI). A
    comparison with a no-look side shows none of it, as it shows no outputs."""
    inline = Inliner(artifact_folder(store))
    ids = sorted({m["case_id"] for m in movers})
    if cmp.no_look or not ids:
        return {}
    asked: dict[tuple[str, str, str], dict[str, Any]] = {}
    for side, run in (("a", cmp.a["run_id"]), ("b", cmp.b["run_id"])):
        for r in store.query("case_context", run_id=run, case_ids=ids).to_pylist():
            asked[(side, r["variant"], r["case_id"])] = r
    for m in movers:
        a = asked.get(("a", m["variant"], m["case_id"]))
        b = asked.get(("b", m["variant"], m["case_id"]))
        first = b or a
        if first is None:
            continue
        m["prompt"] = cut(messages_text(first["messages"]))
        if a and b and messages_text(a["messages"]) != messages_text(b["messages"]):
            m["prompt_a"] = cut(messages_text(a["messages"]))
        m["vars"] = cut(json_value(first["vars"]), 1000)
        m["expected"] = cut(json_value(first["expected"]), 500)
        m["att"] = inline.files(first["messages"])
    return inline.inlined()


def compare_section(store: Warehouse, ref_a: str, ref_b: str, name: str) -> dict[str, Any]:
    """One part of the compare page on its own (``criteria``, ``slices`` or ``movers``):
    the same deltas and movers :func:`compare_data` holds, from sql/compare.sql asked for
    that part's scope only (the criteria's join of the scores is most of a big compare)."""
    from evalwh.analysis.compare import MOVERS, compare

    movers = MOVERS if name == "movers" else 0
    cmp = compare(store, ref_a, ref_b, scopes=_PART_SCOPES[name], movers=movers, tools=False)
    shaped = _compare_parts(cmp, frozenset({name}))
    data = {k: shaped[k] for k in ("a", "b", "cluster", "slice_keys", name)}
    if name == "movers":
        data["files"] = movers_in_context(store, cmp, data["movers"])
    if name == "criteria":
        flags = {**run_flags(store, cmp.a["run_id"]), **run_flags(store, cmp.b["run_id"])}
        for row in data["criteria"]:
            row["flag"] = flags.get(f"criterion:{row['target']}")
    return data


def render_compare(store: Warehouse, cmp: Comparison) -> str:
    data = compare_data(store, cmp)
    return render("compare.html.j2", d=data, page_data={"run_id": cmp.b["run_id"]})


def write(text: str, out: str | Path) -> Path:
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
