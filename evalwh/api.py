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

    from evalwh.analysis.compare import Comparison
    from evalwh.analysis.exports import Export
    from evalwh.analysis.gate import GateResult
    from evalwh.engine.execute import Progress

__all__ = [
    "DryRun",
    "RunResult",
    "WarehouseView",
    "init_project",
    "load_config",
    "open_warehouse",
    "render_prompt",
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
    estimate: dict[str, Any] | None = None

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
    errors: list[dict[str, Any]]
    gate: list[dict[str, Any]]
    stats: dict[str, int] = field(default_factory=dict)
    estimate: dict[str, Any] | None = None
    pairwise: dict[str, Any] | None = None  # calibration first, then win rates (judges only)
    report: str | None = None  # the HTML page written with ``html=``

    @property
    def gate_passed(self) -> bool:
        return all(rule["passed"] for rule in self.gate)

    @property
    def exit_code(self) -> int:
        return 0 if self.gate_passed else 1

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "gate_passed": self.gate_passed}


@dataclass
class _Planned:
    config: EvalConfig
    settings: Settings
    prepared: Any
    cache: dict[str, Any]
    estimate: Any
    continue_run: str | None = None
    replace_rows: bool = False


def _plan(
    config: str | Path | EvalConfig,
    *,
    models: Sequence[str],
    variants: Sequence[str],
    cases: Sequence[str],
    repeat: int | None,
    output_dir: str | Path | None,
    concurrency: int | None = None,
    use_cache: bool = True,
    resume: str | None = None,
    retry_errors: str | None = None,
) -> _Planned:
    """Everything before the first request: validate, plan, look up the cache, estimate."""
    from evalwh.engine.execute import cache_lookup, estimate, prepare
    from evalwh.engine.plan import Filters
    from evalwh.warehouse.store import Warehouse

    cfg = _config(config)
    settings = settings_for(cfg, output_dir=output_dir, concurrency=concurrency)
    filters = Filters(tuple(models), tuple(variants), tuple(cases))
    repeats = repeat or settings.repeat
    skip = only = None
    continue_run = None
    if resume and retry_errors:
        raise UsageError("--resume and --retry-errors do not go together: pick one")
    if resume or retry_errors:
        store = Warehouse(settings.warehouse)
        continue_run = store.resolve(resume or retry_errors or "")
        row = store.run_row(continue_run)
        _check_same_config(row, cfg, continue_run, "--resume" if resume else "--retry-errors")
        if row["status"] == "running":
            raise UsageError(
                f"run {continue_run} is still running (pid {row['pid']} on {row['host']})"
            )
        stored = _json(row.get("filters")) or {}
        filters = Filters(
            tuple(stored.get("models", ())),
            tuple(stored.get("variants", ())),
            tuple(stored.get("cases", ())),
        )
        repeats = int(stored.get("repeat", 1))
        if resume:
            skip = store.cells(continue_run)
        else:
            only = store.cells(continue_run, errors_only=True)
    prepared = prepare(cfg, settings, filters, repeats, skip=skip, only=only)
    cache = (
        cache_lookup(Warehouse(settings.warehouse), prepared.hashes)
        if use_cache and settings.cache
        else {}
    )
    return _Planned(
        cfg,
        settings,
        prepared,
        cache,
        estimate(prepared, cache),
        continue_run,
        retry_errors is not None,
    )


def _check_same_config(row: dict[str, Any], cfg: EvalConfig, run_id: str, flag: str) -> None:
    changed = [
        name
        for name, stored, now in (
            ("config", row["config_hash"], cfg.config_hash),
            ("dataset", row["dataset_hash"], cfg.dataset_hash),
        )
        if stored != now
    ]
    if changed:
        raise UsageError(
            f"{flag} refused: the {' and '.join(changed)} changed since run {run_id} started "
            f"({', '.join(changed)} hash differs), so its stored rows would not match a continuation; "
            "restore the config it ran with, or start a new run"
        )


