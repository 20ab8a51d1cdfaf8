"""Case metadata keys as dimensions: which keys exist, and a run cut by some of them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from evalwh.errors import UsageError
from evalwh.warehouse.reading import one_connection

if TYPE_CHECKING:
    import pyarrow as pa

    from evalwh.warehouse.store import Warehouse


def metadata_keys(store: Warehouse, run_ids: Sequence[str]) -> list[str]:
    """The metadata keys found in the case rows of these runs, sorted."""
    table = store.query("metadata_keys", run_ids=list(run_ids))
    return [str(k) for k in table.column("key").to_pylist()]


def check_keys(store: Warehouse, run_ids: Sequence[str], keys: Sequence[str]) -> None:
    """UsageError when a key is in no case's metadata of these runs (a typo, most likely)."""
    known = metadata_keys(store, run_ids)
    unknown = [k for k in keys if k not in known]
    if unknown:
        hint = ", ".join(known) if known else "none: the cases carry no metadata"
        raise UsageError(
            f"no case has the metadata key(s) {', '.join(repr(k) for k in unknown)} "
            f"(known keys: {hint})"
        )


@one_connection
def slice_run(store: Warehouse, run_id: str, keys: Sequence[str]) -> pa.Table:
    """``sql/slice.sql``: n and pass rate (with its 95% interval) per combination of the keys'
    values."""
    if not keys:
        raise UsageError("--by needs at least one metadata key, e.g. --by topic,difficulty")
    check_keys(store, [run_id], keys)
    return store.query("slice", run_id=run_id, keys=list(keys))
