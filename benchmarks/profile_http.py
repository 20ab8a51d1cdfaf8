"""Profile a whole `run_eval` of N cases over HTTP at 0 ms with pyinstrument (issue 18).

    uv run python benchmarks/profile_http.py 10000 benchmarks/profiles/http-10k-0ms.html

Starts benchmarks/server.py (its own process, 0 ms), runs the benchmark eval (openai-compatible,
concurrency 64 unless a third argument says otherwise) under pyinstrument sampling every 5 ms,
and writes the HTML flame view and a text tree beside it (``.txt``; the one kept in
benchmarks/profiles/). Prints the run's CPU time, wall time and the server's stats.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import figures  # noqa: E402
import workloads  # noqa: E402


def main() -> None:
    n, out = int(sys.argv[1]), Path(sys.argv[2])
    concurrency = int(sys.argv[3]) if len(sys.argv) > 3 else 64
    from pyinstrument import Profiler

    import evalwh

    with figures.latency_server(0.0) as base:
        folder = HERE / "results" / f"profile-{n}"
        config = workloads.write_config(folder, n, concurrency=concurrency, base_url=base)
        shutil.rmtree(folder / ".evalwh", ignore_errors=True)
        profiler = Profiler(interval=0.005)
        profiler.start()
        cpu, wall = time.process_time(), time.perf_counter()
        result = evalwh.run_eval(config)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        profiler.stop()
        print(
            f"{n} cases, concurrency {concurrency}: CPU {cpu:.2f} s, wall {wall:.2f} s, "
            f"{cpu / n * 1000:.3f} ms CPU/case (profiler included); server "
            f"{figures.server_stats(base)}; {result.stats}"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(profiler.output_html(), encoding="utf-8")
    text = profiler.output_text(unicode=False, color=False)
    out.with_suffix(".txt").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
