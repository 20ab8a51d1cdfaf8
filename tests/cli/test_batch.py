"""`evalwh batch status|wait|cancel RUN` on a batch run stopped while its jobs run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalwh import api
from evalwh.engine.signals import RunInterrupted
from evalwh.providers.batch_mock import submitted_jobs
from tests.builders import batch_config, no_pause, stop_at_first_wait
from tests.conftest import run_cli


def stopped_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, polls: int) -> str:
    monkeypatch.setenv("EVALWH_BATCH_POLL_S", "0")
    config = batch_config(tmp_path, n_cases=6, script=f"polls: {polls}, max_requests: 4")
    stop_at_first_wait(monkeypatch)
    with pytest.raises(RunInterrupted) as stopped:
        api.run_eval(config)
    monkeypatch.setattr("evalwh.engine.batch.pause", no_pause)
    return stopped.value.run_id


def test_status_shows_the_jobs_and_wait_polls_them_until_they_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = stopped_run(tmp_path, monkeypatch, polls=3)
    shown = run_cli("batch", "status", run_id)
    assert shown.returncode == 0, shown.stderr
    assert "2 job(s) (2 running), 0/6 request(s) done" in shown.stdout
    waited = run_cli("batch", "wait", run_id)
    assert waited.returncode == 0, waited.stderr
    assert [job["polls"] for job in submitted_jobs(tmp_path / "jobs")] == [3, 3]
    assert "2 ended" in waited.stdout and f"--resume {run_id}" in waited.stderr
    data = json.loads(run_cli("batch", "status", run_id, "--json").stdout)
    assert [j["state"] for j in data["jobs"]] == ["ended", "ended"] and data["open"] == 0


def test_cancel_stops_the_open_jobs_and_a_resume_stores_them_as_cancelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = stopped_run(tmp_path, monkeypatch, polls=5)
    done = run_cli("batch", "cancel", run_id, "--json")
    assert done.returncode == 0, done.stderr
    assert [j["state"] for j in json.loads(done.stdout)["jobs"]] == ["cancelled", "cancelled"]
    config = tmp_path / "eval.yaml"
    result = api.run_eval(config, resume=run_id)
    assert result.totals["n"] == 6 and len(submitted_jobs(tmp_path / "jobs")) == 2
    kinds = api.open_warehouse(result.warehouse).sql(
        f"SELECT DISTINCT error_kind FROM cases WHERE run_id = '{run_id}'"
    )
    assert kinds.to_pylist() == [{"error_kind": "batch_cancelled"}]


def test_run_batch_asks_every_model_with_a_batch_api_and_says_the_batch_estimate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.builders import eval_config

    monkeypatch.setenv("EVALWH_BATCH_POLL_S", "0")
    models = (
        f"  - {{id: m, provider: mock, batch_dir: '{tmp_path / 'jobs'}', "
        "price: {input_per_mtok: 1, output_per_mtok: 2}}"
    )
    config = eval_config(tmp_path, models, n_cases=3)
    done = run_cli("run", str(config), "--batch")
    assert done.returncode == 0, done.stderr
    assert "; batch: about $" in done.stderr and "(live $" in done.stderr
    assert "batch: 1 job(s) (1 ended), 3/3 request(s) done" in done.stderr
    assert [len(j["lines"]) for j in submitted_jobs(tmp_path / "jobs")] == [3]
