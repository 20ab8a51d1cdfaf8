"""Running things: resolve settings, validate a config, run the matrix, render a prompt,
scaffold a project. ``evalwh run``, ``validate``, ``init`` and MCP ``run_eval`` call these.

import evalwh
result = evalwh.run_eval("examples/quickstart/eval.yaml", label="try-1")
print(result.run_id, result.status, result.exit_code)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalwh.config.loader import DEFAULT_CONFIG, load_config
from evalwh.config.model import EvalConfig
from evalwh.config.settings import Settings, resolve_settings
from evalwh.errors import UsageError

if TYPE_CHECKING:
    from evalwh.engine.execute import Progress


def settings_for(
    config: EvalConfig | None = None, *, output_dir: str | Path | None = None, **flags: Any
) -> Settings:
    """Resolve settings: flags > EVALWH_* env > config ``settings:`` > user config > defaults."""
    from evalwh.config.secrets import get_secret
    from evalwh.warehouse.connect import set_memory_limit

    given = {k: v for k, v in {"output_dir": output_dir, **flags}.items() if v is not None}
    settings = resolve_settings(
        given,
        config.settings if config else None,
        config.root if config else None,
        secret=get_secret,
    )
    set_memory_limit(settings.memory_limit)  # every warehouse connection this process opens
    return settings


def _config(config: str | Path | EvalConfig, *, no_look: bool = False) -> EvalConfig:
    """The loaded config; ``no_look`` (the ``--no-look`` flag) turns no-look on, never off."""
    from dataclasses import replace

    cfg = config if isinstance(config, EvalConfig) else load_config(config)
    return replace(cfg, no_look=True) if no_look and not cfg.no_look else cfg


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
    no_look: bool = False  # no sample prompt is shown (docs/no-look.md)
    datasources: list[str] = field(default_factory=list)  # read while the run goes: not counted
    # case files streamed while the run goes (evalwh.config.streamed): {file, cases}, their
    # cases counted by the loader's first pass (in ``cases`` and ``requests``)
    streamed_files: list[dict[str, Any]] = field(default_factory=list)
    # literal criterion values in another tool's template syntax (evalwh.scoring.values):
    # {file, where, line, column, found, name, tool, message}
    warnings: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class RunResult:
    """What a run did: its id and status, totals, the matrix, errors and the threshold rules."""

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
    failure: str | None = None  # why the run failed (too many requests errored), else None
    stop_reason: str | None = None  # status `stopped`: the cost cap was reached mid-run
    shard: str | None = None  # "k/n" when this process ran one shard of a sharded run
    concluded: bool = True  # False: the gate was not judged here (a shard left it to others)
    no_look: bool = False  # the run stored no case data: readers decline to show outputs
    report: str | None = None  # the HTML page written with ``html=``
    # cells whose answers did not all simply stop (sql/finish_reasons.sql): truncated, refused...
    endings: list[dict[str, Any]] = field(default_factory=list)
    # what to do next when the run did not complete: for a failed run, the cause its errors
    # name (a refused or missing key, an endpoint nothing answers at) and the command to
    # re-run its errored cells (evalwh.api.hints.next_step, as `evalwh show` says it)
    next: str | None = None

    @property
    def gate_passed(self) -> bool:
        return all(rule["passed"] for rule in self.gate)

    @property
    def exit_code(self) -> int:
        """0 passed, 1 a threshold failed, 3 the run failed (too many requests errored),
        4 the run stopped at the cost cap."""
        if self.status == "stopped":
            return 4
        if self.failure is not None:
            return 3
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
    token: str | None = None  # the lease of the continued run, held from planning on
    previous_status: str | None = None
    models: tuple[str, ...] = ()  # the --model values left to filter by (ad-hoc ones added)
    carried: Any = None  # the continued run's journaled answers (evalwh.engine.journal.Carried)

    def release(self) -> None:
        """Give a claimed run back untouched (the resume stopped before any request)."""
        from evalwh.warehouse.lease import LIVE_STATES, release

        if self.continue_run and self.token:
            status = self.previous_status or "interrupted"
            release(
                self.settings.warehouse,
                self.continue_run,
                self.token,
                "interrupted" if status in LIVE_STATES else status,
            )


def _plan(
    config: str | Path | EvalConfig,
    *,
    models: Sequence[str],
    variants: Sequence[str],
    cases: Sequence[str],
    repeat: int | None,
    output_dir: str | Path | None,
    warehouse: str | Path | None = None,
    concurrency: int | None = None,
    use_cache: bool = True,
    resume: str | None = None,
    retry_errors: str | None = None,
    force: bool = False,
    fake: bool = False,
    shard: tuple[int, int] | None = None,
    run_id: str | None = None,
    no_look: bool = False,
    batch: bool = False,
) -> _Planned:
    """Everything before the first request: validate, plan, look up the cache, estimate.

    A resume (or retry of errors) claims the run's lease first, so no other process can
    continue it while its stored cells are read; the caller releases it on failure.
    """
    from evalwh.config.streamed import refusal
    from evalwh.engine.overrides import with_models
    from evalwh.engine.plan import Filters, refuse_sharded_datasources
    from evalwh.warehouse.lease import claim
    from evalwh.warehouse.store import Warehouse

    cfg, chosen = with_models(_config(config, no_look=no_look), models, fake=fake)
    settings = settings_for(
        cfg, output_dir=output_dir, warehouse=warehouse, concurrency=concurrency
    )
    filters = Filters(tuple(chosen), tuple(variants), tuple(cases), shard)
    repeats = repeat or settings.repeat
    continue_run = token = previous = None
    if shard is not None and cfg.sources:
        raise UsageError(refusal(cfg.sources, "--shard") or refuse_sharded_datasources(cfg))
    if batch or any(m.batch for m in cfg.models):
        _refuse_batch(cfg, shard)
    if shard is not None:
        planned = _plan_shard(
            cfg, settings, filters, repeats, run_id, resume or retry_errors, use_cache
        )
        planned.models = tuple(chosen)
        return planned
    if run_id is not None:
        raise UsageError("--run-id goes with --shard K/N (every shard names the same run)")
    if resume and retry_errors:
        raise UsageError("--resume and --retry-errors do not go together: pick one")
    if force and not (resume or retry_errors):
        raise UsageError("--force only goes with --resume or --retry-errors")
    if resume or retry_errors:
        store = Warehouse(
            settings.warehouse, stale_after_s=settings.stale_after_s, git_dir=cfg.root
        )
        continue_run = store.resolve(resume or retry_errors or "")
        row = store.run_row(continue_run)
        flag = "--resume" if resume else "--retry-errors"
        _refuse_datasource_resume(row, cfg, continue_run, flag)
        _check_same_config(row, cfg, continue_run, flag)
        token, previous = claim(
            settings.warehouse, continue_run, force=force, stale_after_s=settings.stale_after_s
        )
    planned = _Planned(cfg, settings, None, {}, None, continue_run, retry_errors is not None)
    planned.token, planned.previous_status = token, previous
    planned.models = tuple(chosen)
    try:
        return _plan_cells(planned, filters, repeats, resume, retry_errors, use_cache, batch)
    except BaseException:
        planned.release()
        raise


def _refuse_batch(cfg: EvalConfig, shard: tuple[int, int] | None) -> None:
    """Batch mode plans every request before the run: a datasource's cases come while it
    runs, and a shard started again would submit its jobs again."""
    from evalwh.config.streamed import refusal

    if why := refusal(cfg.sources, "batch mode (--batch, batch: true)"):
        raise UsageError(why)
    if cfg.sources:
        raise UsageError(
            f"{cfg.path}: batch mode (--batch, batch: true) needs every case before the run, "
            "and cases from a datasource come while it runs: export the source to a case file "
            "(file: cases.jsonl), or run it live"
        )
    if shard is not None:
        raise UsageError(
            "batch mode (--batch, batch: true) does not go with --shard: run the batch "
            "unsharded (one process waits on every job at no cost)"
        )


def _plan_shard(
    cfg: EvalConfig,
    settings: Settings,
    filters: Any,
    repeats: int,
    run_id: str | None,
    resume: str | None,
    use_cache: bool,
) -> _Planned:
    """One shard of a sharded run: its cases, less the cells any earlier try stored."""
    from evalwh.engine.execute import prepare
    from evalwh.warehouse.connect import write_transaction
    from evalwh.warehouse.lake import LakeTarget
    from evalwh.warehouse.shards import check_run_id
    from evalwh.warehouse.store import Warehouse

    if run_id is None:
        raise UsageError("--shard K/N needs --run-id RUN: the one run id every shard writes to")
    if resume:
        raise UsageError("--shard resumes by itself (stored cells are skipped): drop --resume")
    if cfg.pairwise:
        raise UsageError(
            "--shard does not go with `pairwise:` (a pair may span two shards): run pairwise "
            "comparisons unsharded"
        )
    check_run_id(run_id)
    store = Warehouse(settings.warehouse)
    if isinstance(settings.warehouse, LakeTarget):
        # Shards start at once on a fresh lake: the first to attach creates the catalog and
        # migrates while the others would read a half-migrated schema ("run evalwh migrate").
        # A shard is a writer: it migrates (or waits out a concurrent migration) first.
        write_transaction(settings.warehouse, lambda con: None, what="migrate the lake")
    skip = store.cells(run_id) if store.exists else set()
    prepared = prepare(cfg, settings, filters, repeats, skip=skip)
    carried = _carried(cfg, settings, run_id, skip, prepared, filters.shard)
    cache = _cached(cfg, settings, prepared.hashes, use_cache)
    planned = _Planned(cfg, settings, prepared, cache, _estimate(prepared, cache, carried), run_id)
    planned.carried = carried
    return planned


def _carried(
    cfg: EvalConfig,
    settings: Settings,
    run_id: str,
    stored: set[Any],
    prepared: Any,
    shard: tuple[int, int] | None = None,
) -> Any:
    """A continued run's journal read back (answers of cells not stored are replayed); a
    file there that is not its journal refuses the run (JournalRefused, exit 2). A no-look
    run keeps no journal."""
    from evalwh.engine.journal import Carried, carry_over, journal_dir, journal_path

    if cfg.no_look:
        return Carried()
    path = journal_path(journal_dir(settings.local_dir), run_id, shard)
    return carry_over(path, run_id, cfg.config_hash, stored, prepared.cells)


def _estimate(prepared: Any, cache: dict[str, Any], carried: Any) -> Any:
    """The estimate, counting the answers replayed from the journal as not asked."""
    from evalwh.engine.execute import estimate

    replayed = {key: call.answer for key, call in carried.replay.items()}
    return estimate(prepared, {**cache, **replayed} if replayed else cache)


def _cached(cfg: EvalConfig, settings: Settings, hashes: list[str], use_cache: bool) -> Any:
    """The stored answers of the planned requests (the response cache, in its own file when
    settings.cache_path says so); a no-look run neither reads nor writes it."""
    from evalwh.engine.execute import cache_lookup
    from evalwh.engine.journal import earlier_answers, journal_dir
    from evalwh.warehouse.store import Warehouse

    if not (use_cache and settings.cache) or cfg.no_look:
        return {}
    # answers a killed run of this config journaled but never stored: cached answers too
    folder = journal_dir(settings.local_dir)
    journaled = earlier_answers(folder, cfg.config_hash, hashes)
    return {**journaled, **cache_lookup(Warehouse(settings.cache_path), hashes)}


def _plan_cells(
    planned: _Planned,
    filters: Any,
    repeats: int,
    resume: str | None,
    retry_errors: str | None,
    use_cache: bool,
    batch: bool = False,
) -> _Planned:
    from evalwh.engine.execute import prepare
    from evalwh.engine.journal import Carried
    from evalwh.engine.plan import Filters
    from evalwh.warehouse.store import Warehouse

    cfg, settings, continue_run = planned.config, planned.settings, planned.continue_run
    skip = only = None
    was_batched: list[str] = []
    cells: set[Any] = set()
    carried = Carried()
    if continue_run is not None:
        store = Warehouse(settings.warehouse)
        row = store.run_row(continue_run)
        stored = _json(row.get("filters")) or {}
        filters = Filters(
            tuple(stored.get("models", ())),
            tuple(stored.get("variants", ())),
            tuple(stored.get("cases", ())),
        )
        repeats = int(stored.get("repeat", 1))
        was_batched = list(stored.get("batch") or [])  # a batch run's models stay batched
        cells = store.cells(continue_run)
        if resume:
            skip = cells
        else:
            only = store.cells(continue_run, errors_only=True)
    prepared = prepare(cfg, settings, filters, repeats, skip=skip, only=only)
    planned_ids = {m.id for m in prepared.plan.models}
    prepared.batched = prepared.batch_models(batch) | (set(was_batched) & planned_ids)
    if continue_run is not None:
        carried = _carried(cfg, settings, continue_run, cells, prepared)
    cache = _cached(cfg, settings, prepared.hashes, use_cache)
    planned.prepared, planned.cache, planned.carried = prepared, cache, carried
    planned.estimate = _estimate(prepared, cache, carried)
    return planned


def _too_many_errors(totals: dict[str, Any], max_error_rate: float) -> str | None:
    """Why the run failed when its share of errored cells reaches ``max_error_rate`` (1.0:
    only when every cell errored), else None."""
    n, errors = int(totals.get("n") or 0), int(totals.get("n_errors") or 0)
    if n == 0 or errors == 0 or errors / n < max_error_rate:
        return None
    return (
        f"the run failed: too many requests errored ({errors} of {n} cells, "
        f"settings.max_error_rate {max_error_rate:g})"
    )


def _refuse_datasource_resume(row: dict[str, Any], cfg: EvalConfig, run_id: str, flag: str) -> None:
    """A datasource run cannot be continued: the source is live, so the cells left to run
    would be drawn from different data than the stored ones, silently."""
    from evalwh.config.streamed import refusal

    if why := refusal(cfg.sources, flag):
        raise UsageError(f"{flag} refused for run {run_id}: {why}")
    stored = _json(row.get("datasources"))
    if not stored and not cfg.sources:
        return
    names = ", ".join(
        sorted({str(d.get("name")) for d in stored or []} | {s.name for s in cfg.sources})
    )
    raise UsageError(
        f"{flag} refused: run {run_id} reads cases from a datasource ({names}). A datasource "
        "is read page by page while the run goes and may change in between (rows added, "
        "removed or reordered shift every page after them), so a continuation could skip or "
        "repeat cases and its halves would describe different data without saying so; a "
        "datasource run has no resume. Start a new run (`evalwh run` without the flag), or "
        "export the source to a file (e.g. DuckDB `COPY (query) TO 'cases.parquet'`) and run "
        "that, which can be resumed"
    )


def _check_same_config(row: dict[str, Any], cfg: EvalConfig, run_id: str, flag: str) -> None:
    if bool(row.get("no_look")) != cfg.no_look:
        raise UsageError(
            f"{flag} refused: run {run_id} was {'' if row.get('no_look') else 'not '}a no-look "
            f"run and this one would {'not ' if row.get('no_look') else ''}be; continue it with "
            "the same privacy.no_look (and --no-look) it started with"
        )
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


def _cap(planned: _Planned, max_cost: float | None) -> tuple[float | None, str]:
    """The run's cost cap and where it comes from (engine/budget.py ``run_cap``)."""
    from evalwh.engine.budget import run_cap, uses_paid_provider

    cfg = planned.config
    paid = uses_paid_provider([*cfg.models, *(j.model for j in cfg.judges)])
    return run_cap(max_cost, planned.settings.max_cost_usd, paid=paid)


