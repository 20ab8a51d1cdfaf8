"""Collect mutmut's stats (which tests reach which function) part by part, each part of the
test files in a fresh process, and run a part again when its process crashed.

mutmut collects them in one process that runs the whole selection. On the 2-core machine
evalwh is developed on, that process died of a segmentation fault at a random place in most
runs, with or without mutmut's process titles (docs/testing.md). When `mutmut run` stops that
way, its mutants are already generated: run this, then `mutmut run` again, which loads these
stats and goes on to the mutants.

    uv run python tests/mutation/stats_in_parts.py [--parts 8] [--retries 3] [--fresh]
        [--part-timeout 3600] [--missing]

``--missing`` goes on after a part that failed (once its test is fixed): only the test files
none of whose tests the saved stats hold yet run, and the parts already collected are kept.

Exit 0 when every part passed; 1 when a part failed (a test failed, or it crashed more often
than --retries allows): the output of that part names why.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

STATS = Path("mutants") / "mutmut-stats.json"
DURATIONS = Path("mutants") / "evalwh-test-durations.json"  # tests/mutation/budget.py writes it


def split(files: Sequence[str], parts: int) -> list[list[str]]:
    """``files`` in order, cut into at most ``parts`` runs of near-equal length (none empty)."""
    if parts < 1:
        raise ValueError("--parts must be 1 or more")
    size, extra = divmod(len(files), parts)
    out, start = [], 0
    for i in range(parts):
        end = start + size + (1 if i < extra else 0)
        if end > start:
            out.append(list(files[start:end]))
        start = end
    return out


def collected(stats: Path) -> set[str]:
    """The test files that have a test in the saved stats (none when there are no stats)."""
    if not stats.is_file():
        return set()
    tests = json.loads(stats.read_text(encoding="utf-8")).get("duration_by_test", {})
    return {nodeid.split("::", 1)[0] for nodeid in tests}


def crashed(returncode: int) -> bool:
    """A process ended by a signal (a segmentation fault, an abort), not by a failing test."""
    return returncode < 0 or returncode in (128 + 6, 128 + 11)


def run_parts(
    parts: Sequence[Sequence[str]], run: Callable[[Sequence[str]], int], retries: int
) -> int:
    """Run each part until it passes, again after a crash (at most ``retries`` times)."""
    for number, part in enumerate(parts, 1):
        attempt = 0
        while True:
            attempt += 1
            print(f"part {number}/{len(parts)}, try {attempt}: {' '.join(part)}", flush=True)
            code = run(part)
            if code == 0:
                break
            if crashed(code) and attempt <= retries:
                print(f"part {number} crashed (exit {code}); running it again", flush=True)
                continue
            why = "crashed" if crashed(code) else "failed"
            print(f"part {number} {why} (exit {code}); stopping", file=sys.stderr)
            return 1
    return 0


def _child(tests: Sequence[str]) -> None:
    """One part, in this process: mutmut's own stats pass over these test files, added to the
    stats already saved."""
    from mutmut import __main__ as mutmut_main
    from mutmut.stats import load_stats

    mutmut_main.setup_source_paths()
    load_stats()
    mutmut_main.run_stats_collection(mutmut_main.get_mutant_runner(1), tests=list(tests))


def run_bounded(command: Sequence[str], timeout_s: float) -> int:
    """The exit code of ``command``; a process still running after ``timeout_s`` is killed
    and counts as crashed (-9), so a hung part is tried again instead of waiting forever."""
    try:
        return subprocess.run(list(command), check=False, timeout=timeout_s).returncode
    except subprocess.TimeoutExpired:
        return -9


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", type=int, default=8)
    parser.add_argument("--retries", type=int, default=3)
    parser.add_argument("--fresh", action="store_true", help="drop the stats saved before")
    parser.add_argument(
        "--part-timeout", type=float, default=3600.0, help="seconds a part may run (then: crash)"
    )
    parser.add_argument(
        "--missing", action="store_true", help="only the test files the saved stats lack"
    )
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child)
        return 0
    if not Path("mutants").is_dir():
        print("no mutants/ folder: run `mutmut run` first (it generates them)", file=sys.stderr)
        return 1
    if args.fresh:
        STATS.unlink(missing_ok=True)
        DURATIONS.unlink(missing_ok=True)
    files = sorted(p.as_posix() for p in Path("tests").glob("test_*.py"))
    if args.missing:
        known = collected(STATS)
        files = [f for f in files if f not in known]
        if not files:
            print("the saved stats hold every test file already")
            return 0

    def run_child(tests: Sequence[str]) -> int:
        return run_bounded([sys.executable, __file__, "--child", *tests], args.part_timeout)

    return run_parts(split(files, args.parts), run_child, args.retries)


if __name__ == "__main__":
    sys.exit(main())
