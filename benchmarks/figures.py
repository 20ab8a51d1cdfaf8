"""The measurements. Each ``measure_*`` runs inside a child process started by run.py and
returns a JSON-able dict; nothing here prints a table or judges a target."""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import workloads  # noqa: E402


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


@contextlib.contextmanager
def timed_execute(into: list[float]) -> Iterator[None]:
    """Record the wall time of every evalwh.engine.execute.execute() call (the engine phase:
    create the run, call, score, write every row, finish the run)."""
    import evalwh.engine.execute as ex

    original = ex.execute

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            into.append(time.perf_counter() - started)

    ex.execute = wrapper
    try:
        yield
    finally:
        ex.execute = original


@contextlib.contextmanager
def timed_engine(into: list[float]) -> Iterator[None]:
    """Record the wall time of every Engine.run() (the request phase: first request to the
    last result handed to the writer; the run's bookkeeping and final flush excluded)."""
    from evalwh.engine.runner import Engine

    original = Engine.run

    async def wrapper(self: Any) -> Any:
        started = time.perf_counter()
        try:
            return await original(self)
        finally:
            into.append(time.perf_counter() - started)

    Engine.run = wrapper  # type: ignore[method-assign]
    try:
        yield
    finally:
        Engine.run = original  # type: ignore[method-assign]


def _fresh(folder: Path) -> None:
    shutil.rmtree(folder / ".evalwh", ignore_errors=True)


def _warm_up(work: Path, base_url: str | None = None) -> None:
    """One tiny run first, so lazy imports (duckdb, pyarrow, jsonschema, httpx) are done."""
    import evalwh

    config = workloads.write_config(work / "warm-up", 20, base_url=base_url)
    _fresh(config.parent)
    evalwh.run_eval(config)


# ---- engine overhead and cached rerun ---------------------------------------------------


def measure_engine(work: Path, n: int, runs: int) -> dict[str, Any]:
    """``n`` mock cases end to end (run_eval), fresh warehouse each time; then the same run
    again ``runs`` times from the cache."""
    import evalwh

    _warm_up(work)
    config = workloads.write_config(work / f"engine-{n}", n)
    fresh: list[float] = []
    fresh_exec: list[float] = []
    calls: list[int] = []
    for _ in range(runs):
        _fresh(config.parent)
        with timed_execute(fresh_exec):
            started = time.perf_counter()
            result = evalwh.run_eval(config)
            fresh.append(time.perf_counter() - started)
        calls.append(result.stats["requests"])
        assert result.totals["n"] == n, result.totals
    cached: list[float] = []
    cached_exec: list[float] = []
    cached_calls: list[int] = []
    hits: list[int] = []
    for _ in range(runs):
        with timed_execute(cached_exec):
            started = time.perf_counter()
            result = evalwh.run_eval(config)
            cached.append(time.perf_counter() - started)
        cached_calls.append(result.stats["requests"])
        hits.append(result.stats["cache_hits"])
        assert result.totals["n"] == n, result.totals
    return {
        "n": n,
        "runs": runs,
        "fresh_s": fresh,
        "fresh_execute_s": fresh_exec,
        "fresh_calls": calls,
        "cached_s": cached,
        "cached_execute_s": cached_exec,
        "cached_calls": cached_calls,
        "cached_hits": hits,
        "peak_rss_mb": peak_rss_mb(),
    }


# ---- latency-bound efficiency -------------------------------------------------------------


@contextlib.contextmanager
def latency_server(latency: float, *args: str) -> Iterator[str]:
    """benchmarks/server.py in its own process; yields its OpenAI base URL."""
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "server.py"), "--latency", str(latency), *args],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"benchmark server did not start: {line!r}")
        yield f"http://127.0.0.1:{int(line.split()[1])}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def server_stats(base_url: str, reset: bool = False) -> dict[str, Any]:
    import httpx

    return httpx.get(base_url + ("/stats/reset" if reset else "/stats"), timeout=5).json()