def _check_keys(planned: _Planned) -> None:
    """MissingKeysError (exit code 2) when a model the run will call has no API key set."""
    from evalwh.engine.keys import check_keys

    check_keys(planned.prepared, planned.cache)


def _check_cost(est: Any, cap: float | None, source: str = "--max-cost") -> None:
    from evalwh.engine.budget import DEFAULT_PAID_CAP_USD
    from evalwh.errors import CostRefusedError

    if cap is not None and est.cost_usd > cap:
        which = (
            f"the default cap ${DEFAULT_PAID_CAP_USD:.2f} for paid providers"
            if source == "default"
            else f"the maximum ${cap:.4f} ({source})"
        )
        raise CostRefusedError(
            f"estimated cost ${est.cost_usd:.4f} for {est.calls} call(s) exceeds {which}; "
            "nothing was called (raise --max-cost or settings.max_cost_usd, or select "
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
    fake: bool = False,
    warehouse: str | Path | None = None,
    no_look: bool = False,
    batch: bool = False,
) -> DryRun:
    """Check a config end to end, render every prompt, estimate the cost; call nothing.

    Raises MissingKeysError (exit code 2) when a model or judge it would call has no API key
    set (evalwh.engine.keys), and CostRefusedError (exit code 4) when the estimate exceeds
    ``max_cost`` (or the settings' ``max_cost_usd``), exactly as the run would. ``warnings`` lists
    criterion values written in another tool's template syntax (``{var}``, ``${var}``),
    compared as written.
    """
    planned = _plan(
        config,
        models=models,
        variants=variants,
        cases=cases,
        repeat=repeat,
        output_dir=output_dir,
        warehouse=warehouse,
        use_cache=not no_cache,
        fake=fake,
        no_look=no_look,
        batch=batch,
    )
    _check_keys(planned)
    _check_cost(planned.estimate, *_cap(planned, max_cost))
    return dry_run(planned)


