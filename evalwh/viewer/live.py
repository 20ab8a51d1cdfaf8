"""The live tail of a run, as server-sent events: ``progress`` (answers stored of planned,
passes, errors, status) and ``rows`` (the answers stored since the last event).

Each poll reads the progress and the new rows on one read connection and closes it (waiting,
with retries, while the run's writer holds the file for a flush), so the writer is never
blocked for longer than one poll's three small queries. The stream ends with a last ``progress`` once the run is no longer live.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalwh.warehouse.store import Warehouse

POLL_S = 0.5  # between two polls of a live run: rows show within 2 s
KEEPALIVE_S = 15.0  # a comment line this often keeps proxies from closing the stream


def _json(value: Any) -> str:
    def encode(v: Any) -> Any:
        return v.isoformat() if isinstance(v, (datetime, date)) else str(v)

    return json.dumps(value, default=encode, separators=(",", ":"))


def event(name: str, data: Any) -> str:
    return f"event: {name}\ndata: {_json(data)}\n\n"


async def tail(
    store: Warehouse,
    run_id: str,
    disconnected: Callable[[], Any],
    *,
    poll_s: float = POLL_S,
) -> AsyncIterator[str]:
    """The events of run ``run_id`` until it is no longer live or the client goes away."""
    import anyio

    from evalwh.viewer.pages import new_rows, progress

    def poll(after: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        with store.reading():
            return progress(store, run_id), new_rows(store, run_id, after)

    after: Any = None
    quiet = 0.0
    while True:
        state, rows = await anyio.to_thread.run_sync(poll, after)
        yield event("progress", state)
        if rows:
            after = rows[-1]["created_at"]
            yield event("rows", rows)
        if not state["live"] or await disconnected():
            return
        await anyio.sleep(poll_s)
        quiet += poll_s
        if quiet >= KEEPALIVE_S:
            quiet = 0.0
            yield ": keepalive\n\n"
