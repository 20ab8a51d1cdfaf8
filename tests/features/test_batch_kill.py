"""A batch run killed (SIGKILL) while it waits on its jobs: the jobs keep running, and
`--resume` waits on them, submitting nothing again (the mock's job files are the provider's
record of what was submitted)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalwh import api
from evalwh.providers.batch_mock import submitted_jobs
from tests.builders import batch_config


@pytest.mark.slow
def test_a_killed_batch_run_resumes_on_its_jobs_and_submits_nothing_new(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "jobs"
    # jobs that never end by themselves: the test ends them after the kill
    config = batch_config(tmp_path, n_cases=30, script="max_requests: 20, polls: 1000000")
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalwh.cli.main", "run", str(config), "-q"],
        cwd=tmp_path,
        env={**os.environ, "EVALWH_BATCH_POLL_S": "0.05"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # a job is polled only once it is recorded: both recorded, the run waits on them
        while len(jobs := submitted_jobs(folder)) < 2 or any(j["polls"] < 1 for j in jobs):
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    for path in folder.glob("*.json"):  # the provider ends the jobs while nobody waits
        job = json.loads(path.read_text())
        path.write_text(json.dumps({**job, "polls": 1000000}))
    monkeypatch.setenv("EVALWH_BATCH_POLL_S", "0")
    out = tmp_path / ".evalwh"  # where the killed run wrote (its working folder's)
    (run,) = api.open_warehouse(out / "warehouse.duckdb").runs(limit=5)
    result = api.run_eval(config, resume=run["run_id"], output_dir=out)
    assert result.status == "completed" and result.totals["n"] == 30
    assert result.totals["n_passed"] == 30
    assert len(submitted_jobs(folder)) == 2  # nothing submitted again
