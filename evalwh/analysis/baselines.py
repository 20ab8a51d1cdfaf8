"""Named baselines: a name pinned to a run, usable wherever a run reference is."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from evalwh.errors import UsageError

if TYPE_CHECKING:
    from evalwh.warehouse.store import Warehouse

DEFAULT_NAME = "baseline"
NAME = re.compile(r"^[A-Za-z][A-Za-z0-9._-]{0,99}$")
RESERVED = {"latest"}


def check_name(name: str) -> str:
    if name in RESERVED or not NAME.match(name):
        raise UsageError(
            f"bad baseline name {name!r}: start with a letter, then letters, digits, '.', '_' "
            "or '-' (and not 'latest')"
        )
    return name


def list_baselines(store: Warehouse) -> list[dict[str, Any]]:
    """Every pinned name with its run and that run's pass rate and n (sql/baselines.sql)."""
    if not store.exists:
        return []
    rows: list[dict[str, Any]] = store.query("baselines").to_pylist()
    return rows


def pinned(store: Warehouse, name: str) -> dict[str, Any] | None:
    """The baseline row for ``name``, or None when nothing is pinned under it."""
    return next((row for row in list_baselines(store) if row["name"] == name), None)


def set_baseline(store: Warehouse, ref: str, name: str = DEFAULT_NAME) -> dict[str, Any]:
    """Pin ``name`` to the run ``ref`` resolves to (replacing an earlier pin of that name)."""
    from evalwh.warehouse.connect import write_connection

    check_name(name)
    run_id = store.resolve(ref)
    previous = pinned(store, name)
    with write_connection(store.path) as con:
        con.execute("INSERT OR REPLACE INTO baselines VALUES (?, ?, now())", [name, run_id])
    row = pinned(store, name) or {}
    return {**row, "previous_run_id": previous["run_id"] if previous else None}


def remove_baseline(store: Warehouse, name: str) -> dict[str, Any]:
    """Unpin ``name``; the run itself stays."""
    from evalwh.warehouse.connect import write_connection

    row = pinned(store, name)
    if row is None:
        known = ", ".join(r["name"] for r in list_baselines(store)) or "none"
        raise UsageError(f"no baseline named {name!r} (pinned: {known})")
    with write_connection(store.path) as con:
        con.execute("DELETE FROM baselines WHERE name = ?", [name])
    return row
