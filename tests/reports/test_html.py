"""The HTML report pages (evalwh/reports/html.py) without a browser: what they contain, that
every number is the queries', that hostile text is inert markup-wise, and the decision log
entry. The ``hostile`` fixture (tests/conftest.py) is a run of the pairwise example with
script-bearing text planted in case q03."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

import evalwh
from evalwh.reports import fmt
from tests.builders import ordinal_config
from tests.conftest import run_cli
from tests.report_runs import BREAKOUT, IMG, RATIONALE, SCRIPT

DATA = re.compile(r'<script type="application/json" id="evalwh-data">(.*?)</script>', re.S)


SCRIPT_TAG = re.compile(r"<script>(.*?)</script>", re.S)


def embedded(page: str) -> dict[str, Any]:
    match = DATA.search(page)
    assert match, "no embedded data"
    return json.loads(match.group(1))  # type: ignore[no-any-return]


def test_the_page_allows_no_request_and_only_its_own_script(hostile: dict[str, Any]) -> None:
    page = hostile["page"]
    found = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert found
    csp = html.unescape(found.group(1))
    assert "default-src 'none'" in csp and "img-src data:" in csp
    scripts = SCRIPT_TAG.findall(page)
    assert len(scripts) == 1  # the one executable script (the data block is JSON)
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode("utf-8")).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp
    assert "unsafe-inline" not in csp.split("script-src")[1]
    assert not re.search(r"""(src|href|action)\s*=\s*["']?\s*(https?:|//)""", page, re.I)
    assert "@import" not in page and "url(" not in page
    # one link: the page's icon, inline, so no browser asks for /favicon.ico
    from evalwh.reports.html import favicon

    assert re.findall(r"<link[^>]*>", page) == [f'<link rel="icon" href="{favicon()}">']
    assert favicon().startswith("data:image/svg+xml,%3Csvg")


def test_planted_markup_is_escaped_everywhere(hostile: dict[str, Any]) -> None:
    """An answer, a question and a metadata value carrying <script>, <img onerror> and a
    </script> break-out appear only escaped in the HTML and as inert data in the JSON."""
    page = hostile["page"]
    for raw in (SCRIPT, IMG, "<img src=x", "window.pwned=3</script>", BREAKOUT, RATIONALE):
        assert raw not in page
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in page  # the no-script case table
    blob = DATA.search(page)
    assert blob and "</" not in blob.group(1) and "<" not in blob.group(1)
    data = embedded(page)
    q03 = [r for r in data["rows"] if r["c"] == "q03" and r["m"] == "small"]
    assert q03 and SCRIPT in q03[0]["o"] and q03[0]["meta"]["note"] == BREAKOUT
    assert any(IMG in text for text in data["prompts"].values())
    assert RATIONALE in {c.get("rat") for c in q03[0]["crit"]}
    assert any(RATIONALE in (p["rationale_ab"], p["rationale_ba"]) for p in data["pairs"])
    # the "Label answers" tab's items: the same answer and rationale, as inert data
    (item,) = [p for p in data["points"] if p["case"] == "q03"]
    assert any(SCRIPT in (a.get("o") or "") and IMG in a["o"] for a in item["answers"])
    assert RATIONALE in {a.get("rat") for a in item["answers"]}
    assert 'id="label-points"' in page and 'id="point-labels-yaml"' in page


def test_every_number_is_the_one_the_queries_give(hostile: dict[str, Any]) -> None:
    view, run_id, page = hostile["view"], hostile["run_id"], hostile["page"]
    totals = view.query("run_totals", run_id=run_id).to_pylist()[0]
    assert f"pass {fmt.rate(totals)}" in page
    for row in view.query("summary", run_id=run_id).to_pylist():
        assert fmt.rate(row) in page
    assert ">queued p95</th>" in page  # beside p50/p95 latency
    assert all(r["q"] is None or r["q"] >= 0 for r in embedded(page)["rows"])
    assert any(r["q"] is not None for r in embedded(page)["rows"])
    for row in view.query("criteria", run_id=run_id).to_pylist():
        assert fmt.rate(row) in page
    judging = view.judging(run_id)
    c = judging["comparisons"][0]
    assert f"kappa {c['kappa']:.2f} ({c['kappa_band']}) on {c['n_labels']} label(s)" in page
    # the win rate (ties half), its interval, the sign test's p and the verdict in one text,
    # the cases won / tied / lost and the pairs' counts beside it
    assert f'<td class="n win-rate">{fmt.win_rate(c)}</td>' in page
    assert "p=" in fmt.win_rate(c) and c["verdict"] in fmt.win_rate(c)
    cases = f"{c['cases_won']} / {c['cases_tied']} / {c['cases_lost']} (n={c['n_cases']})"
    assert f'<td class="n">{cases}</td>' in page
    # below the floor: flagged in the banner, calibration, win rates and the criteria table
    assert page.count(">UNCALIBRATED</span>") >= 4
    assert "criterion:judged" in embedded(page)["flags"]
    assert "include the judged criteria judged" in page  # the scorecard's mean score mixes it


