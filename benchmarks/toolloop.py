"""CPU per model request: cells of one request against cells of a three-turn tool loop.

    uv run python benchmarks/toolloop.py --cells 1000 --runs 3
    uv run python benchmarks/run.py --only toolloop     # the same, as a row of the table

Each measurement runs ``evalwh run`` in-process in a child of its own against
benchmarks/server.py (0 ms latency, its own process): once with a variant without tools
(``--cells`` requests), once with a variant offering one mock tool, which the server calls
twice before answering (3 x ``--cells`` requests, 2 x ``--cells`` tool calls). The figure is
the child's CPU time (user + system) over the requests the server counted; the ratio compares
a loop's turn with a single request. The medians of ``--runs`` runs are printed as JSON
(:func:`measure_toolloop`, which benchmarks/run.py's group ``toolloop`` calls too).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

CONFIG = """\
tools:
  - name: lookup
    description: Looks a query up.
    parameters: {{type: object, properties: {{q: {{type: string}}}}}}
    mock:
      - result: {{found: true}}
settings: {{concurrency: 32}}
models:
  - {{id: m, provider: openai-compatible, model: bench, base_url: "{url}", price: 0,
      max_concurrency: 32}}
variants:
  - id: v
    messages: [{{role: user, content: "question {{{{ q }}}}"}}]
    {tools}
cases:
  - {{file: cases.jsonl}}
scorecard:
  - {{name: any, type: regex, pattern: "."}}
"""

CHILD = """
import json, resource, sys, urllib.request
import evalwh
folder, url = sys.argv[1], sys.argv[2]
start = json.loads(urllib.request.urlopen(url + "/stats").read())["requests"]
before = resource.getrusage(resource.RUSAGE_SELF)
result = evalwh.run_eval(folder + "/eval.yaml", output_dir=folder + "/out", no_cache=True)
after = resource.getrusage(resource.RUSAGE_SELF)
stats = json.loads(urllib.request.urlopen(url + "/stats").read())
cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
sent = stats["requests"] - start
print(json.dumps({"cpu_s": cpu, "requests": sent, "status": result.status}))
"""


def measure(url: str, cells: int, tools: bool) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        lines = (json.dumps({"id": f"c{i}", "vars": {"q": str(i)}}) for i in range(cells))
        (root / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        (root / "eval.yaml").write_text(
            CONFIG.format(url=url, tools="tools: [lookup]" if tools else ""), encoding="utf-8"
        )
        out = subprocess.run(
            [sys.executable, "-c", CHILD, folder, url.rsplit("/v1", 1)[0]],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "EVALWH_NO_UPDATE_CHECK": "1"},
        )
        row = json.loads(out.stdout.strip().splitlines()[-1])
        assert row["status"] == "completed", row
        return {"cpu_s": row["cpu_s"], "requests": row["requests"]}


def measure_toolloop(cells: int, runs: int) -> dict[str, Any]:
    """Start the server, measure ``runs`` times each way, return the medians and every run."""
    server = subprocess.Popen(
        [sys.executable, str(HERE / "server.py"), "--latency", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline().split()[1])
        url = f"http://127.0.0.1:{port}/v1"
        rows: dict[str, list[float]] = {"single": [], "loop": []}
        requests = {}
        for _ in range(runs):
            for name, tools in (("single", False), ("loop", True)):
                found = measure(url, cells, tools)
                rows[name].append(found["cpu_s"] / found["requests"] * 1000)
                requests[name] = found["requests"]
    finally:
        server.terminate()
        server.wait()
    single, loop = statistics.median(rows["single"]), statistics.median(rows["loop"])
    return {
        "cells": cells,
        "requests": requests,
        "cpu_ms_per_request_single": round(single, 3),
        "cpu_ms_per_turn_loop": round(loop, 3),
        "ratio": round(loop / single, 2),
        "runs": {k: [round(v, 3) for v in vs] for k, vs in rows.items()},
        "load1": os.getloadavg()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps(measure_toolloop(args.cells, args.runs), indent=2))


if __name__ == "__main__":
    main()