def measure_latency(
    work: Path, n: int, latency: float, concurrency: list[int], runs: int, mode: str = "http"
) -> dict[str, Any]:
    """``n`` cases at each concurrency, every answer taking ``latency`` s.

    ``mode``: ``http`` - the shipped openai-compatible provider against the loopback server;
    ``mock`` - the mock provider sleeping ``latency`` (the engine alone, no HTTP client).
    """
    import evalwh

    out: dict[str, Any] = {
        "n": n,
        "latency_s": latency,
        "runs": runs,
        "mode": mode,
        "by_concurrency": {},
    }
    with contextlib.ExitStack() as stack:
        base_url = None if mode == "mock" else stack.enter_context(latency_server(latency))
        _warm_up(work, base_url)
        for c in concurrency:
            config = workloads.write_config(
                work / f"latency-{n}-c{c}-{mode}",
                n,
                concurrency=c,
                base_url=base_url,
                mock_latency_ms=latency * 1000 if mode == "mock" else 0,
            )
            walls: list[float] = []
            engine: list[float] = []
            totals: list[float] = []
            peaks: list[int] = []
            errors: list[int] = []
            for _ in range(runs):
                _fresh(config.parent)
                before = server_stats(base_url)["requests"] if base_url else 0
                with timed_execute(walls), timed_engine(engine):
                    started = time.perf_counter()
                    result = evalwh.run_eval(config)
                    totals.append(time.perf_counter() - started)
                errors.append(result.stats["errors"])  # a request past timeout_s (300 s)
                if base_url:
                    stats = server_stats(base_url)
                    assert stats["requests"] - before >= n, (stats, before)
                    peaks.append(stats["max_in_flight"])
            out["by_concurrency"][str(c)] = {
                "ideal_s": n / c * latency,
                "engine_s": engine,
                "execute_s": walls,
                "run_eval_s": totals,
                "server_max_in_flight": max(peaks) if peaks else None,
                "errors": errors,
            }
    return out


# ---- memory -------------------------------------------------------------------------------


def _vm() -> tuple[float, float]:
    """(current RSS, peak RSS) of this process in MB, from /proc."""
    values = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(("VmRSS", "VmHWM")):
                values[line[:5]] = int(line.split()[1]) / 1024
    return values.get("VmRSS", 0.0), values.get("VmHWM", 0.0)


@contextlib.contextmanager
def phase_marks(into: list[tuple[str, float, float]]) -> Iterator[None]:
    """Note (phase, RSS, peak RSS) after each phase of run_eval: load the config, prepare
    (render + hash), the cache lookup, execute, the Parquet export."""
    import evalwh.api as api
    import evalwh.engine.execute as ex
    from evalwh.warehouse.store import Warehouse

    patched = [
        (api, "load_config", "load config"),
        (ex, "prepare", "prepare"),
        (ex, "cache_lookup", "cache lookup"),
        (ex, "execute", "execute"),
        (Warehouse, "export_run", "Parquet export"),
    ]
    originals = [getattr(owner, name) for owner, name, _ in patched]

    def marked(fn: Callable[..., Any], label: str) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            finally:
                into.append((label, *_vm()))

        return wrapper

    for (owner, name, label), fn in zip(patched, originals, strict=True):
        setattr(owner, name, marked(fn, label))
    try:
        yield
    finally:
        for (owner, name, _), fn in zip(patched, originals, strict=True):
            setattr(owner, name, fn)


def measure_memory(work: Path, n: int) -> dict[str, Any]:
    """One mock run of ``n`` cases in this (fresh) process; its peak RSS, phase by phase."""
    import evalwh

    config = workloads.write_config(work / f"memory-{n}", n)
    _fresh(config.parent)
    # the libraries a run loads, first: the phases below then show data, not imports
    import duckdb  # noqa: F401
    import jsonschema  # noqa: F401
    import pyarrow  # noqa: F401

    import evalwh.analysis.gate
    import evalwh.api
    import evalwh.engine.execute
    import evalwh.providers.mock
    import evalwh.warehouse.store

    marks: list[tuple[str, float, float]] = [("imports", *_vm())]
    started = time.perf_counter()
    with phase_marks(marks):
        result = evalwh.run_eval(config)
    wall = time.perf_counter() - started
    marks.append(("end", *_vm()))
    assert result.totals["n"] == n
    shutil.rmtree(config.parent, ignore_errors=True)
    return {"n": n, "peak_rss_mb": peak_rss_mb(), "phases": marks, "wall_s": wall}


