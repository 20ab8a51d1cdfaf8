"""The `warehouse` group: the questions a person waits on, over the 100M-score-row synthetic
warehouse (benchmarks/synth.py, SCALE: 1,000 runs + two 1M-score-row runs, built once).

Each question is timed three ways on the same file, warm (one untimed run first):

- **evalwh**: as the CLI asks it (``Warehouse.query`` / ``analysis.*``: one read connection
  per question, opened cold as a command opens it, the macros defined on it once, Arrow
  results, the Python around them);
- **bare**: the very SQL evalwh sent (recorded while the evalwh form ran: each named query
  and its parameters) replayed on one plain DuckDB connection held open, rows fetched;
- **by run_id only**: the same bare SQL with the run-key filters taken out (what the queries
  were before migration 0016: a string filter on run_id, which no zone map can use).

``evalwh / bare`` is the overhead of evalwh itself; ``by run_id only / bare`` is what the run
key buys. ``EXPLAIN ANALYZE`` of every bare statement is written under ``profiles``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# the run-key filter the queries add before `run_id = $...` (sql/macros/run_key.sql)
KEY_FILTER = re.compile(r"(\w+\.)?run_key = run_key\(\$\w+\) AND ")
CASE = "case-0000042"  # in every run: its history spans all of them


def measure_warehouse(
    work: Path, folder: str, quick: bool, repeats: int, profiles: str | None
) -> dict[str, Any]:
    import duckdb
    import synth

    from evalwh.warehouse.store import Warehouse

    layout = synth.QUICK if quick else synth.SCALE
    built = time.perf_counter()
    path = synth.ensure(Path(folder), layout, log=_log)
    ensure_s = time.perf_counter() - built
    store = Warehouse(path)
    run_b = synth.big_run_ids(layout)[1]
    typical = synth.run_id(layout.runs // 2)

    jobs = questions(store, layout)
    sent = record(jobs)  # the named queries each job sends (its warm-up run), to replay bare

    timings = {name: _time(job, repeats) for name, job in jobs.items()}

    out_dir = Path(profiles) if profiles else None
    with duckdb.connect(str(path), read_only=True) as con:
        statements, bare, by_run_id = replay_bare(con, sent, repeats, out_dir, "warehouse")
        counts = {
            t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]  # type: ignore[index]
            for t in ("runs", "cases", "scores", "pairs", "labels")
        }
        per_run = {
            rid: con.execute("SELECT count(*) FROM scores WHERE run_id = ?", [rid]).fetchone()[0]  # type: ignore[index]
            for rid in (typical, run_b)
        }
        row_groups = con.execute(
            "SELECT count(DISTINCT row_group_id) FROM pragma_storage_info('scores')"
        ).fetchone()[0]  # type: ignore[index]
    return {
        "warehouse": str(path),
        "layout": layout.key,
        "ensure_s": ensure_s,
        "file_mb": path.stat().st_size / 2**20,
        "rows": counts,
        "score_rows_per_run": per_run,
        "scores_row_groups": row_groups,
        "statements": statements,
        "timings_s": timings,
        "bare_s": bare,
        "by_run_id_s": by_run_id,
    }


def questions(store: Any, layout: Any) -> dict[str, Callable[[], Any]]:
    """The questions, each asked through evalwh of ``store`` (a file or a lake: the lake
    group asks the same ones, benchmarks/lake_warehouse.py)."""
    import synth

    from evalwh.analysis.compare import compare
    from evalwh.analysis.gate import judge
    from evalwh.analysis.judging import report
    from evalwh.analysis.slices import slice_run

    run_a, run_b = synth.big_run_ids(layout)
    typical = synth.run_id(layout.runs // 2)
    return {
        "runs_list": lambda: store.query(
            "runs", limit=20, suite=None, label=None, status=None, since=None, until=None
        ),
        "summary": lambda: store.query("summary", run_id=typical),
        "summary_big_run": lambda: store.query("summary", run_id=run_b),
        "slice": lambda: slice_run(store, typical, ["topic"]),
        "gate": lambda: judge(store, typical),
        "compare": lambda: compare(store, run_a, run_b),
        "case_history": lambda: store.query("case_history", case_id=CASE, limit=10_000),
        "calibration": lambda: report(store, run_b, by="topic"),
    }


def record(jobs: dict[str, Callable[[], Any]]) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """Run each job once (its warm-up) and return the named queries it sent, with their
    parameters, to replay them bare."""
    from evalwh.warehouse import store as store_module

    sent: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    real = store_module.run_query
    current: list[str] = []

    def recording(con: Any, name: str, **params: Any) -> Any:
        sent.setdefault(current[0], []).append((name, params))
        return real(con, name, **params)

    store_module.run_query = recording  # type: ignore[assignment]
    try:
        for name, job in jobs.items():
            current[:] = [name]
            job()
    finally:
        store_module.run_query = real  # type: ignore[assignment]
    return sent


def replay_bare(
    con: Any,
    sent: dict[str, list[tuple[str, dict[str, Any]]]],
    repeats: int,
    out_dir: Path | None,
    prefix: str,
) -> tuple[dict[str, list[str]], dict[str, list[float]], dict[str, list[float]]]:
    """The recorded statements replayed on ``con`` (one plain DuckDB connection, held open):
    (statement names, bare timings, by-run_id-only timings) per job; ``EXPLAIN ANALYZE`` of
    each into ``out_dir/<prefix>-<job>.txt``."""
    from evalwh.warehouse import queries

    bare: dict[str, list[float]] = {}
    by_run_id: dict[str, list[float]] = {}
    statements: dict[str, list[str]] = {}
    con.execute(queries.macros())
    for job, calls in sent.items():
        plain = [(queries.get(n).sql, _args(n, p)) for n, p in calls]
        unkeyed = [(KEY_FILTER.sub("", sql), args) for sql, args in plain]
        statements[job] = [n for n, _ in calls]
        bare[job] = _time(lambda plain=plain: _replay(con, plain), repeats)
        by_run_id[job] = _time(lambda unkeyed=unkeyed: _replay(con, unkeyed), repeats)
        if out_dir is not None:
            _profile(con, out_dir / f"{prefix}-{job}.txt", job, calls, plain)
    return statements, bare, by_run_id


def _args(name: str, params: dict[str, Any]) -> dict[str, Any]:
    from evalwh.warehouse import queries

    return {p: params[p] for p in queries.get(name).params}


def _replay(con: Any, statements: list[tuple[str, dict[str, Any]]]) -> None:
    for sql, args in statements:
        con.execute(sql, args).to_arrow_table()  # as evalwh fetches: Arrow


def _time(job: Callable[[], Any], repeats: int) -> list[float]:
    job()  # warm: the data's pages in the OS cache and DuckDB's buffer pool
    values = []
    for _ in range(repeats):
        started = time.perf_counter()
        job()
        values.append(time.perf_counter() - started)
    return values


def _profile(
    con: Any,
    out: Path,
    job: str,
    calls: list[tuple[str, dict[str, Any]]],
    plain: list[tuple[str, dict[str, Any]]],
) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    parts = [f"# {job}: EXPLAIN ANALYZE of each statement evalwh sent (bare DuckDB, warm)\n"]
    for (name, params), (sql, args) in zip(calls, plain, strict=True):
        (row,) = con.execute(f"EXPLAIN ANALYZE {sql}", args).fetchall()
        shown = {k: v for k, v in params.items() if k in args}
        parts.append(f"\n## sql/{name}.sql {shown}\n\n{row[1]}\n")
    out.write_text("".join(parts), encoding="utf-8")


def _log(message: str) -> None:
    import sys

    print(message, file=sys.stderr, flush=True)
