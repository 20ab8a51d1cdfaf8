"""The viewer in a real browser (system chromium through Playwright) against `evalwh serve`
in a subprocess: compare two runs by clicking on the runs list, filter it (htmx), label a
pair and see the calibration page count it, planted script never runs, a running eval's page
fills in before the run ends, and no page logs a console error or asks for anything but the
server. Screenshots land in the test's temp folder, or in SCREENSHOTS_DIR (docs/images)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from playwright.sync_api import expect

from tests.browser import axe_violations, browser, shot
from tests.conftest import run_cli
from tests.report_runs import (
    SCRIPT,
    TOOL_ERROR,
    TOOL_NAME,
    changed_tool_run,
    pairwise_copy,
    regressed,
)
from tests.viewer.serving import TOKEN, Server, gated_eval, serving, slow_quickstart, start_run

__all__ = ["browser"]  # the module-scoped fixture, imported for pytest

pytestmark = pytest.mark.e2e


@dataclass
class Tab:
    """A page of the viewer with everything it logged and asked for."""

    page: Any
    origin: str
    errors: list[str] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # every request answered 404

    def clean(self) -> None:
        assert self.errors == [], self.errors
        assert self.foreign == [], self.foreign
        assert self.missing == [], self.missing  # e.g. no /favicon.ico


def open_tab(browser: Any, server: Server, path: str = "/") -> Tab:
    """A fresh context that opened ``path`` with the token, as a link `evalwh serve` printed
    would (the server sets the token's cookie and redirects to ``path`` without it); any
    request off the server is refused and recorded. One navigation: a second one started
    right after the first was seen aborted (net::ERR_ABORTED) on a loaded machine."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    tab = Tab(page, server.url)

    def route(r: Any) -> None:
        if r.request.url.startswith(server.url + "/"):
            r.continue_()
        else:
            tab.foreign.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page.on("console", lambda m: tab.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: tab.errors.append(str(e)))
    page.on("response", lambda r: tab.missing.append(r.url) if r.status == 404 else None)
    page.goto(f"{server.url}{path}{'&' if '?' in path else '?'}token={TOKEN}")
    assert page.url == server.url + path  # the token left the address bar
    return tab


def copy_run(source: Path, output_dir: Path, run_id: str) -> None:
    """Run ``run_id``'s rows (its run, answers, scores and transcripts) from the warehouse
    file ``source`` into the one of ``output_dir`` (both migrated by this evalwh)."""
    import duckdb

    con = duckdb.connect(str(output_dir / "warehouse.duckdb"))
    try:
        quoted = str(source).replace("'", "''")
        con.execute(f"ATTACH '{quoted}' AS src (READ_ONLY)")
        for table in ("runs", "cases", "scores", "turns"):
            con.execute(
                f"INSERT INTO {table} BY NAME SELECT * FROM src.{table} WHERE run_id = ?",
                [run_id],
            )
    finally:
        con.close()


@pytest.fixture(scope="module")
def site(
    tmp_path_factory: pytest.TempPathFactory, tool_runs: dict[str, Any]
) -> Iterator[dict[str, Any]]:
    """Two runs of the pairwise example without its labels (hostile text planted in q03;
    the second regressed), the session's run of the tools example (hostile text in a tool's
    result and error; copied in, cheaper than running it again), its case warmer again as a
    run that called a tool named with a script (``changed``), and `evalwh serve` over their
    warehouse."""
    root = tmp_path_factory.mktemp("site")
    out = root / "out"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(root))
        mp.setenv("EVALWH_CONFIG_DIR", str(root / "config"))
        config = pairwise_copy(root, hostile=True)
        data = yaml.safe_load(config.read_text(encoding="utf-8"))
        del data["labels"]  # every label comes from the browser
        config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        for args in (
            ("run", str(config), "--label", "before"),
            ("run", str(regressed(config)), "--label", "after"),
        ):
            done = run_cli("-o", str(out), *args, cwd=root)
            assert done.returncode in (0, 1), done.stderr
        copy_run(tool_runs["root"] / ".evalwh" / "warehouse.duckdb", out, tool_runs["run_id"])
        changed = changed_tool_run(out / "warehouse.duckdb", tool_runs["run_id"], cases=("warmer",))
        with serving(out) as server:
            runs = httpx.get(server.url + "/runs.json").json()["runs"]
            ids = {r["label"]: r["run_id"] for r in runs}
            yield {
                "server": server,
                "before": ids["before"],
                "after": ids["after"],
                "tools": tool_runs["run_id"],
                "changed": changed,
            }