def measure_datasource(work: Path, n: int) -> dict[str, Any]:
    """One mock run of ``n`` cases streamed from a datasource, in this (fresh) process."""
    import evalwh

    config = workloads.write_datasource_config(work / f"datasource-{n}", n)
    _fresh(config.parent)
    started = time.perf_counter()
    result = evalwh.run_eval(config)
    wall = time.perf_counter() - started
    assert result.totals["n"] == n, result.totals
    shutil.rmtree(config.parent, ignore_errors=True)
    return {"n": n, "peak_rss_mb": peak_rss_mb(), "wall_s": wall}


def measure_casefile(work: Path, n: int, stream_at: int | None = None) -> dict[str, Any]:
    """One `evalwh run -q` process of an ``n``-line JSONL case file (workloads.write_config);
    ``stream_at``: a lower streaming bound for this run (the quick sizes stream 3,000 lines):
    the child is given a sitecustomize that sets evalwh.config.streamed.STREAM_AT."""
    config = workloads.write_config(work / f"casefile-{n}", n)
    _fresh(config.parent)
    env = _process_env(work)
    if stream_at is not None:
        hook = work / "casefile-stream-at"
        hook.mkdir(parents=True, exist_ok=True)
        (hook / "sitecustomize.py").write_text(
            f"import evalwh.config.streamed as s\ns.STREAM_AT = {int(stream_at)}\n",
            encoding="utf-8",
        )
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(hook), env.get("PYTHONPATH")]))
    out = run_process(config, env)
    shutil.rmtree(config.parent, ignore_errors=True)
    return {"n": n, "stream_at": stream_at, **out}


# ---- ingest -------------------------------------------------------------------------------


def _realistic_rows(n_cases: int, criteria: int, offset: int) -> Iterator[tuple[list, list]]:
    """Case and score rows shaped like evalwh.engine.records.RowSink's, built by column name
    (CASE_COLUMNS, SCORE_COLUMNS): a column a migration adds is None here until set."""
    from datetime import datetime, timezone

    from evalwh.warehouse.writer import CASE_COLUMNS, SCORE_COLUMNS

    now = datetime.now(timezone.utc)
    for i in range(offset, offset + n_cases):
        key = {"run_id": "ingest", "variant": "plain", "model": "mock", "repeat": 0}
        key["case_id"] = f"case-{i:07d}"
        question = f"What is {i} plus {i}?"
        case = {
            **key,
            "vars": f'{{"question": "{question}"}}',
            "expected": f'"{2 * i}"',
            "metadata": '{"topic": "math", "difficulty": "easy"}',
            "messages": '[{"role": "system", "content": [{"type": "text", "text": "Answer with '
            f'the number only."}}]}}, {{"role": "user", "content": [{{"type": "text", "text": '
            f'"{question}"}}]}}]',
            "output": str(2 * i),
            "latency_ms": 12.5,
            "input_tokens": 20,
            "output_tokens": 3,
            "cached": False,
            "request_hash": f"{i:064x}",
            "attempts": 1,
            "score": 1.0,
            "passed": True,
            "created_at": now,
        }
        scores = [
            {
                **key,
                "criterion": f"criterion-{k}",
                "scorer": "contains",
                "score": 1.0,
                "passed": True,
                "weight": 1.0,
                "required": k == 0,
                "details": '{"found": ["' + str(2 * i) + '"], "missing": []}' if k % 2 else None,
            }
            for k in range(criteria)
        ]
        yield (
            [case.get(name) for name, _ in CASE_COLUMNS],
            [[score.get(name) for name, _ in SCORE_COLUMNS] for score in scores],
        )


