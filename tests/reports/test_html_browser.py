"""The HTML pages in a real browser (system chromium through Playwright): they open from
file:// with no console error and no request, the tabs, filters, drill-down and blind
labelling work by clicking and by the keyboard alone, axe-core finds no critical, serious
or moderate violation in any state of any page, planted script never runs, and the compare
page shows a planted regression. Screenshots land in the test's temp folder, or in
SCREENSHOTS_DIR (docs/images: docs/testing.md has the command)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from playwright.sync_api import expect

from evalwh.config.loader import load_config
from tests.browser import Opened, axe_violations, browser, open_page, shot
from tests.conftest import ROOT, run_cli
from tests.report_runs import (
    RATIONALE,
    TOOL_ERROR,
    TOOL_NAME,
    TOOL_RESULT,
    pairwise_copy,
    regressed,
)

__all__ = ["browser"]  # the module-scoped fixture, imported for pytest

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def pages(
    tmp_path_factory: pytest.TempPathFactory,
    tool_runs: dict[str, Any],
    tool_compare: dict[str, Any],
) -> dict[str, Path]:
    """The run page of the pairwise example written by the CLI as a user would, the run page
    of a run with planted hostile text, the compare page of a regressed rerun, the run page
    of the tools example with hostile text in its tool's result and error (the session's
    ``tool_runs``, set up before this module's browser: it runs in-process), and the compare
    page of that run and a copy that called a tool named with a script (``tool_compare``)."""
    root = tmp_path_factory.mktemp("pages")
    view = tool_compare["view"]
    view.compare_report(tool_compare["a"], tool_compare["b"], out=root / "tools-compare.html")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(root))
        mp.setenv("EVALWH_CONFIG_DIR", str(root / "config"))
        plain = pairwise_copy(root / "plain")
        done = run_cli("run", str(plain), "--html", "report.html", cwd=plain.parent)
        assert done.returncode == 0, done.stderr
        hostile = pairwise_copy(root / "hostile", hostile=True)
        # (in child processes: Playwright's sync API holds this thread's event loop)
        for args in (
            ("run", str(hostile), "--label", "before", "--html", str(root / "hostile.html")),
            ("run", str(regressed(hostile)), "--label", "after"),
            (
                "-c",
                str(hostile),
                "compare",
                "before",
                "after",
                "--html",
                str(root / "compare.html"),
            ),
        ):
            done = run_cli(*args, cwd=hostile.parent)
            assert done.returncode in (0, 1), done.stderr
    return {
        "run": plain.parent / "report.html",
        "config": plain,
        "hostile": root / "hostile.html",
        "compare": root / "compare.html",
        "tools": tool_runs["root"] / "report.html",
        "tools-compare": root / "tools-compare.html",
    }


@pytest.fixture(scope="module")
def vision(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """examples/vision (an image per case) run twice, the second time answering red-square
    wrongly: its run page and the compare page of the two runs."""
    import shutil

    root = tmp_path_factory.mktemp("vision")
    copy = root / "vision"
    shutil.copytree(ROOT / "examples" / "vision", copy, ignore=shutil.ignore_patterns(".evalwh"))
    config = copy / "eval.yaml"
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["models"][0]["mock"]["rules"].append(
        {"when": {"case": "red-square", "variant": "one-word"}, "reply": "Blue."}
    )
    worse = copy / "worse.yaml"
    worse.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(root))
        mp.setenv("EVALWH_CONFIG_DIR", str(root / "config"))
        for args in (
            ("run", str(config), "--label", "before", "--html", str(root / "run.html")),
            ("run", str(worse), "--label", "after"),
            ("-c", str(config), "compare", "before", "after", "--html", str(root / "cmp.html")),
        ):
            done = run_cli(*args, cwd=copy)
            assert done.returncode in (0, 1), done.stderr
    return {"run": root / "run.html", "compare": root / "cmp.html", "images": copy / "images"}


def calibrate(config: Path, output_dir: Path) -> dict[str, Any]:
    done = run_cli("--json", "-o", str(output_dir), "calibrate", str(config), "--judge", "fair")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def copy_and_download(page: Any, prefix: str, tmp_path: Path) -> tuple[str, Path]:
    """The copied labels YAML and the downloaded file, which must hold the same text."""
    page.click(f"#copy-{prefix}labels")
    text: str = page.input_value(f"#{prefix}labels-yaml")
    with page.expect_download() as download:
        page.click(f"#download-{prefix}labels")
    downloaded = tmp_path / download.value.suggested_filename
    download.value.save_as(downloaded)
    assert downloaded.read_text(encoding="utf-8") == text
    return text, downloaded


DOCS_VIEWPORT = (1100, 820)  # the size of the screenshots in docs/reports.md


def clean(opened: Opened) -> None:
    assert opened.errors == [], opened.errors
    assert opened.foreign_requests == [], opened.foreign_requests


# -- accessibility: axe-core on every page in every state ----------------------------------
def _case_open(page: Any) -> None:
    page.locator("#case-list button.case-open").first.click()
    assert page.is_visible("#drill")


def _filtered(page: Any) -> None:
    page.select_option("#f-status", "fail")
    page.select_option("#f-cell", "plain × large")
    page.fill("#f-text", "q")


def _label_tab(page: Any) -> None:
    page.click("a[data-tab=label]")


def _pair_labelled_unblinded(page: Any) -> None:
    page.click("a[data-tab=label]")
    page.locator("#pairs .pair").first.locator("button[data-choice=A]").click()
    page.click("#unblind")
    page.locator("#pairs .pair details.verdict").first.click()


def _answers_tab(page: Any) -> None:
    page.click("a[data-tab=label-points]")
    page.locator("#points .answer input[data-choice=fail]").first.check()
    page.click("#point-unblind")


def _help_open(page: Any) -> None:
    page.keyboard.press("?")
    assert page.is_visible("#help")


RUN_STATES = {
    "report tab": lambda page: None,
    "a case open": _case_open,
    "cases filtered": _filtered,
    "label tab": _label_tab,
    "a pair labelled and unblinded": _pair_labelled_unblinded,
    "label answers tab, one labelled": _answers_tab,
    "shortcuts dialog open": _help_open,
}


@pytest.mark.parametrize("state", list(RUN_STATES))
def test_axe_finds_no_violation_on_the_run_page(
    browser: Any, pages: dict[str, Path], state: str
) -> None:
    opened = open_page(browser, pages["run"])
    RUN_STATES[state](opened.page)
    assert axe_violations(opened.page) == []
    clean(opened)


def test_axe_finds_no_violation_on_the_compare_page(browser: Any, pages: dict[str, Path]) -> None:
    opened = open_page(browser, pages["compare"])
    assert axe_violations(opened.page) == []
    clean(opened)
    # with tool use; attack: a tool's name (a model made it up) that is a <script>: shown as
    # text, run never
    opened = open_page(browser, pages["tools-compare"])
    page = opened.page
    assert TOOL_NAME in page.inner_text("table.tools") and TOOL_NAME in page.inner_text(
        "table.tool-cells"
    )
    assert page.locator("table.tools script, table.tool-cells script").count() == 0
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert axe_violations(page) == []
    clean(opened)


def test_the_pages_icon_is_inline_so_no_page_asks_for_favicon_ico(
    browser: Any, pages: dict[str, Path]
) -> None:
    for name in ("run", "compare"):
        opened = open_page(browser, pages[name])
        icon = opened.page.get_attribute("link[rel=icon]", "href") or ""
        assert icon.startswith("data:image/svg+xml,"), icon
        assert opened.requests == [opened.url]  # the page itself, nothing else
        clean(opened)


def _focused(page: Any) -> dict[str, Any]:
    return page.evaluate(  # type: ignore[no-any-return]
        """() => { const e = document.activeElement; return {
            tag: e.tagName, id: e.id, role: e.getAttribute('role'), cls: e.className,
            choice: e.getAttribute('data-choice'), text: e.textContent.trim().slice(0, 60),
            pair: (e.closest('.pair') || {}).dataset ? (e.closest('.pair') || {dataset: {}}).dataset.key : null,
        }; }"""
    )


def _tab_to(page: Any, wanted: Any, *, back: bool = False, limit: int = 80) -> dict[str, Any]:
    """Press Tab (Shift+Tab when ``back``) until the focused element is ``wanted``."""
    for _ in range(limit):
        page.keyboard.press("Shift+Tab" if back else "Tab")
        focused = _focused(page)
        if wanted(focused):
            return focused
    raise AssertionError(f"{limit} presses of Tab never reached it; last: {focused}")


def test_a_keyboard_only_walk_opens_a_case_and_labels_pairs(
    browser: Any, pages: dict[str, Path], tmp_path: Path
) -> None:
    """No mouse: Tab to the tabs, arrows between them, Tab to a case, Enter and Space open
    cases, Escape goes back, `?` shows the shortcuts, and pairs are labelled by keys."""
    opened = open_page(browser, pages["run"])
    page = opened.page
    first = _tab_to(page, lambda f: f["role"] == "tab")
    assert (
        first["id"] == "tab-report" and page.get_attribute("#tab-report", "aria-selected") == "true"
    )
    assert page.get_attribute("#tab-label", "tabindex") == "-1"  # roving: one tab stop
    page.keyboard.press("ArrowRight")
    assert _focused(page)["id"] == "tab-label" and page.is_visible("#label")
    assert not page.is_visible("#report")
    page.keyboard.press("End")
    assert _focused(page)["id"] == "tab-label-points" and page.is_visible("#label-points")
    page.keyboard.press("ArrowRight")  # wraps to the first
    assert _focused(page)["id"] == "tab-report" and page.is_visible("#report")
    page.keyboard.press("Home")
    assert page.get_attribute("#report", "aria-labelledby") == "tab-report"

    case = _tab_to(page, lambda f: "case-open" in f["cls"])
    assert case["text"] == page.locator("#case-list tr").first.locator("td").first.inner_text()
    page.keyboard.press("Enter")
    assert page.is_visible("#drill") and _focused(page)["id"] == "drill-title"
    assert f"case {case['text']}" in page.inner_text("#drill-title")
    assert page.locator("#drill pre.prompt").count() >= 1  # the question, in context
    button = page.locator("#case-list button.case-open").first
    assert button.get_attribute("aria-expanded") == "true"
    page.keyboard.press("Escape")  # back to the row that opened it
    assert "case-open" in _focused(page)["cls"] and _focused(page)["text"] == case["text"]
    second = _tab_to(page, lambda f: "case-open" in f["cls"])
    page.keyboard.press(" ")
    assert f"case {second['text']}" in page.inner_text("#drill-title")
    assert button.get_attribute("aria-expanded") == "false"

    page.keyboard.press("?")
    assert page.is_visible("#help") and "Keyboard shortcuts" in page.inner_text("#help")
    assert axe_violations(page) == []
    page.keyboard.press("Escape")
    assert not page.is_visible("#help")

    _tab_to(page, lambda f: f["role"] == "tab", back=True, limit=200)
    page.keyboard.press("Home")
    page.keyboard.press("ArrowRight")
    assert page.is_visible("#label") and _focused(page)["id"] == "tab-label"
    page.keyboard.press("a")  # the first pair, by its shortcut
    pairs = page.locator("#pairs .pair")
    key = pairs.nth(1).get_attribute("data-key")
    assert pairs.nth(1).get_attribute("aria-current") == "true"
    chosen = _tab_to(page, lambda f: f["choice"] == "B" and f["pair"] == key)
    assert chosen["text"] == "Prefer B"
    page.keyboard.press("Enter")  # the second pair, by Tab and Enter
    assert page.inner_text("#label-progress") == "2 / 24"
    assert pairs.nth(1).locator("button[data-choice=B]").get_attribute("aria-pressed") == "true"
    stored = page.evaluate("() => JSON.stringify(localStorage)")
    assert stored.count("large-vs-small") == 2  # both labels recorded
    entries = yaml.safe_load(page.input_value("#labels-yaml"))["labels"]
    assert [e["case"] for e in entries] == [
        pairs.nth(i).get_attribute("data-key").split("\u0000")[1] for i in (0, 1)
    ]
    assert entries[1]["prefer"] in ("A", "B") and entries[0]["prefer"] in ("A", "B")
    clean(opened)


def test_run_page_opens_offline_and_the_tabs_filters_and_drilldown_work(
    browser: Any, pages: dict[str, Path], tmp_path: Path
) -> None:
    opened = open_page(browser, pages["run"], viewport=DOCS_VIEWPORT)
    page = opened.page
    assert page.title().startswith("evalwh · pairwise · run ")
    assert page.is_visible("#scorecard") and not page.is_visible("#label")
    shot(page, "report-run.png", tmp_path)
    rows = page.locator("#case-list tr")
    assert "48 row(s) match" in page.inner_text("#page-info")
    assert rows.first.locator("td").nth(2).inner_text() == "fail"  # failures first
    page.select_option("#f-status", "pass")
    statuses = {rows.nth(i).locator("td").nth(2).inner_text() for i in range(rows.count())}
    assert statuses == {"pass"} and "37 row(s) match" in page.inner_text("#page-info")
    page.select_option("#f-status", "")
    page.select_option("#f-cell", "plain × small")
    page.select_option("#f-slice", "difficulty=hard")
    assert "13 row(s) match" in page.inner_text("#page-info")  # 13 hard cases
    page.select_option("#f-cell", "")
    page.select_option("#f-slice", "")
    page.fill("#f-text", "m03")
    assert rows.count() == 2
    rows.first.click()
    drill = page.locator("#drill")
    assert drill.is_visible()
    assert drill.locator(".side").count() == 2  # both models' answers side by side
    assert "What is 17 times 23?" in drill.locator("pre.prompt").inner_text()
    assert "rationale (referee): compared with the reference" in drill.inner_text()
    assert "UNCALIBRATED" in drill.inner_text()  # the judged criterion, below its floor
    page.locator("#drill-title").scroll_into_view_if_needed()
    page.evaluate(
        "window.scrollBy(0, document.getElementById('drill').getBoundingClientRect().top - 60)"
    )
    shot(page, "report-cases.png", tmp_path)
    rule = page.inner_text("table.pairwise + p.verdict-rule")  # how the win rate's verdict is made
    assert "exact two-sided sign test" in rule and "better when p < 0.05 and more cases" in rule
    page.screenshot(path=str(tmp_path / "run-page.png"), full_page=True)
    page.click("a[data-tab=label]")
    assert page.is_visible("#label") and not page.is_visible("#scorecard")
    assert page.inner_text("#label-progress") == "0 / 24"
    page.emulate_media(media="print")  # paper gets the report, not the labelling tab
    assert page.is_visible("#scorecard") and not page.is_visible("#label")
    assert not page.is_visible("nav.tabs") and not page.is_visible("#filters")
    clean(opened)


def test_labelling_three_pairs_gives_yaml_the_loader_takes_and_calibrate_uses(
    browser: Any, pages: dict[str, Path], tmp_path: Path
) -> None:
    opened = open_page(browser, pages["run"], viewport=DOCS_VIEWPORT)
    page = opened.page
    page.click("a[data-tab=label]")
    cards = page.locator("#pairs .pair")
    assert not cards.first.locator("details.verdict").is_visible()  # collapsed until labelled
    assert cards.first.locator(".side-name").first.inner_text() == ""  # blind
    cards.nth(0).locator("button[data-choice=A]").click()
    assert cards.first.locator("details.verdict").is_visible()
    cards.first.locator("details.verdict").click()  # the judge's verdict, unfolded
    page.evaluate("window.scrollTo(0, document.querySelector('#pairs .pair').offsetTop - 40)")
    shot(page, "report-label.png", tmp_path)
    page.keyboard.press("b")  # the second pair is current now
    page.keyboard.press("t")
    assert page.inner_text("#label-progress") == "3 / 24"
    page.reload()  # local storage keeps the labels
    page.click("a[data-tab=label]")
    assert page.inner_text("#label-progress") == "3 / 24"
    page.click("#unblind")  # a deliberate click shows which side was which
    shown = []
    for i, choice in enumerate(("A", "B", None)):
        names = cards.nth(i).locator(".side-name")
        side = names.nth(0 if choice == "A" else 1).inner_text() if choice else "tie"
        shown.append("tie" if side == "tie" else ("A" if "small" in side else "B"))
    text, downloaded = copy_and_download(page, "", tmp_path)
    page.screenshot(path=str(tmp_path / "label-tab.png"), full_page=True)
    assert page.inner_text("#pair-page") == "pairs 1–20 of 24" and cards.count() == 20
    page.click("#pair-next")  # a page of pairs at a time, for long lists
    assert page.inner_text("#pair-page") == "pairs 21–24 of 24" and cards.count() == 4
    page.keyboard.press("k")  # back to pair 20, on the first page
    assert page.inner_text("#pair-page") == "pairs 1–20 of 24"
    assert "current" in (cards.nth(19).get_attribute("class") or "")
    clean(opened)

    entries = yaml.safe_load(text)["labels"]
    assert [e["prefer"] for e in entries] == shown  # A = baseline (small), B = candidate
    config = pages["config"]
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["labels"] = entries
    mine = config.with_name("mine.yaml")
    mine.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    loaded = load_config(mine)
    assert len(loaded.labels) == 3
    assert {lb.comparison for lb in loaded.labels} == {"large-vs-small"}
    stored = run_cli("--json", "labels", "import", str(downloaded), "latest", cwd=config.parent)
    assert stored.returncode == 0, stored.stderr
    assert json.loads(stored.stdout)["imported"] == 3  # the downloaded file, stored with the run
    before = calibrate(config, tmp_path / "a")
    after = calibrate(mine, tmp_path / "b")
    assert before["labelled_cases"] == 24 and after["labelled_cases"] == 3
    assert [r["n_labels"] for r in after["ranking"] if r["kind"] == "pairwise"] == [3]


def test_the_run_page_reads_without_javascript(
    browser: Any, pages: dict[str, Path], tmp_path: Path
) -> None:
    opened = open_page(browser, pages["run"], java_script_enabled=False)
    page = opened.page
    for section in ("#run", "#calibration", "#scorecard", "#pairwise", "#criteria", "#decision"):
        assert page.is_visible(section), section
    assert page.locator(".nojs table tr").count() == 49  # the header and 48 case rows
    assert not page.is_visible("#filters")
    page.screenshot(path=str(tmp_path / "no-javascript.png"), full_page=True)
    clean(opened)


def test_planted_script_never_runs(browser: Any, pages: dict[str, Path], tmp_path: Path) -> None:
    opened = open_page(browser, pages["hostile"])
    page = opened.page
    page.fill("#f-text", "q03")
    page.locator("#case-list tr").first.click()
    assert "<script>window.pwned=1</script>" in page.inner_text("#drill")
    assert RATIONALE in page.inner_text("#drill")  # the judge's rationale, as text
    page.click("a[data-tab=label]")
    page.click("#unblind")
    q03 = page.locator("#pairs .pair").filter(has_text="case q03")
    assert "<script>window.pwned=1</script>" in q03.inner_text()  # the answer, as text
    q03.locator("button[data-choice=tie]").click()
    q03.locator("details.verdict").click()  # unfold the rationales
    assert RATIONALE in q03.inner_text()
    page.click("a[data-tab=label-points]")  # the pointwise items show the answer as text too
    page.click("#point-unblind")
    item = page.locator("#points .point").filter(has_text="case q03")
    assert "<script>window.pwned=1</script>" in item.inner_text()
    assert item.locator("script, img").count() == 0
    hostile = item.locator(".answer").filter(has_text="<script>window.pwned=1</script>")
    hostile.locator("input[data-choice=pass]").check()  # one label per answer
    hostile.locator("details.verdict").click()
    assert RATIONALE in item.inner_text()
    page.screenshot(path=str(tmp_path / "hostile.png"), full_page=True)
    assert page.evaluate("typeof window.pwned") == "undefined"
    clean(opened)


def test_a_transcript_opens_from_the_keyboard_shows_hostile_text_as_text_and_passes_axe(
    browser: Any, pages: dict[str, Path], tmp_path: Path
) -> None:
    """A tool cell's drill-down holds its transcript collapsed; Enter on its summary opens it:
    each step, the bad arguments and the errors said in words; a tool result and error holding
    </details>, <script> and <img onerror> show as text and run nothing; axe finds nothing."""
    opened = open_page(browser, pages["tools"], viewport=DOCS_VIEWPORT)
    page = opened.page
    page.locator("#case-list button.case-open").filter(has_text="paris").click()
    details = page.locator("#drill details.transcript")
    expect(details).to_have_count(1)
    assert details.get_attribute("open") is None  # collapsed by default
    summary = details.locator("summary")
    assert summary.inner_text() == "Transcript — 3 turns, 2 tool calls (1 error)"
    summary.focus()  # a <summary> is focusable natively
    page.keyboard.press("Enter")
    expect(details).to_have_attribute("open", "")
    steps = details.locator("li.step")
    expect(steps).to_have_count(5)
    assert "arguments (they did not fit the tool's schema):" in steps.nth(1).inner_text()
    assert "error the call failed:" in steps.nth(1).inner_text()
    assert '"temp_c": 18' in steps.nth(3).inner_text()  # the result, pretty-printed
    assert axe_violations(page) == []
    details.scroll_into_view_if_needed()
    shot(page, "report-transcript.png", tmp_path)
    page.locator("#case-list button.case-open").filter(has_text="warmer").click()
    page.locator("#drill details.transcript summary").click()
    said = json.dumps(TOOL_RESULT, ensure_ascii=False)
    assert f'"sky": {said}' in page.inner_text("#drill details.transcript")  # as text
    page.locator("#case-list button.case-open").filter(has_text="looping").click()
    page.locator("#drill details.transcript summary").click()
    assert TOOL_ERROR in page.inner_text("#drill details.transcript")
    assert page.locator("#drill details.transcript li.step.failed").count() == 2
    assert page.locator("#drill details.transcript").locator("script, img").count() == 0
    assert page.evaluate("typeof window.pwned") == "undefined"
    clean(opened)


def test_compare_page_shows_the_planted_regression(
    browser: Any, pages: dict[str, Path], tmp_path: Path
) -> None:
    opened = open_page(browser, pages["compare"], viewport=DOCS_VIEWPORT)
    page = opened.page
    shot(page, "report-compare.png", tmp_path)
    overall = page.inner_text("#overall-delta")
    assert "worse" in overall and " pts [" in overall and "broken 0" not in overall
    assert "FAILED" in page.inner_text("#gate")
    assert page.locator(".mover").count() > 0
    assert page.locator(".mover").first.locator(".badge").inner_text() == "broken"
    movers = page.locator(".mover").count()  # each with the question it answered, and the reference
    assert page.locator(".mover pre.prompt").count() == movers
    assert page.locator(".mover pre.expected").count() == movers
    assert page.locator("svg.chart rect[fill='#b3261e']").count() >= 1  # the red cell ...
    assert "plain × large ▼" in (page.locator("svg.chart").text_content() or "")  # in text too
    # every delta's p with its test named, and the rule that made the verdict under the table
    assert "p=" in overall or "p<" in overall
    cells = page.locator("#cells + table")
    assert "Δ pass [95% CI], paired t-test p" in cells.locator("tr").first.inner_text()
    rule = page.locator("#cells + table + p.verdict-rule").inner_text()
    assert "p: paired t-test on the case differences B − A" in rule
    assert "worse when the pass rate's or the score's p < 0.05 with a drop" in rule
    assert page.locator("p.verdict-rule").count() == 5  # overall, cells, costs, criteria, slices
    page.screenshot(path=str(tmp_path / "compare-page.png"), full_page=True)
    assert page.evaluate("typeof window.pwned") == "undefined"
    clean(opened)


def test_labelling_three_answers_gives_pointwise_yaml_that_changes_calibrate(
    browser: Any, pages: dict[str, Path], tmp_path: Path
) -> None:
    opened = open_page(browser, pages["run"])
    page = opened.page
    page.click("a[data-tab=label-points]")
    assert page.is_visible("#label-points") and not page.is_visible("#label")
    items = page.locator("#points .point")
    # 24 cases × 1 llm-judge criterion × 2 answers (one per model): a label per answer
    assert page.inner_text("#point-progress") == "0 / 48"
    first = items.first
    assert first.locator(".side").count() == 2  # both models' answers ...
    assert first.locator(".side-name").first.inner_text() == ""  # ... with their names hidden
    answers = page.locator("#points .answer")
    assert not answers.first.locator("details.verdict").is_visible()  # collapsed until labelled
    assert not answers.nth(1).locator("details.verdict").is_visible()
    answers.first.locator("input[data-choice=fail]").check()
    assert answers.first.locator("details.verdict").is_visible()
    assert not answers.nth(1).locator("details.verdict").is_visible()  # its own label only
    page.keyboard.press("p")  # the first card's second answer is current now
    page.keyboard.press("f")  # and then the second card's first answer
    assert page.inner_text("#point-progress") == "3 / 48"
    assert answers.nth(1).locator("input[data-choice=pass]").is_checked()
    page.reload()  # local storage keeps the labels
    page.click("a[data-tab=label-points]")
    assert page.inner_text("#point-progress") == "3 / 48"
    page.click("#point-unblind")
    assert "(plain × " in first.locator(".side-name").first.inner_text()
    judge = [answers.nth(i).locator("details.verdict summary").inner_text() for i in range(3)]
    text, downloaded = copy_and_download(page, "point-", tmp_path)
    page.screenshot(path=str(tmp_path / "label-answers-tab.png"), full_page=True)
    clean(opened)

    entries = yaml.safe_load(text)["labels"]
    mine_labels = ["fail", "pass", "fail"]
    assert [(e["criterion"], e["label"]) for e in entries] == [("judged", x) for x in mine_labels]
    agree = sum(j.startswith(f"judge: {x}") for j, x in zip(judge, mine_labels, strict=True))
    config = pages["config"]
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["labels"] = data["labels"] + entries  # beside the example's pairwise labels
    mine = config.with_name("mine-pointwise.yaml")
    mine.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    loaded = load_config(mine)
    assert [(p.criterion, p.case_id, p.label) for p in loaded.point_labels] == [
        ("judged", e["case"], e["label"]) for e in entries
    ]
    stored = run_cli("--json", "labels", "import", str(downloaded), "latest", cwd=config.parent)
    assert stored.returncode == 0, stored.stderr
    assert json.loads(stored.stdout)["imported"] == 3
    before = calibrate(config, tmp_path / "a")
    after = calibrate(mine, tmp_path / "b")
    assert [r for r in before["ranking"] if r["kind"] == "pointwise"] == []  # no labels yet
    point = [r for r in after["ranking"] if r["kind"] == "pointwise"]
    assert [(r["target"], r["n_labels"]) for r in point] == [("judged", 3)]
    assert point[0]["agreement"] == pytest.approx(agree / 3)


def _image_shown(page: Any, img: Any) -> bytes:
    """The bytes of a shown image's data: URI (it loaded: the browser knows its width)."""
    import base64

    assert page.evaluate("(i) => i.complete && i.naturalWidth > 0", img.element_handle())
    src = img.get_attribute("src") or ""
    assert src.startswith("data:image/png;base64,")
    return base64.b64decode(src.split(",", 1)[1])


