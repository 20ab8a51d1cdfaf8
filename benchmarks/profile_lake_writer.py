"""Where one lake writer's CPU goes (issue 50): a RunWriter's flushes of N case rows into a
DuckLake (PostgreSQL + moto on loopback, as the lake group), CPU split by side and by step.

    uv run python benchmarks/profile_lake_writer.py [ROWS,...] [--profile OUT.txt]

For each size (default 100,1000,10000,50000 case rows; one score and one cache row each, the
rows of benchmarks/lake_writer.py) it writes FLUSHES flushes into its own run and reports, per
flush (median): the writer's CPU (``time.process_time``: every thread of this process, DuckDB's
included), wall, PostgreSQL's CPU (all its processes, from /proc), moto's CPU, and the
statements PostgreSQL ran (its log, ``log_statement = all``). A line through the sizes gives a
fixed cost per flush and a cost per row. ``--profile`` writes a cProfile (by own time,
process-time clock) of the largest size's flushes.
"""

from __future__ import annotations

import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

FLUSHES = 5


def _cpu_of(pids: list[int]) -> float:
    """CPU seconds (user + sys) of these processes so far."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
    return total / tick


def _postgres_pids() -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() == "postgres":
                    out.append(int(entry.name))
            except OSError:
                continue
    return out


def main() -> None:
    args = sys.argv[1:]
    profile_out = None
    if "--profile" in args:
        at = args.index("--profile")
        profile_out = Path(args[at + 1])
        del args[at : at + 2]
    sizes = [int(v) for v in args[0].split(",")] if args else [100, 1_000, 10_000, 50_000]

    import lake_figures
    import lake_writer

    pg, s3 = lake_figures._servers()
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"lake-writer-profile-{os.getpid()}"
    try:
        done = pg.run(
            str(pg.bin / "psql"), "-h", "127.0.0.1", "-p", str(pg.port), "-U", "evalwh",
            "-d", "postgres", "-c", "ALTER SYSTEM SET log_statement = 'all'",
            "-c", "ALTER SYSTEM SET log_destination = 'stderr'",
            "-c", "SELECT pg_reload_conf()",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        _, env = lake_figures._lake(pg, s3, work)
        lake_figures._migrated(work, env)
        for key in [k for k in os.environ if k.startswith("EVALWH_")]:
            del os.environ[key]
        os.environ.update(env)
        from evalwh.api.run import settings_for
        from evalwh.warehouse.lease import new_token
        from evalwh.warehouse.store import Warehouse, utcnow
        from evalwh.warehouse.writer import RunWriter

        target = settings_for(None).warehouse
        log = pg.folder / "log"
        out: dict[str, Any] = {"load_at_start": os.getloadavg()[0], "sizes": {}}
        profiler = cProfile.Profile(time.process_time)
        for size in sizes:
            run_id, token = f"profile-{size}", new_token()
            Warehouse(target).create_run(
                {
                    "run_id": run_id, "suite": "lake-profile", "status": "running",
                    "config_hash": "h", "dataset_hash": "d", "n_planned": size * FLUSHES,
                    "started_at": utcnow(), "heartbeat_at": utcnow(), "evalwh_version": "bench",
                    "lease_token": token,
                }
            )  # fmt: skip
            writer = RunWriter(target, run_id, batch_size=size, flush_interval_s=3600, token=token)
            cases, scores, cache = lake_writer.rows(run_id, size * (FLUSHES + 1))
            steps = []
            for k in range(FLUSHES + 1):  # the first flush warms the attach: not counted
                for i in range(k * size, (k + 1) * size):
                    writer.add_case(cases[i])
                    writer.add_score(scores[i])
                    writer.add_cache(cache[i])
                batch = writer.take_batch()
                pids = _postgres_pids()
                lines = len(log.read_text(errors="replace").splitlines())
                pg_cpu, moto_cpu = _cpu_of(pids), _cpu_of([s3.proc.pid])
                cpu, wall = time.process_time(), time.perf_counter()
                if k and size == sizes[-1] and profile_out is not None:
                    profiler.enable()
                writer.flush(batch)
                profiler.disable()
                cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                time.sleep(0.05)  # PostgreSQL's log and /proc catch up
                text = log.read_text(errors="replace").splitlines()[lines:]
                statements = [
                    line for line in text if "LOG:  statement:" in line or "LOG:  execute" in line
                ]
                if k:
                    steps.append(
                        {
                            "cpu_s": cpu,
                            "wall_s": wall,
                            "pg_cpu_s": _cpu_of(pids) - pg_cpu,
                            "moto_cpu_s": _cpu_of([s3.proc.pid]) - moto_cpu,
                            "pg_statements": len(statements),
                        }
                    )
            out["sizes"][size] = {key: statistics.median(s[key] for s in steps) for key in steps[0]}
            print(size, json.dumps(out["sizes"][size]), file=sys.stderr, flush=True)
        out["load_at_end"] = os.getloadavg()[0]
        xs = sizes
        ys = [out["sizes"][s]["cpu_s"] for s in sizes]
        slope = statistics.linear_regression(xs, ys)
        out["writer_cpu_per_flush_s"] = slope.intercept
        out["writer_cpu_per_row_us"] = slope.slope * 1e6
        print(json.dumps(out, indent=1))
        if profile_out is not None:
            text = io.StringIO()
            stats = pstats.Stats(profiler, stream=text)
            stats.sort_stats("tottime").print_stats(30)
            stats.sort_stats("cumulative").print_stats(40)
            profile_out.parent.mkdir(parents=True, exist_ok=True)
            profile_out.write_text(
                f"# {FLUSHES} flushes of {sizes[-1]} case rows (+1 score, +1 cache row each)\n"
                + text.getvalue()
                + "\n# PostgreSQL's statements during the last flush\n"
                + "\n".join(line.split("LOG:  ", 1)[1][:300] for line in statements)
                + "\n"
            )
    finally:
        s3.stop()
        pg.stop()


if __name__ == "__main__":
    main()
