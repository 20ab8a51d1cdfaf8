"""docs/reports.md runs as written: its python recipe writes the pages it names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.report_runs import pairwise_copy


@pytest.mark.slow  # a long end-to-end proof; CI runs it (`pytest -m slow`)
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
