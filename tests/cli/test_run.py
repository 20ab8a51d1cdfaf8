"""`evalwh run` and `evalwh validate` end to end through the real command in subprocesses:
the matrix it prints, the store it writes, --json, --dry-run, the gate's exit code, the
default config, and the API keys checked before anything is called."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import polars as pl

import evalwh
from tests.builders import needs_anthropic_key
from tests.conftest import run_cli
from tests.fakes.servers import FakeLLMServer, error


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
        str(work / ".evalwh" / "exports" / "scores"),
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


def test_dry_run_calls_nothing_and_writes_nothing(quickstart: Path, tmp_path: Path) -> None:
    result = run_cli("run", str(quickstart), "--dry-run", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "48 request(s): 2 variant(s) × 2 model(s) × 12 case(s)" in result.stdout
    assert "[user] What is the capital of France?" in result.stdout
    assert not (tmp_path / ".evalwh").exists()


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


def test_validate_and_default_config(tmp_path: Path) -> None:
    assert run_cli("init", cwd=tmp_path).returncode == 0
    result = run_cli("validate", cwd=tmp_path)  # ./eval.yaml by default
    assert result.returncode == 0 and "valid" in result.stdout and "6 request(s)" in result.stdout
    assert run_cli("-c", "eval.yaml", "validate", "--json", cwd=tmp_path).returncode == 0


def test_run_with_an_unknown_baseline_is_a_usage_error(quickstart: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    evalwh.run_eval(quickstart, output_dir=out)
    result = run_cli("run", str(quickstart), "-o", str(out), "--baseline", "nope")
    assert result.returncode == 2 and "no run matches 'nope'" in result.stderr
    assert len(evalwh.open_warehouse(out / "warehouse.duckdb").runs()) == 1  # nothing ran
    no_pin = run_cli("show", "baseline", "-o", str(out))
    assert no_pin.returncode == 2 and "no baseline is pinned yet" in no_pin.stderr


def test_validate_and_dry_run_exit_2_naming_the_key_and_pass_with_fake(tmp_path: Path) -> None:
    path = needs_anthropic_key(tmp_path)
    env = {"ANTHROPIC_API_KEY": ""}  # an empty value counts as unset
    for command in (["validate"], ["run", "--dry-run"], ["run"]):
        done = run_cli(*command, str(path), cwd=tmp_path, env=env)
        assert done.returncode == 2, (command, done.stdout, done.stderr)
        assert f"{path}:2:5 models[0]: claude (anthropic) needs ANTHROPIC_API_KEY" in done.stderr
        assert "fix: set it in the environment" in done.stderr
    faked = run_cli("validate", str(path), "--fake", cwd=tmp_path, env=env)
    assert faked.returncode == 0, faked.stderr
    assert "valid" in faked.stdout
    # --json: the error as data, each model with its variable and place
    as_json = run_cli("--json", "validate", str(path), cwd=tmp_path, env=env)
    assert as_json.returncode == 2
    missing = json.loads(as_json.stdout)["missing"]
    assert [(m["model"], m["names"], m["line"]) for m in missing] == [
        ("claude", ["ANTHROPIC_API_KEY"], 2)
    ]


def test_a_failed_run_prints_the_cause_its_errors_name(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    server.default = error(401, "invalid x-api-key", error_type="authentication_error")
    path = needs_anthropic_key(tmp_path)
    path.write_text(
        path.read_text().replace(
            "claude-sonnet-4-5}", f"claude-sonnet-4-5, base_url: '{server.url}'}}"
        )
    )
    env = {"ANTHROPIC_API_KEY": "sk-test-a-key-the-server-refuses"}
    done = run_cli("run", str(path), cwd=tmp_path, env=env)
    assert done.returncode == 3, done.stderr
    said = " ".join(done.stderr.split())  # a long line wraps
    assert "error: the run failed: too many requests errored (1 of 1 cells" in said
    assert (
        "failed: the API key in ANTHROPIC_API_KEY was refused (HTTP 401): check its value; then "
        f"re-run the errored cells with `evalwh run {path} --retry-errors " in said
    )
    assert "once the endpoint is back" not in said
