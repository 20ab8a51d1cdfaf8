"""docs/datasources.md and docs/no-look.md run as written: every full config on them (with
the files the page shows beside it) runs end to end on the mock provider, and the no-look
page's table of interval widths is what the Wilson interval gives."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

import evalwh
from tests.docs.test_pages import DOCS, blocks, is_config, read, write_example

PAGES = ("datasources.md", "no-look.md")


def examples(page: str) -> list[tuple[str, dict[str, str]]]:
    found = blocks(read(DOCS / page))
    files = {a["file"]: body for _, a, body in found if "file" in a}
    return [(body, files) for lang, a, body in found if lang == "yaml" and is_config(body)]


CASES = [(page, n, *ex) for page in PAGES for n, ex in enumerate(examples(page), start=1)]


def test_each_page_has_examples() -> None:
    assert {page for page, *_ in CASES} == set(PAGES)


# ids of plain text: pytest escapes what an ids callable returns again on every collection in
# one process, so a newline in one made mutmut's forked children find no such test
@pytest.mark.parametrize(
    ("page", "n", "body", "files"), CASES, ids=[f"{page}-{n}" for page, n, *_ in CASES]
)
def test_the_example_runs(
    page: str, n: int, body: str, files: dict[str, str], tmp_path: Path
) -> None:
    config = write_example(tmp_path / "example", body, files)
    result = evalwh.run_eval(config, output_dir=tmp_path / "out")
    assert result.status == "completed" and result.totals["n"] > 0
    if "no_look: true" in body:
        assert result.no_look
        view = evalwh.open_warehouse(tmp_path / "out" / "warehouse.duckdb")
        stored = view.sql("SELECT count(vars) + count(output) + count(messages) AS n FROM cases")
        assert stored.to_pylist() == [{"n": 0}]


def wilson(n: int, p: float = 0.5, z: float = 1.959963984540054) -> tuple[float, float]:
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def test_the_interval_table_is_the_wilson_interval() -> None:
    rows = re.findall(
        r"^\| ([\d,]+) \| ([\d.]+)% – ([\d.]+)% \| ([\d.]+) points \|$",
        read(DOCS / "no-look.md"),
        re.M,
    )
    assert [r[0] for r in rows] == ["30", "100", "400", "1,000"]
    for n, lo, hi, width in rows:
        low, high = wilson(int(n.replace(",", "")))
        assert (float(lo), float(hi)) == (round(100 * low, 1), round(100 * high, 1))
        assert float(width) == round(100 * (high - low), 1)