def measure_ingest(work: Path, cases_per_flush: int, criteria: int, flushes: int) -> dict[str, Any]:
    """Score rows per second through RunWriter: take_batch (rows -> Arrow) + flush (one
    transaction on a short-lived connection), into a warehouse that already holds rows."""
    from evalwh.warehouse.writer import RunWriter

    folder = work / "ingest"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    path = folder / "warehouse.duckdb"
    writer = RunWriter(path, "ingest", batch_size=cases_per_flush)
    # the run row the heartbeat updates, and one warm-up batch (creates the schema)
    from evalwh.warehouse.connect import write_connection

    with write_connection(path) as con:
        con.execute(
            "INSERT INTO runs (run_id, suite, status, config_hash, dataset_hash, n_planned, "
            "started_at, evalwh_version) VALUES ('ingest', 'bench', 'running', 'c', 'd', 0, "
            "now(), 'bench')"
        )
    add_s: list[float] = []
    arrow_s: list[float] = []
    write_s: list[float] = []
    for f in range(flushes + 1):
        started = time.perf_counter()
        for case, scores in _realistic_rows(cases_per_flush, criteria, f * cases_per_flush):
            writer.add_case(case)
            for row in scores:
                writer.add_score(row)
        added = time.perf_counter()
        if hasattr(writer, "tables"):
            tables = writer.tables(writer.take_batch())  # rows -> Arrow
            converted = time.perf_counter()
            writer.write(tables)  # Arrow -> DuckDB, one transaction
        else:  # the writer before the benchmarks: take_batch() built the Arrow tables
            tables = writer.take_batch()
            converted = time.perf_counter()
            writer.flush(tables)
        done = time.perf_counter()
        if f:  # the first batch warms up
            add_s.append(added - started)
            arrow_s.append(converted - added)
            write_s.append(done - converted)
    score_rows = cases_per_flush * criteria * flushes
    return {
        "cases_per_flush": cases_per_flush,
        "criteria": criteria,
        "flushes": flushes,
        "score_rows": score_rows,
        "case_rows": cases_per_flush * flushes,
        "add_s": add_s,
        "arrow_s": arrow_s,
        "write_s": write_s,
        "score_rows_per_s": score_rows / sum(write_s),
        "score_rows_per_s_with_arrow": score_rows / (sum(write_s) + sum(arrow_s)),
    }


# ---- queries ------------------------------------------------------------------------------


def time_jobs(jobs: dict[str, Callable[[], Any]], repeats: int) -> dict[str, list[float]]:
    """Seconds of each job, ``repeats`` times, after one warm-up run (the data's pages in the
    OS cache, as for any second query)."""
    timings: dict[str, list[float]] = {}
    for name, job in jobs.items():
        job()
        values = []
        for _ in range(repeats):
            started = time.perf_counter()
            job()
            values.append(time.perf_counter() - started)
        timings[name] = values
    return timings