def test_compare_two_runs_by_clicking_on_the_runs_list(
    browser: Any, site: dict[str, Any], tmp_path: Path
) -> None:
    tab = open_tab(browser, site["server"])
    page = tab.page
    assert page.url == site["server"].url + "/"  # the token went into the cookie
    assert page.locator("table.runs tr[data-run]").count() == 4
    shot(page, "viewer-runs.png", tmp_path)
    page.check(f"tr[data-run='{site['before']}'] input[name=a]")
    page.check(f"tr[data-run='{site['after']}'] input[name=b]")
    page.click("#compare-button")
    page.wait_for_url(f"**/compare/{site['before']}/{site['after']}")
    assert "Compare" in page.title() or "compare" in page.title()
    assert page.locator("#gate").count() == 1
    shot(page, "viewer-compare.png", tmp_path)
    # tool use: the tools run against its changed copy. Attack: a tool's name (a model made
    # it up) that is a <script> shows as text; the changed cell links to its case's history
    page.goto(f"{site['server'].url}/compare/{site['tools']}/{site['changed']}")
    settled(tab)
    cells = page.locator("table.tool-cells")
    assert TOOL_NAME in cells.inner_text() and TOOL_NAME in page.inner_text("table.tools")
    assert page.locator("table.tools script, table.tool-cells script").count() == 0
    assert page.evaluate("() => typeof window.pwned") == "undefined"
    assert viewer_violations(page) == []
    cells.get_by_role("link", name="warmer").click()
    page.wait_for_url("**/cases/warmer")
    tab.clean()


def test_the_runs_list_filters_in_place(browser: Any, site: dict[str, Any]) -> None:
    tab = open_tab(browser, site["server"])
    page = tab.page
    page.fill("input[name=label]", "after")
    page.press("input[name=label]", "Enter")
    expect(page.locator("table.runs tr[data-run]")).to_have_count(1)
    assert page.locator(f"tr[data-run='{site['after']}']").count() == 1
    page.wait_for_url("**/?*label=after*")  # the filtered list has a URL to share
    tab.clean()


def test_labelling_a_pair_changes_the_calibration_page(
    browser: Any, site: dict[str, Any], tmp_path: Path
) -> None:
    server, run_id = site["server"], site["before"]
    pairs = httpx.get(f"{server.url}/runs/{run_id}.json").json()["pairs"]
    index = next(i for i, p in enumerate(pairs[:20]) if p["human"] is None)
    comparison = pairs[index]["comparison"]

    def n_labels() -> int:
        cal = httpx.get(f"{server.url}/runs/{run_id}/calibration.json").json()
        return next(
            c["n_labels"] for c in cal["judging"]["comparisons"] if c["comparison"] == comparison
        )

    before = n_labels()
    tab = open_tab(browser, server, f"/runs/{run_id}")
    page = tab.page
    page.click("a[data-tab=label]")
    page.locator("#pairs .pair").nth(index).locator("button[data-choice=A]").click()
    expect(page.locator("#label-saved")).to_have_text("saved in the warehouse")
    shot(page, "viewer-label.png", tmp_path)
    assert n_labels() == before + 1
    page.goto(f"{server.url}/runs/{run_id}/calibration")
    cell = page.locator(f"tr[data-comparison='{comparison}'] td.n-labels")
    assert cell.inner_text() == str(before + 1)
    shot(page, "viewer-calibration.png", tmp_path)
    tab.clean()


