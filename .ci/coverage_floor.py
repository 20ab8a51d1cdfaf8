"""Print line coverage per package of evalwh/ and fail when the core is under 90 %.

The floor holds the core packages together (engine, warehouse, analysis, scoring, config:
their covered lines over their statements); each package's own figure is printed beside it,
marked when it is under the floor on its own, so a weak package shows without failing CI.

Run by .ci/run after the tests: python .ci/coverage_floor.py coverage.json
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict

CORE = ("engine", "warehouse", "analysis", "scoring", "config")
FLOOR = 90.0


def main(path: str) -> int:
    with open(path, encoding="utf-8") as handle:
        files = json.load(handle)["files"]
    covered: dict[str, int] = defaultdict(int)
    statements: dict[str, int] = defaultdict(int)
    for name, data in files.items():
        parts = name.replace("\\", "/").split("/")
        package = parts[1] if len(parts) > 2 else parts[-1]
        covered[package] += data["summary"]["covered_lines"]
        statements[package] += data["summary"]["num_statements"]
    print("coverage by package (lines):")
    for package in sorted(statements):
        share = 100.0 * covered[package] / max(statements[package], 1)
        mark = ""
        if package in CORE:
            mark = "  core" + ("" if share >= FLOOR else f"  (under {FLOOR:.0f} % on its own)")
        print(
            f"  {package:<14} {covered[package]:>6}/{statements[package]:<6} {share:5.1f} %{mark}"
        )
    core_cov = sum(covered[p] for p in CORE)
    core_all = sum(statements[p] for p in CORE)
    core = 100.0 * core_cov / max(core_all, 1)
    print(f"core ({', '.join(CORE)}): {core:.1f} % (floor {FLOOR:.0f} %)")
    if core < FLOOR:
        print(f"coverage floor: the core is at {core:.1f} %, under {FLOOR:.0f} %", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "coverage.json"))
