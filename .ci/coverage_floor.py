"""Print line coverage per package of evalwh/ and fail when a core package is under 90 %.

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
    failed = []
    print("coverage by package (lines):")
    for package in sorted(statements):
        share = 100.0 * covered[package] / max(statements[package], 1)
        mark = ""
        if package in CORE:
            mark = "  core" + ("" if share >= FLOOR else f"  BELOW {FLOOR:.0f} %")
            if share < FLOOR:
                failed.append(package)
        print(
            f"  {package:<14} {covered[package]:>6}/{statements[package]:<6} {share:5.1f} %{mark}"
        )
    core_cov = sum(covered[p] for p in CORE)
    core_all = sum(statements[p] for p in CORE)
    print(f"core ({', '.join(CORE)}): {100.0 * core_cov / max(core_all, 1):.1f} %")
    if failed:
        print(f"coverage floor: {', '.join(failed)} under {FLOOR:.0f} %", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "coverage.json"))
