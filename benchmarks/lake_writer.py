"""One writer of the lake group's writer figures (benchmarks/lake_figures.py), in a process of
its own: ``python benchmarks/lake_writer.py RUN_ID CASES GO OUT``.

It attaches the lake that the user config names, creates its run and builds ``CASES`` case
rows (one score row and one response-cache row each, as a mock run of one criterion writes)
before the clock starts; then it touches ``OUT.ready``, waits for the file ``GO`` so that
every writer starts together, and hands the rows to a ``RunWriter`` the way the engine does
(``add_*``, a flush whenever one is due, a last flush at the end), with the lake's flush sizes
(``lake.flush_rows`` / ``lake.flush_interval_s``). ``OUT`` gets the times (``perf_counter``,
one clock for every process of the machine), the rows and flushes written and the commits
retried. Process start-up, the extensions and the attach are outside the figure: the
``evalwh run`` figures of the same group hold them.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any


def rows(run_id: str, cases: int) -> tuple[list[Any], list[Any], list[Any]]:
    from evalwh.warehouse.writer import CACHE_COLUMNS, CASE_COLUMNS, SCORE_COLUMNS

    now = int(time.time() * 1e6)
    case_rows, score_rows, cache_rows = [], [], []
    for i in range(cases):
        case_id, answer, digest = f"c{i:06d}", f"the answer to q{i}", f"{run_id}-{i:06d}"
        cell = {"run_id": run_id, "variant": "v", "model": "m", "case_id": case_id, "repeat": 0}
        case = {
            **cell, "vars": json.dumps({"q": f"q{i}"}),
            "messages": json.dumps([{"role": "user", "content": f"q{i}"}]), "output": answer,
            "latency_ms": 1.0, "input_tokens": 10, "output_tokens": 5, "cached": False,
            "request_hash": digest, "attempts": 1, "score": 1.0, "passed": True,
            "created_at": now, "queued_ms": 0.0, "finish_reason": "stop",
        }  # fmt: skip
        score = {
            **cell, "criterion": "echo", "scorer": "contains", "score": 1.0, "passed": True,
            "weight": 1.0, "required": True,
        }  # fmt: skip
        cache = {
            "request_hash": digest, "provider": "mock", "model": "m", "output": answer,
            "input_tokens": 10, "output_tokens": 5, "latency_ms": 1.0, "created_at": now,
            "run_id": run_id,
        }  # fmt: skip
        case_rows.append(tuple(case.get(name) for name, _ in CASE_COLUMNS))
        score_rows.append(tuple(score.get(name) for name, _ in SCORE_COLUMNS))
        cache_rows.append(tuple(cache.get(name) for name, _ in CACHE_COLUMNS))
    return case_rows, score_rows, cache_rows


def main(run_id: str, cases: int, go: Path, out: Path) -> None:
    from evalwh.api.run import settings_for
    from evalwh.warehouse.lake import flush_sizes
    from evalwh.warehouse.lease import new_token
    from evalwh.warehouse.store import Warehouse, utcnow
    from evalwh.warehouse.writer import RunWriter

    settings = settings_for(None)
    target, token = settings.warehouse, new_token()
    Warehouse(target).create_run(
        {
            "run_id": run_id,
            "suite": "lake-bench",
            "status": "running",
            "config_hash": "h",
            "dataset_hash": "d",
            "n_planned": cases,
            "started_at": utcnow(),
            "heartbeat_at": utcnow(),
            "evalwh_version": "bench",
            "lease_token": token,
        }
    )
    case_rows, score_rows, cache_rows = rows(run_id, cases)
    flush_rows, every_s = flush_sizes(target, settings.batch_size)
    # made after the rows: its flush interval counts from here, as the engine's from its start
    writer = RunWriter(target, run_id, batch_size=flush_rows, flush_interval_s=every_s, token=token)
    out.with_suffix(".ready").touch()
    while not go.exists():
        time.sleep(0.005)
    started, cpu = time.perf_counter(), time.process_time()
    for case, score, cache in zip(case_rows, score_rows, cache_rows, strict=True):
        writer.add_case(case)
        writer.add_score(score)
        writer.add_cache(cache)
        if writer.due():
            writer.flush(writer.take_batch())
    writer.flush(writer.take_batch())
    ended = time.perf_counter()
    out.write_text(
        json.dumps(
            {
                "run_id": run_id,
                "started": started,
                "ended": ended,
                "cpu_s": time.process_time() - cpu,
                "rows": writer.rows_written,
                "flushes": writer.flushes,
                "retries": writer.retries,
                "flush_rows": flush_rows,
                "flush_interval_s": every_s,
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]))
