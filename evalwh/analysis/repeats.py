"""Statistics over repeated samples of a case: pass@k, pass^k, spread, flaky cases."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalwh.warehouse.reading import one_connection

if TYPE_CHECKING:
    import pyarrow as pa

    from evalwh.warehouse.store import Warehouse


def repeat_stats(store: Warehouse, run_id: str) -> pa.Table:
    """``sql/repeats.sql``: pass@k and pass^k per cell and overall for k = 1..repeats."""
    return store.query("repeats", run_id=run_id)


def flaky_cases(store: Warehouse, run_id: str) -> pa.Table:
    """``sql/flaky.sql``: the cases whose repeats disagree on pass."""
    return store.query("flaky", run_id=run_id)


@one_connection
def repeats_report(store: Warehouse, run_id: str) -> dict[str, Any]:
    """Both, JSON-ready: ``{"repeats": max repeats per case, "stats": [...], "flaky": [...]}``."""
    stats = repeat_stats(store, run_id).to_pylist()
    top = max((row["max_repeats"] for row in stats), default=0)
    return {"repeats": top, "stats": stats, "flaky": flaky_cases(store, run_id).to_pylist()}
