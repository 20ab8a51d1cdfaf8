"""A pytest plugin for mutation runs only: `[tool.mutmut] pytest_add_cli_args` loads it with
``-p tests.mutation.budget`` (docs/testing.md, "Mutation testing").

mutmut runs each mutant against every test that reached the mutated function, in a child it
forks from a warmed-up server, stopping at the first failure. Three things made that slow here,
and this plugin removes them:

- **Lazy imports in each child.** A module the tests import only when they need it was
  imported, and compiled from source (these machines set ``PYTHONDONTWRITEBYTECODE``), once
  per mutant. The server now imports all of ``evalwh`` before it forks, and writes bytecode.
- **Slow tests first.** mutmut hands the tests over in no useful order, so a mutant the first
  cheap test kills could wait for a ten-second end-to-end run. Each child now runs its tests
  cheapest first; the cost of a test is what the stats pass measured: setup, call and teardown
  (mutmut's own figure counts the call alone and misses a two-second fixture).
- **The killing test found again for each mutant.** Most mutants of one function die on the
  same test, but each child searched for it from the cheapest test up, often to the end of
  its budget. Each test that fails in a child is now noted (``evalwh-killers.tsv``), and a
  mutant meets first the tests that killed others of its function, then those that killed
  others of its module, then the rest cheapest first. The no-budget recheck of the survivors
  keeps its own record (``evalwh-recheck-killers.tsv``): every survivor already met the
  pass's killers within its budget and outlived them, so ranking them first again made each
  survivor of a large module rerun dozens of slow end-to-end tests before the cheap test
  written for it. A recheck runs the tests that killed other *survivors* first, then the
  rest cheapest first.
- **Shared fixtures hidden in one test.** A module or session fixture (a PostgreSQL server
  and an S3 endpoint for the lake tests, a whole eval run once per module) is set up in the
  stats pass by the first test that needs it, so every later test of the module looked cheap:
  0.1 s for a test whose child then started PostgreSQL and moto first. Each test's figure is
  now its own time plus the setup of every module, class, package or session fixture it uses,
  which is what it costs in a child of its own.
- **Tests hidden behind a module fixture.** mutmut credits a function to the tests that were
  running when it was called. A function called while a module (or class, or package)
  fixture is set up, such as a whole eval run shared by a test module, was credited to the
  first test that asked for the fixture alone, so a mutant of it met that one test, in a
  budgeted run and in the recheck alike, though every later test of the fixture reads what
  that call made. At the end of the stats pass, each function credited to a fixture's first
  user is now credited to every test that uses the fixture too (``credit_fixture_users``).
  Session fixtures (servers) are left out: their users span the whole suite.
- **No bound on a survivor.** A surviving mutant of the warehouse's connection code ran 380
  tests (about four minutes). ``EVALWH_MUTATION_BUDGET`` (seconds of measured test time, at
  least one test) bounds the tests a mutant meets. A mutant a budgeted run kills is killed:
  the test that failed is one of its own tests. One it does not kill is only a candidate:
  ``EVALWH_MUTATION_BUDGET=0 mutmut run $(python tests/mutation/core_rate.py --survivors)``
  runs the survivors again against all of their tests, and the rate is then the rate of a
  run with no budget at all.
- **A hang held a child for minutes.** mutmut's wall limit for a mutant is 15 times (1 s + the
  time of *all* its tests): for a mutant that turns a loop endless (a retry that never gives
  up, a lease that is never released) with the median 44 s of tests, eleven minutes (two
  under the suite's ``--timeout=120``), though the budget lets it run ten seconds of them.
  A watchdog now ends the child with mutmut's own
  timeout code (36) once one test has run ``TIMEOUT_FACTOR`` times its measured cost plus
  ``TIMEOUT_SLACK`` seconds: the mutant counts as a timeout, as it would have after the wait.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import os
import pkgutil
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

BUDGET_ENV = "EVALWH_MUTATION_BUDGET"
DEFAULT_BUDGET = 10.0
# In mutmut's working folder (mutants/), next to its own mutmut-stats.json.
DURATIONS_FILE = Path("evalwh-test-durations.json")
MUTMUT_STATS = Path("mutmut-stats.json")
# Which test killed which mutant, one "function<TAB>test" line per kill, in the same folder.
KILLERS_FILE = Path("evalwh-killers.tsv")
# The same, noted by the recheck of the survivors (and read by it alone).
RECHECK_KILLERS_FILE = Path("evalwh-recheck-killers.tsv")
# Set by run_core.py for the recheck of the survivors (a recheck may keep a budget of its own);
# a run with no budget (EVALWH_MUTATION_BUDGET=0) is a recheck too.
RECHECK_ENV = "EVALWH_MUTATION_RECHECK"
# The survivors a recheck ran and no test killed, one name a line after a first line that
# fingerprints the tests in the stats: run_core.py's recheck, started again in a later session,
# leaves them out, until new tests change the fingerprint.
RECHECKED_FILE = Path("evalwh-rechecked.txt")
# A test of a mutant that runs longer than TIMEOUT_FACTOR x its measured cost (seconds, from
# the stats pass) + TIMEOUT_SLACK ends the child as a timeout: exit code 36 is the one mutmut
# records as "timeout".
TIMEOUT_FACTOR = 5.0
TIMEOUT_SLACK = 10.0
TIMEOUT_EXIT_CODE = 36
# Libraries that evalwh imports inside functions, so that the first call pays for them.
HEAVY = ("duckdb", "pyarrow", "pyarrow.parquet", "polars", "jinja2", "jsonschema", "httpx")

_measured: dict[str, float] = {}  # test -> setup + call + teardown, as reported
_shared_setup: dict[str, float] = {}  # shared fixture -> its own setup time (not its deps')
_shared_in_test: dict[str, float] = {}  # test -> time its setup spent starting shared fixtures
_uses: dict[str, list[str]] = {}  # test -> the shared fixtures it needs
_first_user: dict[str, str] = {}  # module/class/package fixture -> the test that set it up
_open: list[float] = []  # per shared fixture being set up: time spent in the ones it needs
_current: list[str] = [""]  # the test being set up
_home: list[Path] = []  # the working folder the session started in (mutants/)
_loaded: list[dict[str, float]] = []  # a mutant's child: the measured durations, read once


def mutant_under_test() -> str | None:
    """The mutant this process runs (mutmut names it in ``MUTANT_UNDER_TEST``), or None in
    the stats pass, the forced-failure check and the fork server's warm-up."""
    name = os.environ.get("MUTANT_UNDER_TEST", "")
    return name if "__mutmut_" in name else None


