"""The whole mutation run on the core, in one command, ending with the kill rate.

    uv run python tests/mutation/run_core.py [--max-children 2] [--budget 10] [--min-rate 90]
                                             [--recheck] [--recheck-budget 0]

1. ``mutmut run`` under the test budget (tests/mutation/budget.py): every mutant meets its
   cheapest tests, up to ``--budget`` seconds of them. When mutmut stops in its stats pass
   (segmentation faults, docs/testing.md), the stats are collected part by part
   (stats_in_parts.py) and ``mutmut run`` goes on from there.
   Mutants whose tests never started (mutmut's exit code 255: core_rate.py counts them as
   "not run") run once more, by name.
2. A survivor of that pass is only a candidate (a slower test of its own may kill it), so
   the rate after step 1 is a lower bound of the rate with no budget. When that lower bound
   already meets ``--min-rate`` the run stops there and says so; otherwise (or with
   ``--recheck``) the survivors run again with no budget, against all of their tests, and the
   rate equals a run without a budget. (The recheck is the slow part: on 2 cores a survivor
   of the warehouse's connection code alone reran 380 tests, about four minutes.)
   ``--recheck-budget`` bounds each survivor's recheck too (the rate stays a lower bound).
   A survivor the recheck ran and no test killed is noted (budget.py) and left out when the
   recheck starts again, in a later session, as long as the stats hold the same tests.
3. core_rate.py prints the rate per module and in total; exit 1 below ``--min-rate`` or when
   mutants are left unchecked.

mutmut keeps its results in ``mutants/``: run again after a stop and it goes on where it was.
A ``mutmut run`` stopped from outside (Ctrl-C, ``kill``: SIGINT, SIGTERM, SIGKILL) ends this
command at once with exit 1. Only another failure is taken for the stats-pass crash of step 1,
because collecting the stats part by part starts by deleting the stats saved before.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import budget as plugin  # the pytest plugin: its recheck record and switch
import core_rate
import stats_in_parts

Run = Callable[[Sequence[str], dict[str, str]], int]
# A child ended by one of these was stopped by someone (negative: the signal, as subprocess
# reports it; 128 + the signal: as a shell in between reports it), not crashed.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)
STOPPED = {code for sig in STOP_SIGNALS for code in (-sig, 128 + sig)}


def _run(command: Sequence[str], env: dict[str, str]) -> int:
    print("$", " ".join(command[:8]) + (" ..." if len(command) > 8 else ""), flush=True)
    return subprocess.run(list(command), env={**os.environ, **env}, check=False).returncode


def mutation_run(
    *,
    max_children: int,
    budget: float,
    min_rate: float | None = None,
    run: Run = _run,
    collect_stats: Callable[[], int] = lambda: stats_in_parts.main(["--fresh"]),
    survivors: Callable[[], list[str]] = lambda: core_rate.survivors(
        Path("mutants"), core_rate.equivalents()
    ),
    kill_rate: Callable[[], float] = lambda: core_rate.total_rate(
        Path("mutants"), core_rate.equivalents()
    ),
    not_run: Callable[[], list[str]] = lambda: core_rate.not_run(Path("mutants")),
    recheck_budget: float = 0.0,
    rechecked: Callable[[], set[str]] = lambda: plugin.rechecked(Path("mutants")),
) -> int:
    """Steps 1 and 2; 0 when both ran to their end. With ``min_rate`` the recheck of step 2
    runs only when the budgeted rate is below it; with None it always runs."""
    mutmut = ["mutmut", "run", "--max-children", str(max_children)]
    budgeted = {"EVALWH_MUTATION_BUDGET": str(budget)}
    if (code := run(mutmut, budgeted)) in STOPPED:
        print(f"mutmut was stopped (exit {code}): run this again to go on", file=sys.stderr)
        return 1
    if code != 0:
        print("mutmut stopped (in its stats pass?): collecting the stats part by part", flush=True)
        if collect_stats() != 0 or run(mutmut, budgeted) != 0:
            print("the mutation run did not finish: see the output above", file=sys.stderr)
            return 1
    if names := not_run():
        print(f"{len(names)} mutants whose tests never started: running them again", flush=True)
        if run([*mutmut, *names], budgeted) != 0:
            print("the run of the mutants not run did not finish", file=sys.stderr)
            return 1
    if budget > 0:
        if min_rate is not None and (lower := kill_rate()) >= min_rate:
            print(
                f"{lower:.1f}% killed within a budget of {budget:g} s of tests per mutant: a"
                " budgeted survivor counts as survived, so the rate with no budget is at least"
                f" that, and meets {min_rate:g}%; no recheck (--recheck runs it anyway)",
                flush=True,
            )
            return 0
        done = rechecked()
        names = [name for name in survivors() if name not in done]
        bound = f"a budget of {recheck_budget:g} s" if recheck_budget > 0 else "no budget"
        print(
            f"{len(names)} survivors: running them again with {bound}"
            + (f" ({len(done)} rechecked before, with the same tests)" if done else ""),
            flush=True,
        )
        recheck_env = {"EVALWH_MUTATION_BUDGET": f"{recheck_budget:g}", plugin.RECHECK_ENV: "1"}
        if names and run([*mutmut, *names], recheck_env) != 0:
            print("the run of the survivors did not finish", file=sys.stderr)
            return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 2)
    parser.add_argument(
        "--budget", type=float, default=10.0, help="seconds of tests per mutant in the first pass"
    )
    parser.add_argument("--min-rate", type=float, default=90.0)
    parser.add_argument(
        "--recheck-budget",
        type=float,
        default=0.0,
        help="seconds of tests per survivor in the recheck (0: none; a bound keeps the rate a"
        " lower bound)",
    )
    parser.add_argument(
        "--recheck",
        action="store_true",
        help="run the budgeted survivors again with no budget even when the rate meets the target",
    )
    args = parser.parse_args(argv)
    floor = None if args.recheck else args.min_rate
    if (
        mutation_run(
            max_children=args.max_children,
            budget=args.budget,
            min_rate=floor,
            recheck_budget=args.recheck_budget,
        )
        != 0
    ):
        return 1
    return core_rate.main(["--min-rate", str(args.min_rate)])


if __name__ == "__main__":
    sys.exit(main())