def test_a_cases_image_shows_inline_and_the_page_stays_self_contained(
    browser: Any, vision: dict[str, Path]
) -> None:
    opened = open_page(browser, vision["run"])
    page = opened.page
    page.fill("#f-text", "red-square")
    page.locator("#case-list button.case-open").first.click()
    drill = page.locator("#drill")
    assert "[image photo: image/png]" in drill.locator("pre.prompt").first.inner_text()
    shown = _image_shown(page, drill.locator("ul.files img").first)
    assert shown == (vision["images"] / "red-square.png").read_bytes()
    sha = hashlib.sha256(shown).hexdigest()
    assert (
        f"photo: image/png, 79 bytes, sha256 {sha}" in drill.locator("ul.files").first.inner_text()
    )
    assert "expected:" in drill.inner_text() and "red" in drill.inner_text()
    assert axe_violations(page) == []
    clean(opened)  # the image came from the page itself: no request left it


def test_compare_movers_show_the_question_expected_answer_and_image(
    browser: Any, vision: dict[str, Path]
) -> None:
    opened = open_page(browser, vision["compare"])
    page = opened.page
    mover = page.locator(".mover").filter(has_text="case red-square")
    assert mover.count() == 1
    assert "Which colour fills this image?" in mover.locator("pre.prompt").inner_text()
    assert mover.locator("pre.expected").inner_text() == "red"
    shown = _image_shown(page, mover.locator("ul.files img"))
    assert shown == (vision["images"] / "red-square.png").read_bytes()
    assert "Blue." in mover.inner_text()  # run B's answer beside the question it answered
    assert axe_violations(page) == []
    clean(opened)