def rechecking() -> bool:
    """This run rechecks survivors: run_core.py says so, or no budget bounds it."""
    return os.environ.get(RECHECK_ENV) == "1" or budget() <= 0


def budget() -> float:
    """Seconds of measured test time one mutant may use; 0 or less means no bound."""
    raw = os.environ.get(BUDGET_ENV, "")
    if not raw:
        return DEFAULT_BUDGET
    try:
        return float(raw)
    except ValueError:
        raise pytest.UsageError(
            f"{BUDGET_ENV}={raw!r}: give seconds, e.g. 10 (0: no budget)"
        ) from None


def preload() -> list[str]:
    """Import every module of ``evalwh`` (and the libraries it imports late), so that the
    children mutmut forks inherit them instead of compiling each again. Only imports: no
    test runs here, so no library starts the worker threads that make a fork unsafe. A
    module that cannot load (an optional dependency missing; under mutmut's forced-failure
    check, any module that calls its own functions at import) is left for the test that
    imports it, and returned."""
    import evalwh

    missing = []
    names = [info.name for info in pkgutil.walk_packages(evalwh.__path__, "evalwh.")]
    for name in [*HEAVY, *names]:
        if name.rsplit(".", 1)[-1] == "__main__":
            continue
        try:
            importlib.import_module(name)
        except Exception:  # a test that imports it meets the error where it can report it
            missing.append(name)
    return missing


def select(
    nodeids: list[str],
    durations: dict[str, float],
    limit: float,
    killers: dict[str, int] | None = None,
) -> list[str]:
    """The tests one mutant runs: first those that killed other mutants of its function or
    module (``killers``: test -> how many it killed, most first), then the rest cheapest
    first; with a positive limit, as many as fit in it (always the first one). A test with
    no measured time goes last."""
    kills = killers or {}
    ordered = sorted(
        nodeids, key=lambda nodeid: (-kills.get(nodeid, 0), durations.get(nodeid, math.inf))
    )
    if limit <= 0:
        return ordered
    chosen: list[str] = []
    spent = 0.0
    for nodeid in ordered:
        cost = durations.get(nodeid, math.inf)
        if chosen and spent + cost > limit:
            break
        chosen.append(nodeid)
        spent += cost
    return chosen


def _scope(mutant: str) -> tuple[str, str]:
    """The function a mutant belongs to (its name without ``__mutmut_N``) and its module
    (the dotted name before mutmut's mangled ``x_``/``xǁ`` part)."""
    function = mutant.rsplit("__mutmut_", 1)[0]
    parts = function.split(".")
    module = ".".join(part for part in parts if not part.startswith(("x_", "xǁ")))
    return function, module


def killers_file(recheck: bool) -> Path:
    """Where kills are noted: the budgeted pass's file, or the recheck's own."""
    return RECHECK_KILLERS_FILE if recheck else KILLERS_FILE


