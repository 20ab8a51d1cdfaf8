"""benchmarks/run.py keeps working: `--quick` runs every figure at tiny sizes, prints the
table and writes JSON with every row. Times are never asserted (the machines are shared).

The default run has a smoke test of the in-process groups (seconds); every group, with the
ones that start browsers and dozens of processes, runs under `-m slow` (CI runs both)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ROWS = {
    "engine",
    "cached",
    "latency-32",
    "latency-128",
    "memory",
    "datasource-memory",
    "casefile-memory",
    "ingest",
    "ingest-default-batch",
    "query-summary",
    "query-compare",
    "query-slice",
    "query-calibration",
    "startup-help",
    "startup-list",
    "report-size",
    "report-paint",
    "viewer-runs-list",
    "viewer-pages",
    "viewer-watching",
}
# the round-2 groups (http, process, adaptive), checked by a test of their own (they start ~15
# processes)
ROUND_2_ROWS = {
    "http-httpx-sharded-asyncio",
    "http-httpx-sharded-asyncio-sniffio",
    "http-provider-asyncio",
    "process-one-case",
    "process-cpu-50",
    "process-cpu-200",
    "process-cpu-flat",
    "process-efficiency-8",
    "process-cached-200",
    "adaptive",
}


def _quick(
    tmp_path: Path, groups: str, *options: str
) -> tuple[subprocess.CompletedProcess[str], dict]:
    out = tmp_path / "quick.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALWH_")}
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "run.py"),
            "--quick",
            "--only",
            groups,
            "--results",
            str(tmp_path / "results"),
            "--out",
            str(out),
            *options,
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,  # a loaded CI machine; the figures themselves are never asserted
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(out.read_text())
    assert data["quick"] is True
    no_browser = shutil.which("chromium") is None and not Path("/usr/bin/chromium").is_file()
    for row in data["rows"]:
        if row["id"] == "report-paint" and no_browser:
            continue  # first paint needs the system chromium
        assert row["measured"] is not None and row["measured"] >= 0, row
        assert set(row) >= {"what", "workload", "target", "ratio", "met"}
    assert out.with_suffix(".md").read_text().startswith("| what |")
    return done, data


@pytest.mark.slow  # a long end-to-end proof; CI runs it (`pytest -m slow`)
def test_the_in_process_groups_run_at_tiny_sizes_and_write_their_rows(tmp_path: Path) -> None:
    done, data = _quick(tmp_path, "engine,ingest,queries,memory")
    ids = {row["id"] for row in data["rows"]}
    assert ids == {"engine", "cached", "memory", "ingest", "ingest-default-batch"} | {
        i for i in ROWS if i.startswith("query-")
    }
    assert "ratio to target" in done.stdout and "met?" in done.stdout


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_quick_benchmark_run_writes_every_row(tmp_path: Path) -> None:
    done, data = _quick(
        tmp_path, "engine,latency,memory,datasource,casefile,ingest,queries,startup,report,viewer"
    )
    assert {row["id"] for row in data["rows"]} == ROWS
    assert {"nproc", "python", "duckdb"} <= set(data["machine"])
    table = done.stdout
    assert "ratio to target" in table and "met?" in table
    for what in ("engine overhead", "cached rerun", "latency-bound", "memory", "ingest"):
        assert what in table


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_quick_round_2_groups_write_every_row(tmp_path: Path) -> None:
    """The round-2 groups: HTTP client strategies, whole `evalwh run` processes, adaptive concurrency."""
    done, data = _quick(tmp_path, "http,process,adaptive")
    assert {row["id"] for row in data["rows"]} == ROUND_2_ROWS
    for what in ("HTTP client", "fixed cost of a run", "CPU per case", "adaptive concurrency"):
        assert what in done.stdout


def test_the_tool_loop_group_counts_three_requests_a_cell(tmp_path: Path) -> None:
    """benchmarks/toolloop.py as the group `toolloop` (issue 48): single-request cells against
    three-turn tool loops at the benchmark server; the figures are never asserted, the request
    counts are."""
    done, data = _quick(tmp_path, "toolloop")
    (row,) = data["rows"]
    assert (row["id"], row["unit"], row["limit"]) == ("toolloop", "x", 1.5)
    raw = data["raw"]["toolloop"]
    assert raw["requests"] == {"single": 5, "loop": 15}
    assert raw["cpu_ms_per_turn_loop"] > 0 and raw["cpu_ms_per_request_single"] > 0
    assert "tool loop CPU per turn" in done.stdout


ROWS_OF_WAREHOUSE = {
    "wh-runs-list",
    "wh-summary",
    "wh-slice",
    "wh-gate",
    "wh-compare",
    "wh-case-history",
    "wh-calibration",
}


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_quick_warehouse_group_writes_every_row_and_a_profile_of_each(tmp_path: Path) -> None:
    """The warehouse group (issue 50) on the tiny synthetic warehouse: a row per question, its
    bare-DuckDB replay and run-id-only form beside it, EXPLAIN ANALYZE of each under profiles/."""
    done, data = _quick(tmp_path, "warehouse")
    assert {row["id"] for row in data["rows"]} == ROWS_OF_WAREHOUSE
    raw = data["raw"]["warehouse"]
    for job, times in raw["timings_s"].items():
        assert raw["bare_s"][job] and raw["by_run_id_s"][job] and times, job
        profile = (tmp_path / "results" / "profiles" / f"warehouse-{job}.txt").read_text()
        assert profile.count("## sql/") == len(raw["statements"][job]), job
    assert "evalwh / bare" in done.stdout


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_lake_copy_of_the_warehouse_is_made_once_and_asked_every_question(
    tmp_path: Path,
) -> None:
    """The lake group's `warehouse` part (issue 50) on the tiny synthetic warehouse: the copy
    is pushed once and cached (a second run restores it: same copy, no push), its data files
    keep run order (no run_key range overlaps the previous file's), and every question of the
    warehouse group has a row, a bare replay on the lake and a profile."""
    from tests.fakes.lake import missing, pg_bin

    if pg_bin() is None:
        missing("PostgreSQL is not installed (apt-get install postgresql)")
    runs = [_quick(tmp_path, "lake", "--lake-parts", "warehouse") for _ in range(2)]
    first, second = (data["raw"]["lake"]["warehouse"] for _, data in runs)
    assert second["copy"] == first["copy"]  # restored from the cache, not pushed again
    copy = first["copy"]
    assert copy["rows"]["scores"] == second["rows"]["scores"] == 70_000
    assert {t: (f["rows"], f["overlaps"]) for t, f in copy["files"].items()} == {
        "cases": (7_000, 0),
        "scores": (70_000, 0),
    }
    ids = {row["id"] for row in runs[1][1]["rows"]}
    assert ids == {"lake-wh-copy"} | {f"lake-{i}" for i in ROWS_OF_WAREHOUSE}
    for job, times in second["timings_s"].items():
        assert second["bare_s"][job] and times, job
        profile = tmp_path / "results" / "profiles" / f"lake-warehouse-{job}.txt"
        assert profile.read_text().count("## sql/") == len(second["statements"][job]), job
