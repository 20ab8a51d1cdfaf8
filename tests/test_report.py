"""The HTML pages without a browser: what they contain, that every number is the CLI's,
that hostile text is inert markup-wise, and the decision log and label import commands."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalwh import api
from evalwh.reports import fmt
from tests.conftest import ROOT, run_cli
from tests.reports import BREAKOUT, IMG, RATIONALE, SCRIPT, pairwise_copy

DATA = re.compile(r'<script type="application/json" id="evalwh-data">(.*?)</script>', re.S)
SCRIPT_TAG = re.compile(r"<script>(.*?)</script>", re.S)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A run of the pairwise example with script-bearing text planted in case q03."""
    root = tmp_path_factory.mktemp("hostile")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(root))
        mp.setenv("EVALWH_CONFIG_DIR", str(root / "config"))
        config = pairwise_copy(root, hostile=True)
        result = api.run_eval(config, output_dir=root / ".evalwh", html=root / "report.html")
    view = api.open_warehouse(root / ".evalwh" / "warehouse.duckdb")
    return {
        "config": config,
        "run_id": result.run_id,
        "view": view,
        "page": Path(result.report or "").read_text(encoding="utf-8"),
        "root": root,
    }


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
    assert "<link" not in page and "@import" not in page and "url(" not in page


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
    for row in view.query("criteria", run_id=run_id).to_pylist():
        assert fmt.rate(row) in page
    judging = view.judging(run_id)
    c = judging["comparisons"][0]
    assert f"kappa {c['kappa']:.2f} ({c['kappa_band']}) on {c['n_labels']} label(s)" in page
    assert (
        f"{fmt.pct(c['win_rate'])} [{fmt.pct(c['win_rate_lo'])}–{fmt.pct(c['win_rate_hi'])}]"
        in page
    )
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
    assert entry in hostile["page"].replace("&lt;", "<")  # the page carries the same entry
    log = hostile["root"] / "DECISIONS.md"
    log.write_text("# Decisions\n", encoding="utf-8")
    for _ in range(2):
        done = run_cli(
            "-o", str(hostile["root"] / ".evalwh"), "decide", run_id, "--append", str(log)
        )
        assert done.returncode == 0, done.stderr
    assert log.read_text(encoding="utf-8") == "# Decisions\n\n" + entry + "\n" + entry


def test_labels_import_changes_the_stored_calibration(hostile: dict[str, Any]) -> None:
    view, run_id = hostile["view"], hostile["run_id"]
    before = view.judging(run_id)["comparisons"][0]
    stored = {
        lb["case"]: lb["prefer"] for lb in yaml.safe_load(hostile["config"].read_text())["labels"]
    }
    flipped = {"A": "B", "B": "A", "tie": "B"}
    entries = [
        {"case": c, "comparison": "large-vs-small", "prefer": flipped[stored[c]]}
        for c in ("q01", "q02", "q03")
    ]
    file = hostile["root"] / "labels.yaml"
    file.write_text(yaml.safe_dump({"labels": entries}), encoding="utf-8")
    result = view.import_labels(file, run_id)
    assert result == {"run_id": run_id, "file": str(file), "imported": 3, "replaced": 3}
    after = view.judging(run_id)["comparisons"][0]
    assert after["n_labels"] == before["n_labels"]
    assert after["agreement"] < before["agreement"]
    bad = hostile["root"] / "bad.yaml"
    bad.write_text("labels:\n  - {case: nope, prefer: A}\n  - {case: q01, prefer: maybe}\n")
    done = run_cli("-o", str(hostile["root"] / ".evalwh"), "labels", "import", str(bad), run_id)
    assert done.returncode == 2
    assert "bad.yaml" in done.stderr and "labels[1]" in done.stderr and "prefer" in done.stderr


