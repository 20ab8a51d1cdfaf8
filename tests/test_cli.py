"""End to end through the real `evalwh` command in subprocesses, into temporary warehouses."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import polars as pl

from tests.conftest import run_cli, write


def test_quickstart_end_to_end(quickstart: Path, tmp_path: Path) -> None:
    work = tmp_path / "w"
    work.mkdir()
    result = run_cli("run", str(quickstart), cwd=work)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    # the matrix: every variant x model with pass rate, interval, n, score, latency, cost
    for header in ("variant", "model", "pass", "95% CI", "n", "score", "p50", "p95", "cost"):
        assert header in out
    for cell in ("terse", "reasoned", "mock-large", "mock-small"):
        assert cell in out
    assert "overall:" in out and "(33/48)" in out
    assert "progress: 48/48" in result.stderr  # plain progress when not on a terminal

    db = work / ".evalwh" / "warehouse.duckdb"
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM cases").fetchone() == (48,)
        (n_scores,) = con.execute("SELECT count(*) FROM scores").fetchone()  # type: ignore[misc]
        assert n_scores == 46 * 3  # 2 errored cases have no criterion rows
        assert con.execute("SELECT status FROM runs").fetchone() == ("completed",)
    frame = pl.scan_parquet(
        str(work / ".evalwh" / "exports" / "*" / "scores.parquet"),
        hive_partitioning=True,
        try_parse_hive_dates=False,
    ).collect()
    assert frame.height == n_scores


def test_json_output_matches_the_store(quickstart: Path, tmp_path: Path) -> None:
    run = run_cli("run", str(quickstart), "--json", "--label", "j", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert data["status"] == "completed" and data["gate_passed"] is True
    show = run_cli("--json", "show", "latest", cwd=tmp_path)
    shown = json.loads(show.stdout)
    assert shown["run"]["run_id"] == data["run_id"] and shown["run"]["label"] == "j"
    assert shown["summary"] == data["summary"]
    assert shown["totals"] == data["totals"]
    listed = json.loads(run_cli("list", "--json", cwd=tmp_path).stdout)
    assert listed["runs"][0]["run_id"] == data["run_id"] and listed["runs"][0]["n"] == 48


def test_show_failures_and_one_case(quickstart: Path, tmp_path: Path) -> None:
    assert run_cli("run", str(quickstart), "-q", cwd=tmp_path).returncode == 0
    failures = run_cli("show", "latest", "--failures", cwd=tmp_path)
    assert failures.returncode == 0
    assert "ERROR math-4" in failures.stdout and "model overloaded (simulated)" in failures.stdout
    assert "thresholds: all 6 passed" in failures.stdout
    headers = [
        line.split()[0]
        for line in failures.stdout.splitlines()
        if line.startswith(("PASS ", "FAIL ", "ERROR "))
    ]
    assert headers and "PASS" not in headers and headers.count("ERROR") == 2
    one = run_cli("show", "latest", "--case", "geo-3", cwd=tmp_path)
    assert one.returncode == 0
    assert one.stdout.count(" geo-3 ") == 4  # every variant x model of that case
    assert "[user] What is the capital of Australia?" in one.stdout
    missing = run_cli("show", "latest", "--case", "nope", cwd=tmp_path)
    assert missing.returncode == 2 and "no case 'nope'" in missing.stderr


def test_dry_run_calls_nothing_and_writes_nothing(quickstart: Path, tmp_path: Path) -> None:
    result = run_cli("run", str(quickstart), "--dry-run", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "48 request(s): 2 variant(s) × 2 model(s) × 12 case(s)" in result.stdout
    assert "[user] What is the capital of France?" in result.stdout
    assert not (tmp_path / ".evalwh").exists()


def test_quiet_and_no_color(quickstart: Path, tmp_path: Path) -> None:
    result = run_cli("-q", "run", str(quickstart), cwd=tmp_path, env={"NO_COLOR": "1"})
    assert result.returncode == 0
    assert result.stderr == ""
    assert "\x1b[" not in result.stdout


def test_failing_threshold_exits_1_and_says_why(quickstart: Path, tmp_path: Path) -> None:
    text = quickstart.read_text().replace("min_pass_rate: 0.5", "min_pass_rate: 0.9")
    quickstart.write_text(text)
    result = run_cli("run", str(quickstart), cwd=tmp_path)
    assert result.returncode == 1
    assert "FAIL pass_rate >= 0.9 for run: 0.6875 (n=48), off by 0.2125" in result.stdout
    # the run itself is stored and complete
    assert (
        json.loads(run_cli("--json", "list", cwd=tmp_path).stdout)["runs"][0]["status"]
        == "completed"
    )


def test_init_scaffolds_a_working_eval(tmp_path: Path) -> None:
    assert run_cli("init", "demo", cwd=tmp_path).returncode == 0
    result = run_cli("run", "demo/eval.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "plain" in result.stdout and "friendly" in result.stdout
    again = run_cli("init", "demo", cwd=tmp_path)
    assert again.returncode == 2 and "--force" in again.stderr


def test_validate_and_default_config(tmp_path: Path) -> None:
    assert run_cli("init", cwd=tmp_path).returncode == 0
    result = run_cli("validate", cwd=tmp_path)  # ./eval.yaml by default
    assert result.returncode == 0 and "valid" in result.stdout and "6 request(s)" in result.stdout
    assert run_cli("-c", "eval.yaml", "validate", "--json", cwd=tmp_path).returncode == 0


def test_list_on_an_empty_folder(tmp_path: Path) -> None:
    result = run_cli("list", cwd=tmp_path)
    assert result.returncode == 0 and "no runs yet" in result.stderr
    assert not (tmp_path / ".evalwh").exists()
    show = run_cli("show", "latest", cwd=tmp_path)
    assert show.returncode == 2 and "no warehouse" in show.stderr


def test_usage_error_exit_code(tmp_path: Path) -> None:
    result = run_cli("run", "--concurrency", "0", cwd=tmp_path)
    assert result.returncode == 2


SLOW_MODEL = """\
settings: {concurrency: 4, batch_size: 10}
models:
  - id: slow
    provider: mock
    mock: {latency_ms: 40}
