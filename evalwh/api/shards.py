"""Concluding a sharded run: ``evalwh finish RUN`` (docs/scale-out.md).

The shards of ``evalwh run eval.yaml --shard K/N --run-id RUN`` only append rows; the last one
to finish concludes the run. When shards end on machines that cannot tell which is last (a CI
matrix whose jobs all fail fast, say), a final job calls :func:`finish_run`: it moves the run
to ``exporting`` in one transaction (so of two finishers one wins), writes the export, the
final status, and judges the gate once, with the thresholds of the run's own config snapshot.

    result = evalwh.api.shards.finish_run("nightly-42")
    result.exit_code      # 0 passed, 1 a threshold failed, 3 too many errors
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalwh.api.run import RunResult, _config, conclude, settings_for
from evalwh.config.model import EvalConfig
from evalwh.errors import UsageError


def finish_run(
    run: str,
    *,
    partial: bool = False,
    baseline: str | None = None,
    config: str | Path | EvalConfig | None = None,
    output_dir: str | Path | None = None,
    warehouse: str | Path | None = None,
) -> RunResult:
    """Conclude the sharded run ``run`` (an id, prefix or label): export, status and gate.

    Raises UsageError (exit code 2) when the run is not sharded, when a shard has not stored
    its cells yet (unless ``partial``), or when another process concluded it already."""
    from evalwh.warehouse.shards import claim_conclusion
    from evalwh.warehouse.store import Warehouse

    settings = settings_for(
        _config(config) if config else None, output_dir=output_dir, warehouse=warehouse
    )
    store = Warehouse(settings.warehouse, stale_after_s=settings.stale_after_s)
    run_id = store.resolve(run)
    row = store.run_row(run_id)
    filters = _json(row.get("filters"))
    if not filters.get("shards"):
        raise UsageError(
            f"run {run_id} is not a sharded run: it concluded itself when it ended "
            "(`evalwh gate RUN` judges its thresholds again)"
        )
    token = claim_conclusion(settings.warehouse, run_id, partial=partial)
    if token is None:
        raise UsageError(
            f"run {run_id} is already {store.run_row(run_id)['status']}: it was concluded (and its gate judged) "
            "by another process; `evalwh gate RUN` judges it again"
        )
    baseline_id = store.resolve(baseline) if baseline else None
    raw = _json(row.get("config_snapshot"))
    return conclude(settings, run_id, raw, status=None, token=token, baseline_id=baseline_id)


def _json(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            loaded = json.loads(value)
        except ValueError:
            return {}
        return loaded if isinstance(loaded, dict) else {}
    return value if isinstance(value, dict) else {}