def record_kill(folder: Path, mutant: str, nodeid: str, *, recheck: bool = False) -> None:
    """Note that ``nodeid`` killed ``mutant``: one short line appended to one file (an
    O_APPEND write this small is not interleaved with the other children's)."""
    line = f"{_scope(mutant)[0]}\t{nodeid}\n"
    with (folder / killers_file(recheck)).open("a", encoding="utf-8") as out:
        out.write(line)


def load_killers(folder: Path, mutant: str, *, recheck: bool = False) -> dict[str, int]:
    """Tests that killed mutants of this mutant's function, ranked above those that killed
    mutants elsewhere in its module: the test likeliest to fail comes first. A recheck reads
    only the kills of the recheck."""
    path = folder / killers_file(recheck)
    if not path.is_file():
        return {}
    function, module = _scope(mutant)
    in_function: dict[str, int] = {}
    in_module: dict[str, int] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        killed, _, nodeid = line.partition("\t")
        if not nodeid:
            continue  # a line another child is still writing
        if killed == function:
            in_function[nodeid] = in_function.get(nodeid, 0) + 1
        elif _scope(killed)[1] == module:
            in_module[nodeid] = in_module.get(nodeid, 0) + 1
    # any kill inside the function outranks every kill elsewhere in the module
    weight = 1 + max(in_module.values(), default=0)
    ranked = dict(in_module)
    for nodeid, count in in_function.items():
        ranked[nodeid] = count * weight + in_module.get(nodeid, 0)
    return ranked


def test_deadline(cost: float | None) -> float | None:
    """Seconds one test of a mutant may run (setup, call and teardown) before the child ends
    as a timeout; None for a test the stats pass did not measure (mutmut's own limit holds)."""
    if cost is None or not math.isfinite(cost):
        return None
    return TIMEOUT_FACTOR * cost + TIMEOUT_SLACK


def _time_out() -> None:
    os._exit(TIMEOUT_EXIT_CODE)  # mutmut's children write nowhere: the code says it all


def load_durations(folder: Path) -> dict[str, float]:
    """Measured seconds per test: this plugin's figures, else mutmut's call-only ones."""
    durations: dict[str, float] = {}
    stats = folder / MUTMUT_STATS
    if stats.is_file():
        durations.update(json.loads(stats.read_text(encoding="utf-8")).get("duration_by_test", {}))
    ours = folder / DURATIONS_FILE
    if ours.is_file():
        durations.update(json.loads(ours.read_text(encoding="utf-8")))
    return durations


def save_durations(folder: Path, measured: dict[str, float]) -> None:
    """Add this session's figures to the file (the stats pass may run in parts)."""
    path = folder / DURATIONS_FILE
    known: dict[str, float] = {}
    if path.is_file():
        known = json.loads(path.read_text(encoding="utf-8"))
    known.update(measured)
    # children read the file while a later part writes it: replace it whole, never half
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(json.dumps(known, sort_keys=True, indent=0), encoding="utf-8")
    partial.replace(path)


def tests_fingerprint(folder: Path) -> str:
    """A digest of the tests in mutmut's stats: it changes when tests are added or removed."""
    stats = folder / MUTMUT_STATS
    data = json.loads(stats.read_text(encoding="utf-8")) if stats.is_file() else {}
    return hashlib.sha256("\n".join(sorted(data.get("duration_by_test", {}))).encode()).hexdigest()


def rechecked(folder: Path) -> set[str]:
    """The survivors a recheck already ran with the tests the stats hold now (the children
    note them, pytest_sessionfinish); a record written with other tests starts again, empty."""
    if not folder.is_dir():
        return set()
    path, fingerprint = folder / RECHECKED_FILE, tests_fingerprint(folder)
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    if lines[:1] != [fingerprint]:
        path.write_text(fingerprint + "\n", encoding="utf-8")
        return set()
    return set(lines[1:])


def _nodeid(nodeid: str) -> str:
    return nodeid.removeprefix("mutants/")


def _stats_pass() -> bool:
    return os.environ.get("MUTANT_UNDER_TEST") == "stats"


def _fixture_key(fixturedef: Any) -> str:
    return f"{fixturedef.baseid}::{fixturedef.argname}"