def test_labels_import_stores_pointwise_labels_that_calibration_counts(
    hostile: dict[str, Any],
) -> None:
    """A downloaded pointwise labels file (one label per case x criterion) moves the stored
    pointwise calibration from no labels to exactly its own agreement; a second import of
    the same keys replaces, and a bad entry exits 2 naming the place and the fix."""
    view, run_id, root = hostile["view"], hostile["run_id"], hostile["root"]
    assert view.judging(run_id)["pointwise"] == []  # the example has no pointwise labels
    items = {i["case_id"]: i for i in view.query("point_list", run_id=run_id).to_pylist()}
    assert len(items) == 24 and {i["criterion"] for i in items.values()} == {"judged"}
    assert all(len(i["answers"]) == 2 for i in items.values())  # small and large, repeat 0
    mine = {"q01": "pass", "q02": "fail", "q03": "fail"}
    file = root / "point-labels.yaml"
    entries = [{"case": c, "criterion": "judged", "label": x} for c, x in mine.items()]
    file.write_text(yaml.safe_dump({"labels": entries}), encoding="utf-8")
    assert view.import_labels(file, run_id)["imported"] == 3
    (row,) = view.judging(run_id)["pointwise"]
    agree = sum(items[c]["judge_passed"] == (x == "pass") for c, x in mine.items())
    assert (row["criterion"], row["n_labels"]) == ("judged", 3)
    assert row["agreement"] == pytest.approx(agree / 3)
    assert view.import_labels(file, run_id)["replaced"] == 3  # same keys: replaced, not added
    assert view.judging(run_id)["pointwise"][0]["n_labels"] == 3
    stored = view.query("point_list", run_id=run_id).to_pylist()
    assert {i["case_id"]: json.loads(i["human"]) for i in stored if i["human"]} == mine
    for text, says in (
        ("labels:\n  - {case: q01, criterion: judged, label: passs}\n", "did you mean 'pass'"),
        ("labels:\n  - {case: q01, criterion: judge, label: pass}\n", "did you mean 'judged'"),
        ("labels:\n  - {case: q01, label: 2}\n", "outside the judge's scale 0..1"),
        ("labels:\n  - {case: nope, label: pass}\n", "unknown case 'nope'"),
    ):
        bad = root / "bad-point.yaml"
        bad.write_text(text, encoding="utf-8")
        done = run_cli("-o", str(root / ".evalwh"), "labels", "import", str(bad), run_id)
        assert done.returncode == 2, text
        assert "bad-point.yaml" in done.stderr and "labels[0]" in done.stderr, done.stderr
        assert says in done.stderr, done.stderr
    mine_after = view.query("point_list", run_id=run_id).to_pylist()
    assert sum(1 for i in mine_after if i["human"]) == 3  # nothing stored by a bad file


def test_compare_page_pairs_as_compare_does(hostile: dict[str, Any]) -> None:
    view, run_id = hostile["view"], hostile["run_id"]
    cmp = view.compare(run_id, run_id)
    page = view.compare_report(cmp)
    assert isinstance(page, str)
    assert fmt.delta(cmp.overall, "pass_rate") in page
    assert "both references name the same run" in page and "No case moved." in page
    assert f"- Versus run {run_id}: pass rate {fmt.delta(cmp.overall, 'pass_rate')}" in page
    assert SCRIPT not in page
    assert "UNCALIBRATED judges in these runs" in page
    judged = re.search(r"<td>judged <span class=\"badge uncal\"", page)
    assert judged, "the judged criterion's delta is not flagged"


def test_the_mcp_tool_writes_the_page_inside_the_root_only(hostile: dict[str, Any]) -> None:
    from evalwh.errors import UsageError
    from evalwh.mcp import tools
    from evalwh.mcp.agent import Agent

    root = hostile["root"]
    agent = Agent(root=root, output_dir=root / ".evalwh", cwd=root)
    result = tools.write_report(agent, hostile["run_id"])
    page = Path(result["path"])
    assert page == root / ".evalwh" / "reports" / f"{hostile['run_id']}.html"
    assert result["bytes"] == page.stat().st_size and "evalwh-data" in page.read_text()
    other = tools.write_report(agent, "latest", against=hostile["run_id"], path="cmp.html")
    assert other["path"] == str(root / "cmp.html") and "compare" in (root / "cmp.html").read_text()
    for bad in ("../outside.html", str(root.parent / "x.html"), "page.txt"):
        with pytest.raises(UsageError):
            tools.write_report(agent, hostile["run_id"], path=bad)
    assert not (root.parent / "outside.html").exists()


