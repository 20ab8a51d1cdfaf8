"""Rich renderings for compare, slices, repeats, baselines, the gate and `evalwh sql`.

Formatting only: every number arrives computed. Rates always come with their n; drops and
regressions are red.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

from rich.table import Table
from rich.text import Text

from evalwh.cli.render import num, pct, usd
from evalwh.cli.state import note, out
from evalwh.reports.fmt import cases_note, delta, p_value

VERDICT_STYLE = {
    "worse": "bold red",
    "better": "green",
    "only in A": "yellow",
    "only in B": "yellow",
}


def _run_name(run: dict[str, Any]) -> str:
    return str(run["run_id"]) + (f" ({run['label']})" if run.get("label") else "")


def _style(value: float | None, *, bold: bool = False, lower_is_better: bool = False) -> str:
    if not value:
        return ""
    worse = value > 0 if lower_is_better else value < 0
    return ("bold " if bold else "") + ("red" if worse else "green")


def delta_text(
    row: dict[str, Any], metric: str, *, unit: str = "pts", lower_is_better: bool = False
) -> Text:
    """``-6.3 pts [-13.2, +0.6]`` coloured by direction, bold when significant as the verdict
    counts it: the p of its paired t-test < 0.05, which is when its interval excludes 0. A delta
    without a standard error (one case, one cluster) says its interval is undefined."""
    d = row.get(f"{metric}_delta")
    if d is None:
        return Text("–")
    p = row.get(f"{metric}_p")
    clear = p is not None and p < 0.05
    if unit == "usd":
        body = f"+{usd(d)}" if d >= 0 else f"-{usd(-d)}"
    elif unit == "ms":
        body = f"{d:+.0f} ms" if abs(d) >= 0.5 else "±0 ms"
    else:
        body = delta(row, metric, unit, with_p=False)
    return Text(body, style=_style(d, bold=clear, lower_is_better=lower_is_better))


def _rates(row: dict[str, Any]) -> str:
    if not row.get("n"):
        return "– (n=0)"
    return f"{pct(row['pass_rate_a'])} → {pct(row['pass_rate_b'])}"


def _verdict(row: dict[str, Any]) -> Text:
    return Text(row["verdict"], style=VERDICT_STYLE.get(row["verdict"], ""))


def _delta_table(title: str, first: list[str], rows: list[dict[str, Any]], cost: bool) -> Table:
    table = Table(title=title, title_justify="left")
    for name in first:
        table.add_column(name, no_wrap=True)
    names = ["n", "pass A → B", "Δ pass [95% CI]", "p", "Δ score [95% CI]", "p"]
    names += ["Δ cost", "Δ latency"] if cost else []
    for name in [*names, "fixed", "broken", "verdict"]:
        table.add_column(name, justify="right", no_wrap=True)
    for r in rows:
        labels = [r["variant"], r["model"]] if r["scope"] == "cell" else [r["target"]]
        if not r["n"]:
            table.add_row(*labels, "0", *["–"] * (len(names) - 1), "–", "–", _verdict(r))
            continue
        cells: list[Any] = [
            str(r["n"]),
            _rates(r),
            delta_text(r, "pass_rate"),
            p_value(r.get("pass_rate_p")),
            delta_text(r, "score", unit="abs"),
            p_value(r.get("score_p")),
        ]
        if cost:
            cells += [
                delta_text(r, "cost_usd", unit="usd", lower_is_better=True),
                delta_text(r, "latency_ms", unit="ms", lower_is_better=True),
            ]
        broken = Text(str(r["n_broken"] or 0), style="red" if r["n_broken"] else "")
        table.add_row(*labels, *cells, str(r["n_fixed"] or 0), broken, _verdict(r))
    return table


def print_comparison(data: dict[str, Any], *, max_slices: int = 15) -> None:
    console = out()
    a, b, o = data["a"], data["b"], data["overall"]
    console.print(
        f"compare {_run_name(b)} against {_run_name(a)}: B minus A, paired on "
        "(variant, model, case_id, repeat), the case as the unit",
        style="bold",
        markup=False,
    )
    head = Text(
        f"overall: n={o.get('n', 0)} cases ({o.get('n_pairs', 0)} paired answers; A has "
        f"{o.get('n_a', 0)}, B has {o.get('n_b', 0)}); "
    )
    if o.get("n"):
        head.append(f"pass {_rates(o)} ")
        head.append_text(delta_text(o, "pass_rate"))
        if o.get("pass_rate_p") is not None:
            head.append(f" {p_value(o['pass_rate_p'])}")
        head.append("  score ")
        head.append_text(delta_text(o, "score", unit="abs"))
        if o.get("score_p") is not None:
            head.append(f" {p_value(o['score_p'])}")
        head.append(f"  fixed {o['n_fixed']}, broken ")
        head.append(str(o["n_broken"]), style="red" if o["n_broken"] else "")
        head.append("  ")
        head.append_text(_verdict(o))
    console.print(head)
    if data["cluster"]:
        console.print(
            f"standard errors: cluster-robust over {o.get('n_clusters')} cluster(s) of "
            f"{data['cluster']!r}",
            markup=False,
        )
    console.print(_delta_table("cells", ["variant", "model"], data["cells"], cost=True))
    if data["criteria"]:
        console.print(_delta_table("criteria, worst first", ["criterion"], data["criteria"], False))
    slices = data["slices"]
    if slices:
        title = "slices, worst first" + (
            f" ({max_slices} of {len(slices)}; all in --json)" if len(slices) > max_slices else ""
        )
        console.print(_delta_table(title, ["slice"], slices[:max_slices], cost=False))
    print_movers(data["movers"])
    if data.get("tools"):  # either run has tool loops (docs/tools.md)
        console.print(tools_table(data["tools"]))
        print_tool_cells(data.get("tool_cells") or [])
    for message in data["notes"]:
        note(f"note: {message}")


def print_movers(movers: list[dict[str, Any]]) -> None:
    if not movers:
        out().print("no case moved", style="dim")
        return
    out().print(Text(f"cases that moved, worst first ({len(movers)} shown):", style="bold"))
    for m in movers:
        style = "red" if m["movement"] in ("broken", "score down") else "green"
        line = Text(f"  {m['movement']:<10} ", style=style)
        line.append(f"{m['case_id']}" + (f" [repeat {m['repeat']}]" if m["repeat"] else ""))
        line.append(f"  {m['variant']} × {m['model']}  score {num(m['score_a'], 2)} → ")
        line.append(num(m["score_b"], 2))
        why = m["criteria_broken"] or m["criteria_fixed"]
        if why:
            line.append(f"  ({', '.join(why)})")
        elif m["error_b"]:
            line.append(f"  error: {m['error_b']}", style="red")
        out().print(line)


def _changed(a: int, b: int) -> Text:
    """``a → b`` of a count of failures: red when it grew, green when it shrank."""
    return Text(f"{a} → {b}", style="red" if b > a else "green" if b < a else "")


def tools_table(rows: list[dict[str, Any]]) -> Table:
    table = Table(title="tool calls (paired cells), most new failures first", title_justify="left")
    for name in ("variant", "model", "tool"):
        table.add_column(name, no_wrap=True)
    for name in ("calls A → B", "failed A → B", "error rate", "bad arguments A → B"):
        table.add_column(name, justify="right", no_wrap=True)
    for r in rows:
        table.add_row(
            r["variant"],
            r["model"],
            r["tool"],
            f"{r['n_calls_a']} → {r['n_calls_b']}",
            _changed(r["n_errors_a"], r["n_errors_b"]),
            f"{pct(r['error_rate_a'])} → {pct(r['error_rate_b'])}",
            _changed(r["n_invalid_args_a"], r["n_invalid_args_b"]),
        )
    return table


def print_tool_cells(cells: list[dict[str, Any]]) -> None:
    if not cells:
        out().print("no cell's tool calls changed", style="dim")
        return
    out().print(Text(f"cells whose tool calls changed ({len(cells)} shown):", style="bold"))
    for c in cells:
        worse = c["n_errors_b"] > c["n_errors_a"] or c["n_invalid_args_b"] > c["n_invalid_args_a"]
        line = Text("  ")
        line.append(f"{c['case_id']}" + (f" [repeat {c['repeat']}]" if c["repeat"] else ""))
        line.append(f"  {c['variant']} × {c['model']}  ")
        line.append(f"{' '.join(c['tools_a']) or '(none)'} → {' '.join(c['tools_b']) or '(none)'}")
        line.append(
            f"  failed {c['n_errors_a']} → {c['n_errors_b']}",
            style="red" if worse else "green" if c["n_errors_b"] < c["n_errors_a"] else "",
        )
        out().print(line)


def slices_table(rows: list[dict[str, Any]], keys: str) -> Table:
    table = Table(title=f"slices by {keys}", title_justify="left")
    for name in ("slice", "variant", "model"):
        table.add_column(name, no_wrap=True)
    for name in ("pass", "95% CI", "n", "score", "errors", "cost"):
        table.add_column(name, justify="right", no_wrap=True)
    for r in rows:
        total = r["variant"] is None
        table.add_row(
            r["slice"] if total else "",
            "all" if total else r["variant"],
            "" if total else r["model"],
            pct(r["pass_rate"]),
            f"{pct(r['pass_rate_lo'])}–{pct(r['pass_rate_hi'])}",
            f"{r['n_passed']}/{r['n']}{cases_note(r)}",
            num(r["mean_score"]),
            Text(str(r["n_errors"]), style="red" if r["n_errors"] else ""),
            usd(r["cost_usd"]),
            style="bold" if total else "",
        )
    return table


def print_repeats(data: dict[str, Any]) -> None:
    console = out()
    if data["repeats"] <= 1:
        console.print("this run sampled every case once: no repeat statistics (run --repeat N)")
        return
    table = Table(title=f"repeats (up to {data['repeats']} per case)", title_justify="left")
    for name in ("variant", "model"):
        table.add_column(name, no_wrap=True)
    for name in ("k", "cases", "pass@k", "pass^k", "flaky", "score sd"):
        table.add_column(name, justify="right", no_wrap=True)
    for r in data["stats"]:
        overall = r["variant"] is None
        table.add_row(
            "all" if overall else r["variant"],
            "" if overall else r["model"],
            str(r["k"]),
            str(r["n_cases"]),
            pct(r["pass_at_k"]),
            pct(r["pass_hat_k"]),
            Text(f"{r['n_flaky']}/{r['n_cases']}", style="yellow" if r["n_flaky"] else ""),
            num(r["mean_score_sd"]),
            style="bold" if overall else "",
        )
    console.print(table)
    flaky = data["flaky"]
    if not flaky:
        console.print("no flaky case: every case passed all its repeats or none", style="green")
        return
    console.print(Text(f"flaky cases ({len(flaky)}), least stable first:", style="bold"))
    for f in flaky:
        marks = "".join("✓" if p else "✗" for p in f["passed_by_repeat"])
        console.print(
            f"  {f['case_id']}  {f['variant']} × {f['model']}  {marks}  "
            f"passed {f['n_passed']}/{f['n']}  score {num(f['mean_score'], 2)} ± "
            f"{num(f['score_sd'], 2)}",
            markup=False,
        )


def gate_line(rule: dict[str, Any]) -> Text:
    from evalwh.reports.fmt import rule_text

    line = Text(
        "PASS " if rule["passed"] else "FAIL ", style="green" if rule["passed"] else "bold red"
    )
    text = rule_text(rule)
    if rule["kind"] == "regression":
        text = text.replace(" for ", f" vs baseline {rule['baseline']} for ", 1)
    line.append(text)
    return line


def print_gate(gate: list[dict[str, Any]]) -> None:
    if not gate:
        return
    failed = [g for g in gate if not g["passed"]]
    head = Text("thresholds: ", style="bold")
    summary = f"{len(failed)} of {len(gate)} failed" if failed else f"all {len(gate)} passed"
    head.append(summary, style="bold red" if failed else "bold green")
    out().print(head)
    for rule in failed:
        out().print("  ", gate_line(rule))


def print_gate_result(data: dict[str, Any], *, verbose: bool = False) -> None:
    console = out()
    rules, failed = data["rules"], [r for r in data["rules"] if not r["passed"]]
    head = Text(f"gate for run {data['run_id']}: ", style="bold")
    if not rules:
        head.append("no thresholds configured", style="yellow")
    elif failed:
        head.append(f"FAILED, {len(failed)} of {len(rules)} rules", style="bold red")
    else:
        head.append(f"passed, all {len(rules)} rules", style="bold green")
    console.print(head)
    for rule in rules if verbose else failed:
        console.print("  ", gate_line(rule))
    for message in data["notes"]:
        note(f"note: {message}")


def baselines_table(rows: list[dict[str, Any]]) -> Table:
    table = Table()
    for name in ("name", "run", "label", "suite", "status", "pass rate (passed/n)", "pinned"):
        table.add_column(name, no_wrap=True)
    for r in rows:
        table.add_row(
            r["name"],
            r["run_id"],
            r["label"] or "",
            r["suite"] or "",
            r["status"] or "",
            f"{pct(r['pass_rate'])} ({r['n_passed']}/{r['n']})" if r["n"] else "–",
            r["set_at"].strftime("%Y-%m-%d %H:%M") if r.get("set_at") else "",
        )
    return table


def arrow_table(table: Any) -> Table:
    """Any Arrow table as a rich table (``evalwh sql``)."""
    view = Table()
    for name in table.column_names:
        view.add_column(name, no_wrap=False, overflow="fold")
    for row in table.to_pylist():
        view.add_row(*("NULL" if v is None else str(v) for v in row.values()))
    return view


def _limited(batches: Iterator[Any], limit: int | None) -> Iterator[Any]:
    """At most ``limit`` rows of ``batches``; raises :class:`_MoreRows` when more were left."""
    seen = 0
    for batch in batches:
        if limit is not None and seen >= limit:
            if batch.num_rows:
                raise _MoreRows
            continue
        if limit is not None and seen + batch.num_rows > limit:
            yield batch.slice(0, limit - seen)
            seen = limit
            raise _MoreRows
        seen += batch.num_rows
        yield batch


class _MoreRows(Exception):
    """The limit was reached with rows left over."""


def write_sql_result(schema: Any, batches: Iterator[Any], kind: str, limit: int | None) -> bool:
    """Write ``evalwh sql`` rows as they arrive (table, csv or json); return whether rows
    past ``limit`` were left out. Only one batch (10,000 rows) is held at a time."""
    import json

    import pyarrow as pa

    from evalwh.cli.state import json_default
    from evalwh.reports.textsafe import csv_safe_table, json_safe

    rows = _limited(batches, limit)
    truncated = False
    if kind == "json":
        sys.stdout.write('{\n  "columns": ' + json.dumps(schema.names, ensure_ascii=False))
        sys.stdout.write(',\n  "rows": [')
        first = True
        try:
            for batch in rows:
                for row in batch.to_pylist():
                    text = json.dumps(row, default=json_default, ensure_ascii=False)
                    sys.stdout.write(("\n    " if first else ",\n    ") + json_safe(text))
                    first = False
        except _MoreRows:
            truncated = True
        sys.stdout.write(
            ("\n  ]" if not first else "]") + f',\n  "truncated": {json.dumps(truncated)}\n}}\n'
        )
        return truncated
    if kind == "csv":
        import io

        import pyarrow.csv as pacsv

        header = True
        try:
            for batch in rows:
                sink = io.BytesIO()
                table = csv_safe_table(pa.Table.from_batches([batch]), keep_formulas=True)
                pacsv.write_csv(table, sink, pacsv.WriteOptions(include_header=header))
                sys.stdout.write(sink.getvalue().decode("utf-8"))
                header = False
        except _MoreRows:
            truncated = True
        if header:  # no rows: the header alone
            sink = io.BytesIO()
            pacsv.write_csv(schema.empty_table(), sink)
            sys.stdout.write(sink.getvalue().decode("utf-8"))
        return truncated
    printed = False
    try:
        for batch in rows:
            out().print(arrow_table(pa.Table.from_batches([batch])))
            printed = True
    except _MoreRows:
        truncated = True
    if not printed:
        out().print(arrow_table(schema.empty_table()))
    return truncated
