"""One run from start to end: validate, plan, look up the cache, execute, write, export, gate."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalwh import __version__
from evalwh.config.model import EvalConfig
from evalwh.config.settings import Settings
from evalwh.engine.plan import Filters, Plan, build_plan, model_identity, request_hash
from evalwh.engine.runner import CachedAnswer, CellResult, Engine, EngineStats
from evalwh.errors import ConfigError
from evalwh.scoring import Scorecard, build_scorecard

Progress = Callable[[int, int, CellResult], None]


@dataclass
class Prepared:
    """A config checked end to end and its plan: nothing has been called or written yet."""

    config: EvalConfig
    settings: Settings
    plan: Plan
    scorecard: Scorecard
    hashes: list[str] = field(default_factory=list)  # every planned request's hash


def check_config(config: EvalConfig) -> Scorecard:
    """Deep checks beyond the schema: providers, scorers, threshold names."""
    from evalwh import providers

    file = str(config.path)
    for model in config.models:
        providers.check(model, file)
    scorecard = build_scorecard(config.scorecard, config.root, file)
    names = {c.name for c in config.scorecard}
    for name in config.thresholds.get("criteria") or {}:
        if name not in names:
            raise ConfigError(
                f"threshold for unknown criterion '{name}'",
                file=file,
                where=f"thresholds.criteria.{name}",
                fix=f"use a scorecard criterion name: {', '.join(sorted(names))}",
            )
    return scorecard


def prepare(config: EvalConfig, settings: Settings, filters: Filters, repeats: int) -> Prepared:
    """Validate everything a run needs and render every prompt once (StrictUndefined)."""
    try:
        return _prepare(config, settings, filters, repeats)
    except ConfigError as exc:
        raise config.locate_error(exc) from None


def _prepare(config: EvalConfig, settings: Settings, filters: Filters, repeats: int) -> Prepared:
    scorecard = check_config(config)
    plan = build_plan(config, filters, repeats)
    hashes: list[str] = []
    identities = [model_identity(m) for m in plan.models]
    for variant in plan.variants:
        for case in plan.cases:
            messages = variant.render(case)  # raises ConfigError naming the template and case
            for identity in identities:
                hashes.extend(request_hash(identity, messages, r) for r in range(repeats))
    return Prepared(config, settings, plan, scorecard, hashes)


def git_commit(folder: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def cache_lookup(warehouse: Any, hashes: list[str]) -> dict[str, CachedAnswer]:
    import pyarrow as pa

    from evalwh.warehouse.connect import read_connection
    from evalwh.warehouse.queries import run_query

    if not hashes or not warehouse.exists:
        return {}
    with read_connection(warehouse.path) as con:
        con.register("planned_hashes", pa.table({"request_hash": pa.array(hashes, pa.string())}))
        table = run_query(con, "cache_lookup")
    cols = table.to_pydict()
    return {
        h: CachedAnswer(o, i, t, lat)
        for h, o, i, t, lat in zip(
            cols["request_hash"],
            cols["output"],
            cols["input_tokens"],
            cols["output_tokens"],
            cols["latency_ms"],
            strict=True,
        )
    }


@dataclass
class Outcome:
    run_id: str
    status: str
    stats: EngineStats
    rows_written: int


async def _drive(engine: Engine, writer: Any) -> EngineStats:
    """Run the engine while flushing due batches in a worker thread, one at a time."""
    run = asyncio.ensure_future(engine.run())
    flushing: asyncio.Future[None] | None = None
    try:
        while not run.done():
            await asyncio.wait({run}, timeout=0.05)
            if flushing is not None and flushing.done():
                flushing.result()
                flushing = None
            if flushing is None and writer.due():
                flushing = asyncio.ensure_future(
                    asyncio.to_thread(writer.flush, writer.take_batch())
                )
        return run.result()
    finally:
        if not run.done():
            run.cancel()
            await asyncio.gather(run, return_exceptions=True)
        if flushing is not None:
            await flushing
        await asyncio.to_thread(writer.flush, writer.take_batch())


def execute(
    prepared: Prepared,
    *,
    label: str | None,
    filters: Filters,
    use_cache: bool,
    progress: Progress | None = None,
    redact: Callable[[str], str] = lambda s: s,
) -> Outcome:
    from evalwh import providers as registry
    from evalwh.engine.records import RowSink
    from evalwh.warehouse.store import Warehouse, new_run_id, utcnow
    from evalwh.warehouse.writer import RunWriter

    config, settings, plan = prepared.config, prepared.settings, prepared.plan
    warehouse = Warehouse(settings.warehouse)
    cache = cache_lookup(warehouse, prepared.hashes) if use_cache else {}
    run_id = new_run_id()
    warehouse.create_run(
        {
            "run_id": run_id,
            "label": label,
            "suite": config.name,
            "status": "running",
            "config_path": str(config.path),
            "config_hash": config.config_hash,
            "dataset_hash": config.dataset_hash,
            "git_commit": git_commit(config.root),
            "config_snapshot": config.raw,
            "filters": {**filters.to_dict(), "repeat": plan.repeats}
            if filters.to_dict() or plan.repeats > 1
            else None,
            "n_planned": plan.size,
            "started_at": utcnow(),
            "heartbeat_at": utcnow(),
            "evalwh_version": __version__,
        }
    )
    writer = RunWriter(
        settings.warehouse, run_id, batch_size=settings.batch_size, refresh_cache=not use_cache
    )
    sink = RowSink(writer, run_id)
    total = plan.size

    def on_result(result: CellResult) -> None:
        sink(result)
        if progress is not None:
            progress(sink.seen, total, result)

    instances = {m.id: registry.create(m) for m in plan.models}
    engine = Engine(
        plan,
        instances,
        prepared.scorecard,
        on_result,
        concurrency=settings.concurrency,
        cache=cache,
        redact=redact,
    )

    async def main() -> EngineStats:
        try:
            return await _drive(engine, writer)
        finally:
            for provider in instances.values():
                await provider.aclose()

    status = "failed"
    try:
        stats = asyncio.run(main())
        status = "completed"
    except (KeyboardInterrupt, asyncio.CancelledError):
        status = "interrupted"
        raise
    finally:
        warehouse.finish_run(
            run_id,
            status,
            {
                "requests": engine.stats.requests,
                "cache_hits": engine.stats.cache_hits,
                "retries": engine.stats.retries,
                "errors": engine.stats.errors,
                "rows": writer.rows_written,
            },
        )
    return Outcome(run_id, status, stats, writer.rows_written)