def test_export_html_and_the_api_give_the_same_page(hostile: dict[str, Any]) -> None:
    view, run_id = hostile["view"], hostile["run_id"]
    text = view.export(run_id, "html").text
    assert text == view.report(run_id)
    out = view.report(run_id, hostile["root"] / "again.html")
    assert isinstance(out, Path) and out.read_text(encoding="utf-8") == text
    done = run_cli(
        "-o", str(hostile["root"] / ".evalwh"), "export", run_id, "--format", "html", "--out",
        str(hostile["root"] / "cli.html"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (hostile["root"] / "cli.html").read_text(encoding="utf-8") == text


def test_a_big_run_is_cut_with_counts_saying_what_was_left_out(hostile: dict[str, Any]) -> None:
    from evalwh.reports.html import render_run

    page = render_run(hostile["view"].store, hostile["run_id"], max_rows=5)
    assert "48 case row(s); this page holds 5 of them" in page and "43 left out" in page
    rows = embedded(page)["rows"]
    assert len(rows) == 5 and not any(r["ok"] for r in rows)  # failures first


def test_decide_prints_and_appends_the_entry(hostile: dict[str, Any]) -> None:
    view, run_id = hostile["view"], hostile["run_id"]
    entry = view.decide(run_id)["text"]
    run = view.run(run_id)
    totals = view.query("run_totals", run_id=run_id).to_pylist()[0]
    assert entry.startswith(f"## {run['started_at'].date().isoformat()} · pairwise · run {run_id}")
    assert run["config_hash"] in entry and fmt.rate(totals) in entry
    assert "UNCALIBRATED" in entry and "\nDecision:\n" in entry and "\nBecause:\n" in entry
    c = view.judging(run_id)["comparisons"][0]
    assert f"win rate {fmt.win_rate(c)} ({fmt.win_counts(c)})" in entry
    assert entry in hostile["page"].replace("&lt;", "<")  # the page carries the same entry
    log = hostile["root"] / "DECISIONS.md"
    log.write_text("# Decisions\n", encoding="utf-8")
    for _ in range(2):
        done = run_cli(
            "-o", str(hostile["root"] / ".evalwh"), "decide", run_id, "--append", str(log)
        )
        assert done.returncode == 0, done.stderr
    assert log.read_text(encoding="utf-8") == "# Decisions\n\n" + entry + "\n" + entry


def test_compare_page_pairs_as_compare_does(hostile: dict[str, Any]) -> None:
    view, run_id = hostile["view"], hostile["run_id"]
    cmp = view.compare(run_id, run_id)
    page = view.compare_report(cmp)
    assert isinstance(page, str)
    assert fmt.delta(cmp.overall, "pass_rate") in page
    assert "both references name the same run" in page and "No case moved." in page
    assert f"- Versus run {run_id}: pass rate {fmt.delta(cmp.overall, 'pass_rate')}" in page
    assert SCRIPT not in page
    assert 'id="tools"' not in page  # neither run has a tool loop
    assert "Flagged judge numbers in these runs" in page
    judged = re.search(r"<td>judged <span class=\"badge uncal\"", page)
    assert judged, "the judged criterion's delta is not flagged"


def test_html_with_dry_run_is_refused(hostile: dict[str, Any]) -> None:
    done = run_cli("run", str(hostile["config"]), "--dry-run", "--html", "x.html")
    assert done.returncode == 2 and "--html writes the page of a run" in done.stderr
    assert not Path("x.html").exists()


def test_a_missing_chromium_skips_the_browser_tests_unless_ci_requires_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.browser import require_chromium

    assert require_chromium("/usr/bin/chromium") == "/usr/bin/chromium"
    with pytest.raises(pytest.skip.Exception, match="no system chromium"):
        require_chromium(None)
    monkeypatch.setenv("EVALWH_REQUIRE_SYSTEM_PARTS", "1")
    with pytest.raises(pytest.fail.Exception, match="EVALWH_REQUIRE_SYSTEM_PARTS=1 requires it"):
        require_chromium(None)


def test_the_report_calibrates_a_criterion_labelled_with_scores(tmp_path: Path) -> None:
    """The bug it names: a criterion with numeric labels only was flagged "no human labels"
    on the run page (its pass/fail n is 0); its weighted kappa and n_numeric decide instead."""
    from evalwh.reports.html import render_run, run_flags
    from evalwh.warehouse.store import Warehouse

    def flags(extra: str, name: str) -> tuple[list[str] | None, str]:
        cfg = ordinal_config(tmp_path / name, extra)
        run = evalwh.run_eval(cfg, output_dir=tmp_path / name / "out")
        store = Warehouse(tmp_path / name / "out" / "warehouse.duckdb")
        return run_flags(store, run.run_id).get("criterion:judged"), render_run(store, run.run_id)

    few, page = flags("", "few")  # 6 numeric labels, weighted kappa 0.61; floor 0.6 on 20
    assert few == ["LOW-N: 6 label(s), fewer than 20"]
    assert (
        "weighted kappa 0.61, exact 50.0%, within 1 66.7% (n=6, numeric labels, quadratic weights)"
        in page
    )
    enough, _ = flags("calibration: {min_labels: 6}\n", "enough")  # exactly at the floor
    assert enough is None
    strict, _ = flags("calibration: {min_labels: 6, min_kappa: 0.62}\n", "strict")
    assert strict == ["UNCALIBRATED: weighted kappa 0.61 below the floor 0.62"]


# -- tool use on the compare page ----------------------------------------------------------
def rows_of(page: str, table: str) -> list[list[str]]:
    """Each row of the page's ``<table class="{table}">`` as its cells' text (tags dropped,
    entities unescaped), the header row first."""
    found = re.search(rf'<table class="{table}">(.*?)</table>', page, re.S)
    assert found, f"no table.{table}"
    return [
        [
            html.unescape(re.sub(r"<[^>]+>", "", cell)).strip()
            for cell in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)
        ]
        for row in re.findall(r"<tr>(.*?)</tr>", found.group(1), re.S)
    ]


def test_the_compare_page_shows_tool_use_per_tool_and_the_cells_that_changed(
    tool_compare: dict[str, Any],
) -> None:
    """Run B's case warmer called a made-up tool instead of get_weather the second time; the
    page's tables say so with sql/compare_tools.sql's numbers. Attack: the tool's name is a
    <script> (a model's text, as an unknown tool's name is): it renders as text."""
    from tests.report_runs import TOOL_NAME

    view = tool_compare["view"]
    page = view.compare_report(view.compare(tool_compare["a"], tool_compare["b"]))
    assert isinstance(page, str)
    # A: paris 2 calls (1 off the schema), warmer 2, looping 2 (both "unknown city")
    cell = "agent × scripted-agent"
    assert rows_of(page, "tools")[1:] == [
        [cell, TOOL_NAME, "0 → 1", "0 → 1", "0 → 1", "– → 100.0%", "–"],
        [cell, "get_weather", "6 → 5", "3 → 3", "1 → 1", "50.0% → 60.0%", "+10.0 pts"],
    ]
    assert rows_of(page, "tool-cells")[1:] == [
        [
            "warmer",
            cell,
            "get_weather, get_weather",
            f"get_weather, {TOOL_NAME}",
            "2 → 2",
            "0 → 1",
            "0 → 1",
            "pass → pass",
        ]
    ]
    assert "<caption>Tool calls per variant × model × tool, run A → run B</caption>" in page
    assert TOOL_NAME not in page and "window.pwned=7" in page
    assert html.escape(TOOL_NAME, quote=False) in page
    assert 'href="/cases/' not in page  # a file report has no case pages to link


def test_the_compare_pages_tool_use_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A model can make up tool names without end: the page shows a bounded number of tools,
    of names in a sequence, and of characters in a name, and says how many more there are."""
    from evalwh.reports import html as report

    monkeypatch.setattr(report, "MAX_TOOL_ROWS", 1)
    monkeypatch.setattr(report, "MAX_SEQUENCE", 1)
    monkeypatch.setattr(report, "MAX_TOOL_NAME", 8)
    counts = dict.fromkeys(("n_calls_a", "n_calls_b", "n_errors_a", "n_errors_b"), 1) | {
        "n_invalid_args_a": 0,
        "n_invalid_args_b": 0,
        "variant": "v",
        "model": "m",
    }
    rates = {"error_rate_a": 1.0, "error_rate_b": 1.0, "error_rate_delta": 0.0}
    data: dict[str, Any] = {
        "tools": [{**counts, **rates, "tool": name} for name in ("<script>x", "search")],
        "tool_cells": [
            {
                **counts,
                "case_id": "c1",
                "repeat": 0,
                "passed_a": True,
                "passed_b": None,
                "tools_a": ["get_weather", "search"],
                "tools_b": [],
            }
        ],
    }
    report.tool_use_shown(data)
    page = report.render("compare_tools.html.j2", d=data)
    assert [r[1] for r in rows_of(page, "tools")[1:]] == ["<script>…"]
    assert "(1 shown; 1 more in <code>evalwh compare --json</code>)" in page
    (cell,) = rows_of(page, "tool-cells")[1:]
    assert cell[2:4] == ["get_weat… and 1 more", "(none)"]
    assert cell[-1] == "pass → –"
    data["tool_cells"] = []
    assert "No cell's tool use changed." in report.render("compare_tools.html.j2", d=data)