def test_planted_script_never_runs_on_any_page(browser: Any, site: dict[str, Any]) -> None:
    server = site["server"]
    for path in (
        "/",
        f"/runs/{site['before']}",
        f"/compare/{site['before']}/{site['after']}",
        "/cases/q03",
        f"/runs/{site['before']}/slices?by=difficulty",
        "/baselines",
    ):
        tab = open_tab(browser, server, path)
        page = tab.page
        page.wait_for_load_state("load")
        # page.evaluate would need 'unsafe-eval': read what the planted code would have set
        # through a binding the page cannot fake, the title and body staying as rendered
        assert page.evaluate("() => typeof window.pwned") == "undefined", path
        if path == "/cases/q03":
            assert SCRIPT in page.inner_text("table.history")  # shown as text
        tab.clean()


@pytest.mark.slow  # a long end-to-end proof; CI runs it (`pytest -m slow`)
def test_a_running_evals_page_fills_in_before_the_run_ends(browser: Any, tmp_path: Path) -> None:
    output = tmp_path / "out"
    config = slow_quickstart(tmp_path)
    with serving(output) as server:
        run = start_run(config, output)
        try:
            # poll while the run lives (no wall-clock limit: pytest-timeout bounds the test)
            live: list[dict[str, Any]] = []
            while not live and run.poll() is None:
                live = [
                    r
                    for r in httpx.get(server.url + "/runs.json", timeout=30).json()["runs"]
                    if r["live"]
                ]
                time.sleep(0.1)
            assert live, "the run never showed as live"
            run_id = live[0]["run_id"]
            # a write from another origin, or without the token, is refused by the real server
            refused = httpx.post(
                f"{server.url}/baselines/pin",
                json={"run": run_id},
                headers={"Origin": "http://evil.example"},
                timeout=30,
            )
            assert refused.status_code == 403
            tab = open_tab(browser, server, f"/runs/{run_id}")
            page = tab.page
            expect(page.locator("#live-rows tbody tr").first).to_be_attached(timeout=30_000)
            still_running = run.poll() is None
            shown = page.locator("#live-rows tbody tr").count()
            shot(page, "viewer-live.png", tmp_path)
            expect(page.locator("#live-status")).to_have_text("completed", timeout=90_000)
            assert page.inner_text("#live-progress") == "48 / 48"
            tab.clean()
            assert run.wait(timeout=60) in (0, 1)
        finally:
            if run.poll() is None:
                run.kill()
    assert still_running and shown > 0, "no row showed while the run was running"


# 300 by default (more than the 200 rows the old last tick sent); the 1,000 under
# `slow`, which CI runs
@pytest.mark.parametrize(
    "n", [pytest.param(300, id="300"), pytest.param(1000, id="1000", marks=pytest.mark.slow)]
)
def test_a_live_tail_lists_every_case_and_ends_with_the_final_header(
    browser: Any, tmp_path: Path, n: int
) -> None:
    """The run page is open before the first answer is stored (the run's scorer holds every
    answer until the test opens its gate), then ``n`` answers arrive: the live table lists
    every case id, the tail ends on the server's `end` event, and the header reads the final
    status and counts without a reload; axe-core finds nothing while it runs nor once it
    ended. Counting, not timing: every wait is for a state."""
    output = tmp_path / "out"
    config, gate = gated_eval(tmp_path, n)
    with serving(output) as server:
        run = start_run(config, output)
        try:
            live: list[dict[str, Any]] = []
            while not live and run.poll() is None:  # pytest-timeout bounds a hang
                runs = httpx.get(server.url + "/runs.json", timeout=30).json()["runs"]
                live = [r for r in runs if r["live"]]
                time.sleep(0.1)
            assert live, f"the run never showed as live: {run.communicate()}"
            tab = open_tab(browser, server, f"/runs/{live[0]['run_id']}")
            page = tab.page
            assert page.inner_text("#live-status") == "running"
            assert page.inner_text("#live-progress") == f"0 / {n}"
            assert viewer_violations(page) == [], "the live tail, running"
            gate.touch()  # the answers flow now, with the page watching
            ended = page.locator("#live[data-ended]")
            expect(ended).to_have_attribute("data-ended", "completed", timeout=600_000)
            shown = page.eval_on_selector_all(
                "#live-rows tbody tr", "trs => trs.map(tr => tr.getAttribute('data-case'))"
            )
            assert sorted(shown) == [f"c{i:04d}" for i in range(n)]  # each once
            assert page.inner_text("#live-status") == "completed"
            assert page.inner_text("#live-progress") == f"{n} / {n}"
            assert page.inner_text("#live-passed") == str(n)
            assert page.locator(".live-badge").inner_text() == "DONE"
            # the report's header below was refreshed: the stored status and totals
            meta = page.inner_text("#report dl.meta")
            assert "completed" in meta and "running" not in meta
            assert f"{n}/{n}" in page.inner_text("#totals")
            assert "completed" in page.inner_text("#live-ended")
            assert viewer_violations(page) == [], "the live tail, ended"
            tab.clean()
            assert run.wait(timeout=600) == 0
        finally:
            gate.touch()
            if run.poll() is None:
                run.kill()