def child_costs(
    measured: dict[str, float],
    shared_in_test: dict[str, float],
    shared_setup: dict[str, float],
    uses: dict[str, list[str]],
) -> dict[str, float]:
    """What each test costs in a child of its own: its reported time, less the shared
    fixtures it happened to start in the stats pass, plus the setup of every shared fixture
    it needs (a child starts them all again)."""
    return {
        test: max(seconds - shared_in_test.get(test, 0.0), 0.0)
        + sum(shared_setup.get(key, 0.0) for key in uses.get(test, ()))
        for test, seconds in measured.items()
    }


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: Any, request: Any) -> Iterator[None]:
    if not _stats_pass() or fixturedef.scope == "function":
        yield
        return
    _open.append(0.0)
    start = time.perf_counter()
    try:
        yield
    finally:
        spent = time.perf_counter() - start
        inner = _open.pop()
        key = _fixture_key(fixturedef)
        _shared_setup[key] = max(_shared_setup.get(key, 0.0), spent - inner)
        if fixturedef.scope != "session":
            _first_user.setdefault(key, _current[0])
        if _open:
            _open[-1] += spent
        else:
            nodeid = _current[0]
            _shared_in_test[nodeid] = _shared_in_test.get(nodeid, 0.0) + spent


@pytest.hookimpl(tryfirst=True)  # before the fixtures are set up
def pytest_runtest_setup(item: pytest.Item) -> None:
    if _stats_pass():
        _current[0] = _nodeid(item.nodeid)
        info = getattr(item, "_fixtureinfo", None)
        defs = info.name2fixturedefs.values() if info is not None else ()
        _uses[_nodeid(item.nodeid)] = sorted(
            {_fixture_key(d[-1]) for d in defs if d and d[-1].scope != "function"}
        )


def pytest_configure(config: pytest.Config) -> None:
    _home[:] = [Path.cwd()]  # mutmut's folder: a test may change the working folder later
    if mutant_under_test() is None and os.environ.get("MUTANT_UNDER_TEST") != "fail":
        if Path.cwd().name == "mutants":  # mutmut's copy, which no one edits during a run
            sys.dont_write_bytecode = False
        preload()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    mutant = mutant_under_test()
    if mutant is not None and report.failed:
        record_kill(_folder(), mutant, _nodeid(report.nodeid), recheck=rechecking())
    if _stats_pass():
        nodeid = _nodeid(report.nodeid)
        _measured[nodeid] = _measured.get(nodeid, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    mutant = mutant_under_test()
    if mutant is not None and exitstatus == 0 and rechecking():
        with (_folder() / RECHECKED_FILE).open("a", encoding="utf-8") as out:
            out.write(f"{mutant}\n")  # survived its recheck: not run again (run_core.py)
    if _measured:
        save_durations(_folder(), child_costs(_measured, _shared_in_test, _shared_setup, _uses))
        _credit_in_mutmuts_stats()
        for figures in (_measured, _shared_in_test, _shared_setup, _uses, _first_user):
            figures.clear()


def _credit_in_mutmuts_stats() -> None:
    """Credit fixtures' users in the stats mutmut is collecting in this process (saved after
    the session ends); nothing when mutmut is not the caller (a probe's own stats pass)."""
    try:
        from mutmut.state import state
    except ImportError:  # pragma: no cover - mutmut is a dev dependency
        return
    credit_fixture_users(state().tests_by_mangled_function_name, _first_user, _uses)


def credit_fixture_users(
    tests_by_function: dict[str, set[str]],
    first_user: dict[str, str],
    uses: dict[str, list[str]],
) -> None:
    """Add to each function credited to a fixture's first user every test that uses the
    fixture (``first_user``: module, class and package fixtures only)."""
    users: dict[str, set[str]] = {}
    for test, keys in uses.items():
        for key in keys:
            users.setdefault(key, set()).add(test)
    for key, first in first_user.items():
        for tests in tests_by_function.values():
            if first in tests:
                tests |= users.get(key, set())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """In a mutant's child, a watchdog thread (a signal would wait for a main thread stuck in
    C code) ends the process as a timeout when this test outlives its deadline."""
    seconds = None
    if mutant_under_test() is not None:
        seconds = test_deadline(_durations().get(_nodeid(item.nodeid)))
    if seconds is None:
        yield
        return
    watchdog = threading.Timer(seconds, _time_out)
    watchdog.daemon = True
    watchdog.start()
    try:
        yield
    finally:
        watchdog.cancel()


def _folder() -> Path:
    return _home[0] if _home else Path.cwd()


def _durations() -> dict[str, float]:
    """This child's figures, read once."""
    if not _loaded:
        _loaded.append(load_durations(_folder()))
    return _loaded[0]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[Any]) -> None:
    mutant = mutant_under_test()
    if mutant is None or not items:
        return
    by_id = {_nodeid(item.nodeid): item for item in items}
    killers = load_killers(_folder(), mutant, recheck=rechecking())
    chosen = select(list(by_id), _durations(), budget(), killers)
    keep = set(chosen)
    dropped = [item for nodeid, item in by_id.items() if nodeid not in keep]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = [by_id[nodeid] for nodeid in chosen]
