"""The kill rate of mutmut's last run on the core, per module and in total.

``uv run mutmut run`` keeps one result per mutant in ``mutants/**/*.py.meta`` and prints a row
of emoji counts; this reads those results and prints what the issue's target is stated in::

    uv run mutmut run                                         # the run (hours on 2 cores)
    uv run python tests/mutation/core_rate.py                 # kill rate per module and total
    uv run python tests/mutation/core_rate.py --min-rate 90   # exit 1 below 90 % killed
    uv run python tests/mutation/core_rate.py --survivors     # their names, one per line

A run under a test budget (``EVALWH_MUTATION_BUDGET``, tests/mutation/budget.py) leaves
survivors that a slower test might still kill: ``mutmut run $(... --survivors)`` with the
budget off runs exactly those again against all of their tests.

Killed means a test failed (or timed out) on the mutant, or ``mypy --strict`` rejected it
(``type_check_command``: such a change could never pass ``.ci/run``). Survived counts the
survivors and the mutants no selected test runs ("no tests"): both are bugs the suite would let
through. A survivor listed with its reason in ``equivalent_core.md`` (it cannot change anything
evalwh does) is counted apart and left out of the rate, as the SQL script does; a listed mutant
that is no longer a survivor is printed as stale (killed since, or renumbered by an edit of its
function: review the entry). Mutants mutmut has not checked yet are reported apart and left out
of the rate, so a partial run says how partial it is. So are the mutants whose tests mutmut
could not start (exit code 255, which mutmut files under "timeout"): in fork-server mode that is
an exception in the child before any test ran, e.g. a test id pytest no longer finds. They are
no kills; ``--not-run`` lists them for ``mutmut run <names>``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

from mutmut.stats import status_by_exit_code

KILLED = {"killed", "timeout", "caught by type check"}
SURVIVED = {"survived", "no tests"}
EQUIVALENT = Path(__file__).with_name("equivalent_core.md")
# mutmut's "timeout" for 255 is, in its fork server, an exception raised before the tests ran
NOT_RUN_CODES = {255, -1}
_ROW = re.compile(r"^\|\s*`(evalwh\.[\w.]+__mutmut_\d+)`\s*\|")


def equivalents(path: Path = EQUIVALENT) -> set[str]:
    """The mutant names listed in the equivalents table (first column, in backticks)."""
    if not path.exists():
        return set()
    lines = path.read_text(encoding="utf-8").splitlines()
    return {m.group(1) for line in lines if (m := _ROW.match(line))}


def results(mutants: Path) -> Iterator[tuple[str, str, str]]:
    """(module, mutant name, mutmut status) of every mutant in the ``.meta`` files under
    ``mutants``."""
    for meta in sorted(mutants.rglob("*.py.meta")):
        path = meta.relative_to(mutants).as_posix().removesuffix(".py.meta")
        # mutmut names a package's mutants after the package, not its __init__
        module = path.removesuffix("/__init__").replace("/", ".")
        codes = json.loads(meta.read_text(encoding="utf-8")).get("exit_code_by_key", {})
        for name, code in codes.items():
            yield module, name, "not run" if code in NOT_RUN_CODES else status_by_exit_code[code]


def tally(mutants: Path, listed: set[str]) -> tuple[dict[str, Counter[str]], set[str]]:
    """Status counts per module, from mutmut's ``.meta`` files under ``mutants``, and the
    listed equivalents that mutmut checked and did not find alive, or does not make at all
    (stale entries)."""
    by_module: dict[str, Counter[str]] = defaultdict(Counter)
    used: set[str] = set()
    for module, name, status in results(mutants):
        kind = _kind(status)
        if kind == "survived" and name in listed:
            kind = "equivalent"
        if kind in ("equivalent", "unchecked", "not run"):
            used.add(name)
        by_module[module][kind] += 1
    # an entry of a module this run did not mutate at all (a one-module run) is not stale; a
    # mutant's name is its module, a dot, and the mutated function (no dots)
    stale = {n for n in listed - used if n.rsplit(".", 1)[0] in by_module}
    return by_module, stale


def total_rate(mutants: Path, listed: set[str]) -> float:
    """The kill rate of the whole core (equivalents and unchecked mutants left out)."""
    by_module, _ = tally(mutants, listed)
    return rate(sum(by_module.values(), Counter()))


def survivors(mutants: Path, listed: set[str]) -> list[str]:
    """The mutants a test reached and none killed, less the listed equivalents ("no tests"
    ones are left out: running them again cannot change their result)."""
    names = {name for _, name, status in results(mutants) if status == "survived"}
    return sorted(names - listed)


def not_run(mutants: Path) -> list[str]:
    """The mutants whose tests mutmut could not start (no kill, no survivor: run them again)."""
    return sorted(name for _, name, status in results(mutants) if status == "not run")


def _kind(status: str) -> str:
    if status in KILLED:
        return "killed"
    if status in SURVIVED:
        return "survived"
    if status == "not checked":
        return "unchecked"
    if status == "not run":
        return "not run"
    return "other"  # suspicious, segfault, skipped, interrupted: reported, counted as not killed


def rate(counts: Counter[str]) -> float:
    tested = counts["killed"] + counts["survived"] + counts["other"]
    return 100.0 * counts["killed"] / tested if tested else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mutants", type=Path, default=Path("mutants"), help="mutmut's folder")
    parser.add_argument("--min-rate", type=float, default=None, help="fail below this %% killed")
    parser.add_argument(
        "--equivalent", type=Path, default=EQUIVALENT, help="the reviewed equivalents table"
    )
    parser.add_argument(
        "--survivors", action="store_true", help="print the survivors' names, one per line"
    )
    parser.add_argument(
        "--not-run",
        action="store_true",
        help="print the names of the mutants whose tests mutmut could not start",
    )
    opts = parser.parse_args(argv)
    if opts.survivors:
        print("\n".join(survivors(opts.mutants, equivalents(opts.equivalent))))
        return 0
    if opts.not_run:
        print("\n".join(not_run(opts.mutants)))
        return 0
    by_module, stale = tally(opts.mutants, equivalents(opts.equivalent))
    if not by_module:
        print(f"no mutmut results under {opts.mutants}/: run `uv run mutmut run` first")
        return 2
    total: Counter[str] = Counter()
    for module, counts in sorted(by_module.items()):
        total += counts
        if counts["killed"] + counts["survived"] + counts["other"] == 0:
            continue
        print(
            f"{module}: {counts['killed']} killed, {counts['survived']} survived"
            + (f", {counts['equivalent']} equivalent" if counts["equivalent"] else "")
            + (f", {counts['other']} other" if counts["other"] else "")
            + (f", {counts['unchecked']} not checked" if counts["unchecked"] else "")
            + (f", {counts['not run']} not run" if counts["not run"] else "")
            + f"; {rate(counts):.1f}%"
        )
    for name in sorted(stale):
        print(f"stale entry in {opts.equivalent.name}: {name} is not a survivor")
    print(
        f"core: {total['killed']} killed, {total['survived']} survived,"
        f" {total['equivalent']} equivalent, {total['other']} other"
        f" (suspicious, segfault, skipped), {total['unchecked']} not checked yet,"
        f" {total['not run']} not run (tests never started: --not-run);"
        f" kill rate {rate(total):.1f}% (equivalent, unchecked and not run left out)"
    )
    incomplete = total["unchecked"] or total["not run"]
    if opts.min_rate is not None and (rate(total) < opts.min_rate or incomplete):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
