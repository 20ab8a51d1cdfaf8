"""Reading a warehouse: :class:`WarehouseView` (every answer a named query in ``sql/``),
``open_warehouse``, ``migrate_warehouse`` and the response cache's info and clearing.

wh = evalwh.open_warehouse()          # the default .evalwh/warehouse.duckdb
wh.summary("latest")                  # Polars DataFrame
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalwh.config.model import EvalConfig
from evalwh.config.settings import Settings
from evalwh.errors import UsageError

if TYPE_CHECKING:
    import polars as pl
    import pyarrow as pa

    from evalwh.analysis.compare import Comparison
    from evalwh.analysis.gate import GateResult
    from evalwh.analysis.readonly import QueryBounds
    from evalwh.reports.exports import Export, ExportAll
    from evalwh.warehouse.lake import LakeTarget

from evalwh.analysis.nolook import NOTICE, is_no_look, minimal, minimal_table
from evalwh.analysis.runinfo import commit_retries
from evalwh.api.hints import next_step
from evalwh.api.run import _config, _json, settings_for
from evalwh.warehouse.reading import one_connection


class WarehouseView:
    """Read access to a warehouse as Arrow or Polars. Every answer is a query in ``sql/``."""

    def __init__(
        self,
        path: Path | LakeTarget,
        settings: Settings | None = None,
        *,
        stale_after_s: float | None = None,
        git_dir: Path | None = None,
    ) -> None:
        from evalwh.warehouse.store import Warehouse

        if stale_after_s is None and settings is not None:
            stale_after_s = settings.stale_after_s
        self.store = (
            Warehouse(path, stale_after_s=stale_after_s, git_dir=git_dir)
            if stale_after_s
            else Warehouse(path, git_dir=git_dir)
        )
        self.path = self.store.path
        self.settings = settings  # the query bounds come from here (defaults when None)

    @property
    def local_dir(self) -> Path:
        """The folder on this machine beside the warehouse (exports, attached files): the
        warehouse file's folder; for a lake, the settings' output folder."""
        if self.settings is not None:
            return self.settings.local_dir
        if isinstance(self.path, Path):
            return self.path.parent
        from evalwh.config.settings import DEFAULTS

        return Path(str(DEFAULTS["output_dir"])).resolve()

    def reading(self) -> AbstractContextManager[None]:
        """Until the block ends, every read of this view shares one read connection (opened
        once, its caches warm after the first query); each method already reads on one.
        Writes inside the block are refused; other processes can write again once it ends."""
        return self.store.reading()

    def resolve(self, ref: str) -> str:
        """The run id a reference names (an id, a unique prefix, a label, 'latest', a
        baseline name, 'previous', 'latest~N' or 'git:REF'); UsageError when none or several
        match."""
        return self.store.resolve(ref)

    def resolve_suite(self, suite: str | Path | EvalConfig) -> str:
        """The run id of a suite's newest run. ``suite`` is a config (a loaded one, or the
        path of an existing file or folder: the runs started from that file come first, then
        those of its suite name) or a suite name as `evalwh list` shows it; UsageError when
        no run matches."""
        if not isinstance(suite, EvalConfig) and not Path(suite).exists():
            return self.store.resolve_suite(None, str(suite))
        cfg = _config(suite)
        return self.store.resolve_suite(str(cfg.path), cfg.name)

    def query(self, name: str, **params: Any) -> pa.Table:
        """Run the named query ``sql/<name>.sql`` (Arrow)."""
        return self.store.query(name, **params)

    def sql(self, text: str) -> pa.Table:
        """Run read-only SQL over the warehouse (Arrow)."""
        return self.store.sql(text)

    @one_connection
    def runs(self, limit: int = 20) -> list[dict[str, Any]]:
        """The newest runs first, one dict each (what `evalwh list` shows); [] without a
        warehouse."""
        from evalwh.warehouse.lease import effective_status

        if not self.store.exists:
            return []
        rows: list[dict[str, Any]] = self.store.query(
            "runs", limit=limit, suite=None, label=None, status=None, since=None, until=None
        ).to_pylist()
        for row in rows:
            row["status"] = effective_status(row, self.store.stale_after_s)
        return rows

    @one_connection
    def run(self, ref: str) -> dict[str, Any]:
        """The stored row of one run: status, label, suite, hashes, config snapshot, times."""
        return self.store.run_row(self.resolve(ref))

    @one_connection
    def summary(self, ref: str = "latest") -> pl.DataFrame:
        """One row per variant × model cell: n, pass rate with its 95% interval (Wilson; CLT
        over the case means when repeats disagree), score, errors, latency and cost."""
        import polars as pl

        return pl.from_arrow(self.query("summary", run_id=self.resolve(ref)))  # type: ignore[return-value]

    @one_connection
    def cases(
        self, ref: str = "latest", *, failures: bool = False, case_id: str | None = None
    ) -> pl.DataFrame:
        """One row per answer of a run with its output, score and criteria; only the failing
        ones with ``failures``, only one case id's with ``case_id``. A no-look run's rows
        have no output, expected, vars or messages columns."""
        import polars as pl

        run_id = self.resolve(ref)
        table = self.query(
            "case_list", run_id=run_id, only_failures=failures, case_id=case_id, limit=None
        )
        if is_no_look(self.store.run_row(run_id)):
            table = minimal_table(table)
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

    @one_connection
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
        no_look = is_no_look(run)
        errors = self.query("errors", run_id=run_id).to_pylist()
        if no_look:
            cases = [minimal(c) for c in cases]
        return {
            "no_look": no_look,
            "notice": NOTICE if no_look else None,
            "run": {k: v for k, v in run.items() if k not in ("config_snapshot",)},
            "totals": self.query("run_totals", run_id=run_id).to_pylist()[0],
            "commit_retries": commit_retries(run),
            "summary": self.query("summary", run_id=run_id).to_pylist(),
            "endings": self.query("finish_reasons", run_id=run_id).to_pylist(),
            "criteria": self.query("criteria", run_id=run_id).to_pylist(),
            "errors": errors,
            "gate": self.gate(run_id).rules,
            "cases": cases if (failures or case_id is not None) else [],
            "attachments": self.query("run_attachments", run_id=run_id).to_pylist(),
            "pairwise": self.judging(run_id) if _uses_judges(_json(snapshot) or {}) else None,
            "next": next_step(run, errors),
        }

    @one_connection
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

    @one_connection
    def slice(self, ref: str = "latest", by: str | Sequence[str] = ()) -> pl.DataFrame:
        """The run cut by metadata keys: n and pass rate (with its interval) per slice and per cell."""
        import polars as pl

        from evalwh.analysis.runinfo import split_keys
        from evalwh.analysis.slices import slice_run

        return pl.from_arrow(slice_run(self.store, self.resolve(ref), split_keys(by)))  # type: ignore[return-value]

    @one_connection
    def repeats(self, ref: str = "latest") -> pl.DataFrame:
        """pass@k and pass^k per cell (and overall) for k = 1..repeats, with flaky counts."""
        import polars as pl

        from evalwh.analysis.repeats import repeat_stats

        return pl.from_arrow(repeat_stats(self.store, self.resolve(ref)))  # type: ignore[return-value]

    @one_connection
    def flaky(self, ref: str = "latest") -> pl.DataFrame:
        """The cases whose repeats disagree on pass, least stable first."""
        import polars as pl

        from evalwh.analysis.repeats import flaky_cases

        return pl.from_arrow(flaky_cases(self.store, self.resolve(ref)))  # type: ignore[return-value]

    @one_connection
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
        """The pinned baselines, each with its run."""
        from evalwh.analysis.baselines import list_baselines

        return list_baselines(self.store)

    def remove_baseline(self, name: str) -> dict[str, Any]:
        """Unpin a baseline; the run itself stays."""
        from evalwh.analysis.baselines import remove_baseline

        return remove_baseline(self.store, name)

    def export(
        self,
        ref: str,
        format: str,
        *,
        out: str | Path | None = None,
        baseline: str | None = None,
        csv_formulas: str = "neutralise",
    ) -> Export:
        """Export a stored run as json, csv, md, parquet, junit or html (nothing is re-run). CSV
        cells starting with ``= + - @`` get a leading ``'`` unless ``csv_formulas="keep"``."""
        from evalwh.reports.exports import export_run

        if out is None and format == "parquet":
            out = self.local_dir / "exports"
        return export_run(
            self.store, ref, format, out=out, baseline=baseline, csv_formulas=csv_formulas
        )

    def export_all(self, *, out: str | Path | None = None) -> ExportAll:
        """Export every concluded run as Parquet (to ``out``, else the warehouse's
        ``exports/``), first moving exports kept in the layout before schema version 2 (one
        ``run_id=<id>/`` folder holding both tables) into ``cases/`` and ``scores/``."""
        from evalwh.reports.exports import export_all

        return export_all(self.store, out=out if out is not None else self.local_dir / "exports")

    # -- HTML pages and the decision log (evalwh/reports) ----------------------------------
    @one_connection
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

        with self.reading():
            cmp = a if isinstance(a, Comparison) else self.compare(a, b, **options)
            text = render_compare(self.store, cmp)
        return write(text, out) if out is not None else text

    def decide(self, ref: str = "latest", *, append: str | Path | None = None) -> dict[str, Any]:
        """A DECISIONS.md entry prefilled for the run (the one at the bottom of its HTML
        page): ``{"run_id", "text", "path", "flags"}``; appended to ``append`` when given."""
        from evalwh.reports.html import decide

        return decide(self.store, ref, append)

    def import_labels(self, file: str | Path, ref: str = "latest") -> dict[str, Any]:
        """Store the pairwise labels of a YAML file (``labels:`` entries, as the report's
        "Download labels" writes them) with run ``ref``, replacing its labels of the same
        comparison and case; calibration counts them from then on."""
        from evalwh.reports.labels import import_labels

        return import_labels(self.store, ref, file)

    def query_bounds(self, timeout_s: float | None = None, *, mcp: bool = False) -> QueryBounds:
        """The bounds of one read-only statement: the settings, ``timeout_s`` overriding."""
        from evalwh.analysis.readonly import QueryBounds
        from evalwh.config.settings import DEFAULTS

        s = self.settings.to_dict() if self.settings else DEFAULTS
        default = s["mcp_query_timeout_s" if mcp else "query_timeout_s"]
        return QueryBounds(
            timeout_s=default if timeout_s is None else timeout_s,
            memory_limit=s["query_memory_limit"],
            threads=s["query_threads"],
        )

    def read_sql(
        self,
        text: str,
        *,
        limit: int | None = None,
        timeout_s: float | None = None,
        mcp: bool = False,
    ) -> tuple[pa.Table, bool]:
        """One read-only query (SELECT, WITH, DESCRIBE, SHOW ...; writes, ATTACH, COPY, SET
        and file access are refused). Returns at most ``limit`` rows and whether more were
        left. It runs under :meth:`query_bounds` (a timeout ends it with a UsageError)."""
        from evalwh.analysis.readonly import run_readonly

        self.store._require()
        bounds = self.query_bounds(timeout_s, mcp=mcp)
        return run_readonly(self.path, text, limit=limit, bounds=bounds)

    def stream_sql(
        self, text: str, *, timeout_s: float | None = None
    ) -> AbstractContextManager[tuple[pa.Schema, Iterator[pa.RecordBatch]]]:
        """Like :meth:`read_sql`, as a context manager over (schema, record batches): for
        results too large to hold (``evalwh sql -n 0``)."""
        from evalwh.analysis.readonly import stream_readonly

        self.store._require()
        return stream_readonly(self.path, text, bounds=self.query_bounds(timeout_s))


