"""One warehouse through every surface that shows a judged number: the CLI (`show`, `show
--json`, `decide`, `decide --json`, the json and md exports), the HTML report, the viewer's
calibration page and its JSON twin, and the MCP run summary all show the same set of flags,
the one evalwh/analysis/judging.py computes.

The bug it names: after `evalwh labels import` raised the pairwise judge's kappa to 1, the
report's banner and `evalwh decide` dropped ``FLIPPY: flip rate 0.33 above 0.3`` (they listed
only the comparisons below the kappa floor) and `decide` called the comparison "calibrated",
while `--json` still said ``headline_eligible: false``; the json and md exports showed no
flag at all.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import duckdb
import pytest

from tests.conftest import run_cli
from tests.inprocess import evalwh_inprocess

FLIPPY = "pairwise:large-vs-small: FLIPPY: flip rate 0.33 above 0.3"
PER_CASE = "criterion:judged: UNCALIBRATED: kappa 0.11 below the floor 0.6"


def _labels_of_the_judge(warehouse: Path, path: Path) -> None:
    """Pairwise labels equal to the judge's verdicts (kappa 1, the flip rate stays 0.33), and
    per-case pointwise labels "pass only if every answer is right" (kappa 0.11)."""
    side = {"baseline": "A", "candidate": "B", "tie": "tie"}
    with duckdb.connect(str(warehouse), read_only=True) as con:
        pairs = con.execute("SELECT case_id, verdict FROM pairs ORDER BY case_id").fetchall()
        cases = con.execute(
            "SELECT case_id, bool_and(passed) FROM scores WHERE criterion = 'exact' "
            "GROUP BY case_id ORDER BY case_id"
        ).fetchall()
    lines = ["labels:"]
    lines += [f"  - {{case: {c}, prefer: {side[v]}}}" for c, v in pairs]
    lines += [
        f"  - {{case: {c}, criterion: judged, label: {'pass' if ok else 'fail'}}}"
        for c, ok in cases
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
def flagged(pairwise_example: Path, tmp_path: Path) -> Path:
    """The pairwise example run, then labels imported: its output folder."""
    out = tmp_path / "out"
    done = run_cli("-o", str(out), "run", str(pairwise_example), "-q")
    assert done.returncode == 0, done.stderr
    _labels_of_the_judge(out / "warehouse.duckdb", tmp_path / "labels.yaml")
    done = run_cli("-o", str(out), "labels", "import", str(tmp_path / "labels.yaml"))
    assert done.returncode == 0, done.stderr
    return out


def _banner(page: str) -> set[str]:
    """The report's "Flagged judge numbers" list as lines."""
    found = re.findall(r"<li><code>([^<]*)</code>: ([^<]*)</li>", page)
    return {html.unescape(f"{key}: {reason}") for key, reason in found}


@pytest.mark.slow  # a long end-to-end proof; CI runs it (`pytest -m slow`)
def test_every_surface_shows_the_same_flags(
    flagged: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from evalwh.analysis.judging import flag_lines
    from evalwh.api.view import WarehouseView
    from evalwh.mcp import briefs
    from tests.viewer.serving import client

    expected = {FLIPPY, PER_CASE}
    out = str(flagged)

    def cli(*args: str) -> str:
        code, stdout, stderr = evalwh_inprocess(capsys, "-o", out, *args)
        assert code == 0, stderr
        return stdout

    shown = json.loads(cli("--json", "show", "latest"))["pairwise"]
    assert set(flag_lines(shown["flags"])) == expected
    assert shown["comparisons"][0]["headline_eligible"] is False
    text = cli("show", "latest")
    assert "FLIPPY: flip rate 0.33 above 0.3" in text and PER_CASE in text
    win_rate = next(line for line in text.splitlines() if "win rate:" in line)
    assert win_rate.endswith("FLIPPY")  # not a headline, and says why
    entry = cli("decide", "latest")
    assert {line[2:] for line in entry.splitlines() if line.startswith("- ") and ": " in line[2:]
            and line[2:].split(":")[0] in ("pairwise", "criterion")} == expected  # fmt: skip
    assert "calibrated" not in entry and "on 24 label(s), FLIPPY;" in entry
    assert set(flag_lines(json.loads(cli("--json", "decide", "latest"))["flags"])) == expected
    assert set(flag_lines(json.loads(cli("export", "latest", "--format", "json"))["flags"])) == (
        expected
    )
    md = cli("export", "latest", "--format", "md")
    assert {line[2:] for line in md.split("**Flagged judge numbers**")[1].split("\n\n")[1]
            .splitlines()} == expected  # fmt: skip
    assert _banner(cli("export", "latest", "--format", "html")) == expected

    view = WarehouseView(flagged / "warehouse.duckdb")
    run_id = view.resolve("latest")
    c = client(view)
    assert set(flag_lines(c.get(f"/runs/{run_id}/calibration.json").json()["flags"])) == expected
    assert _banner(c.get(f"/runs/{run_id}/calibration").text) == expected
    assert _banner(c.get(f"/runs/{run_id}").text) == expected

    summary = briefs.show_brief(view.show(run_id))
    assert set(summary["flags"]) == expected and summary["headline_eligible"] is False
    (point,) = summary["judging"]["pointwise"]
    assert point["label_units"] == (
        "24 per-case label(s) (judged against the majority of 2 answers)"
    )
    assert set(briefs.judging_for(view, run_id)["flags"]) == expected  # type: ignore[index]
