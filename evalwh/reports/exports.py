"""Exports of a stored run: json, csv, md (a PR comment), parquet, junit. Nothing re-runs.

- ``json``: one document — the run, totals, the matrix, criteria, the judge calibration
  and pairwise win rates (``pairwise``, as ``evalwh show --json``; null without a judge), the
  gate, the judge flags (``analysis.judging``'s one set), repeat statistics (when sampled
  more than once) and every case row.
- ``csv``: every case row, flat (sql/export_cases.sql).
- ``md``: a pull-request comment — the gate result, the matrix, the judge flags, the top
  movers versus the baseline (``--baseline``, else the pinned one) and the pairwise win
  rates. Model outputs are left out on purpose.

A no-look run (docs/no-look.md) exports the same columns as the warehouse (its case-data
columns NULL); json, md and junit say it is no-look instead of showing outputs.
- ``parquet``: one Hive-partitioned dataset per table, ``<out>/cases/run_id=<id>/cases.parquet``
  and ``<out>/scores/run_id=<id>/scores.parquet`` (evalwh.warehouse.exportfiles);
  :func:`export_all` writes every concluded run so, moving exports of the older layout.
- ``html``: the self-contained run page of ``evalwh.reports.html`` (the same as
  ``run --html``).
- ``junit``: one testsuite per variant x model with a testcase per case row (failures and
  errors carry the failed criteria), and a ``gate`` testsuite with one testcase per rule.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalwh.analysis.gate import GateResult, find_baseline, judge
from evalwh.analysis.judging import flag_lines, run_flags
from evalwh.analysis.nolook import NOTICE, is_no_look
from evalwh.analysis.runinfo import snapshot
from evalwh.errors import UsageError
from evalwh.reports import fmt
from evalwh.reports.textsafe import csv_safe_table, json_safe, md_cell, terminal_safe, xml_safe

if TYPE_CHECKING:
    from evalwh.analysis.compare import Comparison
    from evalwh.warehouse.store import Warehouse

FORMATS = ("json", "csv", "md", "parquet", "junit", "html")
JSON_COLUMNS = ("criteria", "expected", "vars", "metadata", "tool_calls")
CSV_FORMULAS = ("neutralise", "keep")


@dataclass
class Export:
    """What an export produced: the text (written nowhere yet) or the path written."""

    run_id: str
    format: str
    text: str | None = None
    path: Path | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "format": self.format, "path": self.path}


def export_run(
    store: Warehouse,
    ref: str,
    format: str,
    *,
    out: str | Path | None = None,
    baseline: str | None = None,
    csv_formulas: str = "neutralise",
) -> Export:
    """Export run ``ref`` as ``format``; to ``out`` when given, else as text (parquet:
    to ``out`` or the warehouse's ``exports/`` folder).

    Text formats neutralise control characters in every field (evalwh.reports.textsafe); CSV cells
    that start with ``= + - @`` get a leading ``'`` unless ``csv_formulas="keep"``."""
    if format not in FORMATS:
        raise UsageError(f"unknown export format {format!r}; use one of: {', '.join(FORMATS)}")
    if csv_formulas not in CSV_FORMULAS:
        raise UsageError(
            f"unknown csv_formulas {csv_formulas!r}: use neutralise (the default) or keep"
        )
    run_id = store.resolve(ref)
    if format == "parquet":
        return Export(run_id, format, path=store.export_run(run_id, _parquet_root(store, out)))
    if format == "csv":
        text = _csv(store, run_id, keep_formulas=csv_formulas == "keep")
    else:
        text = WRITERS[format](store, run_id, baseline)
    if out is None:
        return Export(run_id, format, text=text)
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return Export(run_id, format, path=path)


def _parquet_root(store: Warehouse, out: str | Path | None) -> Path:
    if out is not None:
        return Path(out)
    if isinstance(store.path, Path):
        return store.path.parent / "exports"
    raise UsageError("a DuckLake run exports to a folder on this machine: name it (--out)")


@dataclass
class ExportAll:
    """What :func:`export_all` wrote: the exports folder, the runs exported into it, and the
    runs whose exports were moved from the layout before schema version 2."""

    path: Path
    run_ids: list[str]
    migrated: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {"format": "parquet", **asdict(self)}


def export_all(store: Warehouse, *, out: str | Path | None = None) -> ExportAll:
    """Export every concluded run (completed, failed or stopped) as Parquet to ``out`` (else
    the warehouse's ``exports/``), after moving exports of the older layout found there."""
    from evalwh.warehouse.exportfiles import migrate_layout

    root = _parquet_root(store, out)
    migrated = migrate_layout(root)
    run_ids = store.concluded_runs()
    for run_id in run_ids:
        store.export_run(run_id, root)
    return ExportAll(root, run_ids, migrated)


# -- json / csv ---------------------------------------------------------------------------
def document(store: Warehouse, run_id: str, baseline: str | None = None) -> dict[str, Any]:
    """Everything about a run as one JSON-ready dict."""
    from evalwh.analysis.repeats import repeats_report

    run = {k: v for k, v in store.run_row(run_id).items() if k != "config_snapshot"}
    for key in ("filters", "totals"):
        run[key] = fmt.json_value(run.get(key))
    cases = store.query("export_cases", run_id=run_id).to_pylist()
    for row in cases:
        for key in JSON_COLUMNS:
            row[key] = fmt.json_value(row[key])
    repeats = repeats_report(store, run_id)
    no_look = is_no_look(run)
    return {
        "no_look": no_look,
        "notice": NOTICE if no_look else None,
        "run": run,
        "totals": store.query("run_totals", run_id=run_id).to_pylist()[0],
        "summary": store.query("summary", run_id=run_id).to_pylist(),
        "criteria": store.query("criteria", run_id=run_id).to_pylist(),
        "pairwise": _judging(store, run_id),
        "gate": judge(store, run_id, baseline=baseline).to_dict(),
        "flags": run_flags(store, run_id),
        "repeats": repeats if repeats["repeats"] > 1 else None,
        "cases": cases,
    }


def _judging(store: Warehouse, run_id: str) -> dict[str, Any] | None:
    """``analysis.judging.report`` of a run with judges (calibration, then each pairwise
    comparison's win rate, sign test and counts), None without one."""
    from evalwh.analysis.judging import report

    config = snapshot(store, run_id)
    if not (config.get("pairwise") or config.get("judges")):
        return None
    return report(store, run_id, config)


def _encode(value: Any) -> Any:
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    return str(value)


def _json(store: Warehouse, run_id: str, baseline: str | None) -> str:
    data = document(store, run_id, baseline)
    return json_safe(json.dumps(data, default=_encode, ensure_ascii=False, indent=2)) + "\n"


def _csv(
    store: Warehouse, run_id: str, baseline: str | None = None, *, keep_formulas: bool = False
) -> str:
    import io

    import pyarrow.csv as pacsv

    sink = io.BytesIO()
    table = store.query("export_cases", run_id=run_id)
    pacsv.write_csv(csv_safe_table(table, keep_formulas=keep_formulas), sink)
    return sink.getvalue().decode("utf-8")


# -- markdown -----------------------------------------------------------------------------
def _cell(text: Any) -> str:
    """A value safe inside a Markdown table cell or heading (no pipes, no line breaks, no
    HTML, no control characters)."""
    return md_cell(str(text).replace("\\", "\\\\").replace("<", "&lt;").replace("`", "'"))


def _table(headers: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return lines


def _gate_md(gate: GateResult) -> list[str]:
    if not gate.rules:
        lines = ["**Gate:** no thresholds configured"]
    elif gate.passed:
        lines = [f"**Gate: ✅ passed** (all {len(gate.rules)} rules)"]
    else:
        lines = [f"**Gate: ❌ failed** ({len(gate.failed)} of {len(gate.rules)} rules)"]
    if gate.baseline_id and any(r["kind"] == "regression" for r in gate.rules):
        lines += ["", f"Drops are measured against the baseline run `{gate.baseline_id}`."]
    if gate.rules:
        rows = [["✅" if r["passed"] else "❌", fmt.rule_text(r)] for r in gate.rules]
        lines += ["", *_table(["", "rule"], rows)]
    return lines + [f"> {note}" for note in gate.notes]


def _summary_md(store: Warehouse, run_id: str) -> list[str]:
    totals = store.query("run_totals", run_id=run_id).to_pylist()[0]
    rows = [
        [
            r["variant"],
            r["model"],
            fmt.rate(r),
            fmt.num(r["mean_score"]),
            f"{r['n_errors']}/{r['n']}",
            fmt.usd(r["cost_usd"]),
        ]
        for r in store.query("summary", run_id=run_id).to_pylist()
    ]
    overall = (
        f"**Overall:** {fmt.rate(totals)} · score {fmt.num(totals['mean_score'])} · "
        f"errors {totals['n_errors']}/{totals['n']} · cost {fmt.usd(totals['cost_usd'])}"
    )
    headers = ["variant", "model", "pass [95% CI] (passed/n)", "score", "errors", "cost"]
    endings = [
        f"- {r['variant']} × {r['model']}: {fmt.endings(r)}"
        for r in store.query("finish_reasons", run_id=run_id).to_pylist()
    ]
    return [overall, "", *_table(headers, rows), *(["", *endings] if endings else [])]


def _pairwise_md(judging: dict[str, Any] | None) -> list[str]:
    """The pairwise win rates: the same text as the command line and the HTML report."""
    comparisons = (judging or {}).get("comparisons") or []
    if not comparisons:
        return []
    rows = [
        [
            c["comparison"],
            f"{c['candidate']} vs {c['baseline']}",
            fmt.win_rate(c),
            fmt.win_counts(c),
            f"{fmt.pct(c['flip_rate'])} ({c['n_flipped']}/{c['n']})",
            "; ".join(c["flags"]) or "calibrated",
        ]
        for c in comparisons
    ]
    headers = ["comparison", "candidate vs baseline", "win rate [95% CI], sign test"]
    headers += ["cases won / tied / lost", "flip rate", "flags"]
    return ["**Pairwise** (ties count half a win)", "", *_table(headers, rows)]


def _run_name(run: dict[str, Any]) -> str:
    return f"`{run['run_id']}`" + (f" ({_cell(run['label'])})" if run.get("label") else "")


def _compare_md(cmp: Comparison, top: int) -> list[str]:
    o = cmp.overall
    lines = [f"### vs baseline {_run_name(cmp.a)}", ""]
    if not o.get("n"):
        return [*lines, "No case in common with the baseline."]
    lines.append(
        f"Pass rate {fmt.pct(o['pass_rate_a'])} → {fmt.pct(o['pass_rate_b'])}: "
        f"{fmt.delta(o, 'pass_rate')} (n={o['n']} paired) · score {fmt.delta(o, 'score', 'abs')}"
        f" · fixed {o['n_fixed']}, broken {o['n_broken']}"
    )
    cells = [
        [
            r["variant"],
            r["model"],
            r["n"],
            f"{fmt.pct(r['pass_rate_a'])} → {fmt.pct(r['pass_rate_b'])}",
            fmt.delta(r, "pass_rate"),
            fmt.delta(r, "score", "abs"),
            r["n_fixed"] or 0,
            r["n_broken"] or 0,
            ("🔴 " if r["verdict"] == "worse" else "") + r["verdict"],
        ]
        for r in cmp.rows("cell")
    ]
    headers = ["variant", "model", "n pairs", "pass", "Δ pass [95% CI] p", "Δ score [95% CI] p"]
    headers.append("fixed")
    lines += ["", *_table([*headers, "broken", "verdict"], cells)]
    movers = cmp.movers.to_pylist()[:top]
    if movers:
        rows = [
            [
                m["movement"],
                m["case_id"] + (f" #{m['repeat']}" if m["repeat"] else ""),
                f"{m['variant']} × {m['model']}",
                f"{fmt.num(m['score_a'], 2)} → {fmt.num(m['score_b'], 2)}",
                ", ".join(m["criteria_broken"] or m["criteria_fixed"]) or (m["error_b"] or ""),
            ]
            for m in movers
        ]
        lines += ["", f"**Top movers** (worst first, {len(movers)} shown)", ""]
        lines += _table(["", "case", "cell", "score", "criteria"], rows)
    worst = [s for s in cmp.rows("slice") if (s["pass_rate_delta"] or 0) < 0][:5]
    if worst:
        rows = [[s["target"], s["n"], fmt.delta(s, "pass_rate")] for s in worst]
        lines += ["", "**Slices that dropped most**", ""]
        lines += _table(["slice", "n pairs", "Δ pass [95% CI] p"], rows)
    return lines


def markdown(store: Warehouse, run_id: str, baseline: str | None = None, *, top: int = 10) -> str:
    """A pull-request comment: gate, matrix, and movers versus the baseline."""
    from evalwh.analysis.compare import compare

    run = store.run_row(run_id)
    gate = judge(store, run_id, baseline=baseline)
    lines = [f"## evalwh · {_cell(run['suite'])} · run {_run_name(run)}", ""]
    if is_no_look(run):
        lines += [f"> {NOTICE}", ""]
    lines += [*_gate_md(gate), "", *_summary_md(store, run_id)]
    flags = flag_lines(run_flags(store, run_id))
    if flags:
        lines += ["", "**Flagged judge numbers**", "", *[f"- {_cell(line)}" for line in flags]]
    base_id = gate.baseline_id
    if base_id is None:
        thresholds = snapshot(store, run_id).get("thresholds") or {}
        base_id, _ = find_baseline(store, run_id, thresholds, None)
    if base_id and base_id != run_id:
        lines += ["", *_compare_md(compare(store, base_id, run_id, movers=top), top)]
    pairwise = _pairwise_md(_judging(store, run_id))
    if pairwise:
        lines += ["", *pairwise]
    return terminal_safe("\n".join(lines)) + "\n"  # notes and rule texts too


def _md(store: Warehouse, run_id: str, baseline: str | None) -> str:
    return markdown(store, run_id, baseline)


# -- junit --------------------------------------------------------------------------------
def junit(store: Warehouse, run_id: str, baseline: str | None = None) -> str:
    """JUnit XML: a testsuite per variant x model, a testcase per case row; plus the gate."""
    import xml.etree.ElementTree as ET

    run = store.run_row(run_id)
    suite_name, no_look = run["suite"], is_no_look(run)
    rows = store.query("export_cases", run_id=run_id).to_pylist()
    cells = store.query("summary", run_id=run_id).to_pylist()
    gate = judge(store, run_id, baseline=baseline)
    root = ET.Element("testsuites", name=f"evalwh {suite_name} {run_id}")
    suites = {
        (c["variant"], c["model"]): ET.SubElement(
            root,
            "testsuite",
            name=f"{c['variant']} × {c['model']}",
            tests=str(c["n"]),
            failures=str(c["n"] - c["n_passed"] - c["n_errors"]),
            errors=str(c["n_errors"]),
        )
        for c in cells
    }
    for row in rows:
        key = (row["variant"], row["model"])
        name = row["case_id"] + (f" [repeat {row['repeat']}]" if row["repeat"] else "")
        case = ET.SubElement(
            suites[key],
            "testcase",
            classname=f"{suite_name}.{key[0]}.{key[1]}",
            name=name,
            time=f"{(row['latency_ms'] or 0) / 1000:.3f}",
        )
        if row["error"]:
            error = row["error"]
            ET.SubElement(case, "error", message=error, type=row["error_kind"] or "error")
        elif not row["passed"]:
            failure = ET.SubElement(
                case,
                "failure",
                message=(f"failed: {row['failed_criteria'] or 'score below threshold'}"),
                type="failed",
            )
            failure.text = f"score {row['score']:.3f}\n" + (
                NOTICE if no_look else f"output: {row['output']}\nexpected: {row['expected']}"
            )
    failed = len(gate.failed)
    gate_suite = ET.SubElement(
        root, "testsuite", name="gate", tests=str(len(gate.rules)), failures=str(failed), errors="0"
    )
    for rule in gate.rules:
        case = ET.SubElement(
            gate_suite,
            "testcase",
            classname=f"{suite_name}.gate",
            name=fmt.rule_name(rule),
            time="0",
        )
        if not rule["passed"]:
            ET.SubElement(case, "failure", message=(fmt.rule_text(rule)), type="threshold")
    totals = store.query("run_totals", run_id=run_id).to_pylist()[0]
    root.set("tests", str(totals["n"] + len(gate.rules)))
    root.set("failures", str(totals["n"] - totals["n_passed"] - totals["n_errors"] + failed))
    root.set("errors", str(totals["n_errors"]))
    for element in root.iter():  # valid XML by construction: every attribute and text
        element.attrib = {k: xml_safe(v) for k, v in element.attrib.items()}
        if element.text:
            element.text = xml_safe(element.text)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _html(store: Warehouse, run_id: str, baseline: str | None) -> str:
    from evalwh.reports.html import render_run

    return render_run(store, run_id)


WRITERS: dict[str, Callable[[Warehouse, str, str | None], str]] = {
    "json": _json,
    "csv": _csv,
    "md": _md,
    "junit": junit,
    "html": _html,
}
