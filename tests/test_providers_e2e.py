"""Real providers through the whole pipeline against local fake servers (loopback only)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import pytest

import evalwh
from evalwh.errors import ConfigError, CostRefusedError, UsageError
from tests.conftest import run_cli, write
from tests.fakes.servers import FakeLLMServer, Faults, RecordedRequest, error, reply

SCORECARD = """
scorecard:
  - {name: echo, type: contains}
"""


def _cases(folder: Path, n: int) -> None:
    rows = (
        json.dumps({"id": f"c{i:04d}", "vars": {"q": f"question {i}"}, "expected": f"question {i}"})
        for i in range(n)
    )
    write(folder / "cases.jsonl", "\n".join(rows) + "\n")


def eval_for(
    folder: Path, model_block: str, n: int, concurrency: int = 32, extra: str = ""
) -> Path:
    _cases(folder, n)
    return write(
        folder / "eval.yaml",
        f"""\
settings: {{concurrency: {concurrency}, batch_size: 50}}
models:
{model_block}
variants:
  - id: v
    messages:
      - {{role: system, content: "Echo the question."}}
      - {{role: user, content: "{{{{ q }}}}"}}
cases:
  - file: cases.jsonl
{SCORECARD}{extra}""",
    )


def case_of(req: RecordedRequest) -> str:
    if not isinstance(req.body, dict):  # a request cut short by the SIGKILL
        return ""
    messages = req.body.get("messages", [])
    last = messages[-1]["content"]
    text = last if isinstance(last, str) else "".join(p.get("text", "") for p in last)
    return text


@pytest.fixture
def server() -> FakeLLMServer:
    with FakeLLMServer() as s:
        yield s


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_thousand_cases_with_injected_faults(
    provider: str, tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-anthropic-0000")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-openai-0000")
    server.faults = Faults(error_rate=0.05, rate_limit_rate=0.05, retry_after=0.01, seed=7)
    bad = {f"question {i}" for i in (3, 500, 999)}  # permanent failures: 400 for these cases
    server.responder = lambda req: error(400, "prompt rejected") if case_of(req) in bad else None
    url = server.url if provider == "anthropic" else server.openai_url
    model = "claude-3-5-haiku-20241022" if provider == "anthropic" else "gpt-4o-mini"
    block = (
        f"  - {{id: m, provider: {provider}, model: {model}, base_url: '{url}', max_retries: 6}}"
    )
    cfg = eval_for(tmp_path, block, 1000)

    # ~$2.05 at list prices: over the default cap of a run on a paid provider
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out", max_cost=10.0)
    assert result.status == "completed"
    assert result.totals["n"] == 1000  # every case stored
    assert result.totals["n_errors"] == 3
    assert result.stats["retries"] > 50  # ~10% transient faults were retried
    assert result.totals["n_passed"] == 997
    assert result.totals["cost_usd"] > 0  # priced from the shipped table
    wh = evalwh.open_warehouse(tmp_path / "out" / "warehouse.duckdb")
    errors = wh.query("errors", run_id=result.run_id).to_pylist()
    assert len(errors) == 1 and errors[0]["n"] == 3 and errors[0]["error_kind"] == "http"
    assert "HTTP 400" in errors[0]["error"] and "prompt rejected" in errors[0]["error"]
    assert errors[0]["examples"] == ["c0003 v × m", "c0500 v × m", "c0999 v × m"]
    # the run summary names them
    run = run_cli("show", result.run_id, "-o", str(tmp_path / "out"))
    assert "prompt rejected" in run.stdout and "3 case(s)" in run.stdout

    # A rerun of the unchanged config makes no request for cached answers, same scores.
    before = server.count
    again = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert server.count - before == again.stats["requests"] == 3  # only the 3 errors: never cached
    assert again.stats["cache_hits"] == 997
    scores = wh.sql(
        "SELECT run_id, list(score ORDER BY case_id) AS s FROM cases GROUP BY run_id"
    ).to_pylist()
    assert scores[0]["s"] == scores[1]["s"]


def test_repeats_are_rows_and_cache_entries(tmp_path: Path, server: FakeLLMServer) -> None:
    block = f"  - {{id: m, provider: openai-compatible, model: local, base_url: '{server.openai_url}', price: 0}}"
    cfg = eval_for(tmp_path, block, 5)
    first = evalwh.run_eval(cfg, output_dir=tmp_path / "out", repeat=3)
    assert first.totals["n"] == 15 and server.count == 15
    second = evalwh.run_eval(cfg, output_dir=tmp_path / "out", repeat=3)
    assert second.stats["cache_hits"] == 15 and server.count == 15
    with duckdb.connect(str(tmp_path / "out" / "warehouse.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM response_cache").fetchone() == (15,)
        assert con.execute(
            f"SELECT count(DISTINCT repeat) FROM cases WHERE run_id = '{first.run_id}'"
        ).fetchone() == (3,)


def test_no_cache_bypasses_and_refreshes(tmp_path: Path, server: FakeLLMServer) -> None:
    block = f"  - {{id: m, provider: openai-compatible, model: local, base_url: '{server.openai_url}', price: 0}}"
    cfg = eval_for(tmp_path, block, 4)
    evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    server.default = reply("fresh")
    evalwh.run_eval(cfg, output_dir=tmp_path / "out", no_cache=True)
    assert server.count == 8
    third = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert server.count == 8 and third.totals["n_passed"] == 0  # the refreshed answers came back


def test_paid_model_without_a_price_fails_validation(tmp_path: Path) -> None:
    block = "  - {id: m, provider: anthropic, model: claude-unknown-9}"
    cfg = eval_for(tmp_path, block, 1)
    with pytest.raises(
        ConfigError, match="no known price for anthropic model 'claude-unknown-9'"
    ) as exc:
        evalwh.api.validate(cfg)
    assert "price: 0" in str(exc.value)
    local = eval_for(
        tmp_path,
        "  - {id: m, provider: openai-compatible, model: x, base_url: 'http://127.0.0.1:9'}",
        1,
    )
    with pytest.raises(ConfigError, match="no known price"):
        evalwh.api.validate(local)


def test_max_cost_refuses_with_exit_4_and_writes_nothing(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    block = f"  - {{id: m, provider: openai, model: gpt-4o, base_url: '{server.openai_url}', params: {{max_tokens: 1000}}}}"
    cfg = eval_for(tmp_path, block, 100)
    with pytest.raises(CostRefusedError, match="exceeds the maximum"):
        evalwh.run_eval(cfg, output_dir=tmp_path / "out", max_cost=0.01)
    result = run_cli(
        "run", str(cfg), "--max-cost", "0.01", cwd=tmp_path, env={"OPENAI_API_KEY": "k"}
    )
    assert result.returncode == 4 and "estimated cost $1.0" in result.stderr
    settings_cap = run_cli(
        "run", str(cfg), cwd=tmp_path, env={"EVALWH_MAX_COST_USD": "0.5", "OPENAI_API_KEY": "k"}
    )
    assert settings_cap.returncode == 4
    assert (
        server.count == 0
        and not (tmp_path / ".evalwh").exists()
        and not (tmp_path / "out").exists()
    )
    dry = run_cli("run", str(cfg), "--dry-run", cwd=tmp_path)
    assert dry.returncode == 0 and "estimate: 100 call(s), up to ~$1.0" in dry.stdout


def test_key_shaped_string_in_config_is_refused(tmp_path: Path) -> None:
    key = "sk-ant-api03-" + "A" * 40
    block = f"  - {{id: m, provider: mock, mock: {{default: '{key}'}}}}"
    cfg = eval_for(tmp_path, block, 1)
    result = run_cli("run", str(cfg), cwd=tmp_path)
    assert result.returncode == 2 and "looks like an API key" in result.stderr
    assert key not in result.stderr + result.stdout


def test_api_key_never_reaches_the_store(
    tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-proj-" + "Z" * 48
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    server.default = error(401, "bad key", echo_auth=True)  # the server echoes the key back
    block = f"  - {{id: m, provider: openai, model: gpt-4o-mini, base_url: '{server.openai_url}'}}"
    cfg = eval_for(tmp_path, block, 2)
    evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    for file in (tmp_path / "out").rglob("*"):
        if file.is_file():
            assert secret.encode() not in file.read_bytes(), file
    with duckdb.connect(str(tmp_path / "out" / "warehouse.duckdb"), read_only=True) as con:
        (message,) = con.execute("SELECT any_value(error) FROM cases").fetchone()  # type: ignore[misc]
    assert "401" in message and "***" in message


def _run_in_subprocess(cfg: Path, cwd: Path, *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "evalwh.cli.main", "run", str(cfg), "-q", *extra],
        cwd=cwd,
        env={**os.environ},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _stored(db: Path) -> list[tuple[str, int]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT case_id, repeat FROM cases").fetchall()


def test_sigkill_then_resume_is_exact(tmp_path: Path, server: FakeLLMServer) -> None:
    server.latency = 0.02
    block = f"  - {{id: m, provider: openai-compatible, model: local, base_url: '{server.openai_url}', price: 0}}"
    # ~3,000 x 20 ms / 8 = 7.5 s: the kill lands mid-run even on a loaded machine
    cfg = eval_for(tmp_path, block, 3000, concurrency=8)
    db = tmp_path / ".evalwh" / "warehouse.duckdb"
    proc = _run_in_subprocess(cfg, tmp_path)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if db.exists():
            listed = run_cli("--json", "list", cwd=tmp_path)
            runs = json.loads(listed.stdout)["runs"] if listed.returncode == 0 else []
            if runs and runs[0]["n"] >= 100:
                break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    stored_before = set(_stored(db))
    assert 100 <= len(stored_before) < 3000
    asked_before = Counter(case_of(r) for r in server.requests)

    resumed = run_cli("run", str(cfg), "--resume", "latest", "--json", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    data = json.loads(resumed.stdout)
    rows = _stored(db)
    assert len(rows) == 3000 and len(set(rows)) == 3000  # exact, no duplicates
    assert data["status"] == "completed" and data["totals"]["n"] == 3000
    asked_after = Counter(case_of(r) for r in server.requests)
    for case_id, _ in stored_before:
        question = f"question {int(case_id[1:])}"
        assert asked_after[question] == asked_before[question] == 1, case_id  # never asked twice
    listed = json.loads(run_cli("--json", "list", cwd=tmp_path).stdout)["runs"]
    assert len(listed) == 1 and listed[0]["status"] == "completed"


def test_resume_refuses_a_changed_config(tmp_path: Path) -> None:
    cfg = eval_for(tmp_path, "  - {id: m, provider: mock}", 3)
    evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    cfg.write_text(cfg.read_text().replace("Echo the question.", "Echo it."))
    with pytest.raises(UsageError, match="config changed since run"):
        evalwh.run_eval(cfg, output_dir=tmp_path / "out", resume="latest")


def test_retry_errors_reruns_only_the_errored_cells(tmp_path: Path, server: FakeLLMServer) -> None:
    flaky = {"question 1", "question 4"}
    lock = threading.Lock()
    server.responder = lambda req: error(400, "try later") if case_of(req) in flaky else None
    block = f"  - {{id: m, provider: openai-compatible, model: local, base_url: '{server.openai_url}', price: 0}}"
    cfg = eval_for(tmp_path, block, 6)
    first = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert first.totals["n_errors"] == 2 and server.count == 6
    with lock:
        flaky.clear()
    again = evalwh.run_eval(cfg, output_dir=tmp_path / "out", retry_errors=first.run_id)
    assert again.run_id == first.run_id
    assert server.count == 8  # just the two errored cells
    assert (
        again.totals["n"] == 6 and again.totals["n_errors"] == 0 and again.totals["n_passed"] == 6
    )


def uncached_run_with_one_failure(
    tmp_path: Path, server: FakeLLMServer
) -> tuple[Path, Any, set[str]]:
    """Six cells, the second one refused (HTTP 400), the response cache off: a continuation
    that planned more than it should asks the server again, so the count tells."""
    flaky = {"question 2"}
    server.responder = lambda req: error(400, "try later") if case_of(req) in flaky else None
    block = f"  - {{id: m, provider: openai-compatible, model: local, base_url: '{server.openai_url}', price: 0}}"
    cfg = eval_for(tmp_path, block, 6)
    first = evalwh.run_eval(cfg, output_dir=tmp_path / "out", no_cache=True)
    assert first.totals["n_errors"] == 1 and server.count == 6
    return cfg, first, flaky


def test_resume_skips_every_stored_cell_answered_or_failed(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    cfg, first, _ = uncached_run_with_one_failure(tmp_path, server)
    again = evalwh.run_eval(cfg, output_dir=tmp_path / "out", resume=first.run_id, no_cache=True)
    assert server.count == 6
    assert (again.run_id, again.totals["n"], again.totals["n_errors"]) == (first.run_id, 6, 1)


def test_retry_errors_plans_only_the_errored_cells_not_a_cached_rerun(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    cfg, first, flaky = uncached_run_with_one_failure(tmp_path, server)
    flaky.clear()
    again = evalwh.run_eval(
        cfg, output_dir=tmp_path / "out", retry_errors=first.run_id, no_cache=True
    )
    assert server.count == 7
    assert (again.totals["n"], again.totals["n_errors"]) == (6, 0)
