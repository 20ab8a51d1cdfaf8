"""docs/evaluating-judges.md as written: the printed example of the pairwise example's report is what
`evalwh run` prints.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import ROOT, run_cli


def test_the_printed_example_in_the_docs_is_what_the_example_prints(
    pairwise_example: Path, tmp_path: Path
) -> None:
    doc = (ROOT / "docs" / "evaluating-judges.md").read_text()
    block = doc.split("```\npairwise large-vs-small")[1].split("```")[0]
    expected = ["pairwise large-vs-small" + block.splitlines()[0], *block.splitlines()[1:]]
    result = run_cli("run", str(pairwise_example), "-q", cwd=tmp_path)
    printed = [line.rstrip() for line in result.stdout.splitlines()]
    for line in expected:
        assert line.rstrip() in printed, line