def dry_run(planned: _Planned) -> DryRun:
    """What a planned run would do (``validate`` once its keys and cost are checked; ``evalwh
    prices --for`` shows the estimate of a config without them)."""
    from evalwh.scoring.values import foreign_templates

    plan = planned.prepared.plan
    sample = None
    if plan.variants and plan.cases and not planned.config.no_look:
        sample = {
            "variant": plan.variants[0].variant.id,
            "case": plan.cases[0].id,
            "messages": plan.variants[0].render(plan.cases[0]),
        }
    files = [s.spec for s in plan.sources if s.spec.case_file]
    # a --case pattern thins a streamed file's cases as they are read: then none is counted
    streamed = plan.streamed_size is not None
    return DryRun(
        config=str(planned.config.path),
        requests=plan.size + (plan.streamed_size or 0),
        cached=planned.estimate.cached,
        variants=[v.variant.id for v in plan.variants],
        models=[m.id for m in plan.models],
        cases=len(plan.cases) + (sum(f.params["cases"] for f in files) if streamed else 0),
        repeats=plan.repeats,
        warehouse=str(planned.settings.warehouse),
        sample=sample,
        estimate=planned.estimate.to_dict(),
        no_look=planned.config.no_look,
        datasources=[s.name for s in planned.config.sources if not (s.case_file and streamed)],
        streamed_files=[{"file": f.params["file"], "cases": f.params["cases"]} for f in files]
        if streamed
        else [],
        warnings=[w.to_dict() for w in foreign_templates(planned.config)],
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
    force: bool = False,
    baseline: str | None = None,
    output_dir: str | Path | None = None,
    progress: Progress | None = None,
    on_estimate: Callable[[Any], None] | None = None,
    shard: tuple[int, int] | None = None,
    run_id: str | None = None,
    no_look: bool = False,
    html: str | Path | None = None,
    fake: bool = False,
    warehouse: str | Path | None = None,
    batch: bool = False,
    on_batch: Callable[[list[Any]], None] | None = None,
) -> RunResult:
    """Run the matrix, store every result, export Parquet and judge the thresholds.

    ``models``/``variants``/``cases`` select by id (shell-style wildcards allowed); ``repeat``
    samples every cell N times. ``resume`` continues a killed run without repeating a stored
    cell; ``retry_errors`` re-runs only a run's errored cells. Raises ConfigError (exit code 2)
    before anything is written when the config is bad or a model it would call has no API key
    (MissingKeysError, evalwh.engine.keys), CostRefusedError (exit code 4) when the
    estimate exceeds ``max_cost`` (default: settings ``max_cost_usd``). ``baseline`` (a run
    reference) is what the regression thresholds compare with, instead of the pinned one.
    ``force`` takes over a run whose owner cannot be verified (another host, fresh heartbeat).
    ``shard=(k, n)`` with ``run_id`` runs the k-th of n shards of one run (docs/scale-out.md):
    the last shard to finish concludes the run (export, status, gate); the others return
    with ``concluded=False``.

    The run is ``completed`` only once its Parquet export is in place; when the share of
    errored cells reaches ``settings.max_error_rate`` it ends ``failed`` and
    ``RunResult.exit_code`` is 3. SIGINT/SIGTERM raise RunInterrupted (exit code 130).
    ``warehouse`` (a file or a ``ducklake:`` target) overrides the settings' warehouse, as
    ``--warehouse`` does. ``html`` writes the run's HTML report there (``RunResult.report`` holds the path; a
    shard that does not conclude its run writes none).

    ``batch`` (``--batch``) asks every model whose provider has a batch API through it (a
    model's ``batch: true`` asks for it alone): about half the price, answers within 24 h
    (docs/batch.md); ``on_batch`` is told the jobs' states (evalwh.warehouse.batches.JobRow)
    after each round of polls. A resumed batch run waits on its stored jobs.
    """
    from evalwh.config.secrets import redact
    from evalwh.engine.execute import execute
    from evalwh.engine.plan import Filters
    from evalwh.warehouse.store import Warehouse

    use_cache = not no_cache
    planned = _plan(
        config,
        models=models,
        variants=variants,
        cases=cases,
        repeat=repeat,
        output_dir=output_dir,
        warehouse=warehouse,
        concurrency=concurrency,
        use_cache=use_cache,
        resume=resume,
        retry_errors=retry_errors,
        force=force,
        fake=fake,
        shard=shard,
        run_id=run_id,
        no_look=no_look,
        batch=batch,
    )
    cfg, settings = planned.config, planned.settings
    cap, cap_source = _cap(planned, max_cost)
    try:
        store = Warehouse(settings.warehouse, git_dir=cfg.root)
        baseline_id = store.resolve(baseline) if baseline else None
        _check_keys(planned)
        _check_cost(planned.estimate, cap, cap_source)
        if on_estimate is not None:
            on_estimate(planned.estimate)
    except BaseException:
        planned.release()
        raise
    filters = Filters(planned.models, tuple(variants), tuple(cases), shard)
    # the last flush, the run's final row and the closing steps share one connection
    with ExitStack() as closing:
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
            token=planned.token,
            max_cost=cap,
            shard=shard is not None,
            carried=planned.carried,
            on_batch=on_batch,
            closing=closing,
        )
        stats = outcome.stats
        counts = {
            "requests": stats.requests,
            "cache_hits": stats.cache_hits,
            "retries": stats.retries,
            "errors": stats.errors,
            "commit_retries": outcome.commit_retries,
        }
        token = outcome.token
        if shard is not None:
            from evalwh.warehouse.shards import ShardsMissing, claim_conclusion

            try:
                token = claim_conclusion(settings.warehouse, outcome.run_id)
            except ShardsMissing:
                token = None  # other shards are still running: the last one concludes
            if token is None:
                return _shard_result(settings, cfg.name, outcome.run_id, shard, counts)
        result = conclude(
            settings,
            outcome.run_id,
            cfg.raw,
            status="stopped" if outcome.status == "stopped" else None,
            token=token,
            baseline_id=baseline_id,
            stats=counts,
            html=html,
        )
    result.estimate = planned.estimate.to_dict()
    result.stop_reason = outcome.stop_reason
    result.shard = f"{shard[0]}/{shard[1]}" if shard else None
    return result