def _check_cost(est: Any, cap: float | None) -> None:
    from evalwh.errors import CostRefusedError

    if cap is not None and est.cost_usd > cap:
        raise CostRefusedError(
            f"estimated cost ${est.cost_usd:.4f} for {est.calls} call(s) exceeds the maximum "
            f"${cap:.4f}; nothing was called (raise --max-cost or settings.max_cost_usd, or select "
            "fewer models, variants or cases)",
            estimate_usd=est.cost_usd,
            cap_usd=cap,
            calls=est.calls,
        )


def validate(
    config: str | Path | EvalConfig,
    *,
    models: Sequence[str] = (),
    variants: Sequence[str] = (),
    cases: Sequence[str] = (),
    repeat: int | None = None,
    output_dir: str | Path | None = None,
    max_cost: float | None = None,
    no_cache: bool = False,
) -> DryRun:
    """Check a config end to end, render every prompt, estimate the cost; call nothing.

    Raises CostRefusedError (exit code 4) when the estimate exceeds ``max_cost`` (or the
    settings' ``max_cost_usd``), exactly as the run would.
    """
    planned = _plan(
        config,
        models=models,
        variants=variants,
        cases=cases,
        repeat=repeat,
        output_dir=output_dir,
        use_cache=not no_cache,
    )
    plan = planned.prepared.plan
    _check_cost(
        planned.estimate, max_cost if max_cost is not None else planned.settings.max_cost_usd
    )
    sample = None
    if plan.variants and plan.cases:
        sample = {
            "variant": plan.variants[0].variant.id,
            "case": plan.cases[0].id,
            "messages": plan.variants[0].render(plan.cases[0]),
        }
    return DryRun(
        config=str(planned.config.path),
        requests=plan.size,
        cached=planned.estimate.cached,
        variants=[v.variant.id for v in plan.variants],
        models=[m.id for m in plan.models],
        cases=len(plan.cases),
        repeats=plan.repeats,
        warehouse=str(planned.settings.warehouse),
        sample=sample,
        estimate=planned.estimate.to_dict(),
    )


