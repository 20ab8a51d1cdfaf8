"""Moving runs between a local warehouse file and a DuckLake warehouse, and keeping the lake
small: ``evalwh lake push``, ``lake pull`` and ``lake maintain`` (docs/scale-out.md).

The lake is the one in ``settings.warehouse`` (a ``ducklake:`` target); the local file is
``<output_dir>/warehouse.duckdb`` unless given. Both copies are keyed by ``run_id``: a run
already present on the other side is skipped, so pushing or pulling twice duplicates nothing.

    evalwh.api.lake.push(since="2026-11-01T0900")   # finished local runs into the lake
    evalwh.api.lake.pull(["nightly-42"])            # lake runs into the local file
    evalwh.api.lake.maintain(expire_days=7)         # compaction and snapshot expiry
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalwh.api.run import _config, settings_for
from evalwh.config.model import EvalConfig
from evalwh.errors import UsageError

if TYPE_CHECKING:
    from evalwh.config.settings import Settings
    from evalwh.warehouse.lake import LakeTarget

# The tables a run owns, copied with it (the response cache travels separately, by hash).
RUN_TABLES = ("runs", "cases", "scores", "pairs", "labels", "turns")
PUSHED_STATES = ("completed", "failed", "stopped")  # a live or interrupted run may still change


@dataclass
class Transfer:
    """What a push or pull did: the runs copied, and the ones skipped with the reason."""

    lake: str
    local: str
    copied: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)  # already on the other side
    unfinished: list[str] = field(default_factory=list)  # push: still running / interrupted
    rows: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _lake(settings: Settings) -> LakeTarget:
    from evalwh.warehouse.lake import LakeTarget

    if not isinstance(settings.warehouse, LakeTarget):
        raise UsageError(
            f"the warehouse is the DuckDB file {settings.warehouse}, not a DuckLake: set "
            "settings.warehouse (or EVALWH_WAREHOUSE) to a ducklake: target first "
            "(docs/scale-out.md)"
        )
    return settings.warehouse


def _local(settings: Settings, path: str | Path | None) -> Path:
    return Path(path).resolve() if path else settings.output_dir / "warehouse.duckdb"


def push(
    *,
    since: str | None = None,
    local: str | Path | None = None,
    config: str | Path | EvalConfig | None = None,
    output_dir: str | Path | None = None,
    warehouse: str | Path | None = None,
) -> Transfer:
    """Copy the finished runs of the local warehouse (those started at or after ``since``, a
    run reference there) into the lake, with their rows and the response cache entries the
    lake lacks. Idempotent: a run already in the lake is skipped."""
    from evalwh.warehouse.connect import read_connection
    from evalwh.warehouse.store import Warehouse
    from evalwh.warehouse.transfer import copy_runs

    settings = settings_for(
        _config(config) if config else None, output_dir=output_dir, warehouse=warehouse
    )
    target, source = _lake(settings), _local(settings, local)
    store = Warehouse(source)
    if not source.exists():
        raise UsageError(f"no local warehouse at {source} to push (give --from FILE)")
    with read_connection(source):  # refuses a file behind this evalwh's schema
        pass
    where = "TRUE"
    params: list[Any] = []
    if since:
        where = "started_at >= (SELECT started_at FROM runs WHERE run_id = ?)"
        params = [store.resolve(since)]
    rows = store.sql(f"SELECT run_id, status FROM runs WHERE {where} ORDER BY run_id", params)
    result = Transfer(lake=str(target), local=str(source))
    wanted: list[str] = []
    for row in rows.to_pylist():
        (wanted if row["status"] in PUSHED_STATES else result.unfinished).append(row["run_id"])
    copied, present, counts = copy_runs(target, source, wanted, direction="push")
    result.copied, result.present, result.rows = copied, present, counts
    return result


def pull(
    runs: list[str],
    *,
    local: str | Path | None = None,
    config: str | Path | EvalConfig | None = None,
    output_dir: str | Path | None = None,
    warehouse: str | Path | None = None,
) -> Transfer:
    """Copy lake runs (ids, prefixes, labels, ``latest``) into the local warehouse file
    (created and migrated when missing) for offline analysis. Idempotent."""
    from evalwh.warehouse.connect import write_connection
    from evalwh.warehouse.store import Warehouse
    from evalwh.warehouse.transfer import copy_runs

    if not runs:
        raise UsageError("name at least one run to pull (see `evalwh list` against the lake)")
    settings = settings_for(
        _config(config) if config else None, output_dir=output_dir, warehouse=warehouse
    )
    target, dest = _lake(settings), _local(settings, local)
    lake_store = Warehouse(target)
    ids = list(dict.fromkeys(lake_store.resolve(ref) for ref in runs))
    with write_connection(dest):  # create and migrate the local file first
        pass
    copied, present, counts = copy_runs(target, dest, ids, direction="pull")
    return Transfer(lake=str(target), local=str(dest), copied=copied, present=present, rows=counts)


def maintain(
    *,
    expire_days: float = 7.0,
    config: str | Path | EvalConfig | None = None,
    output_dir: str | Path | None = None,
    warehouse: str | Path | None = None,
) -> list[dict[str, Any]]:
    """DuckLake's own maintenance: flush inlined rows to Parquet, merge small files, expire
    snapshots older than ``expire_days`` and delete the files no snapshot needs any more."""
    from evalwh.warehouse.transfer import maintain_lake

    if expire_days < 0:
        raise UsageError("--expire-days must be 0 or more")
    settings = settings_for(
        _config(config) if config else None, output_dir=output_dir, warehouse=warehouse
    )
    return maintain_lake(_lake(settings), expire_days=expire_days)