# The nodes the report's templates render inside the viewer's run and compare pages (the
# report's textareas): their labels are the report's to fix, and tests/reports checks them there.
REPORT_NODES = ("#decision-text", "#labels-yaml", "#point-labels-yaml")


def viewer_violations(page: Any) -> list[str]:
    """axe-core's critical, serious and moderate violations on ``page`` as it is now, less
    those whose every node is one of :data:`REPORT_NODES`."""
    return [v for v in axe_violations(page) if v.rsplit(" — ", 1)[1] not in REPORT_NODES]


def test_a_cases_transcript_opens_from_the_keyboard_and_planted_markup_stays_text(
    browser: Any, site: dict[str, Any], tmp_path: Path
) -> None:
    """The case page renders each run's transcript collapsed, server-side; Tab reaches its
    summary, Enter opens it; axe finds nothing with it open; a tool error holding
    </details></li><img onerror> is shown as text and runs nothing."""
    tab = open_tab(browser, site["server"], "/cases/paris")
    page = tab.page
    details = page.locator("details.transcript")
    expect(details).to_have_count(1)
    assert details.get_attribute("open") is None  # collapsed by default
    focus_by_tab(page, "details.transcript > summary")
    page.keyboard.press("Enter")
    expect(details).to_have_attribute("open", "")
    assert details.locator("li.step").count() == 5
    assert "arguments (they did not fit the tool's schema):" in details.inner_text()
    assert viewer_violations(page) == [], "a transcript open"
    details.scroll_into_view_if_needed()
    shot(page, "viewer-transcript.png", tmp_path)
    page.goto(site["server"].url + "/cases/looping")
    page.locator("details.transcript > summary").click()
    assert TOOL_ERROR in page.inner_text("details.transcript")
    assert page.locator("details.transcript img, details.transcript script").count() == 0
    assert page.evaluate("() => typeof window.pwned") == "undefined"
    tab.clean()


def settled(tab: Tab) -> Any:
    """The page once every htmx section has been swapped in (no "Loading" placeholder)."""
    page = tab.page
    expect(page.locator("[hx-trigger=load]")).to_have_count(0, timeout=60_000)
    return page


PAGES = {
    "runs": "/",
    "runs-filtered": "/?status=completed",
    "run": "/runs/{before}",
    "compare": "/compare/{before}/{after}",
    "case": "/cases/q03",
    "slices": "/runs/{before}/slices?by=difficulty",
    "calibration": "/runs/{before}/calibration",
    "baselines": "/baselines",
    "not-found": "/runs/no-such-run",
}


@pytest.mark.parametrize("name", list(PAGES))
def test_every_viewer_page_has_no_axe_violation(
    browser: Any, site: dict[str, Any], name: str
) -> None:
    """axe-core finds no critical, serious or moderate violation on each page, its htmx
    sections loaded; the assertion lists each rule and its nodes."""
    path = PAGES[name].format(**site)
    tab = open_tab(browser, site["server"], path)
    page = settled(tab)
    assert viewer_violations(page) == [], path
    page.keyboard.press("?")  # and with the keys' dialog open
    expect(page.locator("dialog[open]")).to_have_count(1)
    assert viewer_violations(page) == [], path + " with the help open"
    if name != "not-found":
        tab.clean()


