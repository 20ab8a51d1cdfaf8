"""The real browser for the HTML report tests: Debian's ``chromium`` driven by Playwright.

Playwright's own browser download is not used (and not available here): the system browser
is launched through ``executable_path``. Without it the browser tests are skipped with the
reason, unless ``EVALWH_REQUIRE_SYSTEM_PARTS=1`` (CI sets it), which makes them fail.
One browser serves a whole test module; every page gets a fresh context whose requests
are all recorded and, except the page's own file, refused. :func:`shot` saves the screenshots
that docs/ shows (see docs/testing.md for the command that writes them there).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_path() -> str | None:
    if Path("/usr/bin/chromium").is_file():
        return "/usr/bin/chromium"
    return shutil.which("chromium")


def require_chromium(path: str | None) -> str:
    """``path``, or a skip saying why (a failure when EVALWH_REQUIRE_SYSTEM_PARTS=1)."""
    if path is None:
        reason = "no system chromium (apt-get install chromium) for the browser tests"
        if os.environ.get("EVALWH_REQUIRE_SYSTEM_PARTS") == "1":
            pytest.fail(reason + "; EVALWH_REQUIRE_SYSTEM_PARTS=1 requires it")
        pytest.skip(reason)
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    path = require_chromium(chromium_path())
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=path, args=ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@dataclass
class Opened:
    """A page opened from ``file://`` with everything it logged and asked for."""

    page: Any
    url: str
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    @property
    def foreign_requests(self) -> list[str]:
        return [u for u in self.requests if u != self.url]


def open_page(
    browser: Any, path: Path, *, viewport: tuple[int, int] = (1280, 900), **options: Any
) -> Opened:
    context = browser.new_context(
        viewport={"width": viewport[0], "height": viewport[1]}, accept_downloads=True, **options
    )
    page = context.new_page()
    opened = Opened(page, path.resolve().as_uri())

    def route(r: Any) -> None:
        opened.requests.append(r.request.url)
        if r.request.url == opened.url:
            r.continue_()
        else:
            r.abort()

    context.route("**/*", route)
    page.on("console", lambda m: opened.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: opened.errors.append(str(e)))
    page.goto(opened.url)
    return opened


SCREENSHOTS_ENV = "SCREENSHOTS_DIR"


def shot(page: Any, name: str, tmp_path: Path) -> Path:
    """A screenshot of what ``page`` shows in its viewport, as ``name``: in the folder that
    SCREENSHOTS_DIR names (docs/images, to update the docs' pictures), else in ``tmp_path``."""
    path = Path(os.environ.get(SCREENSHOTS_ENV) or tmp_path) / name
    page.screenshot(path=str(path), full_page=False)
    return path


AXE = Path(__file__).resolve().parent / "fixtures" / "axe" / "axe.min.js"
# what the pages must be free of: every axe-core rule violation of these impacts
AXE_IMPACTS = ("critical", "serious", "moderate")


def axe_violations(page: Any, *, within: str | None = None) -> list[str]:
    """Run axe-core (tests/fixtures/axe) on ``page`` as it is now, or on the element that
    ``within`` selects, and return each violation of impact critical, serious or moderate as
    one line: rule, impact, help and the failing nodes' selectors (empty when there are none).

    The script is evaluated through the browser's devtools, not added as a <script>, so a
    page's Content-Security-Policy (the report's forbids inline scripts) does not stop it."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate("() => { " + AXE.read_text(encoding="utf-8") + "\n}")
        page.evaluate("() => { if (typeof axe === 'object') window.axe = axe; }")
    results = page.evaluate(
        "async (within) => await window.axe.run(within ? document.querySelector(within) : document)",
        within,
    )
    found = []
    for violation in results["violations"]:
        if violation.get("impact") not in AXE_IMPACTS:
            continue
        targets = ", ".join(" ".join(map(str, node["target"])) for node in violation["nodes"])
        found.append(f"{violation['id']} ({violation['impact']}): {violation['help']} — {targets}")
    return found
