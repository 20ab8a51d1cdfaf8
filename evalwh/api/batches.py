"""A run's batch jobs (docs/batch.md): ``evalwh batch status``, ``batch wait`` and
``batch cancel``.

    evalwh.api.batches.status("latest")     # each job's latest state
    evalwh.api.batches.wait("latest")       # poll until every job has ended
    evalwh.api.batches.cancel("latest")     # ask the providers to cancel the open jobs

A job is reached through the model that submitted it (a judge's model for a judge job), as
the run's stored config snapshot describes it (its provider, base URL and key variable): the same key must be set. Waiting
records each state that changed, as the run would; storing the answers is the run's own
work: ``evalwh run CONFIG --resume RUN`` reads the ended jobs.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalwh.errors import UsageError

OPEN_STATES = ("running", "cancelling")


def _view(config: Any, output_dir: Any, warehouse: Any) -> Any:
    from evalwh.api.view import open_warehouse

    return open_warehouse(config=config, output_dir=output_dir, warehouse=warehouse)


def status(
    run: str,
    *,
    config: str | Path | None = None,
    output_dir: str | Path | None = None,
    warehouse: str | Path | None = None,
) -> dict[str, Any]:
    """The run's jobs, each as its latest ``batches`` row (sql/batches_latest.sql), and how
    many are still open."""
    from evalwh.warehouse.batches import latest_states

    store = _view(config, output_dir, warehouse).store
    run_id = store.resolve(run)
    jobs = latest_states(store, run_id)
    return {
        "run_id": run_id,
        "jobs": [_job_dict(j) for j in jobs],
        "open": sum(j.state in OPEN_STATES for j in jobs),
    }


def _job_dict(job: Any) -> dict[str, Any]:
    out = dict(job.__dict__)
    for key in ("submitted_at", "ended_at", "polled_at"):
        out[key] = out[key].isoformat() if out[key] is not None else None
    return out


def wait(
    run: str,
    *,
    config: str | Path | None = None,
    output_dir: str | Path | None = None,
    warehouse: str | Path | None = None,
    on_poll: Callable[[list[Any]], None] | None = None,
) -> dict[str, Any]:
    """Poll the run's open jobs with the run's backoff until every one has ended, recording
    each state that changed. Refused while the run itself is live (it polls them)."""
    from evalwh.engine.batch import BatchFeed, OpenJob

    view = _view(config, output_dir, warehouse)
    store = view.store
    run_id = store.resolve(run)
    row = store.run_row(run_id)
    if row.get("status") in ("running", "exporting"):
        raise UsageError(
            f"run {run_id} is live (pid {row.get('pid')} on {row.get('host')}): it polls its "
            "own jobs; wait for it, or stop it and wait here"
        )
    jobs = _open_jobs(store, run_id, row)

    async def main() -> None:
        feed = BatchFeed(run_id, view.path, {}, on_poll=on_poll)
        for job_row, api, provider in jobs:
            feed.jobs[job_row.job_id] = OpenJob(job_row, api, provider.spec, [])
            feed.all_jobs.append(job_row)
        try:
            await feed.wait_ended()
        finally:
            for _, _, provider in jobs:
                await provider.aclose()

    asyncio.run(main())
    return status(run_id, config=config, output_dir=output_dir, warehouse=warehouse)


def cancel(
    run: str,
    *,
    config: str | Path | None = None,
    output_dir: str | Path | None = None,
    warehouse: str | Path | None = None,
) -> dict[str, Any]:
    """Ask the providers to cancel the run's open jobs; record the state each reports. The
    requests that finished before the cancel keep their answers (``--resume`` stores them)."""
    from evalwh.engine.batch import record_state_of

    view = _view(config, output_dir, warehouse)
    store = view.store
    run_id = store.resolve(run)
    jobs = _open_jobs(store, run_id, store.run_row(run_id))

    async def main() -> None:
        try:
            for job_row, api, _ in jobs:
                state = await api.cancel(job_row.job_id)
                await asyncio.to_thread(record_state_of, view.path, job_row, state)
        finally:
            for _, _, provider in jobs:
                await provider.aclose()

    asyncio.run(main())
    return status(run_id, config=config, output_dir=output_dir, warehouse=warehouse)


def _open_jobs(store: Any, run_id: str, row: dict[str, Any]) -> list[tuple[Any, Any, Any]]:
    """The run's open jobs, each with the batch API and the provider of the model that
    submitted it (built from the run's stored config snapshot; closed by the caller)."""
    from evalwh import providers
    from evalwh.config.loader import judge_model_specs, model_specs
    from evalwh.warehouse.batches import latest_states

    snapshot = row.get("config_snapshot")
    data = json.loads(snapshot) if isinstance(snapshot, str) else snapshot or {}
    root = Path(str(row["config_path"])).parent if row.get("config_path") else None
    models = model_specs(data, root) if data.get("models") else []
    # a judge's jobs (judges_batch) are its model's: reached through it the same way
    specs: dict[tuple[str, str], Any] = {}
    for model in [*models, *judge_model_specs(data, root)]:
        specs.setdefault((model.id, model.provider), model)
    found = []
    for job in latest_states(store, run_id):
        if job.state not in OPEN_STATES:
            continue
        spec = specs.get((job.model, job.provider))
        if spec is None:
            raise UsageError(
                f"run {run_id}'s stored config has no model '{job.model}' of provider "
                f"{job.provider}, which submitted batch job {job.job_id}"
            )
        provider = providers.create(spec)
        found.append((job, provider.batch_api(), provider))
    return found
