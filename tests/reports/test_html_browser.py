"""The HTML pages in a real browser (system chromium through Playwright): they open from
file:// with no console error and no request, the tabs, filters, drill-down and blind
labelling work by clicking, planted script never runs, and the compare page shows a
planted regression. A screenshot of each page lands in the test's temp folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalwh.config.loader import load_config
from tests.browser import Opened, browser, open_page
from tests.conftest import run_cli
from tests.report_runs import RATIONALE, pairwise_copy, regressed

__all__ = ["browser"]  # the module-scoped fixture, imported for pytest

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The run page of the pairwise example written by the CLI as a user would, the run page
    of a run with planted hostile text, and the compare page of a regressed rerun."""
    root = tmp_path_factory.mktemp("pages")
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
    }


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


def clean(opened: Opened) -> None:
    assert opened.errors == [], opened.errors
    assert opened.foreign_requests == [], opened.foreign_requests


def test_run_page_opens_offline_and_the_tabs_filters_and_drilldown_work(
    browser: Any, pages: dict[str, Path], tmp_path: Path
) -> None:
    opened = open_page(browser, pages["run"])
    page = opened.page
    assert page.title().startswith("evalwh · pairwise · run ")
    assert page.is_visible("#scorecard") and not page.is_visible("#label")
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
    opened = open_page(browser, pages["run"])
    page = opened.page
    page.click("a[data-tab=label]")
    cards = page.locator("#pairs .pair")
    assert not cards.first.locator("details.verdict").is_visible()  # collapsed until labelled
    assert cards.first.locator(".side-name").first.inner_text() == ""  # blind
    cards.nth(0).locator("button[data-choice=A]").click()
    assert cards.first.locator("details.verdict").is_visible()
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


def test_compare_page_shows_the_planted_regression(
    browser: Any, pages: dict[str, Path], tmp_path: Path
) -> None:
    opened = open_page(browser, pages["compare"])
    page = opened.page
    overall = page.inner_text("#overall-delta")
    assert "worse" in overall and " pts [" in overall and "broken 0" not in overall
    assert "FAILED" in page.inner_text("#gate")
    assert page.locator(".mover").count() > 0
    assert page.locator(".mover").first.locator(".badge").inner_text() == "broken"
    assert page.locator("svg.chart rect[fill='#b3261e']").count() >= 1  # the red cell
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
