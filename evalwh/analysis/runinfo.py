"""What a stored run was configured with: its snapshot's thresholds and analysis options."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalwh.warehouse.store import Warehouse

RUN_FIELDS = ("run_id", "label", "suite", "status", "started_at", "finished_at", "n_planned")


def snapshot(store: Warehouse, run_id: str) -> dict[str, Any]:
    """The config a run was made with (``runs.config_snapshot``), as a dict ({} if none)."""
    return snapshot_of(store.run_row(run_id))


def snapshot_of(row: dict[str, Any]) -> dict[str, Any]:
    return _json_of(row.get("config_snapshot"))


def commit_retries(row: dict[str, Any]) -> int:
    """How many conflicting lake commits the run's writer retried (``commit_retries`` in the
    totals stored when it concluded; 0 when none were, or the run predates the count)."""
    value = _json_of(row.get("totals")).get("commit_retries")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _json_of(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def brief_of(row: dict[str, Any]) -> dict[str, Any]:
    """The identifying fields of a run row, for headers and JSON."""
    return {key: row.get(key) for key in RUN_FIELDS}


def cluster_key(config: dict[str, Any]) -> str | None:
    """``analysis.cluster`` of a config (raw or snapshot), if any."""
    analysis = config.get("analysis") or {}
    value = analysis.get("cluster") if isinstance(analysis, dict) else None
    return str(value) if value else None


def split_keys(by: str | Sequence[str] | None) -> list[str]:
    """``"lang,length"`` or ``["lang", "length"]`` -> ``["lang", "length"]`` (no blanks)."""
    if by is None:
        return []
    parts = by.split(",") if isinstance(by, str) else [p for item in by for p in item.split(",")]
    return list(dict.fromkeys(p.strip() for p in parts if p.strip()))