def _uses_judges(config: dict[str, Any]) -> bool:
    return bool(config.get("pairwise") or config.get("judges"))


CACHE_KEY = (
    "the response cache keys on a SHA-256 of: provider, model name, every param, the model's "
    "provider options (not headers or key names), the rendered messages (an attached file as "
    "its SHA-256, not its path), the output schema a variant asks for and the repeat index; "
    "errors are never cached"
)


def cache_info(
    *,
    config: str | Path | None = None,
    output_dir: str | Path | None = None,
    warehouse: str | Path | None = None,
) -> dict[str, Any]:
    """Entries, size and age of the response cache, per provider and model (``warehouse``:
    the file that holds it, ``<cache_dir>/cache.duckdb`` when ``settings.cache_dir`` is set),
    and the files in the artifact store beside the warehouse."""
    from evalwh.warehouse.artifacts import ArtifactStore

    view = open_warehouse(config=config, output_dir=output_dir, warehouse=warehouse)
    cache = _cache_store(view)
    rows = cache.query("cache_info").to_pylist() if cache.exists else []
    artifacts = ArtifactStore(view.local_dir)
    files, size = artifacts.count()
    folder = artifacts.folder
    return {
        "warehouse": str(cache.path),
        "entries": sum(r["entries"] for r in rows),
        "text_bytes": sum(r["text_bytes"] or 0 for r in rows),
        "warehouse_bytes": cache.path.stat().st_size
        if isinstance(cache.path, Path) and cache.exists
        else 0,  # a DuckLake has no one file to measure
        "by_model": rows,
        "artifacts": {"folder": str(folder), "files": files, "bytes": size},
        "key": CACHE_KEY,
    }