def run_eval(
    config: str | Path | EvalConfig,
    *,
    models: Sequence[str] = (),
    variants: Sequence[str] = (),
    cases: Sequence[str] = (),
    label: str | None = None,
    concurrency: int | None = None,
    repeat: int | None = None,
    no_cache: bool = False,
    max_cost: float | None = None,
    resume: str | None = None,
    retry_errors: str | None = None,
    baseline: str | None = None,
    output_dir: str | Path | None = None,
    progress: Progress | None = None,
    on_estimate: Callable[[Any], None] | None = None,
    html: str | Path | None = None,
) -> RunResult:
    """Run the matrix, store every result, export Parquet and judge the thresholds.

    ``models``/``variants``/``cases`` select by id (shell-style wildcards allowed); ``repeat``
    samples every cell N times. ``resume`` continues a killed run without repeating a stored
    cell; ``retry_errors`` re-runs only a run's errored cells. Raises ConfigError (exit code 2)
    before anything is written when the config is bad, CostRefusedError (exit code 4) when the
    estimate exceeds ``max_cost`` (default: settings ``max_cost_usd``). ``baseline`` (a run
    reference) is what the regression thresholds compare with, instead of the pinned one.
    ``html`` writes the run's HTML report there (``RunResult.report`` holds the path).
    """
    from evalwh.analysis.gate import judge, log_notes
    from evalwh.analysis.judging import report as judging_report
    from evalwh.engine.execute import execute
    from evalwh.engine.plan import Filters
    from evalwh.secrets import redact
    from evalwh.warehouse.store import Warehouse

    use_cache = not no_cache
    planned = _plan(
        config,
        models=models,
        variants=variants,
        cases=cases,
        repeat=repeat,
        output_dir=output_dir,
        concurrency=concurrency,
        use_cache=use_cache,
        resume=resume,
        retry_errors=retry_errors,
    )
    cfg, settings = planned.config, planned.settings
    baseline_id = Warehouse(settings.warehouse).resolve(baseline) if baseline else None
    _check_cost(planned.estimate, max_cost if max_cost is not None else settings.max_cost_usd)
    if on_estimate is not None:
        on_estimate(planned.estimate)
    filters = Filters(tuple(models), tuple(variants), tuple(cases))
    outcome = execute(
        planned.prepared,
        label=label,
        filters=filters,
        use_cache=use_cache and settings.cache,
        cache=planned.cache,
        progress=progress,
        redact=redact,
        continue_run=planned.continue_run,
        replace_rows=planned.replace_rows,
    )
    warehouse = Warehouse(settings.warehouse)
    exports = (
        str(warehouse.export_run(outcome.run_id, settings.exports_dir))
        if settings.export_parquet
        else None
    )
    totals = warehouse.query("run_totals", run_id=outcome.run_id).to_pylist()[0]
    summary = warehouse.query("summary", run_id=outcome.run_id).to_pylist()
    errors = warehouse.query("errors", run_id=outcome.run_id).to_pylist()
    judged = judge(warehouse, outcome.run_id, cfg.raw, baseline=baseline_id)
    log_notes(judged)
    pairwise = (
        judging_report(warehouse, outcome.run_id, cfg.raw) if cfg.pairwise or cfg.judges else None
    )
    gate = judged.rules
    stats = outcome.stats
    report = None
    if html is not None:
        from evalwh.reports.html import render_run, write

        report = str(write(render_run(warehouse, outcome.run_id), html))
    return RunResult(
        run_id=outcome.run_id,
        status=outcome.status,
        suite=cfg.name,
        warehouse=str(settings.warehouse),
        exports=exports,
        totals=totals,
        summary=summary,
        errors=errors,
        gate=gate,
        pairwise=pairwise,
        stats={
            "requests": stats.requests,
            "cache_hits": stats.cache_hits,
            "retries": stats.retries,
            "errors": stats.errors,
        },
        estimate=planned.estimate.to_dict(),
        report=report,
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
            "case_list",
            run_id=self.resolve(ref),
            only_failures=failures,
            case_id=case_id,
            limit=None,
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
            "case_list", run_id=run_id, only_failures=failures, case_id=case_id, limit=None
        ).to_pylist()
        if case_id is not None and not cases:
            raise UsageError(f"run {run_id} has no case '{case_id}'")
        snapshot = run.get("config_snapshot")
        return {
            "run": {k: v for k, v in run.items() if k not in ("config_snapshot",)},
            "totals": self.query("run_totals", run_id=run_id).to_pylist()[0],
            "summary": self.query("summary", run_id=run_id).to_pylist(),
            "criteria": self.query("criteria", run_id=run_id).to_pylist(),
            "errors": self.query("errors", run_id=run_id).to_pylist(),
            "gate": self.gate(run_id).rules,
            "cases": cases if (failures or case_id is not None) else [],
            "pairwise": self.judging(run_id) if _uses_judges(_json(snapshot) or {}) else None,
        }

    def judging(self, ref: str, *, by: str | None = None) -> dict[str, Any]:
        """Judge calibration (kappa, confusion matrix, agreement) first, then pairwise win rates
        with flip rates and the UNCALIBRATED flags; pointwise calibration of llm-judge criteria."""
        from evalwh.analysis.judging import report

        return report(self.store, self.resolve(ref), by=by)

    # -- analysis: compare, slices, repeats, baselines, gate, exports (evalwh/analysis) ----
    def compare(
        self,
        a: str,
        b: str = "latest",
        *,
        by: str | Sequence[str] | None = None,
        cluster: str | None = None,
        movers: int | None = 20,
    ) -> Comparison:
        """Run ``b`` minus run ``a``, paired on (variant, model, case_id, repeat): deltas with
        standard errors and 95% intervals per run, cell, criterion and slice, and the cases
        that moved. ``by`` combines metadata keys into one slice dimension (default: each key
        on its own); ``cluster`` overrides the runs' ``analysis.cluster``."""
        from evalwh.analysis.compare import compare
        from evalwh.analysis.runinfo import split_keys

        return compare(self.store, a, b, by=split_keys(by), cluster=cluster, movers=movers)

    def slice(self, ref: str = "latest", by: str | Sequence[str] = ()) -> pl.DataFrame:
        """The run cut by metadata keys: n and pass rate (Wilson) per slice and per cell."""
        import polars as pl

        from evalwh.analysis.runinfo import split_keys
        from evalwh.analysis.slices import slice_run

        return pl.from_arrow(slice_run(self.store, self.resolve(ref), split_keys(by)))  # type: ignore[return-value]

    def repeats(self, ref: str = "latest") -> pl.DataFrame:
        """pass@k and pass^k per cell (and overall) for k = 1..repeats, with flaky counts."""
        import polars as pl

        from evalwh.analysis.repeats import repeat_stats

        return pl.from_arrow(repeat_stats(self.store, self.resolve(ref)))  # type: ignore[return-value]

    def flaky(self, ref: str = "latest") -> pl.DataFrame:
        """The cases whose repeats disagree on pass, least stable first."""
        import polars as pl

        from evalwh.analysis.repeats import flaky_cases

        return pl.from_arrow(flaky_cases(self.store, self.resolve(ref)))  # type: ignore[return-value]

    def gate(self, ref: str = "latest", *, baseline: str | None = None) -> GateResult:
        """Judge a stored run by the thresholds it was run with, absolute and regression
        (versus ``baseline``, else the pinned baseline)."""
        from evalwh.analysis.gate import judge

        return judge(self.store, self.resolve(ref), baseline=baseline)

    def set_baseline(self, ref: str, name: str = "baseline") -> dict[str, Any]:
        """Pin ``name`` (default ``baseline``) to a run; the name then works as a reference."""
        from evalwh.analysis.baselines import set_baseline

        return set_baseline(self.store, ref, name)

    def baselines(self) -> list[dict[str, Any]]:
        from evalwh.analysis.baselines import list_baselines

        return list_baselines(self.store)

    def remove_baseline(self, name: str) -> dict[str, Any]:
        from evalwh.analysis.baselines import remove_baseline

        return remove_baseline(self.store, name)

    def export(
        self,
        ref: str,
        format: str,
        *,
        out: str | Path | None = None,
        baseline: str | None = None,
    ) -> Export:
        """Export a stored run as json, csv, md, parquet, junit or html (nothing is re-run)."""
        from evalwh.analysis.exports import export_run

        return export_run(self.store, ref, format, out=out, baseline=baseline)

    # -- HTML pages and the decision log (evalwh/reports) ----------------------------------
    def report(self, ref: str = "latest", out: str | Path | None = None) -> Path | str:
        """The run's self-contained HTML page: written to ``out`` (returns the path), else
        returned as text."""
        from evalwh.reports.html import render_run, write

        text = render_run(self.store, self.resolve(ref))
        return write(text, out) if out is not None else text

    def compare_report(
        self,
        a: str | Comparison,
        b: str = "latest",
        out: str | Path | None = None,
        **options: Any,
    ) -> Path | str:
        """The compare page of run ``b`` against run ``a`` (or of a Comparison already made):
        written to ``out`` (returns the path), else returned as text. ``options`` go to
        :meth:`compare`."""
        from evalwh.analysis.compare import Comparison
        from evalwh.reports.html import render_compare, write

        cmp = a if isinstance(a, Comparison) else self.compare(a, b, **options)
        text = render_compare(self.store, cmp)
        return write(text, out) if out is not None else text

    def decide(self, ref: str = "latest", *, append: str | Path | None = None) -> dict[str, Any]:
        """A DECISIONS.md entry prefilled for the run (the one at the bottom of its HTML
        page): ``{"run_id", "text", "path"}``; appended to ``append`` when given."""
        from evalwh.reports.html import decide

        return decide(self.store, ref, append)

    def import_labels(self, file: str | Path, ref: str = "latest") -> dict[str, Any]:
        """Store the pairwise labels of a YAML file (``labels:`` entries, as the report's
        "Download labels" writes them) with run ``ref``, replacing its labels of the same
        comparison and case; calibration counts them from then on."""
        from evalwh.reports.labels import import_labels

        return import_labels(self.store, ref, file)

    def read_sql(self, text: str, *, limit: int | None = None) -> tuple[pa.Table, bool]:
        """One read-only query (SELECT, WITH, DESCRIBE, SHOW ...; writes, ATTACH, COPY, SET
        and file access are refused). Returns at most ``limit`` rows and whether more were
        left."""
        from evalwh.analysis.readonly import run_readonly

        self.store._require()
        return run_readonly(self.path, text, limit=limit)