def measure_queries(work: Path, synthetic: str, quick: bool, repeats: int) -> dict[str, Any]:
    """The named queries over the synthetic warehouse (built once, cached by layout)."""
    import synth

    from evalwh.analysis.compare import compare
    from evalwh.analysis.judging import report
    from evalwh.analysis.slices import slice_run
    from evalwh.warehouse.store import Warehouse

    layout = synth.QUICK if quick else synth.Layout()
    path = synth.ensure(Path(synthetic), layout, log=_log)
    store = Warehouse(path)
    run_a, run_b = synth.big_run_ids(layout)
    small = synth.run_id(layout.runs // 2)

    jobs: dict[str, Callable[[], Any]] = {
        "summary": lambda: store.query("summary", run_id=run_b),
        "summary_small_run": lambda: store.query("summary", run_id=small),
        "run_totals": lambda: store.query("run_totals", run_id=run_b),
        "criteria": lambda: store.query("criteria", run_id=run_b),
        "compare_sql": lambda: store.query(
            "compare",
            run_a=run_a,
            run_b=run_b,
            cluster=None,
            keys=["difficulty", "lang", "topic"],
            combine=False,
            scopes=None,
        ),
        "compare": lambda: compare(store, run_a, run_b),
        "compare_cases": lambda: store.query("compare_cases", run_a=run_a, run_b=run_b, limit=20),
        "slice": lambda: slice_run(store, run_b, ["topic"]),
        "slice_two_keys": lambda: slice_run(store, run_b, ["topic", "difficulty"]),
        "calibration": lambda: report(store, run_b, by="topic"),
        "runs_list": lambda: store.query(
            "runs", limit=20, suite=None, label=None, status=None, since=None, until=None
        ),
    }
    timings = time_jobs(jobs, repeats)
    import duckdb

    with duckdb.connect(str(path), read_only=True) as con:
        counts = {
            t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]  # type: ignore[index]
            for t in ("runs", "cases", "scores", "pairs", "labels")
        }
        per_run = con.execute("SELECT count(*) FROM scores WHERE run_id = ?", [run_b]).fetchone()[0]  # type: ignore[index]
    return {
        "warehouse": str(path),
        "layout": layout.key,
        "rows": counts,
        "compared_run_score_rows": per_run,
        "file_mb": path.stat().st_size / 2**20,
        "timings_s": timings,
    }


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---- start-up -------------------------------------------------------------------------------


def evalwh_command() -> list[str]:
    script = Path(sys.executable).parent / "evalwh"
    return [str(script)] if script.exists() else [sys.executable, "-m", "evalwh.cli.main"]


def time_command(argv: list[str], runs: int, env: dict[str, str], cwd: Path) -> list[float]:
    """Wall times of ``runs`` runs of a command (after two untimed warm-up runs)."""
    values = []
    for i in range(runs + 2):
        started = time.perf_counter()
        done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr[-500:]}")
        if i >= 2:
            values.append(elapsed)
    return values