def cache_clear(
    *,
    model: str | None = None,
    older_than_days: float | None = None,
    config: str | Path | None = None,
    output_dir: str | Path | None = None,
    warehouse: str | Path | None = None,
) -> int:
    """Delete cached answers (all, one provider model name's, or older ones); run history stays."""
    store = _cache_store(open_warehouse(config=config, output_dir=output_dir, warehouse=warehouse))
    return int(store.clear_cache(model=model, older_than_days=older_than_days))


def _cache_store(view: WarehouseView) -> Any:
    """The file of the response cache: the warehouse, or ``settings.cache_dir``'s own."""
    from evalwh.warehouse.store import Warehouse

    if view.settings is None or view.settings.cache_path == view.path:
        return view.store
    return Warehouse(view.settings.cache_path)


def open_warehouse(
    path: str | Path | None = None,
    *,
    config: str | Path | EvalConfig | None = None,
    output_dir: str | Path | None = None,
    warehouse: str | Path | None = None,
) -> WarehouseView:
    """Open the warehouse at ``path`` (a file or a ``ducklake:`` target), or the one the
    settings (and a config) point at; ``warehouse`` overrides the settings' warehouse as the
    ``--warehouse`` flag does (a file, resolved against the working folder, or a target)."""
    if isinstance(path, str) and path.startswith("ducklake:"):
        settings = settings_for(None, output_dir=output_dir, warehouse=path)
        return WarehouseView(settings.warehouse, settings)
    if path is not None:
        return WarehouseView(Path(path))
    cfg = _config(config) if config is not None else None
    settings = settings_for(cfg, output_dir=output_dir, warehouse=warehouse)
    return WarehouseView(settings.warehouse, settings, git_dir=cfg.root if cfg else None)


def migrate_warehouse(
    path: str | Path | None = None,
    *,
    config: str | Path | EvalConfig | None = None,
    output_dir: str | Path | None = None,
    warehouse: str | Path | None = None,
) -> dict[str, Any]:
    """Upgrade a warehouse written by an older evalwh to this version's schema (read
    commands never do this themselves). Returns the versions before and after."""
    from evalwh.warehouse.connect import migrate_file

    view = open_warehouse(path, config=config, output_dir=output_dir, warehouse=warehouse)
    before, after = migrate_file(view.path)
    return {"warehouse": str(view.path), "from_version": before, "to_version": after}