def _uses_judges(config: dict[str, Any]) -> bool:
    return bool(config.get("pairwise") or config.get("judges"))


def _json(value: Any) -> Any:
    import json

    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def calibrate(
    config: str | Path,
    *,
    judges: Sequence[str] = (),
    output_dir: str | Path | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Run every judge (or the given ones) over the labelled cases; rank them by agreement
    with the human labels (Cohen's kappa, then raw agreement, then flip rate)."""
    from evalwh.analysis.calibrate import calibrate as run

    return run(config, judges=judges, output_dir=output_dir, progress=progress)


CACHE_KEY = (
    "the response cache keys on a SHA-256 of: provider, model name, every param, the model's "
    "provider options (not headers or key names), the rendered messages, the contents of "
    "attached files and the repeat index; errors are never cached"
)


def cache_info(
    *, config: str | Path | None = None, output_dir: str | Path | None = None
) -> dict[str, Any]:
    """Entries, size and age of the response cache, per provider and model."""
    view = open_warehouse(config=config, output_dir=output_dir)
    rows = view.query("cache_info").to_pylist() if view.store.exists else []
    return {
        "warehouse": str(view.path),
        "entries": sum(r["entries"] for r in rows),
        "text_bytes": sum(r["text_bytes"] or 0 for r in rows),
        "warehouse_bytes": view.path.stat().st_size if view.store.exists else 0,
        "by_model": rows,
        "key": CACHE_KEY,
    }


def cache_clear(
    *,
    model: str | None = None,
    older_than_days: float | None = None,
    config: str | Path | None = None,
    output_dir: str | Path | None = None,
) -> int:
    """Delete cached answers (all, one provider model name's, or older ones); run history stays."""
    view = open_warehouse(config=config, output_dir=output_dir)
    return view.store.clear_cache(model=model, older_than_days=older_than_days)


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


def render_prompt(config: str | Path | EvalConfig, variant: str, case_id: str) -> dict[str, Any]:
    """The messages one variant renders for one case, exactly as a run would send them; no
    model is called and nothing is written."""
    from evalwh.prompts import CompiledVariant

    cfg = _config(config)
    chosen = next((v for v in cfg.variants if v.id == variant), None)
    if chosen is None:
        known = ", ".join(v.id for v in cfg.variants)
        raise UsageError(f"no variant '{variant}' in {cfg.path} (known: {known})")
    case = next((c for c in cfg.cases if c.id == case_id), None)
    if case is None:
        known = ", ".join(c.id for c in cfg.cases[:20]) + (", ..." if len(cfg.cases) > 20 else "")
        raise UsageError(f"no case '{case_id}' in {cfg.path} (known: {known})")
    return {
        "config": str(cfg.path),
        "variant": variant,
        "case_id": case_id,
        "messages": CompiledVariant(chosen).render(case),
        "vars": case.vars,
        "expected": case.expected,
        "metadata": case.metadata,
    }
