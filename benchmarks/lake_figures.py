"""The DuckLake figures of benchmarks/run.py (``--only lake``): ingest with 1, 4 and 8 writer
processes, and the named queries over the synthetic warehouse pushed into a lake.

Servers on loopback, as in the tests (tests/fakes/lake.py): PostgreSQL for the catalog (from
Debian's ``postgresql`` package) and moto's S3 server for the data. Every writer is a real
``evalwh run`` process (mock model, default batch size), so a figure includes what a CI job
pays: start-up, loading the extensions, attaching, and retried commits.
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


def measure_lake(
    work: Path,
    synthetic: str,
    quick: bool,
    writers: list[int],
    cases: int,
    layout: list[int],
    repeats: int,
) -> dict[str, Any]:
    import synth
    from figures import time_jobs

    from evalwh.analysis.compare import compare
    from evalwh.api import lake as lake_api
    from evalwh.warehouse.store import Warehouse

    pg, s3 = _servers()
    try:
        ingest = []
        for n in writers:
            folder = work / f"lake-ingest-{n}"
            _, env = _lake(pg, s3, folder)
            cfg = _eval(folder, cases)
            migrated = subprocess.run(
                [sys.executable, "-m", "evalwh.cli.main", "migrate"],
                cwd=folder, env=env, capture_output=True, text=True, check=False,
            )  # fmt: skip
            assert migrated.returncode == 0, migrated.stderr
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
            ingest.append({"writers": n, "rows": n * cases, "wall_s": wall})

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