def test_the_latency_histogram_counts_every_answer_once(hostile: dict[str, Any]) -> None:
    view, run_id = hostile["view"], hostile["run_id"]
    rows = view.query("latency_histogram", run_id=run_id, bins=20).to_pylist()
    assert rows and all(0 <= r["bin"] < 20 and r["lo_ms"] < r["hi_ms"] for r in rows)
    for cell in view.query("summary", run_id=run_id).to_pylist():
        key = (cell["variant"], cell["model"])
        counted = sum(r["n"] for r in rows if (r["variant"], r["model"]) == key)
        assert counted == cell["n"] - cell["n_errors"]


def test_pair_list_has_one_pair_per_case_with_both_answers_and_the_label(
    hostile: dict[str, Any],
) -> None:
    view, run_id = hostile["view"], hostile["run_id"]
    pairs = view.query("pair_list", run_id=run_id).to_pylist()
    summary = view.judging(run_id)["comparisons"][0]
    assert len(pairs) == summary["n_pairs"] == len({p["case_id"] for p in pairs})
    q03 = next(p for p in pairs if p["case_id"] == "q03")
    assert SCRIPT in q03["baseline_output"] and q03["candidate_output"] == "Canberra"
    assert q03["human"] in ("baseline", "candidate", "tie")
    assert sum(p["human"] is not None for p in pairs) == summary["n_labels"]


def test_the_python_recipe_of_the_reports_doc_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (ROOT / "docs" / "reports.md").read_text(encoding="utf-8")
    recipes = re.findall(r"^```python\n(.*?)^```", text, re.M | re.S)
    assert recipes
    work = tmp_path / "recipe"
    pairwise_copy(work / "examples")
    monkeypatch.chdir(work)
    for code in recipes:
        exec(compile(code, "docs/reports.md", "exec"), {})
    for page in ("report.html", "latest.html", "compare.html"):
        assert "Content-Security-Policy" in (work / page).read_text(encoding="utf-8")


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


def test_html_with_dry_run_is_refused(hostile: dict[str, Any]) -> None:
    done = run_cli("run", str(hostile["config"]), "--dry-run", "--html", "x.html")
    assert done.returncode == 2 and "--html writes the page of a run" in done.stderr
    assert not Path("x.html").exists()


def test_pointwise_labels_of_a_numeric_judge_take_its_scale_and_no_more(
    tmp_path: Path,
) -> None:
    """A 1..5 judge: its criterion's items offer 1..5 in the page, and the loader accepts a
    label at exactly each end of the scale and refuses one just outside it."""
    from evalwh.config.loader import load_config
    from evalwh.errors import ConfigError
    from evalwh.reports.labels import judge_scales

    config = pairwise_copy(tmp_path)
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["judges"][0]["scale"] = {"min": 1, "max": 5}
    assert judge_scales(data, {"judged"}) == {"judged": (1.0, 5.0)}
    assert judge_scales(
        {"judges": [{"id": "j"}], "scorecard": [{"name": "c", "judge": "j"}]}, {"c"}
    ) == {
        "c": (0.0, 1.0)  # a judge without a scale grades pass/fail
    }
    for value, ok in ((1, True), (5, True), (0.9, False), (5.1, False)):
        data["labels"] = [{"case": "q01", "criterion": "judged", "label": value}]
        config.write_text(yaml.safe_dump(data), encoding="utf-8")
        if ok:
            assert load_config(config).point_labels[0].label == value
        else:
            with pytest.raises(ConfigError, match=r"outside the judge's scale 1\.\.5"):
                load_config(config)
