"""How the CLI renders a run (evalwh/cli/render.py): the criteria table names a json-schema
criterion's mode (native or prompted); the summary and a case's detail show the time requests
waited before they were sent (queued) beside their latency, when they waited; a pairwise
comparison's win rate counts ties as half a win beside its interval, sign test and verdict,
and each side's eligible share is named so."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from evalwh.cli import render
from tests.builders import PLACE_OUTPUT, place_config
from tests.conftest import run_cli


def test_criteria_table_shows_the_mode(tmp_path: Path) -> None:
    model = '{id: m, provider: mock, mock: {default: \'{"city": "Rome"}\'}}'
    cfg = place_config(tmp_path, model, PLACE_OUTPUT)
    assert run_cli("run", str(cfg), "-o", str(tmp_path / "out"), cwd=tmp_path).returncode == 0
    done = run_cli("last", "-o", str(tmp_path / "out"), cwd=tmp_path)
    assert "json-schema (native)" in done.stdout  # the mock takes the schema as asked


def _summary_row(queued: float | None) -> dict[str, Any]:
    return {
        "variant": "v", "model": "m", "n": 4, "n_cases": 4, "n_passed": 4, "n_errors": 0,
        "pass_rate": 1.0, "pass_rate_lo": 0.5, "pass_rate_hi": 1.0, "mean_score": 1.0,
        "p50_latency_ms": 12.0, "p95_latency_ms": 30.0, "p95_queued_ms": queued, "cost_usd": 0.0,
    }  # fmt: skip


def _shown(renderable: Any) -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def test_the_summary_shows_the_time_requests_waited_only_when_they_waited() -> None:
    waited = _shown(render.summary_table([_summary_row(1500.0), _summary_row(None)]))
    assert "queued p95" in waited and "2 s" not in waited and "1500 ms" in waited
    assert "30 ms" in waited  # the latency p95 beside it, unchanged
    for idle in (None, 0.0, 0.4):  # no wait, or less than a millisecond of bookkeeping
        assert "queued" not in _shown(render.summary_table([_summary_row(idle)]))


def test_a_cases_detail_shows_its_wait_beside_its_latency(monkeypatch: pytest.MonkeyPatch) -> None:
    console = Console(width=200, record=True, file=io.StringIO())
    monkeypatch.setattr(render, "out", lambda: console)
    case = {
        "variant": "v", "model": "m", "case_id": "c1", "repeat": 0, "passed": True,
        "score": 1.0, "error": None, "output": "4", "expected": None, "criteria": [],
        "attachments": None, "vars": "{}", "metadata": "{}", "messages": "[]",
        "latency_ms": 12.0, "queued_ms": 1000.0, "input_tokens": 3, "output_tokens": 1,
        "cost_usd": None, "attempts": 2,
    }  # fmt: skip
    render.case_block(case, full=True)
    render.case_block({**case, "queued_ms": None}, full=True)
    lines = [line for line in console.export_text().splitlines() if "latency" in line]
    assert [line.split(",")[0].strip() for line in lines] == [
        "latency 12 ms (+1000 ms queued)",
        "latency 12 ms",
    ]


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
        "1 lost; ties count half; 0 pair(s) excluded) UNCALIBRATED FLIPPY"
    ) in lines
    assert "  eligible for judging: baseline 100.0%, candidate 100.0% of 24 pair(s)" in lines
    assert "pass rate of each side" not in done.stdout
