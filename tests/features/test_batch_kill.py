"""A batch run killed (SIGKILL) while it waits on its jobs: the jobs keep running, and
`--resume` waits on them, submitting nothing again (the mock's job files are the provider's
record of what was submitted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalwh import api
from evalwh.providers.batch_mock import submitted_jobs
from tests.builders import batch_config, killed_when


@pytest.mark.slow
def test_a_killed_batch_run_resumes_on_its_jobs_and_submits_nothing_new(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "jobs"
    # jobs that never end by themselves: the test ends them after the kill
    config = batch_config(tmp_path, n_cases=30, script="max_requests: 20, polls: 1000000")
    # a job is polled only once it is recorded: both recorded, the run waits on them
    killed_when(
        ["run", str(config), "-q"],
        tmp_path,
        lambda: len(jobs := submitted_jobs(folder)) >= 2 and all(j["polls"] >= 1 for j in jobs),
    )
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
