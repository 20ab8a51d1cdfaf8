"""How the CLI renders a run (evalwh/cli/render.py): the criteria table names a json-schema
criterion's mode (native or prompted); a pairwise comparison's win rate counts ties as half a
win beside its interval, sign test and verdict, and each side's eligible share is named so."""

from __future__ import annotations

from pathlib import Path

from tests.builders import PLACE_OUTPUT, place_config
from tests.conftest import run_cli


def test_criteria_table_shows_the_mode(tmp_path: Path) -> None:
    model = '{id: m, provider: mock, mock: {default: \'{"city": "Rome"}\'}}'
    cfg = place_config(tmp_path, model, PLACE_OUTPUT)
    assert run_cli("run", str(cfg), "-o", str(tmp_path / "out"), cwd=tmp_path).returncode == 0
    done = run_cli("last", "-o", str(tmp_path / "out"), cwd=tmp_path)
    assert "json-schema (native)" in done.stdout  # the mock takes the schema as asked


def test_pairwise_win_rate_counts_ties_half_and_agrees_with_its_sign_test(
    pairwise_example: Path, tmp_path: Path
) -> None:
    # examples/pairwise: 6 cases won, 17 tied, 1 lost. Bugs: "25.0% [12.0%–44.9%]" (ties as
    # losses, a Wilson interval that excludes 50% while the sign test says p = 0.125); "pass
    # rate of each side: 100.0%" for the share of pairs eligible for judging.
    done = run_cli("run", str(pairwise_example), "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = [line.rstrip() for line in done.stdout.splitlines()]
    assert (
        "  win rate: 60.4% [47.7%–64.5%] p=0.125 within noise (24 cases: 6 won, 17 tied, "
        "1 lost; ties count half; 0 pair(s) excluded) UNCALIBRATED"
    ) in lines
    assert "  eligible for judging: baseline 100.0%, candidate 100.0% of 24 pair(s)" in lines
    assert "pass rate of each side" not in done.stdout
