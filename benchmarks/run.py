"""evalwh benchmarks: the figures of benchmarks/README.md, as a table and as JSON.

    uv run python benchmarks/run.py            # the full set (about 5 minutes the first
                                               # time: it builds a 12M-row warehouse once)
    uv run python benchmarks/run.py --quick    # tiny sizes: checks the runner works
    uv run python benchmarks/run.py --only engine,queries --runs 3
    uv run python benchmarks/run.py --only lake # DuckLake: needs PostgreSQL (docs/scale-out.md)

Every figure is measured in a child process of its own (so one measurement's memory and
imports do not leak into the next) and is the median of several runs. The machines are
shared: compare ratios, not single absolute times. Results go to
benchmarks/results/latest.json (``--out`` to change); the Markdown table beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
GROUPS = (
    "engine",
    "latency",
    "memory",
    "datasource",
    "casefile",
    "ingest",
    "queries",
    "startup",
    "http",
    "process",
    "adaptive",
    "report",
    "viewer",
    "toolloop",
)
# Run only when named: `lake` needs PostgreSQL (and starts it with moto on loopback);
# `warehouse` builds the 100M-score-row synthetic warehouse the first time (see below).
OPTIONAL_GROUPS = ("lake", "warehouse")
# the lake group's parts (benchmarks/lake_figures.py): RunWriter processes, `evalwh run`
# processes, and the push of the synthetic warehouse with maintain and the queries over it;
# `warehouse` (benchmarks/lake_warehouse.py): the warehouse group's questions over a lake copy
# of its 100M-score-row warehouse (copied once, cached under <results>/lake-warehouse/), run
# only when named: the first time it builds that warehouse (~40 min) and copies it (~5 min)
LAKE_PARTS = ("writers", "processes", "push", "warehouse")
DEFAULT_LAKE_PARTS = ("writers", "processes", "push")


# the rows of the `process` group, in order (--process-parts one-case,cached runs only those)
PROCESS_PARTS = ("one-case", "cpu", "efficiency", "cached")


@dataclass
class Sizes:
    engine_cases: int = 10_000
    engine_runs: int = 5
    latency_cases: int = 1_000
    latency_s: float = 0.1
    concurrency: tuple[int, ...] = (32, 128)
    latency_runs: int = 5
    memory_cases: tuple[int, ...] = (10_000, 50_000, 100_000)
    memory_runs: int = 3
    datasource_cases: tuple[int, ...] = (10_000, 1_000_000)
    # lines of a JSONL case file run by whole `evalwh run` processes (streamed from
    # stream_at lines: evalwh.config.streamed.STREAM_AT unless set)
    casefile_cases: tuple[int, ...] = (10_000, 1_000_000)
    casefile_stream_at: int | None = None
    # (row id, cases per flush, criteria per case, flushes): big flushes (the writer's
    # capacity, as when it is the bottleneck and batches grow) and the default batch_size
    ingest: tuple[tuple[str, int, int, int], ...] = (
        ("ingest", 10_000, 10, 4),
        ("ingest-default-batch", 2_000, 10, 10),
    )
    ingest_runs: int = 3
    query_repeats: int = 5
    startup_runs: int = 10
    lake_writers: tuple[int, ...] = (1, 4, 8)
    lake_cases: int = 2_000  # per `evalwh run` process
    lake_writer_cases: int = 10_000  # per RunWriter process (benchmarks/lake_writer.py)
    lake_parts: tuple[str, ...] = DEFAULT_LAKE_PARTS
    # the synthetic warehouse pushed into the lake for its query figures (runs, cases per
    # run, big runs, cases per big run): the full 12M score rows of benchmarks/synth.py
    lake_layout: tuple[int, int, int, int] = (100, 10_000, 2, 100_000)
    report_cases: int = 10_000
    report_big_cases: int | None = 100_000
    report_runs: int = 3
    # the HTTP client strategies side by side (benchmarks/httpclients.py)
    http_requests: int = 10_000
    http_concurrency: int = 64
    http_runs: int = 3
    http_loops: tuple[str, ...] = ("asyncio", "uvloop")
    http_strategies: tuple[str, ...] = ()  # () = every strategy of httpclients.STRATEGIES
    # whole `evalwh run` processes: CPU per case at 0 ms, efficiency at 100 ms, fixed cost
    process_cpu_cases: tuple[int, ...] = (1_000, 10_000, 100_000)
    process_cpu_concurrency: int = 64
    process_efficiency: tuple[tuple[int, int], ...] = ((32, 1_000), (128, 2_000), (512, 5_000))
    process_cached_cases: tuple[int, ...] = (10_000, 100_000)
    process_runs: int = 3
    process_parts: tuple[str, ...] = PROCESS_PARTS  # --process-parts picks some
    # a server allowing `adaptive_rate` requests/s; fixed vs adaptive concurrency
    adaptive_cases: int = 200
    adaptive_rate: float = 20.0
    adaptive_concurrency: int = 32
    viewer_repeats: int = 5
    viewer_cases: int = 2_000  # the watched run: mock answers after viewer_latency_ms
    viewer_latency_ms: float = 20
    viewer_runs: int = 3
    # cells of a three-turn tool loop against single-request cells (benchmarks/toolloop.py)
    toolloop_cells: int = 1_000
    toolloop_runs: int = 3


QUICK = Sizes(
    engine_cases=300,
    engine_runs=1,
    latency_cases=64,
    latency_s=0.02,
    latency_runs=1,
    memory_cases=(300, 600),
    memory_runs=1,
    datasource_cases=(300, 3_000),
    casefile_cases=(300, 3_000),
    casefile_stream_at=1_000,
    ingest=(("ingest", 500, 10, 2), ("ingest-default-batch", 200, 10, 2)),
    ingest_runs=1,
    query_repeats=1,
    startup_runs=1,
    lake_cases=100,
    lake_writer_cases=100,
    report_cases=200,
    report_big_cases=None,
    report_runs=1,
    http_requests=200,
    http_concurrency=16,
    http_runs=1,
    http_loops=("asyncio",),
    http_strategies=("httpx-sharded", "provider"),
    process_cpu_cases=(50, 200),
    process_cpu_concurrency=16,
    process_efficiency=((8, 40),),
    process_cached_cases=(200,),
    process_runs=1,
    adaptive_cases=20,
    adaptive_rate=50.0,
    adaptive_concurrency=8,
    viewer_repeats=1,
    viewer_cases=100,
    viewer_latency_ms=5,
    viewer_runs=1,
    toolloop_cells=5,
    toolloop_runs=1,
)


@dataclass
class Row:
    id: str
    what: str
    workload: str
    target: str
    measured: float | None
    unit: str
    limit: float  # the target's number
    higher_is_better: bool
    detail: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        """measured / target."""
        return None if self.measured is None else self.measured / self.limit

    @property
    def met(self) -> bool | None:
        if self.measured is None:
            return None
        return self.measured >= self.limit if self.higher_is_better else self.measured <= self.limit

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": self.ratio, "met": self.met}


# ---- children -------------------------------------------------------------------------------


def child(name: str, params: dict[str, Any]) -> dict[str, Any]:
    """Run one measurement in a fresh interpreter; its result is the last line it prints."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", name, json.dumps(params)]
    done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"benchmark child {name} failed (exit {done.returncode})")
    return json.loads(done.stdout.strip().splitlines()[-1])


