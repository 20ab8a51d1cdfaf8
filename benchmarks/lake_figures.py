"""The DuckLake figures of benchmarks/run.py (``--only lake``): ingest with 1, 4 and 8 writers,
and the named queries over the synthetic warehouse pushed into a lake.

Servers on loopback, as in the tests (tests/fakes/lake.py): PostgreSQL for the catalog (from
Debian's ``postgresql`` package) and moto's S3 server for the data. Two ingest figures
(``--lake-parts``):

- ``writers``: N processes of ``benchmarks/lake_writer.py``, each a ``RunWriter`` of its own
  run writing ``lake_writer_cases`` case rows (plus a score and a cache row each) with the
  lake's flush sizes; the clock runs from a common start, after every process attached, to
  the last one's last commit. Counted after: rows lost or doubled, commits retried.
- ``processes``: N concurrent ``evalwh run`` processes (mock model, ``--no-cache``), so the
  figure includes what a CI job pays: start-up, the extensions, attaching, the engine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _servers() -> tuple[Any, Any]:
    sys.path.insert(0, str(ROOT))
    from tests.fakes.lake import start_postgres, start_s3

    return start_postgres(), start_s3()


def _lake(pg: Any, s3: Any, folder: Path) -> tuple[Any, dict[str, str]]:
    from tests.fakes.lake import Lake

    lake = Lake(pg, s3, pg.create_database(), s3.create_bucket())
    config_dir = folder / "config"
    lake.user_config(config_dir)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("EVALWH_")},
        **lake.env(),
        "EVALWH_CONFIG_DIR": str(config_dir),
    }
    return lake, env


def _eval(folder: Path, cases: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rows = (json.dumps({"id": f"c{i:06d}", "vars": {"q": f"q{i}"}}) for i in range(cases))
    (folder / "cases.jsonl").write_text("\n".join(rows) + "\n")
    path = folder / "eval.yaml"
    path.write_text(
        "name: lake-bench\nsettings: {concurrency: 64}\nmodels:\n  - {id: m, provider: mock}\n"
        "variants:\n  - id: v\n    messages:\n      - {role: user, content: '{{ q }}'}\n"
        "cases:\n  - file: cases.jsonl\nscorecard:\n  - {name: echo, type: contains, value: q}\n"
    )
    return path


def _migrated(folder: Path, env: dict[str, str]) -> None:
    migrated = subprocess.run(
        [sys.executable, "-m", "evalwh.cli.main", "migrate"],
        cwd=folder, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert migrated.returncode == 0, migrated.stderr


def _count(lake: Any, sql: str) -> list[tuple[Any, ...]]:
    from tests.fakes.lake import lake_connection

    con = lake_connection(lake)
    try:
        return [tuple(r) for r in con.execute(sql).fetchall()]
    finally:
        con.close()


def measure_writers(pg: Any, s3: Any, work: Path, n: int, cases: int) -> dict[str, Any]:
    """N RunWriters in processes of their own into one fresh lake (module docstring)."""
    folder = work / f"lake-writers-{n}"
    folder.mkdir(parents=True, exist_ok=True)
    lake, env = _lake(pg, s3, folder)
    _migrated(folder, env)
    go = folder / "go"
    outs = [folder / f"w{k}.json" for k in range(n)]
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "benchmarks" / "lake_writer.py"),
                f"bench-{n}-{k}",
                str(cases),
                str(go),
                str(out),
            ],
            cwd=folder,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k, out in enumerate(outs)
    ]
    while not all(out.with_suffix(".ready").exists() for out in outs):
        for proc in procs:
            assert proc.poll() is None, proc.communicate()[1]
        time.sleep(0.05)
    load = os.getloadavg()[0]
    go.touch()
    for proc in procs:
        _, err = proc.communicate()
        assert proc.returncode == 0, err
    done = [json.loads(out.read_text()) for out in outs]
    stored = _count(
        lake,
        "SELECT count(*), count(DISTINCT (run_id, case_id)) FROM cases WHERE run_id LIKE 'bench-%'",
    )[0]
    beats = _count(lake, "SELECT coalesce(max(retries), 0) FROM run_beats")[0][0]
    wall = max(d["ended"] for d in done) - min(d["started"] for d in done)
    expected = n * cases
    return {
        "writers": n,
        "rows": sum(d["rows"] for d in done),
        "wall_s": wall,
        "load_at_start": load,
        "load_at_end": os.getloadavg()[0],
        "lost": expected - stored[1],
        "duplicated": stored[0] - stored[1],
        "retries": sum(d["retries"] for d in done),
        "retries_in_beats": beats,
        "flushes": sum(d["flushes"] for d in done),
        "cpu_s": [round(d["cpu_s"], 3) for d in done],
        "per_writer_s": [round(d["ended"] - d["started"], 3) for d in done],
        "flush_rows": done[0]["flush_rows"],
        "flush_interval_s": done[0]["flush_interval_s"],
    }


def measure_lake(
    work: Path,
    synthetic: str,
    quick: bool,
    writers: list[int],
    cases: int,
    layout: list[int],
    repeats: int,
    writer_cases: int = 10_000,
    parts: tuple[str, ...] = ("writers", "processes", "push"),
) -> dict[str, Any]:
    import synth
    from figures import time_jobs

    from evalwh.analysis.compare import compare
    from evalwh.api import lake as lake_api
    from evalwh.warehouse.store import Warehouse

    pg, s3 = _servers()
    try:
        written = [
            measure_writers(pg, s3, work, n, writer_cases)
            for n in (writers if "writers" in parts else [])
        ]
        ingest = []
        for n in writers if "processes" in parts else []:
            folder = work / f"lake-ingest-{n}"
            _, env = _lake(pg, s3, folder)
            cfg = _eval(folder, cases)
            _migrated(folder, env)
            load = os.getloadavg()[0]
            started = time.perf_counter()
            procs = [
                subprocess.Popen(
                    [sys.executable, "-m", "evalwh.cli.main", "run", str(cfg), "-q", "--no-cache"],
                    cwd=folder,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                for _ in range(n)
            ]
            for proc in procs:
                _, err = proc.communicate()
                assert proc.returncode == 0, err
            wall = time.perf_counter() - started
            ingest.append(
                {
                    "writers": n,
                    "rows": n * cases,
                    "wall_s": wall,
                    "load_at_start": load,
                    "load_at_end": os.getloadavg()[0],
                }
            )
        if "push" not in parts:
            return {
                "written": written, "writer_cases": writer_cases, "ingest": ingest,
                "cases_per_writer": cases,
            }  # fmt: skip

        shape = synth.QUICK if quick else synth.Layout(*layout)
        source = synth.ensure(Path(synthetic), shape, log=lambda m: None)
        folder = work / "lake-queries"
        _, env = _lake(pg, s3, folder)
        for key in [k for k in os.environ if k.startswith("EVALWH_")]:
            del os.environ[key]
        os.environ.update(env)  # this child process now points at the lake
        started = time.perf_counter()
        pushed = lake_api.push(local=source)
        push_s = time.perf_counter() - started
        from evalwh.api.run import settings_for

        store = Warehouse(settings_for(None).warehouse)
        run_a, run_b = synth.big_run_ids(shape)
        jobs = {
            "summary": lambda: store.query("summary", run_id=run_b),
            "compare": lambda: compare(store, run_a, run_b),
        }
        timings = time_jobs(jobs, repeats)
        scores = store.sql("SELECT count(*) AS n FROM scores").to_pylist()[0]["n"]
        per_run = store.sql(
            "SELECT count(*) AS n FROM scores WHERE run_id = ?", [run_b]
        ).to_pylist()[0]["n"]
        started = time.perf_counter()
        steps = lake_api.maintain(expire_days=0)  # after the push: compaction of its files
        maintain_s = time.perf_counter() - started
        return {
            "written": written,
            "writer_cases": writer_cases,
            "ingest": ingest,
            "cases_per_writer": cases,
            "push_s": push_s,
            "maintain_s": maintain_s,
            "maintain_steps": steps,
            "pushed_runs": len(pushed.copied),
            "score_rows": scores,
            "compared_run_score_rows": per_run,
            "layout": shape.key,
            "timings_s": timings,
        }
    finally:
        s3.stop()
        pg.stop()