def _shard_result(
    settings: Settings, suite: str, run_id: str, shard: tuple[int, int], stats: dict[str, int]
) -> RunResult:
    """A shard that did not conclude its run: its own rows are stored, the gate waits."""
    from evalwh.warehouse.store import Warehouse

    warehouse = Warehouse(settings.warehouse)
    row = warehouse.run_row(run_id)
    return RunResult(
        run_id=run_id,
        status=row["status"],
        suite=suite,
        warehouse=str(settings.warehouse),
        exports=None,
        totals=warehouse.query("run_totals", run_id=run_id).to_pylist()[0],
        summary=[],
        errors=[],
        gate=[],
        stats=stats,
        shard=f"{shard[0]}/{shard[1]}",
        concluded=False,
        no_look=bool(row.get("no_look")),
    )


def conclude(
    settings: Settings,
    run_id: str,
    raw_config: dict[str, Any],
    *,
    status: str | None,
    token: str | None,
    baseline_id: str | None = None,
    stats: dict[str, int] | None = None,
    html: str | Path | None = None,
) -> RunResult:
    """A run's end, once its rows are stored: export, final status, summary and the gate
    (and the HTML report at ``html``)."""
    from evalwh.analysis.gate import judge, log_notes
    from evalwh.analysis.judging import report as judging_report
    from evalwh.api.hints import next_step
    from evalwh.warehouse.connect import shared_connection
    from evalwh.warehouse.store import POST_RUN_MEMORY_LIMIT, Warehouse

    # the closing queries group by case: within a small DuckDB limit their memory stays flat
    # in the run's size (retried within the warehouse's own limit when one cannot fit)
    warehouse = Warehouse(settings.warehouse, memory_limit=POST_RUN_MEMORY_LIMIT)
    with shared_connection(settings.warehouse):  # the closing steps: one connection, not ~6
        exports = (
            str(warehouse.export_run(run_id, settings.exports_dir))
            if settings.export_parquet
            else None
        )
        totals = warehouse.query("run_totals", run_id=run_id).to_pylist()[0]
        failure = _too_many_errors(totals, settings.max_error_rate)
        if status != "stopped":  # the cost cap: already stored as `stopped`, lease released
            status = "failed" if failure else "completed"
            warehouse.set_status(run_id, status, token=token)
        summary = warehouse.query("summary", run_id=run_id).to_pylist()
        endings = warehouse.query("finish_reasons", run_id=run_id).to_pylist()
        errors = warehouse.query("errors", run_id=run_id).to_pylist()
        judged = judge(warehouse, run_id, raw_config, baseline=baseline_id)
        log_notes(judged)
        judged_pairs = raw_config.get("pairwise") or raw_config.get("judges")
        pairwise = judging_report(warehouse, run_id, raw_config) if judged_pairs else None
        row = warehouse.run_row(run_id)
        no_look = bool(row.get("no_look"))  # `finish` has no config
    report = None
    if html is not None:
        from evalwh.reports.html import render_run, write

        report = str(write(render_run(warehouse, run_id), html))
    return RunResult(
        run_id=run_id,
        status=status,
        failure=failure,
        suite=str(raw_config.get("name", "")),
        warehouse=str(settings.warehouse),
        exports=exports,
        totals=totals,
        summary=summary,
        errors=errors,
        gate=judged.rules,
        pairwise=pairwise,
        stats=stats or {},
        no_look=no_look,
        report=report,
        endings=endings,
        next=next_step(row, errors) if failure else None,
    )


def init_project(folder: str | Path = ".", *, force: bool = False) -> list[Path]:
    """Scaffold a working eval (eval.yaml, a prompt, a cases file, a python scorer)."""
    from evalwh.api.scaffold import write_scaffold

    return write_scaffold(Path(folder), force=force)


def default_config_path(explicit: str | Path | None) -> Path:
    return Path(explicit) if explicit else Path(DEFAULT_CONFIG)


ProgressCallback = Callable[[int, int, Any], None]


def render_prompt(config: str | Path | EvalConfig, variant: str, case_id: str) -> dict[str, Any]:
    """The messages one variant renders for one case, exactly as a run would send them; no
    model is called and nothing is written."""
    from evalwh.config.prompts import CompiledVariant

    cfg = _config(config)
    if cfg.no_look:
        raise UsageError(
            f"{cfg.path} is a no-look eval (privacy.no_look): its rendered prompts hold case "
            "data, which evalwh does not show; render a prompt of a config without no-look "
            "over test data instead"
        )
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


def _json(value: Any) -> Any:
    import json

    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value
