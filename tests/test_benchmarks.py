"""benchmarks/run.py keeps working: `--quick` runs every figure at tiny sizes, prints the
table and writes JSON with every row. Times are never asserted (the machines are shared)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ROWS = {
    "engine",
    "cached",
    "latency-32",
    "latency-128",
    "memory",
    "datasource-memory",
    "ingest",
    "ingest-default-batch",
    "query-summary",
    "query-compare",
    "query-slice",
    "query-calibration",
    "startup-help",
    "startup-list",
}


@pytest.mark.slow
def test_quick_benchmark_run_writes_every_row(tmp_path: Path) -> None:
    out = tmp_path / "quick.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALWH_")}
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "run.py"),
            "--quick",
            "--results",
            str(tmp_path / "results"),
            "--out",
            str(out),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(out.read_text())
    assert data["quick"] is True
    assert {row["id"] for row in data["rows"]} == ROWS
    for row in data["rows"]:
        assert row["measured"] is not None and row["measured"] >= 0, row
        assert set(row) >= {"what", "workload", "target", "ratio", "met"}
    assert {"nproc", "python", "duckdb"} <= set(data["machine"])
    table = done.stdout
    assert "ratio to target" in table and "met?" in table
    for what in ("engine overhead", "cached rerun", "latency-bound", "memory", "ingest"):
        assert what in table
    assert out.with_suffix(".md").read_text().startswith("| what |")