def measure_startup(warehouse: Path, scratch: Path, runs: int) -> dict[str, Any]:
    """`evalwh --help`, and `evalwh list` on ``warehouse``, as fresh processes."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALWH_")}
    scratch.mkdir(parents=True, exist_ok=True)
    env["EVALWH_CONFIG_DIR"] = str(scratch / "no-user-config")  # no user config
    cmd = evalwh_command()
    return {
        "command": cmd,
        "help_s": time_command([*cmd, "--help"], runs, env, scratch),
        "list_s": time_command(
            [*cmd, "list"], runs, {**env, "EVALWH_WAREHOUSE": str(warehouse)}, scratch
        ),
        "python_s": time_command([sys.executable, "-c", "pass"], runs, env, scratch),
    }


def compile_bytecode() -> float:
    """What `UV_COMPILE_BYTECODE=1 uv sync` does: .pyc for the package and site-packages."""
    import sysconfig

    import evalwh

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    started = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "compileall",
            "-q",
            "-j",
            "0",
            str(Path(evalwh.__file__).parent),
            sysconfig.get_paths()["purelib"],
        ],
        env=env,
        capture_output=True,
        check=False,
    )
    return time.perf_counter() - started


def run_async(coro: Any) -> Any:
    return asyncio.run(coro)


# ---- the HTML report ----------------------------------------------------------------------


def build_report_run(work: Path, n: int) -> dict[str, Any]:
    """The run the report figures read: ``n`` cases x 2 mock models (workloads), once."""
    import evalwh

    config = workloads.write_report_config(work / f"report-{n}", n)
    _fresh(config.parent)
    started = time.perf_counter()
    result = evalwh.run_eval(config)
    return {"config": str(config), "run_id": result.run_id, "rows": result.totals["n"],
            "run_s": time.perf_counter() - started}  # fmt: skip


def measure_report(work: Path, config: str, runs: int, paint: bool) -> dict[str, Any]:
    """Render the run page of the latest run of ``config`` ``runs`` times (size, time, this
    process's peak RSS), then open it ``runs`` times in headless chromium: first contentful
    paint and the load event, from navigation start."""
    import evalwh
    from evalwh.reports.html import render_run, write

    view = evalwh.open_warehouse(config=Path(config))
    run_id = view.resolve("latest")
    before = peak_rss_mb()
    render_s: list[float] = []
    text = ""
    for _ in range(runs):
        started = time.perf_counter()
        text = render_run(view.store, run_id)
        render_s.append(time.perf_counter() - started)
    page = write(text, work / "report.html")
    out: dict[str, Any] = {
        "rows": view.query("run_totals", run_id=run_id).to_pylist()[0]["n"],
        "bytes": page.stat().st_size,
        "render_s": render_s,
        "peak_rss_mb_before": before,
        "peak_rss_mb": peak_rss_mb(),
        "fcp_ms": [],
        "load_ms": [],
    }
    chromium = (
        "/usr/bin/chromium" if Path("/usr/bin/chromium").is_file() else shutil.which("chromium")
    )
    if not paint or chromium is None:
        return out
    from playwright.sync_api import sync_playwright

    args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=args)
        for _ in range(runs):
            tab = browser.new_page()
            tab.goto(page.resolve().as_uri(), wait_until="load")
            # under load the paint entry can come after the load event; poll from Python
            # (wait_for_function evaluates a string in the page, which its CSP forbids)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not tab.evaluate(
                "performance.getEntriesByName('first-contentful-paint').length"
            ):
                time.sleep(0.05)
            out["fcp_ms"].append(
                tab.evaluate("performance.getEntriesByName('first-contentful-paint')[0].startTime")
            )
            out["load_ms"].append(
                tab.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd")
            )
            tab.close()
        browser.close()
    return out


# ---- whole `evalwh run` processes ----------------------------------------------------------


def run_process(config: Path, env: dict[str, str], *extra: str) -> dict[str, float]:
    """One `evalwh run CONFIG -q` as a new process: wall, its CPU (user + sys) and its peak
    RSS, from that child's own rusage (``os.wait4``), which a shared machine's load does not
    inflate."""
    import tempfile

    cmd = [*evalwh_command(), "run", str(config), "-q", *extra]
    with tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(
            cmd, env=env, cwd=config.parent, stdout=subprocess.DEVNULL, stderr=err
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        if code not in (0, 1):  # 1: a threshold failed, still a finished run
            err.seek(0)
            stderr = err.read().decode(errors="replace")
            raise RuntimeError(f"{' '.join(cmd)} failed ({code}): {stderr[-800:]}")
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_mb": usage.ru_maxrss / 1024,  # KiB on Linux
        "load1": os.getloadavg()[0],
    }


def _process_env(scratch: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALWH_")}
    env["EVALWH_CONFIG_DIR"] = str(scratch / "no-user-config")
    return env


def measure_process(
    work: Path,
    kind: str,
    n: int,
    runs: int,
    concurrency: int = 16,
    latency: float = 0.0,
    cached: bool = False,
) -> dict[str, Any]:
    """``runs`` whole `evalwh run` processes of ``n`` cases.

    ``kind``: ``mock`` (the mock provider) or ``http`` (openai-compatible against
    benchmarks/server.py answering after ``latency`` s). ``cached``: one untimed run first,
    then every timed run is a rerun answered from the response cache.
    """
    env = _process_env(work)
    out: dict[str, Any] = {"n": n, "kind": kind, "concurrency": concurrency, "latency_s": latency}
    with contextlib.ExitStack() as stack:
        base_url = stack.enter_context(latency_server(latency)) if kind == "http" else None
        folder = work / f"process-{kind}-{n}-c{concurrency}-{'cached' if cached else 'fresh'}"
        config = workloads.write_config(folder, n, concurrency=concurrency, base_url=base_url)
        _fresh(folder)
        run_process(config, env)  # warm-up: the OS file cache, the server's connections
        results, peaks = [], []
        for _ in range(runs):
            if not cached:
                _fresh(folder)
            if base_url:
                before = server_stats(base_url)
                server_stats(base_url, reset=True)
            results.append(run_process(config, env))
            if base_url:
                stats = server_stats(base_url)
                peaks.append(stats["max_in_flight"])
                if not cached:
                    assert stats["requests"] - before["requests"] >= n, (stats, before)
        if cached:
            _assert_replayed(folder / ".evalwh" / "warehouse.duckdb", n)
        shutil.rmtree(folder / ".evalwh", ignore_errors=True)
    out["runs"] = results
    out["server_max_in_flight"] = max(peaks) if peaks else None
    return out


def _assert_replayed(warehouse: Path, n: int) -> None:
    """The last timed rerun stored its ``n`` cells all from the response cache: a rerun that
    asks again (as streamed case files did before they were looked up) is not a figure."""
    import duckdb

    with duckdb.connect(str(warehouse), read_only=True) as con:
        got = con.execute(
            "SELECT count(*) FILTER (WHERE cached), count(*) FROM cases "
            "WHERE run_id = (SELECT max(run_id) FROM runs)"
        ).fetchone()
    assert got == (n, n), f"a cached rerun of {n} cases stored (cached, all) = {got}"


def measure_adaptive(
    work: Path, n: int, rate: float, concurrency: int, latency: float
) -> dict[str, Any]:
    """``n`` cases against a server allowing ``rate`` requests a second (429 + Retry-After
    0.1 s beyond it), with ``adaptive_concurrency`` off, then on: 429s, retries, wall."""
    env = _process_env(work)
    out: dict[str, Any] = {"n": n, "rate": rate, "concurrency": concurrency, "by_mode": {}}
    for adaptive in (False, True):
        with latency_server(latency, "--rate", str(rate), "--burst", "2") as base_url:
            folder = work / f"adaptive-{n}-{adaptive}"
            config = workloads.write_config(
                folder,
                n,
                concurrency=concurrency,
                base_url=base_url,
                model_extra={"adaptive_concurrency": adaptive, "max_retries": 1000},
            )
            _fresh(folder)
            got = run_process(config, env)
            stats = server_stats(base_url)
        out["by_mode"]["adaptive" if adaptive else "fixed"] = {
            **got,
            "requests": stats["requests"],
            "rejected": stats["rejected"],
        }
        shutil.rmtree(folder / ".evalwh", ignore_errors=True)
    return out


# ---- the web viewer (evalwh serve) -----------------------------------------------------------
def measure_viewer_pages(synthetic: str, quick: bool, repeats: int) -> dict[str, Any]:
    """Server time of each viewer page over the synthetic warehouse: the ASGI app called
    in-process (Starlette's TestClient), so the figure is the server's work without a
    network or a browser."""
    import synth
    from fastapi.testclient import TestClient

    from evalwh.api.view import WarehouseView
    from evalwh.viewer.app import create_app
    from evalwh.viewer.security import Guard

    layout = synth.QUICK if quick else synth.Layout()
    path = synth.ensure(Path(synthetic), layout, log=_log)
    run_a, run_b = synth.big_run_ids(layout)
    view = WarehouseView(path)
    case = view.query(
        "case_list", run_id=run_b, only_failures=False, case_id=None, limit=1
    ).to_pylist()[0]["case_id"]
    urls = {
        "runs_list": "/",
        "runs_list_json": "/runs.json",
        "run": f"/runs/{run_b}",
        "run_json": f"/runs/{run_b}.json",
        # the run page's sections, each loaded by a request of its own after the page
        "run_criteria": f"/runs/{run_b}/sections/criteria",
        "run_slices": f"/runs/{run_b}/sections/slices",
        "run_cases": f"/runs/{run_b}/sections/cases.json",
        "run_cases_html": f"/runs/{run_b}/sections/cases",
        "compare": f"/compare/{run_a}/{run_b}",
        "compare_json": f"/compare/{run_a}/{run_b}.json",
        # the compare page's sections, each loaded by a request of its own after the page
        "compare_criteria": f"/compare/{run_a}/{run_b}/sections/criteria",
        "compare_slices": f"/compare/{run_a}/{run_b}/sections/slices",
        "compare_movers": f"/compare/{run_a}/{run_b}/sections/movers",
        "slices": f"/runs/{run_b}/slices?by=topic",
        "calibration": f"/runs/{run_b}/calibration",
        "case_history": f"/cases/{case}",
        "baselines": "/baselines",
        "progress": f"/runs/{run_b}/progress.json",
    }
    timings: dict[str, list[float]] = {}
    sizes: dict[str, int] = {}
    failed: dict[str, str] = {}
    client = TestClient(
        create_app(view, Guard("127.0.0.1", 8000, "x" * 24)),
        base_url="http://127.0.0.1:8000",
        raise_server_exceptions=False,
    )
    for name, url in urls.items():
        first = client.get(url)  # warm-up: the file's pages in the OS cache
        if first.status_code != 200:  # a core error on this warehouse: named, not timed
            failed[name] = f"{first.status_code}: {first.text[:200]}"
            continue
        sizes[name] = len(first.content)
        values = []
        for _ in range(repeats):
            started = time.perf_counter()
            client.get(url)
            values.append(time.perf_counter() - started)
        timings[name] = values
    return {
        "warehouse": str(path),
        "layout": layout.key,
        "timings_s": timings,
        "bytes": sizes,
        "failed": failed,
    }


def measure_viewer_watching(work: Path, n: int, latency_ms: float, runs: int) -> dict[str, Any]:
    """The wall time of an ``n``-case mock run alone, and with `evalwh serve` over the same
    warehouse and a client following the run's live tail (server-sent events) throughout:
    alternating, ``runs`` times each."""
    import socket
    import subprocess
    import threading

    import httpx

    import evalwh

    _warm_up(work)
    config = workloads.write_config(work / f"viewer-{n}", n, mock_latency_ms=latency_ms)
    output = config.parent / ".evalwh"
    alone: list[float] = []
    watched: list[float] = []
    events: list[int] = []
    for _ in range(runs):
        for mode in ("alone", "watched"):
            _fresh(config.parent)
            server = None
            stop = threading.Event()
            seen = [0]
            if mode == "watched":
                with socket.socket() as s:
                    s.bind(("127.0.0.1", 0))
                    port = s.getsockname()[1]
                server = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "evalwh.cli.main",
                        "-o",
                        str(output),
                        "serve",
                        "--port",
                        str(port),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                url = f"http://127.0.0.1:{port}"
                while True:
                    try:
                        httpx.get(url + "/runs.json", timeout=2)
                        break
                    except httpx.TransportError:
                        time.sleep(0.05)

                def follow(
                    url: str = url, stop: threading.Event = stop, seen: list[int] = seen
                ) -> None:
                    while not stop.is_set():
                        try:
                            live = [
                                r
                                for r in httpx.get(url + "/runs.json", timeout=30).json()["runs"]
                                if r["live"]
                            ]
                        except httpx.HTTPError:
                            live = []
                        if not live:
                            time.sleep(0.25)  # as a person's browser tab would
                            continue
                        with httpx.stream(
                            "GET", f"{url}/runs/{live[0]['run_id']}/events", timeout=60
                        ) as r:
                            for line in r.iter_lines():
                                if line.startswith("event: "):
                                    seen[0] += 1
                        return

                watcher = threading.Thread(target=follow, daemon=True)
                watcher.start()
            started = time.perf_counter()
            result = evalwh.run_eval(config, output_dir=output)
            took = time.perf_counter() - started
            assert result.totals["n"] == n, result.totals
            (alone if mode == "alone" else watched).append(took)
            if server is not None:
                stop.set()
                watcher.join(timeout=10)
                events.append(seen[0])
                server.terminate()
                server.wait(timeout=10)
    return {
        "n": n,
        "latency_ms": latency_ms,
        "alone_s": alone,
        "watched_s": watched,
        "events": events,
    }
