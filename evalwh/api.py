"""The public Python API. The CLI, the MCP server and the viewer call these functions only.

import evalwh
result = evalwh.run_eval("examples/quickstart/eval.yaml", label="try-1")
wh = evalwh.open_warehouse()          # the default .evalwh/warehouse.duckdb
wh.summary("latest")                  # Polars DataFrame
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalwh.config.loader import DEFAULT_CONFIG, load_config
from evalwh.config.model import EvalConfig
from evalwh.config.settings import Settings, resolve_settings
from evalwh.errors import UsageError

if TYPE_CHECKING:
    import polars as pl
    import pyarrow as pa

    from evalwh.engine.execute import Progress

__all__ = [
    "DryRun",
    "RunResult",
    "WarehouseView",
    "init_project",
    "load_config",
    "open_warehouse",
    "run_eval",
    "settings_for",
    "validate",
]


def settings_for(
    config: EvalConfig | None = None, *, output_dir: str | Path | None = None, **flags: Any
) -> Settings:
    """Resolve settings: flags > EVALWH_* env > config ``settings:`` > user config > defaults."""
    given = {k: v for k, v in {"output_dir": output_dir, **flags}.items() if v is not None}
    return resolve_settings(
        given, config.settings if config else None, config.root if config else None
    )


def _config(config: str | Path | EvalConfig) -> EvalConfig:
    return config if isinstance(config, EvalConfig) else load_config(config)


@dataclass
class DryRun:
    """What a run would do: every prompt rendered and every check passed, nothing called."""

    config: str
    requests: int
    cached: int
    variants: list[str]
    models: list[str]
    cases: int
    repeats: int
    warehouse: str
    sample: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class RunResult:
    run_id: str
    status: str
    suite: str
    warehouse: str
    exports: str | None
    totals: dict[str, Any]
    summary: list[dict[str, Any]]
    gate: list[dict[str, Any]]
    stats: dict[str, int] = field(default_factory=dict)

    @property
    def gate_passed(self) -> bool:
        return all(rule["passed"] for rule in self.gate)

    @property
    def exit_code(self) -> int:
        return 0 if self.gate_passed else 1

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "gate_passed": self.gate_passed}


def validate(
    config: str | Path | EvalConfig,
    *,
    models: Sequence[str] = (),
    variants: Sequence[str] = (),
    cases: Sequence[str] = (),
    repeat: int = 1,
    output_dir: str | Path | None = None,
) -> DryRun:
    """Check a config end to end and render every prompt; call no model, write nothing."""
    from evalwh.engine.execute import cache_lookup, prepare
    from evalwh.engine.plan import Filters
    from evalwh.warehouse.store import Warehouse

    cfg = _config(config)
    settings = settings_for(cfg, output_dir=output_dir)
    prepared = prepare(cfg, settings, Filters(tuple(models), tuple(variants), tuple(cases)), repeat)
    plan = prepared.plan
    cached = (
        len(cache_lookup(Warehouse(settings.warehouse), prepared.hashes)) if settings.cache else 0
    )
    sample = None
    if plan.variants and plan.cases:
        sample = {
            "variant": plan.variants[0].variant.id,
            "case": plan.cases[0].id,
            "messages": plan.variants[0].render(plan.cases[0]),
        }
    return DryRun(
        config=str(cfg.path),
        requests=plan.size,
        cached=cached,
        variants=[v.variant.id for v in plan.variants],
        models=[m.id for m in plan.models],
        cases=len(plan.cases),
        repeats=plan.repeats,
        warehouse=str(settings.warehouse),
        sample=sample,
    )


def run_eval(
    config: str | Path | EvalConfig,
    *,
    models: Sequence[str] = (),
    variants: Sequence[str] = (),
    cases: Sequence[str] = (),
    label: str | None = None,
    concurrency: int | None = None,
    repeat: int = 1,
    no_cache: bool = False,
    output_dir: str | Path | None = None,
    progress: Progress | None = None,
) -> RunResult:
    """Run the matrix, store every result, export Parquet and judge the thresholds.

    ``models``/``variants``/``cases`` select by id (shell-style wildcards allowed). Raises
    ConfigError (exit code 2) before anything is written when the config is bad.
    """
    from evalwh.engine.execute import execute, prepare
    from evalwh.engine.plan import Filters
    from evalwh.gate import rules_json
    from evalwh.warehouse.store import Warehouse

    cfg = _config(config)
    settings = settings_for(cfg, output_dir=output_dir, concurrency=concurrency)
    filters = Filters(tuple(models), tuple(variants), tuple(cases))
    prepared = prepare(cfg, settings, filters, repeat)
    outcome = execute(
        prepared,
        label=label,
        filters=filters,
        use_cache=settings.cache and not no_cache,
        progress=progress,
    )
    warehouse = Warehouse(settings.warehouse)
    exports = (
        str(warehouse.export_run(outcome.run_id, settings.exports_dir))
        if settings.export_parquet
        else None
    )
    totals = warehouse.query("run_totals", run_id=outcome.run_id).to_pylist()[0]
    summary = warehouse.query("summary", run_id=outcome.run_id).to_pylist()
    gate = warehouse.query(
        "gate", run_id=outcome.run_id, rules=rules_json(cfg.thresholds)
    ).to_pylist()
    stats = outcome.stats
    return RunResult(
        run_id=outcome.run_id,
        status=outcome.status,
        suite=cfg.name,
        warehouse=str(settings.warehouse),
        exports=exports,
        totals=totals,
        summary=summary,
        gate=gate,
        stats={
            "requests": stats.requests,
            "cache_hits": stats.cache_hits,
            "retries": stats.retries,
            "errors": stats.errors,
        },
    )


class WarehouseView:
    """Read access to a warehouse as Arrow or Polars. Every answer is a query in ``sql/``."""

    def __init__(self, path: Path) -> None:
        from evalwh.warehouse.store import Warehouse

        self.store = Warehouse(path)
        self.path = self.store.path

    def resolve(self, ref: str) -> str:
        return self.store.resolve(ref)

    def query(self, name: str, **params: Any) -> pa.Table:
        """Run the named query ``sql/<name>.sql`` (Arrow)."""
        return self.store.query(name, **params)

    def sql(self, text: str) -> pa.Table:
        """Run read-only SQL over the warehouse (Arrow)."""
        return self.store.sql(text)

    def runs(self, limit: int = 20) -> list[dict[str, Any]]:
        from evalwh.warehouse.store import effective_status

        if not self.store.exists:
            return []
        rows = self.store.query("runs", limit=limit).to_pylist()
        for row in rows:
            row["status"] = effective_status(row)
        return rows

    def run(self, ref: str) -> dict[str, Any]:
        return self.store.run_row(self.resolve(ref))

    def summary(self, ref: str = "latest") -> pl.DataFrame:
        import polars as pl

        return pl.from_arrow(self.query("summary", run_id=self.resolve(ref)))  # type: ignore[return-value]

    def cases(
        self, ref: str = "latest", *, failures: bool = False, case_id: str | None = None
    ) -> pl.DataFrame:
        import polars as pl

        table = self.query(
            "case_list", run_id=self.resolve(ref), only_failures=failures, case_id=case_id
        )
        return pl.from_arrow(table)  # type: ignore[return-value]

    def table(self, name: str) -> pl.DataFrame:
        """A whole table or documented view (runs, cases, scores, case_results, cell_summary)."""
        import polars as pl

        if name not in {
            "runs",
            "cases",
            "scores",
            "case_results",
            "cell_summary",
            "response_cache",
        }:
            raise UsageError(f"unknown table {name!r}")
        return pl.from_arrow(self.sql(f"SELECT * FROM {name}"))  # type: ignore[return-value]

    def show(
        self, ref: str, *, failures: bool = False, case_id: str | None = None
    ) -> dict[str, Any]:
        """Everything `evalwh show` prints: the run, totals, the matrix, criteria, cases."""
        run_id = self.resolve(ref)
        run = self.store.run_row(run_id)
        cases = self.query(
            "case_list", run_id=run_id, only_failures=failures, case_id=case_id
        ).to_pylist()
        if case_id is not None and not cases:
            raise UsageError(f"run {run_id} has no case '{case_id}'")
        from evalwh.gate import rules_json

        snapshot = run.get("config_snapshot")
        thresholds = (_json(snapshot) or {}).get("thresholds") or {}
        return {
            "run": {k: v for k, v in run.items() if k not in ("config_snapshot",)},
            "totals": self.query("run_totals", run_id=run_id).to_pylist()[0],
            "summary": self.query("summary", run_id=run_id).to_pylist(),
            "criteria": self.query("criteria", run_id=run_id).to_pylist(),
            "gate": self.query("gate", run_id=run_id, rules=rules_json(thresholds)).to_pylist(),
            "cases": cases if (failures or case_id is not None) else [],
        }


def _json(value: Any) -> Any:
    import json

    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def open_warehouse(
    path: str | Path | None = None,
    *,
    config: str | Path | EvalConfig | None = None,
    output_dir: str | Path | None = None,
) -> WarehouseView:
    """Open the warehouse at ``path``, or the one the settings (and a config) point at."""
    if path is not None:
        return WarehouseView(Path(path))
    cfg = _config(config) if config is not None else None
    return WarehouseView(settings_for(cfg, output_dir=output_dir).warehouse)


def init_project(folder: str | Path = ".", *, force: bool = False) -> list[Path]:
    """Scaffold a working eval (eval.yaml, a prompt, a cases file, a python scorer)."""
    from evalwh.scaffold import write_scaffold

    return write_scaffold(Path(folder), force=force)


def default_config_path(explicit: str | Path | None) -> Path:
    return Path(explicit) if explicit else Path(DEFAULT_CONFIG)


ProgressCallback = Callable[[int, int, Any], None]