variants:
  - id: v
    messages: [{role: user, content: "{{ q }}"}]
cases:
  - file: cases.jsonl
scorecard:
  - {name: exact, type: exact}
"""


def _slow_eval(tmp_path: Path, n: int) -> Path:
    lines = "\n".join(
        json.dumps({"id": f"c{i:04d}", "vars": {"q": str(i)}, "expected": str(i)}) for i in range(n)
    )
    write(tmp_path / "cases.jsonl", lines + "\n")
    return write(tmp_path / "eval.yaml", SLOW_MODEL)


def _count(db: Path) -> int:
    with duckdb.connect(str(db), read_only=True) as con:
        return int(con.execute("SELECT count(*) FROM cases").fetchone()[0])  # type: ignore[index]


def test_sigkill_keeps_flushed_rows_and_readers_work_during_a_run(tmp_path: Path) -> None:
    # 2,000 x 40 ms / 4 = ~20 s: the kill comes long before the end even on a loaded machine
    cfg = _slow_eval(tmp_path, 2000)
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalwh.cli.main", "run", str(cfg), "-q"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    db = tmp_path / ".evalwh" / "warehouse.duckdb"
    try:
        deadline = time.monotonic() + 60
        seen = 0
        while time.monotonic() < deadline:
            listed = run_cli("--json", "list", cwd=tmp_path)  # another process reads mid-run
            if listed.returncode == 0 and listed.stdout.strip():
                runs = json.loads(listed.stdout)["runs"]
                if runs and runs[0]["n"] >= 40:
                    assert runs[0]["status"] == "running"
                    seen = runs[0]["n"]
                    break
            time.sleep(0.1)
        assert seen >= 40, "the run never showed flushed rows to a reader"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    stored = _count(db)
    assert 40 <= stored < 2000
    listed = json.loads(run_cli("--json", "list", cwd=tmp_path).stdout)["runs"][0]
    assert listed["status"] == "interrupted"  # its process is gone
    assert listed["n"] == stored and listed["n_planned"] == 2000
    shown = run_cli("show", "latest", cwd=tmp_path)
    assert f"interrupted ({stored}/2000 cases stored)" in shown.stdout