class _NotInstalled:
    """A meta path finder for which these top-level packages are not installed."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)


def child_main(name: str, params: dict[str, Any]) -> None:
    if params.pop("without_pandas", False):
        # What `pip install evalwh` gets: evalwh does not depend on pandas or numpy, but the
        # dev venv holds them (statsmodels, in the `dev` extra), and pyarrow imports pandas on
        # the first array it builds if it can: +56 MB of RSS no user install pays.
        sys.meta_path.insert(0, _NotInstalled({"pandas", "numpy"}))
    sys.path.insert(0, str(HERE))
    import figures

    work = Path(params.pop("work"))
    if name == "engine":
        out = figures.measure_engine(work, **params)
    elif name == "latency":
        out = figures.measure_latency(work, **params)
    elif name == "memory":
        out = figures.measure_memory(work, **params)
    elif name == "datasource":
        out = figures.measure_datasource(work, **params)
    elif name == "casefile":
        out = figures.measure_casefile(work, **params)
    elif name == "ingest":
        out = figures.measure_ingest(work, **params)
    elif name == "queries":
        out = figures.measure_queries(work, **params)
    elif name == "startup":
        out = figures.measure_startup(Path(params["warehouse"]), work / "startup", params["runs"])
    elif name == "warehouse":
        import warehouse_figures

        out = warehouse_figures.measure_warehouse(work, **params)
    elif name == "lake":
        import lake_figures

        out = lake_figures.measure_lake(work, **params)
    elif name == "lake_warehouse":
        import lake_warehouse

        out = lake_warehouse.measure_lake_warehouse(work, **params)
    elif name == "report_run":
        out = figures.build_report_run(work, params["n"])
    elif name == "report":
        out = figures.measure_report(work, params["config"], params["runs"], params["paint"])
    elif name == "process":
        out = figures.measure_process(work, **params)
    elif name == "adaptive":
        out = figures.measure_adaptive(work, **params)
    elif name == "viewer_pages":
        out = figures.measure_viewer_pages(params["synthetic"], params["quick"], params["repeats"])
    elif name == "viewer_watching":
        out = figures.measure_viewer_watching(
            work, params["n"], params["latency_ms"], params["runs"]
        )
    elif name == "compile":
        out = {"compile_s": figures.compile_bytecode()}
    else:
        raise SystemExit(f"unknown child {name}")
    print(json.dumps(out))


def med(values: list[float]) -> float:
    from statistics import median

    return median(values)


# ---- the rows -------------------------------------------------------------------------------


def engine_rows(sizes: Sizes, work: Path, log: Any) -> tuple[list[Row], dict[str, Any]]:
    n = sizes.engine_cases
    log(f"engine: {n} mock cases x {sizes.engine_runs} runs, fresh then cached")
    raw = child("engine", {"work": str(work), "n": n, "runs": sizes.engine_runs})
    fresh, cached = med(raw["fresh_s"]), med(raw["cached_s"])
    fresh_exec, cached_exec = med(raw["fresh_execute_s"]), med(raw["cached_execute_s"])
    rows = [
        Row(
            "engine",
            "engine overhead",
            f"{n:,} cases x 1 model, mock provider 0 ms, 3 deterministic scorers, "
            "warehouse writes + Parquet export included (run_eval end to end)",
            ">= 5,000 cases/s",
            n / fresh,
            "cases/s",
            5000,
            True,
            f"median of {len(raw['fresh_s'])}: {fresh:.2f} s; engine phase alone "
            f"(execute) {n / fresh_exec:,.0f} cases/s",
        ),
        Row(
            "cached",
            "cached rerun",
            f"the {n:,}-case run again, all from the cache (run_eval end to end)",
            ">= 20,000 cases/s, 0 provider calls",
            n / cached,
            "cases/s",
            20000,
            True,
            f"median of {len(raw['cached_s'])}: {cached:.2f} s; provider calls "
            f"{max(raw['cached_calls'])}, cache hits {min(raw['cached_hits'])}; engine phase "
            f"alone {n / cached_exec:,.0f} cases/s",
        ),
    ]
    if max(raw["cached_calls"]) != 0:
        rows[1].measured = 0.0  # any provider call fails the row
    return rows, raw


def latency_rows(sizes: Sizes, work: Path, log: Any) -> tuple[list[Row], dict[str, Any]]:
    n, lat = sizes.latency_cases, sizes.latency_s
    raw: dict[str, Any] = {}
    for mode in ("http", "mock"):
        log(
            f"latency ({mode}): {n} cases, {lat * 1000:.0f} ms a reply, concurrency {sizes.concurrency}"
        )
        raw[mode] = child(
            "latency",
            {
                "work": str(work),
                "n": n,
                "latency": lat,
                "concurrency": list(sizes.concurrency),
                "runs": sizes.latency_runs,
                "mode": mode,
            },
        )
    rows = []
    for c, item in raw["http"]["by_concurrency"].items():
        ideal = item["ideal_s"]

        def ratio(mode: str, key: str, c: str = c, ideal: float = ideal) -> float:
            return med(raw[mode]["by_concurrency"][c][key]) / ideal

        rows.append(
            Row(
                f"latency-{c}",
                "latency-bound efficiency",
                f"{n:,} cases, openai-compatible provider -> local HTTP server (loopback, "
                f"its own process) with {lat * 1000:.0f} ms latency, concurrency {c}",
                "wall <= 1.10 x ideal",
                ratio("http", "engine_s"),
                "x ideal",
                1.10,
                False,
                f"ideal {n}/{c} x {lat:g} s = {ideal:.3f} s; wall = the request phase "
                f"(Engine.run) {med(item['engine_s']):.3f} s, median of {len(item['engine_s'])}; "
                f"with the run's bookkeeping and final flush (execute) {ratio('http', 'execute_s'):.2f} x, "
                f"run_eval end to end {ratio('http', 'run_eval_s'):.2f} x; "
                f"engine alone (mock provider sleeping {lat * 1000:.0f} ms, no HTTP) "
                f"{ratio('mock', 'engine_s'):.2f} x (execute {ratio('mock', 'execute_s'):.2f} x); "
                f"server saw at most {item['server_max_in_flight']} in flight"
                + (
                    f"; requests that failed: {item['errors']} per run"
                    if any(item.get("errors") or [])
                    else ""
                ),
                {
                    mode: {key: ratio(mode, key) for key in ("engine_s", "execute_s", "run_eval_s")}
                    for mode in raw
                },
            )
        )
    return rows, raw


def memory_rows(sizes: Sizes, work: Path, log: Any) -> tuple[list[Row], dict[str, Any]]:
    peaks: dict[int, list[float]] = {}
    walls: dict[int, list[float]] = {}
    phases: dict[int, list[Any]] = {}
    for n in sizes.memory_cases:
        log(f"memory: {n} mock cases x {sizes.memory_runs}")
        for _ in range(sizes.memory_runs):
            raw = child("memory", {"work": str(work), "n": n})
            peaks.setdefault(n, []).append(raw["peak_rss_mb"])
            walls.setdefault(n, []).append(raw["wall_s"])
            phases[n] = raw["phases"]
    by_n = {n: med(v) for n, v in peaks.items()}
    largest = phases[max(phases)]
    steps, previous = [], 0.0
    for label, _rss, peak in largest:
        steps.append(f"{label} {peak:.0f}" + (f" (+{peak - previous:.0f})" if previous else ""))
        previous = peak
    small, large = min(by_n), max(by_n)
    slope = (by_n[large] - by_n[small]) / (large - small) * 10_000 if large > small else 0.0
    row = Row(
        "memory",
        "memory",
        f"{large:,}-case mock run (peak RSS of the whole process)",
        "peak RSS <= 300 MB, flat in case count",
        by_n[large],
        "MB",
        300,
        False,
        "peak RSS by cases: "
        + ", ".join(f"{n:,}: {v:.0f} MB" for n, v in by_n.items())
        + f"; growth {slope:.1f} MB per 10,000 cases; peak RSS after each phase of the "
        f"{max(phases):,}-case run, MB: " + ", ".join(steps),
        {"growth_mb_per_10k": slope},
    )
    return [row], {"peak_rss_mb": peaks, "wall_s": walls, "phases": phases}


def casefile_rows(sizes: Sizes, work: Path, log: Any) -> tuple[list[Row], dict[str, Any]]:
    """Peak RSS and CPU of whole `evalwh run -q` processes of a JSONL case file, small and
    huge (issue 50: a file of STREAM_AT lines or more is streamed, so the huge one stays under
    the same bound). Run from a user install for the figures (benchmarks/README.md)."""
    raw = {}
    for n in sizes.casefile_cases:
        log(f"casefile: an `evalwh run` of a {n:,}-line JSONL case file")
        raw[n] = child(
            "casefile", {"work": str(work), "n": n, "stream_at": sizes.casefile_stream_at}
        )
    small, large = min(raw), max(raw)
    row = Row(
        "casefile-memory",
        "memory, streamed case file",
        f"`evalwh run -q` of a {large:,}-line JSONL case file (mock model, three scorers) vs "
        f"{small:,} lines: peak RSS of the whole process (os.wait4)",
        "peak RSS <= 300 MB at both sizes",
        raw[large]["peak_rss_mb"],
        "MB",
        300,
        False,
        "; ".join(
            f"{n:,}: peak {r['peak_rss_mb']:.0f} MB, CPU {r['cpu_s']:.1f} s, wall "
            f"{r['wall_s']:.1f} s, load {r['load1']:.1f}"
            for n, r in raw.items()
        ),
        {"small_peak_rss_mb": raw[small]["peak_rss_mb"]},
    )
    return [row], {str(n): v for n, v in raw.items()}


def datasource_rows(sizes: Sizes, work: Path, log: Any) -> tuple[list[Row], dict[str, Any]]:
    """Peak RSS of a mock run whose cases stream from a datasource, small and huge: the
    engine pulls pages as it needs them, so the huge one stays under the same target."""
    raw = {}
    for n in sizes.datasource_cases:
        log(f"datasource: {n} mock cases from a datasource (as a user install: no pandas)")
        raw[n] = child("datasource", {"work": str(work), "n": n, "without_pandas": True})
    small, large = min(raw), max(raw)
    log(f"datasource: {large} mock cases again with the dev venv's pandas importable")
    dev = child("datasource", {"work": str(work), "n": large})
    row = Row(
        "datasource-memory",
        "memory, datasource",
        f"{large:,} mock cases streamed from a datasource (pages of 1,000) vs {small:,}, "
        "as a user install (the child cannot import pandas or numpy)",
        "peak RSS <= 300 MB at both sizes",
        raw[large]["peak_rss_mb"],
        "MB",
        300,
        False,
        f"peak RSS {small:,}: {raw[small]['peak_rss_mb']:.0f} MB, {large:,}: "
        f"{raw[large]['peak_rss_mb']:.0f} MB; wall {small:,}: {raw[small]['wall_s']:.1f} s, "
        f"{large:,}: {raw[large]['wall_s']:.1f} s ({large / raw[large]['wall_s']:,.0f} cases/s); "
        f"{large:,} with pandas importable (dev venv): {dev['peak_rss_mb']:.0f} MB",
        {
            "small_peak_rss_mb": raw[small]["peak_rss_mb"],
            "dev_venv_peak_rss_mb": dev["peak_rss_mb"],
        },
    )
    return [row], {**{str(n): v for n, v in raw.items()}, f"{large}_dev_venv": dev}


def ingest_rows(sizes: Sizes, work: Path, log: Any) -> tuple[list[Row], dict[str, Any]]:
    results: list[dict[str, Any]] = []
    rows = []
    for rid, cases, criteria, flushes in sizes.ingest:
        log(f"ingest: {flushes} flushes of {cases} cases x {criteria} criteria")
        runs = [
            child(
                "ingest",
                {
                    "work": str(work),
                    "cases_per_flush": cases,
                    "criteria": criteria,
                    "flushes": flushes,
                },
            )
            for _ in range(sizes.ingest_runs)
        ]
        results.append({"cases": cases, "criteria": criteria, "runs": runs})
        rate = med([r["score_rows_per_s"] for r in runs])
        with_arrow = med([r["score_rows_per_s_with_arrow"] for r in runs])
        write_s = med([med(r["write_s"]) for r in runs])
        arrow_s = med([med(r["arrow_s"]) for r in runs])
        rows.append(
            Row(
                rid,
                "ingest",
                f"score rows/s into the warehouse through RunWriter.write (Arrow -> DuckDB, one "
                f"transaction on a short-lived connection): {cases:,} cases x {criteria} criteria "
                "per flush",
                ">= 500,000 score rows/s",
                rate,
                "score rows/s",
                500_000,
                True,
                f"{write_s * 1000:.0f} ms per flush of {cases * criteria:,} score + {cases:,} "
                f"case rows (median of {len(runs)} x {flushes}); rows -> Arrow adds "
                f"{arrow_s * 1000:.0f} ms: {with_arrow:,.0f} score rows/s with it",
            )
        )
    return rows, {"ingest": results}


def query_rows(
    sizes: Sizes, work: Path, results: Path, quick: bool, log: Any
) -> tuple[list[Row], dict[str, Any]]:
    log(f"queries: synthetic warehouse (built once, then cached under {results / 'synthetic'})")
    raw = child(
        "queries",
        {
            "work": str(work),
            "synthetic": str(results / "synthetic"),
            "quick": quick,
            "repeats": sizes.query_repeats,
        },
    )
    t = {k: med(v) for k, v in raw["timings_s"].items()}
    scores = raw["rows"]["scores"]
    size = (
        f"warehouse of {scores / 1e6:.1f}M score rows over {raw['rows']['runs']} runs "
        f"({raw['rows']['cases'] / 1e6:.2f}M case rows)"
    )
    big = raw["compared_run_score_rows"]
    spec = [
        (
            "query-summary",
            "summary",
            f"summary of a {big / 1e6:.1f}M-score-row run",
            t["summary"],
            f"run_totals {t['run_totals']:.3f} s, criteria {t['criteria']:.3f} s, summary of a "
            f"small run {t['summary_small_run']:.3f} s",
        ),
        (
            "query-compare",
            "compare",
            f"compare of two {big / 1e6:.1f}M-score-row runs "
            "(analysis.compare: deltas per run, cell, criterion, slice of every metadata key; "
            "movers)",
            t["compare"],
            f"sql/compare.sql alone {t['compare_sql']:.3f} s, compare_cases {t['compare_cases']:.3f} s",
        ),
        (
            "query-slice",
            "slice",
            "slice of the big run by a metadata key",
            t["slice"],
            f"two keys {t['slice_two_keys']:.3f} s",
        ),
        (
            "query-calibration",
            "calibration",
            "pairwise win rates + judge calibration "
            "(kappa, confusion, pointwise, by slice) of the big run",
            t["calibration"],
            f"evalwh list query (runs) {t['runs_list']:.3f} s",
        ),
    ]
    rows = [
        Row(
            rid,
            f"query: {name}",
            f"{what}; {size}",
            "< 1 s",
            value,
            "s",
            1.0,
            False,
            f"median of {sizes.query_repeats}, each opening its own read connection; {detail}",
        )
        for rid, name, what, value, detail in spec
    ]
    return rows, raw


def _writers_target(n: int, one: dict[str, Any] | None) -> float:
    """The lake writers' targets: 20,000 case rows/s for one writer, 4 x that writer's figure
    for eight (any other count: the one writer's figure, for the ratio)."""
    if n == 1:
        return 20_000.0
    single = one["rows"] / one["wall_s"] if one else 0.0
    return 4 * single if n == 8 else single


# the warehouse group's questions: (id, raw key, what, target in seconds)
WAREHOUSE_TARGETS = (
    (
        "wh-runs-list",
        "runs_list",
        "runs list (`evalwh list`: the 20 newest runs with their counts)",
        0.3,
    ),
    (
        "wh-summary",
        "summary",
        "summary of a typical run (10,000 case rows, 100,000 score rows)",
        0.3,
    ),
    ("wh-slice", "slice", "slice of a typical run by a metadata key", 0.3),
    ("wh-gate", "gate", "gate of a typical run (its config's thresholds)", 0.3),
    ("wh-compare", "compare", "compare of the two 1M-score-row runs (analysis.compare)", 1.0),
    ("wh-case-history", "case_history", "a case's history across all runs", 0.5),
    (
        "wh-calibration",
        "calibration",
        "calibration of the big run (pairwise + pointwise, by slice)",
        1.0,
    ),
)


def warehouse_rows(
    sizes: Sizes, work: Path, results: Path, quick: bool, log: Any
) -> tuple[list[Row], dict[str, Any]]:
    folder = results / "warehouse"
    log(f"warehouse: the 100M-score-row synthetic warehouse (built once, cached under {folder})")
    raw = child(
        "warehouse",
        {
            "work": str(work),
            "folder": str(folder),
            "quick": quick,
            "repeats": sizes.query_repeats,
            "profiles": str(results / "profiles"),
        },
    )
    size = (
        f"warehouse of {raw['rows']['scores'] / 1e6:.0f}M score rows over {raw['rows']['runs']} "
        f"runs ({raw['file_mb'] / 1024:.1f} GB)"
    )
    return question_rows(raw, sizes, size, "", "warehouse"), raw


def question_rows(
    raw: dict[str, Any], sizes: Sizes, size: str, prefix: str, label: str
) -> list[Row]:
    """A row per question of WAREHOUSE_TARGETS (the warehouse group's, or the lake's copy)."""
    rows = []
    for rid, key, what, target in WAREHOUSE_TARGETS:
        value, bare = med(raw["timings_s"][key]), med(raw["bare_s"][key])
        unkeyed = med(raw["by_run_id_s"][key])
        rows.append(
            Row(
                f"{prefix}{rid}",
                f"{label}: {key.replace('_', ' ')}",
                f"{what}; {size}",
                f"<= {target:g} s",
                value,
                "s",
                target,
                False,
                f"median of {sizes.query_repeats}, warm; bare DuckDB {bare:.3f} s "
                f"(evalwh / bare {value / bare:.2f}); by run_id only {unkeyed:.3f} s "
                f"({unkeyed / bare:.1f} x bare); sql: {', '.join(raw['statements'][key])}",
            )
        )
    return rows


def lake_rows(
    sizes: Sizes, work: Path, results: Path, quick: bool, log: Any
) -> tuple[list[Row], dict[str, Any]]:
    rows: list[Row] = []
    raw: dict[str, Any] = {}
    if set(sizes.lake_parts) - {"warehouse"}:
        rows, raw = lake_ingest_rows(sizes, work, results, quick, log)
    if "warehouse" in sizes.lake_parts:
        got, raw["warehouse"] = lake_warehouse_rows(sizes, work, results, quick, log)
        rows += got
    return rows, raw


def lake_warehouse_rows(
    sizes: Sizes, work: Path, results: Path, quick: bool, log: Any
) -> tuple[list[Row], dict[str, Any]]:
    log(
        "lake warehouse: the warehouse group's questions over a lake copy of its synthetic "
        f"warehouse (copied once, cached under {results / 'lake-warehouse'})"
    )
    raw = child(
        "lake_warehouse",
        {
            "work": str(work),
            "results": str(results),
            "quick": quick,
            "repeats": sizes.query_repeats,
            "profiles": str(results / "profiles"),
        },
    )
    copy = raw["copy"]
    size = (
        f"a DuckLake (PostgreSQL catalog, data in a local folder) of {raw['rows']['scores'] / 1e6:.0f}M "
        f"score rows over {raw['rows']['runs']} runs"
    )
    rows = [
        Row(
            "lake-wh-copy",
            "lake warehouse: copy",
            f"`evalwh lake push` of the synthetic warehouse into {size}, once; cached",
            "reported",
            copy["rows"]["scores"] / copy["push_s"],
            "score rows/s",
            1.0,
            True,
            f"{copy['push_s']:.1f} s wall, {copy['push_cpu_s']:.1f} s CPU at load "
            f"{copy['load_at_start']:.1f} -> {copy['load_at_end']:.1f} ({copy['made_at']}); "
            f"data {copy['data_bytes'] / 2**30:.2f} GiB, catalog {copy['pgdata_bytes'] / 2**20:.0f} MB",
        )
    ]
    return rows + question_rows(raw, sizes, size, "lake-", "lake warehouse"), raw


def lake_ingest_rows(
    sizes: Sizes, work: Path, results: Path, quick: bool, log: Any
) -> tuple[list[Row], dict[str, Any]]:
    log(f"lake: PostgreSQL + moto on loopback; {list(sizes.lake_writers)} writers")
    raw = child(
        "lake",
        {
            "work": str(work),
            "synthetic": str(results / "synthetic"),
            "quick": quick,
            "writers": list(sizes.lake_writers),
            "cases": sizes.lake_cases,
            "layout": list(sizes.lake_layout),
            "repeats": sizes.query_repeats,
            "writer_cases": sizes.lake_writer_cases,
            "parts": [p for p in sizes.lake_parts if p != "warehouse"],
        },
    )
    one = next((w for w in raw["written"] if w["writers"] == 1), None)
    rows = [
        Row(
            f"lake-writers-{w['writers']}",
            "lake writers",
            f"case rows/s in total into a DuckLake (PostgreSQL catalog, S3 on moto) from "
            f"{w['writers']} RunWriter process(es) of {raw['writer_cases']:,} case rows each "
            f"(+1 score and 1 cache row each), flushing by lake.flush_rows "
            f"{w['flush_rows']:,} / lake.flush_interval_s {w['flush_interval_s']:g}",
            ">= 20,000 case rows/s (1 writer); 8 writers >= 4 x 1 writer",
            w["rows"] / w["wall_s"],
            "case rows/s",
            _writers_target(w["writers"], one),
            True,
            f"{w['rows']:,} rows in {w['wall_s']:.2f} s from a common start (attach and "
            f"start-up before it); lost {w['lost']}, duplicated {w['duplicated']}, commits "
            f"retried {w['retries']}, flushes {w['flushes']}; load {w['load_at_start']:.1f} -> "
            f"{w['load_at_end']:.1f}",
            {"raw": w},
        )
        for w in raw["written"]
    ]
    rows += [
        Row(
            f"lake-ingest-{r['writers']}",
            "lake ingest",
            f"case rows/s into a DuckLake (PostgreSQL catalog, S3 on moto) from {r['writers']} "
            f"concurrent `evalwh run` processes of {raw['cases_per_writer']:,} mock cases each",
            "reported",
            r["rows"] / r["wall_s"],
            "case rows/s",
            1.0,
            True,
            f"{r['rows']:,} rows in {r['wall_s']:.1f} s wall, process start-up and extension "
            f"loading included; load {r['load_at_start']:.1f} -> {r['load_at_end']:.1f}",
        )
        for r in raw["ingest"]
    ]
    if "push" not in sizes.lake_parts:
        return rows, raw
    size = f"{raw['score_rows'] / 1e6:.1f}M score rows ({raw['compared_run_score_rows'] / 1e6:.1f}M in the compared run)"
    rows.append(
        Row(
            "lake-push",
            "lake push",
            f"`evalwh lake push` of the synthetic warehouse ({raw['pushed_runs']} runs, "
            f"{raw['score_rows']:,} score rows) from a local file into the lake, one transaction",
            "reported",
            raw["score_rows"] / raw["push_s"],
            "score rows/s",
            1.0,
            True,
            f"{raw['push_s']:.1f} s wall",
        )
    )
    rows.append(
        Row(
            "lake-maintain",
            "lake maintain",
            f"`evalwh lake maintain --expire-days 0` on the lake holding the pushed {size}",
            "reported",
            raw["maintain_s"],
            "s",
            1.0,
            False,
            ", ".join(f"{s['step']} {s['rows']}" for s in raw["maintain_steps"]),
        )
    )
    for name in ("summary", "compare"):
        rows.append(
            Row(
                f"lake-query-{name}",
                f"lake query: {name}",
                f"{name} over the synthetic warehouse pushed into the lake: {size}",
                "< 1 s on the file",
                med(raw["timings_s"][name]),
                "s",
                1.0,
                False,
                f"median of {len(raw['timings_s'][name])}; the push took {raw['push_s']:.1f} s",
            )
        )
    return rows, raw


def startup_rows(
    sizes: Sizes, work: Path, results: Path, quick: bool, log: Any
) -> tuple[list[Row], dict[str, Any]]:
    sys.path.insert(0, str(HERE))
    import synth

    layout = synth.QUICK if quick else synth.Layout()
    warehouse = synth.ensure(results / "synthetic", layout, log=log)
    compiled = None
    if not quick:
        log("start-up: compiling bytecode (as `UV_COMPILE_BYTECODE=1 uv sync` would)")
        compiled = child("compile", {"work": str(work)})["compile_s"]
    log(f"start-up: `evalwh --help`, `evalwh list` x {sizes.startup_runs}")
    raw = child(
        "startup", {"work": str(work), "warehouse": str(warehouse), "runs": sizes.startup_runs}
    )
    raw["compile_s"] = compiled
    python = med(raw["python_s"])
    rows = [
        Row(
            "startup-help",
            "start-up",
            "`evalwh --help` (a new process, bytecode compiled)",
            "<= 0.3 s",
            med(raw["help_s"]),
            "s",
            0.3,
            False,
            f"median of {len(raw['help_s'])}; a bare `python -c pass` takes {python:.3f} s",
        ),
        Row(
            "startup-list",
            "start-up",
            f"`evalwh list` on the synthetic warehouse ({layout.runs + layout.big_runs} runs)",
            "<= 0.5 s",
            med(raw["list_s"]),
            "s",
            0.5,
            False,
            f"median of {len(raw['list_s'])}",
        ),
    ]
    return rows, raw


def report_rows(sizes: Sizes, work: Path, log: Any) -> tuple[list[Row], dict[str, Any]]:
    n = sizes.report_cases
    log(f"report: a {n}-case x 2-model mock run, its HTML page x {sizes.report_runs}")
    built = child("report_run", {"work": str(work), "n": n})
    raw = {"run": built}
    raw["page"] = page = child(
        "report",
        {"work": str(work), "config": built["config"], "runs": sizes.report_runs, "paint": True},
    )
    size_mb = page["bytes"] / 1e6
    workload = (
        f"{n:,} cases x 2 mock models ({page['rows']:,} case rows; a fifth of one model's "
        "answers wrong and 2,000 characters long), the run page from `evalwh.reports.html`"
    )
    fcp = med(page["fcp_ms"]) / 1000 if page["fcp_ms"] else None
    rows = [
        Row(
            "report-size",
            "HTML report size",
            workload,
            "< 20 MB",
            size_mb,
            "MB",
            20,
            False,
            f"render median {med(page['render_s']):.2f} s; peak RSS of the rendering process "
            f"{page['peak_rss_mb']:.0f} MB",
        ),
        Row(
            "report-paint",
            "HTML report first paint",
            workload + ", opened from file:// in headless Debian chromium",
            "< 2 s",
            fcp,
            "s",
            2,
            False,
            (
                f"first contentful paint, median of {len(page['fcp_ms'])}; load event median "
                f"{med(page['load_ms']) / 1000:.2f} s"
                if page["fcp_ms"]
                else "no system chromium: not measured"
            ),
        ),
    ]
    big = sizes.report_big_cases
    if big:
        log(f"report: a {big}-case x 2-model mock run (a few minutes), then its page once")
        raw["big_run"] = built = child("report_run", {"work": str(work), "n": big})
        raw["big_page"] = page = child(
            "report", {"work": str(work), "config": built["config"], "runs": 1, "paint": True}
        )
        rows.append(
            Row(
                "report-big",
                "HTML report, large run",
                f"{big:,} cases x 2 mock models ({page['rows']:,} case rows): every failure "
                "first, up to 20,000 rows embedded, the rest counted",
                "usable (< 2 s first paint), no out-of-memory",
                med(page["fcp_ms"]) / 1000 if page["fcp_ms"] else None,
                "s",
                2,
                False,
                f"page {page['bytes'] / 1e6:.1f} MB; render {med(page['render_s']):.2f} s; peak "
                f"RSS of the rendering process {page['peak_rss_mb']:.0f} MB",
            )
        )
    return rows, raw


def http_rows(sizes: Sizes, log: Any) -> tuple[list[Row], dict[str, Any]]:
    sys.path.insert(0, str(HERE))
    import httpclients

    n, c = sizes.http_requests, sizes.http_concurrency
    log(f"http: {n:,} requests at concurrency {c}, 0 ms, each client strategy x {sizes.http_runs}")
    results = httpclients.compare(
        n,
        c,
        sizes.http_runs,
        only=list(sizes.http_strategies) or None,
        loops=sizes.http_loops,
        log=log,
    )
    rows = []
    for r in results:
        fix = " + sniffio fix" if r["sniffio_fix"] and r["strategy"].startswith("httpx") else ""
        rid = f"http-{r['strategy']}-{r['loop']}" + ("-sniffio" if fix else "")
        runs = r["runs"]
        rows.append(
            Row(
                rid,
                f"HTTP client: {r['strategy']}{fix}, {r['loop']}",
                f"{n:,} POSTs (openai body, JSON answer parsed) at concurrency {c} to "
                "benchmarks/server.py at 0 ms; CPU of the client process per request",
                "<= 0.3 ms CPU/request",
                r["cpu_ms_per_request"],
                "ms CPU/request",
                0.3,
                False,
                f"median of {len(runs)}; wall {r['wall_s']:.2f} s; server max in flight "
                f"{max(x['server_max_in_flight'] for x in runs)}; load "
                f"{os.getloadavg()[0]:.1f}",
            )
        )
    return rows, {"strategies": results}


def process_rows(
    sizes: Sizes, work: Path, quick: bool, log: Any
) -> tuple[list[Row], dict[str, Any]]:
    raw: dict[str, Any] = {}
    rows: list[Row] = []
    runs = sizes.process_runs
    # fixed cost: a 1-case run
    if not quick:
        log("process: compiling bytecode (as `UV_COMPILE_BYTECODE=1 uv sync` would)")
        child("compile", {"work": str(work)})
    parts = set(sizes.process_parts)
    ones = runs if quick else max(runs, 5)
    if "one-case" in parts:
        log(f"process: a 1-case `evalwh run` (mock) x {ones}")
        one = child("process", {"work": str(work), "kind": "mock", "n": 1, "runs": ones})
        raw["one_case"] = one
        walls = [r["wall_s"] for r in one["runs"]]
        rows.append(
            Row(
                "process-one-case",
                "fixed cost of a run",
                "a 1-case `evalwh run` (mock provider), whole process, bytecode compiled",
                "<= 0.4 s",
                med(walls),
                "s",
                0.4,
                False,
                f"median of {len(walls)}; CPU {med([r['cpu_s'] for r in one['runs']]):.3f} s "
                f"({', '.join(format(r['cpu_s'], '.3f') for r in one['runs'])}); "
                f"load {med([r['load1'] for r in one['runs']]):.1f}",
            )
        )
    # CPU per case at 0 ms, flat in the case count; the concurrency the server saw
    c = sizes.process_cpu_concurrency
    per_case: dict[int, float] = {}
    for n in sizes.process_cpu_cases if "cpu" in parts else ():
        log(f"process: {n:,} cases over HTTP at 0 ms, concurrency {c} x {runs}")
        got = child(
            "process", {"work": str(work), "kind": "http", "n": n, "runs": runs, "concurrency": c}
        )
        raw[f"cpu_{n}"] = got
        per_case[n] = med([r["cpu_s"] for r in got["runs"]]) / n * 1000
        rows.append(
            Row(
                f"process-cpu-{n}",
                "CPU per case (HTTP, 0 ms)",
                f"{n:,} cases, `evalwh run` (openai-compatible -> benchmarks/server.py at 0 ms, "
                f"concurrency {c}), CPU of the whole process / cases",
                "<= 0.3 ms/case",
                per_case[n],
                "ms CPU/case",
                0.3,
                False,
                f"median of {len(got['runs'])}; wall {med([r['wall_s'] for r in got['runs']]):.2f} s; "
                f"peak RSS {med([r['peak_rss_mb'] for r in got['runs']]):.0f} MB; "
                f"server max in flight {got['server_max_in_flight']} of {c}; load "
                f"{med([r['load1'] for r in got['runs']]):.1f}",
            )
        )
    if len(per_case) > 1:
        small, large = min(per_case), max(per_case)
        rows.append(
            Row(
                "process-cpu-flat",
                "CPU per case flat in the case count",
                f"CPU per case at {large:,} / at {small:,} cases (rows above)",
                "within 10 %",
                per_case[large] / per_case[small],
                "x",
                1.10,
                False,
            )
        )
    # latency-bound efficiency of the whole process
    for conc, n in sizes.process_efficiency if "efficiency" in parts else ():
        lat = 0.1 if not quick else 0.02
        log(f"process: {n:,} cases, {lat * 1000:.0f} ms, concurrency {conc} x {runs}")
        got = child(
            "process",
            {
                "work": str(work),
                "kind": "http",
                "n": n,
                "runs": runs,
                "concurrency": conc,
                "latency": lat,
            },
        )
        raw[f"efficiency_{conc}"] = got
        ideal = n / conc * lat
        wall = med([r["wall_s"] for r in got["runs"]])
        target = 0.85 if conc >= 512 else 0.9
        rows.append(
            Row(
                f"process-efficiency-{conc}",
                "latency-bound efficiency (whole process)",
                f"{n:,} cases, `evalwh run` -> benchmarks/server.py at {lat * 1000:.0f} ms, "
                f"concurrency {conc}: ideal / wall",
                f">= {target}",
                ideal / wall,
                "efficiency",
                target,
                True,
                f"ideal {ideal:.2f} s, wall {wall:.2f} s (median of {len(got['runs'])}); CPU "
                f"{med([r['cpu_s'] for r in got['runs']]):.2f} s; server max in flight "
                f"{got['server_max_in_flight']}; load {med([r['load1'] for r in got['runs']]):.1f}",
            )
        )
    # cached reruns, whole process
    for n in sizes.process_cached_cases if "cached" in parts else ():
        log(f"process: cached rerun of {n:,} mock cases x {runs}")
        got = child(
            "process", {"work": str(work), "kind": "mock", "n": n, "runs": runs, "cached": True}
        )
        raw[f"cached_{n}"] = got
        wall = med([r["wall_s"] for r in got["runs"]])
        cpu = med([r["cpu_s"] for r in got["runs"]])
        rows.append(
            Row(
                f"process-cached-{n}",
                "cached rerun (whole process)",
                f"`evalwh run` of {n:,} mock cases, every answer from the response cache",
                ">= 20,000 cases/s",
                n / wall,
                "cases/s",
                20_000,
                True,
                f"wall {wall:.2f} s, CPU {cpu:.2f} s (at most {n / cpu:,.0f} cases/s of CPU); "
                f"load {med([r['load1'] for r in got['runs']]):.1f}",
            )
        )
    return rows, raw


def adaptive_rows(sizes: Sizes, work: Path, log: Any) -> tuple[list[Row], dict[str, Any]]:
    n, rate, c = sizes.adaptive_cases, sizes.adaptive_rate, sizes.adaptive_concurrency
    log(f"adaptive: {n} cases, server allows {rate:g}/s, concurrency {c}, fixed vs adaptive")
    raw = child(
        "adaptive",
        {"work": str(work), "n": n, "rate": rate, "concurrency": c, "latency": 0.05},
    )
    fixed, adaptive = raw["by_mode"]["fixed"], raw["by_mode"]["adaptive"]
    row = Row(
        "adaptive",
        "adaptive concurrency",
        f"{n} cases, concurrency {c}, server allowing {rate:g} requests/s (429 + Retry-After "
        "0.1 s beyond), 50 ms a reply: 429s with adaptive / fixed concurrency",
        "fewer 429s than fixed (ratio < 1)",
        adaptive["rejected"] / max(1, fixed["rejected"]),
        "x",
        1.0,
        False,
        f"429s fixed {fixed['rejected']} / adaptive {adaptive['rejected']}; requests "
        f"{fixed['requests']} / {adaptive['requests']}; wall {fixed['wall_s']:.2f} / "
        f"{adaptive['wall_s']:.2f} s (ideal {n / rate:.2f} s); CPU {fixed['cpu_s']:.2f} / "
        f"{adaptive['cpu_s']:.2f} s",
    )
    return [row], raw


def toolloop_rows(sizes: Sizes, log: Any) -> tuple[list[Row], dict[str, Any]]:
    sys.path.insert(0, str(HERE))
    import toolloop

    n = sizes.toolloop_cells
    log(
        f"toolloop: {n} cells x 3 turns against {n} single-request cells, {sizes.toolloop_runs} runs"
    )
    raw = toolloop.measure_toolloop(n, sizes.toolloop_runs)
    row = Row(
        "toolloop",
        "tool loop CPU per turn",
        f"{n:,} cells of a three-turn tool loop (two mock tool calls, then the answer) against "
        f"{n:,} single-request cells; openai-compatible provider -> benchmarks/server.py at 0 ms "
        "(its own process), concurrency 32, `evalwh run` CPU (user + system) per request",
        "<= 1.5 x a single request's CPU",
        raw["ratio"],
        "x",
        1.5,
        False,
        f"{raw['cpu_ms_per_turn_loop']:.3f} ms a turn against {raw['cpu_ms_per_request_single']:.3f}"
        f" ms a single request (medians of {len(raw['runs']['loop'])}); requests "
        f"{raw['requests']['single']:,} / {raw['requests']['loop']:,}; load {raw['load1']:.1f}",
    )
    return [row], raw


def viewer_rows(
    sizes: Sizes, work: Path, results: Path, quick: bool, log: Any
) -> tuple[list[Row], dict[str, Any]]:
    log("viewer: every page's server time over the synthetic warehouse")
    pages = child(
        "viewer_pages",
        {
            "work": str(work),
            "synthetic": str(results / "synthetic"),
            "quick": quick,
            "repeats": sizes.viewer_repeats,
        },
    )
    t = {k: med(v) for k, v in pages["timings_s"].items()}
    rows = [
        Row(
            "viewer-runs-list",
            "viewer: runs list",
            "`/` (the runs list, 200 newest) over the synthetic warehouse, server time "
            "(the ASGI app called in-process)",
            "< 0.2 s",
            t["runs_list"],
            "s",
            0.2,
            False,
            f"median of {sizes.viewer_repeats}; `/runs.json` {t['runs_list_json']:.3f} s",
        )
    ]
    others = {k: v for k, v in t.items() if k not in ("runs_list", "runs_list_json")}
    slowest = max(others, key=lambda k: others[k])
    rows.append(
        Row(
            "viewer-pages",
            "viewer: slowest other page",
            "run page (the report's sections; its criteria, slices and 1,000 case rows each "
            "loaded by a request of their own, timed as pages too), its JSON, compare (its "
            "criteria, slices and movers sections timed as pages too), slices, calibration, a "
            "case's history, baselines, progress: the slowest of them, over the biggest run of "
            "the synthetic warehouse",
            "< 1 s",
            others[slowest],
            "s",
            1.0,
            False,
            f"slowest: {slowest}; "
            + ", ".join(f"{k} {v:.3f} s" for k, v in sorted(others.items()))
            + "".join(f"; {k} FAILED ({why})" for k, why in pages.get("failed", {}).items()),
        )
    )
    log(f"viewer: a {sizes.viewer_cases}-case run alone and watched, x {sizes.viewer_runs}")
    raw = {"pages": pages}
    raw["watching"] = w = child(
        "viewer_watching",
        {
            "work": str(work),
            "n": sizes.viewer_cases,
            "latency_ms": sizes.viewer_latency_ms,
            "runs": sizes.viewer_runs,
        },
    )
    ratio = med(w["watched_s"]) / med(w["alone_s"])
    rows.append(
        Row(
            "viewer-watching",
            "run wall time, viewer watching",
            f"{w['n']:,} mock cases ({w['latency_ms']:g} ms each), run_eval wall time with "
            "`evalwh serve` following the run's live tail / without",
            "<= 1.05 x",
            ratio,
            "x",
            1.05,
            False,
            f"alone {', '.join(f'{x:.2f}' for x in w['alone_s'])} s; watched "
            f"{', '.join(f'{x:.2f}' for x in w['watched_s'])} s; events seen {w['events']}",
        )
    )
    return rows, raw


# ---- output -------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg_start": os.getloadavg(),
    }
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                info["ram_gb"] = round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    for module in ("duckdb", "pyarrow", "jinja2", "httpx"):
        try:
            info[module] = __import__(module).__version__
        except Exception:
            info[module] = None
    return info


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "s":
        return f"{value:.3f} s"
    if unit in ("x ideal", "x", "efficiency"):
        return f"{value:.3f}" + (" x" if unit != "efficiency" else "")
    if unit.startswith("ms"):
        return f"{value:.3f} {unit}"
    if unit == "MB":
        return f"{value:.1f} MB" if value < 100 else f"{value:.0f} MB"
    return f"{value:,.0f} {unit}"