def test_every_state_of_the_run_page_has_no_axe_violation(
    browser: Any, site: dict[str, Any]
) -> None:
    """The run page with a case opened, then each labelling tab, then a pair labelled."""
    tab = open_tab(browser, site["server"], f"/runs/{site['before']}")
    page = settled(tab)
    page.locator("#case-list tr").first.click()
    expect(page.locator("#drill")).to_be_visible()
    assert viewer_violations(page) == [], "a case opened"
    for name in ("label", "label-points"):
        page.click(f"a[data-tab={name}]")
        expect(page.locator(f"#{name}")).to_be_visible()
        assert viewer_violations(page) == [], f"the {name} tab"
    page.click("a[data-tab=label]")
    page.locator("#pairs .pair").first.locator("button[data-choice=B]").click()
    expect(page.locator("#label-saved")).to_have_text("saved in the warehouse")
    assert viewer_violations(page) == [], "a pair labelled"
    tab.clean()


def focus_by_tab(page: Any, selector: str, most: int = 60, key: str = "Tab") -> None:
    """Press Tab (or ``key``: Shift+Tab) until the focused element matches ``selector``
    (at most ``most`` times)."""
    for _ in range(most):
        page.keyboard.press(key)
        if page.evaluate("(s) => document.activeElement.matches(s)", selector):
            return
    raise AssertionError(f"{most} Tabs never reached {selector}")


def test_a_keyboard_only_walk_opens_a_run_labels_a_pair_and_opens_a_case(
    browser: Any, site: dict[str, Any], tmp_path: Path
) -> None:
    """No mouse: on the runs list ? opens the keys' dialog and Escape closes it, focus back
    where it was; Tab to a run and Enter; Tab to the tabs and arrows to Label; the nav's Keys
    button opens the dialog, where a typed `a` labels nothing; after Escape, `a` labels the
    first pair; then back to the case search, type an id, Enter: the case's history."""
    server, run_id = site["server"], site["after"]
    tab = open_tab(browser, server)
    page = tab.page
    focus_by_tab(page, "a[href='/']")  # the skip link and the site's name come first
    focus_by_tab(page, f"a[href='/runs/{run_id}']")
    page.keyboard.press("?")
    help_dialog = page.locator("dialog#keys-help")
    expect(help_dialog).to_have_attribute("open", "")
    assert "prefer answer A" in help_dialog.inner_text()
    expect(page.locator("#keys-help-close")).to_be_focused()
    shot(page, "viewer-keys.png", tmp_path)
    page.keyboard.press("Escape")
    expect(help_dialog).not_to_have_attribute("open", "")
    assert page.evaluate("() => document.activeElement.getAttribute('href')") == f"/runs/{run_id}"
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/runs/{run_id}")
    settled(tab)
    # the report's tabs are one Tab stop (WAI-ARIA tabs): Tab to the shown one, arrows to Label
    focus_by_tab(page, "[role=tab][aria-selected=true]")
    focus_by_tab(page, "a[data-tab=label]", most=8, key="ArrowRight")
    expect(page.locator("#label")).to_be_visible()
    focus_by_tab(page, "#keys-help-button", key="Shift+Tab")  # the nav's Keys button
    page.keyboard.press("Enter")
    expect(help_dialog).to_have_attribute("open", "")
    page.keyboard.press("a")  # typed in the dialog: the Label tab's key does not fire behind it
    page.keyboard.press("Escape")
    expect(help_dialog).not_to_have_attribute("open", "")
    assert page.inner_text("#label-saved") == ""
    page.keyboard.press("a")  # now it does: the first pair, prefer A
    expect(page.locator("#label-saved")).to_have_text("saved in the warehouse")
    focus_by_tab(page, "input[name=id]", key="Shift+Tab")  # back up to the site's nav
    page.keyboard.type("q03")
    page.keyboard.press("Enter")
    page.wait_for_url("**/cases/q03")
    expect(page.locator("h1")).to_contain_text("q03")
    expect(page.locator("#context-expected")).to_be_visible()
    shot(page, "viewer-case.png", tmp_path)
    tab.clean()