def table(rows: list[Row], markdown: bool = False) -> str:
    head = ["what", "workload", "target", "measured", "ratio to target", "met?"]
    body = [
        [
            r.what,
            r.workload,
            r.target,
            fmt(r.measured, r.unit),
            "-" if r.ratio is None else f"{r.ratio:.2f}",
            {True: "yes", False: "NO", None: "-"}[r.met],
        ]
        for r in rows
    ]
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(cells) + " |" for cells in body]
        return "\n".join(lines)
    short = [
        [c if i != 1 else (c if len(c) <= 60 else c[:57] + "...") for i, c in enumerate(b)]
        for b in body
    ]
    widths = [max(len(x) for x in col) for col in zip(head, *short, strict=False)]
    out = ["  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True))]
    out.append("  ".join("-" * w for w in widths))
    out += ["  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) for cells in short]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="evalwh benchmarks")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (checks the runner)")
    parser.add_argument("--only", default="", help=f"comma-separated groups: {', '.join(GROUPS)}")
    parser.add_argument("--runs", type=int, default=None, help="runs per figure (median)")
    parser.add_argument(
        "--results",
        type=Path,
        default=RESULTS,
        help="folder for scratch runs, the cached synthetic warehouse and the JSON "
        "(default benchmarks/results/, gitignored)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="JSON path (default RESULTS/latest.json, or RESULTS/quick.json with --quick)",
    )
    parser.add_argument(
        "--lake-layout",
        default=None,
        metavar="R,C,BR,BC",
        help="the synthetic warehouse the lake group pushes and queries: runs, cases per run, "
        "big runs, cases per big run (default: the full 100,10000,2,100000)",
    )
    parser.add_argument(
        "--lake-parts",
        default="",
        help=f"comma-separated parts of the lake group: {', '.join(LAKE_PARTS)} (default "
        f"{','.join(DEFAULT_LAKE_PARTS)})",
    )
    parser.add_argument(
        "--lake-writers",
        default="",
        help="comma-separated writer counts of the lake group's ingest figures (default 1,4,8)",
    )
    parser.add_argument(
        "--process-parts",
        default="",
        help=f"comma-separated rows of the process group: {', '.join(PROCESS_PARTS)} (default all)",
    )
    parser.add_argument(
        "--process-cached",
        default="",
        help="comma-separated case counts of the process group's cached reruns (default 10000,100000)",
    )
    parser.add_argument("--child", nargs=2, metavar=("NAME", "PARAMS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child_main(args.child[0], json.loads(args.child[1]))
        return 0

    sizes = QUICK if args.quick else Sizes()
    if args.runs:
        for name in (
            "engine_runs",
            "latency_runs",
            "memory_runs",
            "ingest_runs",
            "query_repeats",
            "startup_runs",
            "report_runs",
            "http_runs",
            "process_runs",
            "toolloop_runs",
        ):
            setattr(sizes, name, args.runs)
    if args.lake_layout:
        runs, cases, big_runs, big_cases = (int(v) for v in args.lake_layout.split(","))
        sizes.lake_layout = (runs, cases, big_runs, big_cases)
    for option, known_parts, attribute in (
        ("lake-parts", LAKE_PARTS, "lake_parts"),
        ("process-parts", PROCESS_PARTS, "process_parts"),
    ):
        given = getattr(args, attribute)
        if given:
            chosen = tuple(p for p in given.split(",") if p)
            if set(chosen) - set(known_parts):
                parser.error(f"--{option}: known parts are {', '.join(known_parts)}")
            setattr(sizes, attribute, chosen)
    if args.lake_writers:
        sizes.lake_writers = tuple(int(n) for n in args.lake_writers.split(",") if n)
    if args.process_cached:
        sizes.process_cached_cases = tuple(int(n) for n in args.process_cached.split(","))
    groups = [g for g in args.only.split(",") if g] or list(GROUPS)
    known = (*GROUPS, *OPTIONAL_GROUPS)
    unknown = set(groups) - set(known)
    if unknown:
        parser.error(f"unknown group(s) {', '.join(sorted(unknown))}; known: {', '.join(known)}")
    results = args.results.resolve()
    out = args.out or results / ("quick.json" if args.quick else "latest.json")
    work = results / ("work-quick" if args.quick else "work")
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    info = machine()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f}s] {message}", file=sys.stderr, flush=True)

    log(f"machine: {info.get('cpu')}, {info['nproc']} cores, load {info['loadavg_start']}")
    rows: list[Row] = []
    raw: dict[str, Any] = {}
    failed: dict[str, str] = {}
    for group in (*GROUPS, *OPTIONAL_GROUPS):
        if group not in groups:
            continue
        try:
            if group == "engine":
                got, raw["engine"] = engine_rows(sizes, work, log)
            elif group == "latency":
                got, raw["latency"] = latency_rows(sizes, work, log)
            elif group == "memory":
                got, raw["memory"] = memory_rows(sizes, work, log)
            elif group == "datasource":
                got, raw["datasource"] = datasource_rows(sizes, work, log)
            elif group == "casefile":
                got, raw["casefile"] = casefile_rows(sizes, work, log)
            elif group == "ingest":
                got, raw["ingest"] = ingest_rows(sizes, work, log)
            elif group == "queries":
                got, raw["queries"] = query_rows(sizes, work, results, args.quick, log)
            elif group == "lake":
                got, raw["lake"] = lake_rows(sizes, work, results, args.quick, log)
            elif group == "warehouse":
                got, raw["warehouse"] = warehouse_rows(sizes, work, results, args.quick, log)
            elif group == "report":
                got, raw["report"] = report_rows(sizes, work, log)
            elif group == "http":
                got, raw["http"] = http_rows(sizes, log)
            elif group == "process":
                got, raw["process"] = process_rows(sizes, work, args.quick, log)
            elif group == "adaptive":
                got, raw["adaptive"] = adaptive_rows(sizes, work, log)
            elif group == "viewer":
                got, raw["viewer"] = viewer_rows(sizes, work, results, args.quick, log)
            elif group == "toolloop":
                got, raw["toolloop"] = toolloop_rows(sizes, log)
            else:
                got, raw["startup"] = startup_rows(sizes, work, results, args.quick, log)
        except Exception as exc:  # one broken group must not lose the others' figures
            failed[group] = f"{type(exc).__name__}: {exc}"
            log(f"{group} FAILED: {failed[group]}")
            continue
        rows += got
    info["loadavg_end"] = os.getloadavg()
    result = {
        "quick": args.quick,
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "duration_s": round(time.perf_counter() - started, 1),
        "machine": info,
        "sizes": asdict(sizes),
        "rows": [r.to_dict() for r in rows],
        "failed": failed,
        "raw": raw,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")
    out.with_suffix(".md").write_text(table(rows, markdown=True) + "\n", encoding="utf-8")
    print(table(rows))
    for r in rows:
        if r.detail:
            print(f"- {r.id}: {r.detail}")
    for group, why in failed.items():
        print(f"- {group}: FAILED ({why})")
    print(f"\nwrote {out} ({result['duration_s']} s; load average {info['loadavg_end']})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
