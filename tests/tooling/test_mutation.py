"""tests/mutation/core_rate.py: the kill rate it prints from mutmut's result files.

The mutation run itself takes hours and is not part of the suite (docs/testing.md); what the
suite checks is the arithmetic the kill-rate target is read from: which mutmut statuses count
as killed, that "no tests" counts as survived, and that a partial run cannot pass the gate.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.builders import git

# the mutation tooling's tests start pytest and mutmut in subprocesses: they run as slow tests
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "mutation" / "core_rate.py"


def _meta(folder: Path, module: str, codes: list[int | None]) -> None:
    path = folder / (module.replace(".", "/") + ".py.meta")
    path.parent.mkdir(parents=True, exist_ok=True)
    keys = {f"{module}.x_f__mutmut_{i}": code for i, code in enumerate(codes, 1)}
    path.write_text(json.dumps({"exit_code_by_key": keys}), encoding="utf-8")


def _run(mutants: Path, *args: str) -> subprocess.CompletedProcess[str]:
    if "--equivalent" not in args:  # the committed table's names do not occur in these fixtures
        args = (*args, "--equivalent", str(mutants / "none.md"))
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--mutants", str(mutants), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_killed_timeouts_and_type_check_count_as_killed_no_tests_as_survived(
    tmp_path: Path,
) -> None:
    # evalwh.a: 1 killed, 3 killed (pytest internal error), 36 timeout, 37 caught by mypy,
    # 0 survived, 33 no tests -> 4 of 6 killed. evalwh.b: 9 killed, 1 suspicious (35).
    _meta(tmp_path, "evalwh.a", [1, 3, 36, 37, 0, 33])
    _meta(tmp_path, "evalwh.b", [1] * 9 + [35])
    out = _run(tmp_path, "--min-rate", "70")
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "evalwh.a: 4 killed, 2 survived; 66.7%"
    assert lines[1] == "evalwh.b: 9 killed, 0 survived, 1 other; 90.0%"
    assert lines[2] == (
        "core: 13 killed, 2 survived, 0 equivalent, 1 other (suspicious, segfault, skipped),"
        " 0 not checked yet, 0 not run (tests never started: --not-run);"
        " kill rate 81.2% (equivalent, unchecked and not run left out)"
    )


def test_a_mutant_whose_tests_never_started_is_no_kill_and_is_listed_to_run_again(
    tmp_path: Path,
) -> None:
    """mutmut files exit code 255 under "timeout", but its fork server's child exits 255 when
    it raised before any test ran (pytest found no test by that id): 170 mutants of one run
    were counted as kills that way. They are left out of the rate, fail the gate like an
    unchecked mutant, and --not-run names them."""
    _meta(tmp_path, "evalwh.a", [1, 255, 36, 0, 255])
    out = _run(tmp_path, "--min-rate", "50")
    assert out.stdout.splitlines()[0] == "evalwh.a: 2 killed, 1 survived, 2 not run; 66.7%"
    assert "0 not checked yet, 2 not run (tests never started: --not-run)" in out.stdout
    assert out.returncode == 1  # a rate over the target, but not every mutant ran
    listed = _run(tmp_path, "--not-run")
    assert listed.stdout.split() == ["evalwh.a.x_f__mutmut_2", "evalwh.a.x_f__mutmut_5"]
    assert "evalwh.a.x_f__mutmut_2" not in _run(tmp_path, "--survivors").stdout


def test_every_test_id_is_found_again_by_a_second_collection_in_one_process() -> None:
    """mutmut's fork server collects the suite once, then each child selects its tests by id
    in the same process: an id that changes on a second collection (pytest escapes what an
    ids callable returns once more each time) is "not found" there, and the mutant's tests
    never run."""
    probe = (
        "import sys, pytest\n"
        "class Ids:\n"
        "    def __init__(self): self.ids = []\n"
        "    def pytest_collection_finish(self, session):\n"
        "        self.ids = [item.nodeid for item in session.items]\n"
        "args = ['--collect-only', '-qqq', '-p', 'no:cacheprovider', 'tests/']\n"
        "first, second = Ids(), Ids()\n"
        "pytest.main(args, plugins=[first]); pytest.main(args, plugins=[second])\n"
        "changed = sorted(set(first.ids) - set(second.ids))\n"
        "print(len(first.ids), changed)\n"
        "sys.exit(0 if first.ids and not changed else 1)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]


def test_survivors_are_listed_for_a_second_run_without_the_listed_equivalents(
    tmp_path: Path,
) -> None:
    _meta(tmp_path, "evalwh.a", [1, 0, 33, 0, None, 36])  # 2 and 4 survive, 3 has no tests
    _meta(tmp_path, "evalwh.b", [0])
    table = tmp_path / "equivalent_core.md"
    table.write_text("| `evalwh.a.x_f__mutmut_4` | `<` -> `<=` | same |\n", encoding="utf-8")
    out = _run(tmp_path, "--survivors", "--equivalent", str(table))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["evalwh.a.x_f__mutmut_2", "evalwh.b.x_f__mutmut_1"]


def test_listed_equivalents_leave_the_rate_and_stale_entries_are_named(tmp_path: Path) -> None:
    _meta(tmp_path, "evalwh.a", [1, 1, 1, 0, 0])  # mutants 4 and 5 survive
    _meta(tmp_path, "evalwh.b", [None])  # listed but not checked yet: not stale
    _meta(tmp_path, "evalwh.xb.__init__", [None])  # a package: mutants named evalwh.xb.x_...
    table = tmp_path / "equivalent_core.md"
    table.write_text(
        "| mutant | mutation | reason |\n|---|---|---|\n"
        "| `evalwh.a.x_f__mutmut_4` | `<` -> `<=` | equal lengths swap nothing |\n"
        "| `evalwh.a.x_f__mutmut_1` | `0` -> `1` | (killed now) |\n"
        "| `evalwh.b.x_f__mutmut_1` | `0` -> `1` | (not checked yet) |\n"
        "| `evalwh.a.x_g__mutmut_9` | `0` -> `1` | (no such mutant any more) |\n"
        "| `evalwh.zz.x_g__mutmut_1` | `0` -> `1` | (a module this run did not mutate) |\n"
        "| `evalwh.xb.x_g__mutmut_7` | `0` -> `1` | (a package's mutant that is gone) |\n",
        encoding="utf-8",
    )
    out = _run(tmp_path, "--equivalent", str(table))
    assert out.returncode == 0, out.stdout
    assert "evalwh.a: 3 killed, 1 survived, 1 equivalent; 75.0%" in out.stdout
    assert "stale entry in equivalent_core.md: evalwh.a.x_f__mutmut_1 is not a survivor" in (
        out.stdout
    )
    assert "evalwh.a.x_g__mutmut_9 is not a survivor" in out.stdout
    assert "evalwh.zz" not in out.stdout
    assert "evalwh.xb.x_g__mutmut_7 is not a survivor" in out.stdout
    assert "evalwh.b.x_f__mutmut_1" not in out.stdout
    assert "kill rate 75.0% (equivalent, unchecked and not run left out)" in out.stdout
    (tmp_path / "evalwh" / "b.py.meta").unlink()  # the run finished: the gate can pass
    (tmp_path / "evalwh" / "xb" / "__init__.py.meta").unlink()
    assert _run(tmp_path, "--equivalent", str(table), "--min-rate", "75").returncode == 0
    assert _run(tmp_path, "--min-rate", "75").returncode == 1  # without the table: 60 %


def test_the_gate_fails_below_the_rate_and_on_a_partial_run(tmp_path: Path) -> None:
    _meta(tmp_path, "evalwh.a", [1] * 9 + [0])  # exactly 90 %
    assert _run(tmp_path, "--min-rate", "90").returncode == 0
    assert _run(tmp_path, "--min-rate", "90.1").returncode == 1
    _meta(tmp_path, "evalwh.b", [1, None])  # one not checked: the rate leaves it out ...
    out = _run(tmp_path, "--min-rate", "90")
    assert "10 killed, 1 survived" in out.stdout and "1 not checked yet" in out.stdout
    assert "kill rate 90.9%" in out.stdout
    assert out.returncode == 1  # ... but a partial run never passes the gate
    assert _run(tmp_path).returncode == 0  # without --min-rate it only reports


@pytest.mark.parametrize("make", [False, True])
def test_no_results_says_what_to_run(tmp_path: Path, make: bool) -> None:
    folder = tmp_path / "mutants"
    if make:
        folder.mkdir()
    out = _run(folder)
    assert out.returncode == 2
    assert "run `uv run mutmut run` first" in out.stdout


def _script(name: str) -> Any:
    """A script of tests/mutation/, loaded as a module."""
    import importlib.util

    path = ROOT / "tests" / "mutation" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"mutation_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _stats_in_parts() -> Any:
    return _script("stats_in_parts")


def test_stats_parts_cover_every_file_once_in_order() -> None:
    split = _stats_in_parts().split
    files = [f"t{i}" for i in range(10)]
    assert split(files, 3) == [["t0", "t1", "t2", "t3"], ["t4", "t5", "t6"], ["t7", "t8", "t9"]]
    assert split(files, 1) == [files]
    assert split(files[:2], 5) == [["t0"], ["t1"]]  # never an empty part
    assert split(files, 10) == [[f] for f in files]
    with pytest.raises(ValueError, match="--parts must be 1 or more"):
        split(files, 0)


def test_a_crashed_stats_part_runs_again_and_a_failed_one_stops(
    capsys: pytest.CaptureFixture[str],
) -> None:
    module = _stats_in_parts()
    assert [module.crashed(c) for c in (-11, -6, 139, 134, 0, 1, 2)] == [
        True, True, True, True, False, False, False,
    ]  # fmt: skip
    codes = {"a": [-11, 0], "b": [0]}
    seen: list[str] = []

    def run(part: list[str]) -> int:
        seen.append(part[0])
        return codes[part[0]].pop(0)

    assert module.run_parts([["a"], ["b"]], run, retries=1) == 0
    assert seen == ["a", "a", "b"]
    assert "part 1 crashed (exit -11); running it again" in capsys.readouterr().out
    # more crashes than retries allowed, or a failing test: stop with exit 1, naming the part
    codes = {"a": [-11, -11], "b": [0]}
    assert module.run_parts([["a"], ["b"]], run, retries=1) == 1
    assert "part 1 crashed (exit -11); stopping" in capsys.readouterr().err
    codes = {"a": [1], "b": [0]}
    seen.clear()
    assert module.run_parts([["a"], ["b"]], run, retries=3) == 1
    assert seen == ["a"]
    assert "part 1 failed (exit 1); stopping" in capsys.readouterr().err


def test_stats_in_parts_needs_the_generated_mutants(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert _stats_in_parts().main([]) == 1
    assert "no mutants/ folder: run `mutmut run` first" in capsys.readouterr().err


def test_stats_in_parts_goes_on_with_the_test_files_the_saved_stats_lack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module = _stats_in_parts()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mutants").mkdir()
    (tmp_path / "tests").mkdir()
    for name in ("test_a.py", "test_b.py", "test_c.py"):
        (tmp_path / "tests" / name).write_text("", encoding="utf-8")
    known = {"duration_by_test": {"tests/test_a.py::test_one": 0.1, "tests/test_c.py::t": 1.0}}
    module.STATS.write_text(json.dumps(known), encoding="utf-8")
    ran: list[list[str]] = []

    def run_bounded(command: list[str], timeout_s: float) -> int:
        ran.append(command[command.index("--child") + 1 :])
        return 0

    monkeypatch.setattr(module, "run_bounded", run_bounded)
    assert module.main(["--missing"]) == 0
    assert ran == [["tests/test_b.py"]]
    assert module.STATS.is_file()  # the parts collected before are kept
    assert module.collected(module.STATS) == {"tests/test_a.py", "tests/test_c.py"}
    known["duration_by_test"]["tests/test_b.py::t"] = 0.2
    module.STATS.write_text(json.dumps(known), encoding="utf-8")
    ran.clear()
    assert module.main(["--missing"]) == 0 and ran == []
    assert "the saved stats hold every test file already" in capsys.readouterr().out
    assert module.main([]) == 0 and len(ran) == 3  # without --missing: every file again


def test_a_stats_part_that_hangs_is_killed_and_counts_as_crashed() -> None:
    run_bounded = _stats_in_parts().run_bounded
    # the outcome, not the time taken: SIGKILL ends the part (-9) long before its 30 s sleep
    assert run_bounded([sys.executable, "-c", "import time; time.sleep(30)"], 0.5) == -9
    assert run_bounded([sys.executable, "-c", "raise SystemExit(3)"], 30) == 3


# tests/mutation/budget.py: the plugin mutmut's runs load (-p tests.mutation.budget).


def _budget() -> Any:
    return _script("budget")


def test_a_mutant_meets_its_cheapest_tests_first_within_the_budget() -> None:
    select = _budget().select
    durations = {"a": 3.0, "b": 0.5, "c": 1.0, "d": 0.5}
    tests = ["a", "b", "c", "d", "new"]
    # cheapest first (ties keep mutmut's order), an unmeasured test last; no budget: all run
    assert select(tests, durations, 0) == ["b", "d", "c", "a", "new"]
    assert select(tests, durations, -1) == ["b", "d", "c", "a", "new"]
    # a test that fits exactly still runs; the next one would pass the limit
    assert select(tests, durations, 2.0) == ["b", "d", "c"]
    assert select(tests, durations, 1.99) == ["b", "d"]
    # the cheapest test always runs, even when it alone is over the limit
    assert select(["a", "new"], durations, 0.1) == ["a"]
    assert select(["new"], durations, 0.1) == ["new"]
    assert select([], durations, 5) == []


def test_tests_that_killed_mutants_of_the_same_function_then_module_come_first(
    tmp_path: Path,
) -> None:
    module = _budget()
    assert module.load_killers(tmp_path, "evalwh.a.x_f__mutmut_1") == {}  # nothing noted yet
    kills = [
        ("evalwh.a.x_f__mutmut_1", "t_f"),
        ("evalwh.a.x_f__mutmut_2", "t_f"),
        ("evalwh.a.xǁCǁm__mutmut_1", "t_m"),  # a method: same module, other function
        ("evalwh.a.xǁCǁm__mutmut_2", "t_m"),
        ("evalwh.a.xǁCǁm__mutmut_3", "t_m"),
        ("evalwh.a.x_f__mutmut_3", "t_m"),
        ("evalwh.ab.x_f__mutmut_1", "t_other"),  # another module with the same prefix
        ("evalwh.a.x_g__mutmut_1", "t_g"),
    ]
    for mutant, test in kills:
        module.record_kill(tmp_path, mutant, test)
    with (tmp_path / module.KILLERS_FILE).open("a", encoding="utf-8") as out:
        out.write("evalwh.a.x_f")  # a line another child has not finished
    ranked = module.load_killers(tmp_path, "evalwh.a.x_f__mutmut_9")
    assert set(ranked) == {"t_f", "t_m", "t_g"}
    # two kills in the function outrank three elsewhere in the module
    assert ranked["t_f"] > ranked["t_m"] > ranked["t_g"] > 0
    durations = {"t_f": 5.0, "t_m": 4.0, "t_g": 3.0, "cheap": 0.1, "t_other": 0.2}
    tests = ["cheap", "t_other", "t_g", "t_m", "t_f"]
    assert module.select(tests, durations, 0, ranked) == ["t_f", "t_m", "t_g", "cheap", "t_other"]
    # the budget cuts the same order; the likeliest killer runs even when it alone is over it
    assert module.select(tests, durations, 9.0, ranked) == ["t_f", "t_m"]
    assert module.select(tests, durations, 1.0, ranked) == ["t_f"]
    assert module.select(tests, durations, 1.0) == ["cheap", "t_other"]  # no kills noted
    # a method's mutants: its own function first
    by_method = module.load_killers(tmp_path, "evalwh.a.xǁCǁm__mutmut_7")
    assert by_method["t_m"] > by_method["t_f"]


def test_the_recheck_ranks_only_the_tests_that_killed_other_survivors(tmp_path: Path) -> None:
    # the survivors outlived the budgeted pass's killers: ranking those first again made each
    # survivor rerun the slow tests that had killed its siblings before the cheap one for it
    module = _budget()
    module.record_kill(tmp_path, "evalwh.a.x_f__mutmut_1", "t_slow")
    module.record_kill(tmp_path, "evalwh.a.x_f__mutmut_2", "t_slow")
    assert module.load_killers(tmp_path, "evalwh.a.x_f__mutmut_9", recheck=True) == {}
    durations = {"t_slow": 30.0, "cheap": 0.1, "t_new": 0.3}
    tests = ["t_slow", "t_new", "cheap"]
    ranked = module.load_killers(tmp_path, "evalwh.a.x_f__mutmut_9", recheck=True)
    assert module.select(tests, durations, 0, ranked) == ["cheap", "t_new", "t_slow"]
    module.record_kill(tmp_path, "evalwh.a.x_f__mutmut_3", "t_new", recheck=True)
    assert (tmp_path / module.RECHECK_KILLERS_FILE).read_text(encoding="utf-8") == (
        "evalwh.a.x_f\tt_new\n"
    )
    ranked = module.load_killers(tmp_path, "evalwh.a.x_f__mutmut_9", recheck=True)
    assert module.select(tests, durations, 0, ranked) == ["t_new", "cheap", "t_slow"]
    # the budgeted pass neither reads nor writes the recheck's record
    assert set(module.load_killers(tmp_path, "evalwh.a.x_f__mutmut_9")) == {"t_slow"}


def test_the_budget_comes_from_the_environment_and_a_bad_value_says_how_to_fix_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = _budget()
    monkeypatch.delenv("EVALWH_MUTATION_BUDGET", raising=False)
    assert module.budget() == module.DEFAULT_BUDGET == 10.0
    monkeypatch.setenv("EVALWH_MUTATION_BUDGET", "2.5")
    assert module.budget() == 2.5
    monkeypatch.setenv("EVALWH_MUTATION_BUDGET", "ten")
    with pytest.raises(pytest.UsageError, match=r"EVALWH_MUTATION_BUDGET='ten': give seconds"):
        module.budget()
    monkeypatch.setenv("EVALWH_MUTATION_BUDGET", "60")
    assert not module.rechecking()
    monkeypatch.setenv("EVALWH_MUTATION_RECHECK", "1")
    assert module.rechecking()  # a recheck with a budget of its own
    monkeypatch.delenv("EVALWH_MUTATION_RECHECK")
    monkeypatch.setenv("EVALWH_MUTATION_BUDGET", "0")
    assert module.rechecking()  # no budget at all: a recheck by hand
    for value, expected in (("stats", None), ("fail", None), ("", None)):
        monkeypatch.setenv("MUTANT_UNDER_TEST", value)
        assert module.mutant_under_test() is expected
    monkeypatch.setenv("MUTANT_UNDER_TEST", "evalwh.a.x_f__mutmut_3")
    assert module.mutant_under_test() == "evalwh.a.x_f__mutmut_3"


def test_a_tests_cost_in_a_child_counts_the_shared_fixtures_it_needs() -> None:
    costs = _budget().child_costs(
        {"m::first": 3.1, "m::second": 0.1, "m::alone": 0.5},
        {"m::first": 3.0},  # it started the module's server (2 s) and its database (1 s)
        {"m::server": 2.0, "s::database": 1.0},
        {"m::first": ["m::server", "s::database"], "m::second": ["m::server"]},
    )
    assert costs == pytest.approx({"m::first": 3.1, "m::second": 2.1, "m::alone": 0.5})


# A function called while a module fixture is set up (a whole eval run a test module shares)
# runs in the first test that asks for the fixture; every later user reads what it made.
FIXTURE_PROBE = """
import pytest
from mutmut.state import state

@pytest.fixture(scope="module")
def shared_run():
    state()._stats.add("evalwh.x_run")

@pytest.fixture(scope="session")
def server():
    state()._stats.add("evalwh.x_serve")

def test_first(shared_run, server):
    state()._stats.add("evalwh.x_first")

def test_second(shared_run):
    pass

def test_server_only(server):
    pass

def test_other():
    state()._stats.add("evalwh.x_other")
"""

# mutmut's stats pass, as its pytest runner does it: in this process, MUTANT_UNDER_TEST=stats,
# each test credited at its teardown with the functions called since the last one
FIXTURE_STATS = """
import json, os, sys
import pytest
from mutmut.state import state

os.environ["MUTANT_UNDER_TEST"] = "stats"

class Collector:
    def pytest_runtest_teardown(self, item, nextitem):
        for function in state()._stats:
            state().tests_by_mangled_function_name[function].add(item.nodeid)
        state()._stats.clear()

code = pytest.main(
    ["-p", "tests.mutation.budget", "-p", "no:cacheprovider", "-q", "test_fixture_probe.py"],
    plugins=[Collector()],
)
stats = {k: sorted(v) for k, v in state().tests_by_mangled_function_name.items()}
print("STATS " + json.dumps(stats))
sys.exit(code)
"""


def test_a_function_a_module_fixture_calls_is_credited_to_every_test_using_the_fixture(
    tmp_path: Path,
) -> None:
    (tmp_path / "test_fixture_probe.py").write_text(FIXTURE_PROBE, encoding="utf-8")
    (tmp_path / "stats.py").write_text(FIXTURE_STATS, encoding="utf-8")
    out = subprocess.run(
        [sys.executable, "stats.py"],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    line = next(x for x in out.stdout.splitlines() if x.startswith("STATS "))
    stats = json.loads(line.removeprefix("STATS "))
    probe = "test_fixture_probe.py::test_"
    # the module fixture's call: its first user and the test that shares it, not the others
    assert stats["evalwh.x_run"] == [probe + "first", probe + "second"]
    # the first user's other calls go to its module fixture's users too (a few more tests for
    # such a mutant, never fewer), but a session fixture (a server) spans the suite: its
    # users are not added (test_server_only)
    assert stats["evalwh.x_serve"] == [probe + "first", probe + "second"]
    assert stats["evalwh.x_first"] == [probe + "first", probe + "second"]
    # a test without the fixture keeps only its own
    assert stats["evalwh.x_other"] == [probe + "other"]


def test_crediting_fixture_users_adds_only_the_users_of_a_fixture_its_first_user_set_up() -> None:
    stats = {"f": {"t1"}, "g": {"t2"}, "h": {"t3"}}
    uses = {"t1": ["m::run"], "t2": ["m::run", "s::pg"], "t3": ["s::pg"], "t4": []}
    _budget().credit_fixture_users(stats, {"m::run": "t1"}, uses)
    assert stats == {"f": {"t1", "t2"}, "g": {"t2"}, "h": {"t3"}}


def test_measured_durations_add_up_over_parts_and_win_over_mutmuts_call_time(
    tmp_path: Path,
) -> None:
    module = _budget()
    assert module.load_durations(tmp_path) == {}
    stats = {"duration_by_test": {"t::a": 0.1, "t::b": 0.2}}
    (tmp_path / "mutmut-stats.json").write_text(json.dumps(stats), encoding="utf-8")
    assert module.load_durations(tmp_path) == {"t::a": 0.1, "t::b": 0.2}
    module.save_durations(tmp_path, {"t::a": 2.0})
    module.save_durations(tmp_path, {"t::c": 1.0})  # a second part keeps the first's figures
    assert module.load_durations(tmp_path) == {"t::a": 2.0, "t::b": 0.2, "t::c": 1.0}


def test_preload_imports_all_of_evalwh() -> None:
    assert _budget().preload() == []  # every extra is installed where the suite runs
    for name in ("evalwh.warehouse.connect", "evalwh.reports.html", "evalwh.mcp.server"):
        assert name in sys.modules, name


PROBE_TESTS = """
import os, time
import pytest

LOG = os.environ["PROBE_LOG"]

def note(name):
    with open(LOG, "a") as f:
        f.write(name + "\\n")

@pytest.fixture
def slow_setup():
    time.sleep(0.3)

@pytest.fixture(scope="session")
def server_base():
    time.sleep(0.2)

@pytest.fixture(scope="module")
def server(server_base):
    time.sleep(0.4)

def test_slow(slow_setup):
    note("slow")

def test_starts_server(server):
    note("starts")

def test_shares_server(server):
    note("shares")

def test_fast():
    note("fast")

def test_middle():
    note("middle")

def test_new():
    note("new")
"""


# fails after leaving the working folder (as a test that chdirs into its tmp_path does): the
# kill is still noted in the folder the session started in
KILLING_TEST = """
def test_kills():
    note("kills")
    os.makedirs("elsewhere", exist_ok=True)
    os.chdir("elsewhere")
    assert False
"""


def _probe(tmp_path: Path, mutant: str, budget: str) -> tuple[list[str], str]:
    (tmp_path / "test_probe.py").write_text(PROBE_TESTS, encoding="utf-8")
    log = tmp_path / "log.txt"
    log.unlink(missing_ok=True)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PROBE_LOG": str(log),
        "MUTANT_UNDER_TEST": mutant,
        "EVALWH_MUTATION_BUDGET": budget,
    }
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.mutation.budget", "-p", "no:cacheprovider",
         "-q", "test_probe.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    return log.read_text(encoding="utf-8").split(), out.stdout


def test_the_stats_pass_measures_setup_too_and_a_mutant_runs_its_cheapest_tests_first(
    tmp_path: Path,
) -> None:
    # the stats pass: every test runs in file order, and each one's setup + call + teardown
    # is saved (test_slow's time is in its fixture, which mutmut's call-only figure misses)
    ran, _ = _probe(tmp_path, "stats", "")
    assert ran == ["slow", "starts", "shares", "fast", "middle", "new"]
    measured = json.loads((tmp_path / "evalwh-test-durations.json").read_text(encoding="utf-8"))
    names = ("slow", "starts_server", "shares_server", "fast", "middle", "new")
    assert set(measured) == {f"test_probe.py::test_{n}" for n in names}
    # lower bounds only (a sleep never takes less; a busy machine may take longer): the
    # setup time is in the figure of the test that needed it
    assert measured["test_probe.py::test_slow"] >= 0.3
    # the shared fixtures' 0.6 s are what each of their users costs in a child of its own,
    # though the first one alone started them in the stats pass (that they are counted once,
    # not twice, is pinned without a clock by the child_costs and credit_fixture_users tests)
    for user in ("starts_server", "shares_server"):
        assert measured[f"test_probe.py::test_{user}"] >= 0.6, measured
    assert list(tmp_path.glob(".evalwh-test-durations.json.*")) == []  # written whole
    # a mutant: cheapest first, the unmeasured test last, then cut at the budget
    measured = {
        "test_probe.py::test_slow": 5.0,
        "test_probe.py::test_fast": 0.01,
        "test_probe.py::test_middle": 0.5,
    }
    (tmp_path / "evalwh-test-durations.json").write_text(json.dumps(measured), encoding="utf-8")
    ran, _ = _probe(tmp_path, "evalwh.a.x_f__mutmut_1", "0")
    assert ran[:3] == ["fast", "middle", "slow"] and set(ran[3:]) == {"new", "starts", "shares"}
    # no budget is a recheck: a mutant whose tests all passed is noted as rechecked
    rechecked = tmp_path / "evalwh-rechecked.txt"
    assert rechecked.read_text(encoding="utf-8") == "evalwh.a.x_f__mutmut_1\n"
    rechecked.unlink()
    ran, stdout = _probe(tmp_path, "evalwh.a.x_f__mutmut_1", "1")
    assert ran == ["fast", "middle"]
    assert "2 passed, 4 deselected" in stdout
    assert not rechecked.exists()  # a budgeted first pass notes nothing
    assert not (tmp_path / "evalwh-killers.tsv").exists()  # nothing failed, nothing noted
    # a test that fails in a mutant's child is noted, and the next mutant of the function
    # meets it first though it is the dearest
    (tmp_path / "test_probe.py").write_text(
        PROBE_TESTS + KILLING_TEST,
        encoding="utf-8",
    )
    (tmp_path / "evalwh-test-durations.json").write_text(
        json.dumps({**measured, "test_probe.py::test_kills": 4.0}), encoding="utf-8"
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PROBE_LOG": str(tmp_path / "log.txt"),
        "MUTANT_UNDER_TEST": "evalwh.a.x_f__mutmut_2",
        "EVALWH_MUTATION_BUDGET": "0",
    }
    first = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.mutation.budget", "-p", "no:cacheprovider",
         "-q", "-x", "test_probe.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert first.returncode == 1, first.stdout
    # no budget: the recheck of the survivors, which keeps its own record of kills
    assert (tmp_path / "evalwh-recheck-killers.tsv").read_text(encoding="utf-8") == (
        "evalwh.a.x_f\ttest_probe.py::test_kills\n"
    )
    assert not (tmp_path / "evalwh-killers.tsv").exists()
    (tmp_path / "log.txt").unlink()
    second = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.mutation.budget", "-p", "no:cacheprovider",
         "-q", "-x", "test_probe.py"],
        cwd=tmp_path, env={**env, "MUTANT_UNDER_TEST": "evalwh.a.x_f__mutmut_3"},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert second.returncode == 1
    assert (tmp_path / "log.txt").read_text(encoding="utf-8").split() == ["kills"]
    (tmp_path / "test_probe.py").write_text(PROBE_TESTS, encoding="utf-8")
    # outside a mutant (mutmut's forced-failure check) nothing is reordered or left out
    ran, _ = _probe(tmp_path, "fail", "1")
    assert ran == ["slow", "starts", "shares", "fast", "middle", "new"]


HANGING_TESTS = """
import time

def test_quick():
    pass

def test_hangs():
    time.sleep(60)  # a mutant that made a loop endless
"""


def test_a_mutants_test_that_outlives_its_deadline_ends_the_child_as_mutmuts_timeout(
    tmp_path: Path,
) -> None:
    module = _budget()
    assert module.test_deadline(2.0) == 5.0 * 2.0 + 10.0
    assert module.test_deadline(None) is None and module.test_deadline(math.inf) is None
    (tmp_path / "test_hang.py").write_text(HANGING_TESTS, encoding="utf-8")
    # the slack made short for this check (10 s in a mutation run)
    (tmp_path / "conftest.py").write_text(
        "import tests.mutation.budget as b\nb.TIMEOUT_SLACK = 0.5\n", encoding="utf-8"
    )
    measured = {"test_hang.py::test_quick": 0.01, "test_hang.py::test_hangs": 0.05}
    (tmp_path / "evalwh-test-durations.json").write_text(json.dumps(measured), encoding="utf-8")

    def child(mutant: str, *tests: str) -> int:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "MUTANT_UNDER_TEST": mutant}
        out = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "tests.mutation.budget", "-p", "no:cacheprovider",
             "-q", *tests],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        return out.returncode

    # the watchdog ends the child (5 x 0.05 + 0.5 s deadline, not the 60 s the test sleeps):
    # mutmut's "timeout" exit code says so; the subprocess timeout bounds a missing watchdog
    assert child("evalwh.a.x_f__mutmut_1", "test_hang.py") == module.TIMEOUT_EXIT_CODE == 36
    # a test within its deadline passes as before; outside a mutant no watchdog runs
    assert child("evalwh.a.x_f__mutmut_1", "test_hang.py::test_quick") == 0
    measured["test_hang.py::test_hangs"] = 100.0  # a slow test is given its time
    (tmp_path / "evalwh-test-durations.json").write_text(json.dumps(measured), encoding="utf-8")
    (tmp_path / "test_hang.py").write_text(HANGING_TESTS.replace("60", "1.5"), encoding="utf-8")
    assert child("evalwh.a.x_f__mutmut_1", "test_hang.py") == 0
    measured["test_hang.py::test_hangs"] = 0.05
    (tmp_path / "evalwh-test-durations.json").write_text(json.dumps(measured), encoding="utf-8")
    assert child("stats", "test_hang.py") == 0  # the stats pass: no deadline


def _run_core() -> Any:
    return _script("run_core")


def test_the_whole_run_collects_stats_in_parts_after_a_crash_and_rechecks_survivors(
    capsys: pytest.CaptureFixture[str],
) -> None:
    module = _run_core()
    calls: list[tuple[list[str], dict[str, str]]] = []
    codes = [-11, 0, 0]  # mutmut stops in its stats pass, then runs; then the survivors

    def run(command: list[str], env: dict[str, str]) -> int:
        calls.append((list(command), env))
        return codes.pop(0)

    parts: list[str] = []
    assert module.mutation_run(
        max_children=3, budget=7.5, run=run,
        collect_stats=lambda: parts.append("stats") or 0,
        survivors=lambda: ["evalwh.a.x_f__mutmut_2", "evalwh.b.x_g__mutmut_1"],
    ) == 0  # fmt: skip
    mutmut = ["mutmut", "run", "--max-children", "3"]
    assert parts == ["stats"]
    assert calls == [
        (mutmut, {"EVALWH_MUTATION_BUDGET": "7.5"}),
        (mutmut, {"EVALWH_MUTATION_BUDGET": "7.5"}),
        ([*mutmut, "evalwh.a.x_f__mutmut_2", "evalwh.b.x_g__mutmut_1"],
         {"EVALWH_MUTATION_BUDGET": "0", "EVALWH_MUTATION_RECHECK": "1"}),
    ]  # fmt: skip
    assert "2 survivors: running them again with no budget" in capsys.readouterr().out


def test_a_recheck_started_again_leaves_out_the_survivors_it_already_ran(
    capsys: pytest.CaptureFixture[str],
) -> None:
    module = _run_core()
    calls: list[tuple[list[str], dict[str, str]]] = []

    def run(command: list[str], env: dict[str, str]) -> int:
        calls.append((list(command), env))
        return 0

    assert module.mutation_run(
        max_children=2, budget=10, run=run, recheck_budget=60,
        survivors=lambda: ["evalwh.a.x_f__mutmut_2", "evalwh.b.x_g__mutmut_1"],
        rechecked=lambda: {"evalwh.a.x_f__mutmut_2"},
    ) == 0  # fmt: skip
    assert calls[-1] == (
        ["mutmut", "run", "--max-children", "2", "evalwh.b.x_g__mutmut_1"],
        {"EVALWH_MUTATION_BUDGET": "60", "EVALWH_MUTATION_RECHECK": "1"},
    )
    assert (
        "1 survivors: running them again with a budget of 60 s (1 rechecked before, with the"
        " same tests)"
    ) in capsys.readouterr().out


def test_the_record_of_rechecked_survivors_starts_over_when_the_tests_change(
    tmp_path: Path,
) -> None:
    module = _budget()
    assert module.rechecked(tmp_path / "none") == set()  # no mutants/ yet
    stats = tmp_path / "mutmut-stats.json"
    stats.write_text(json.dumps({"duration_by_test": {"t::a": 1.0}}), encoding="utf-8")
    assert module.rechecked(tmp_path) == set()  # a new record, under this fingerprint
    record = tmp_path / "evalwh-rechecked.txt"
    with record.open("a", encoding="utf-8") as out:
        out.write("evalwh.a.x_f__mutmut_1\n")  # as budget.py notes a survivor of its recheck
    assert module.rechecked(tmp_path) == {"evalwh.a.x_f__mutmut_1"}
    stats.write_text(json.dumps({"duration_by_test": {"t::a": 1.0, "t::b": 0.1}}), "utf-8")
    assert module.rechecked(tmp_path) == set()  # a test was added: every survivor again
    assert record.read_text(encoding="utf-8").splitlines() == [module.tests_fingerprint(tmp_path)]


@pytest.mark.parametrize("code", [-signal.SIGINT, -signal.SIGTERM, -signal.SIGKILL, 130, 137, 143])
def test_a_mutmut_stopped_from_outside_ends_the_run_and_keeps_its_stats(
    code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    # the stats in parts start by deleting the saved stats: a Ctrl-C or a kill of mutmut (not a
    # crash of its stats pass) must not lead there, or the next run starts its stats over
    module = _run_core()
    calls: list[list[str]] = []
    parts: list[str] = []

    def run(command: list[str], env: dict[str, str]) -> int:
        calls.append(list(command))
        return code

    assert module.mutation_run(
        max_children=2, budget=10, run=run, collect_stats=lambda: parts.append("stats") or 0,
        survivors=lambda: ["x"],
    ) == 1  # fmt: skip
    assert parts == [] and len(calls) == 1
    assert f"mutmut was stopped (exit {code}): run this again to go on" in capsys.readouterr().err
    # a crash (SIGSEGV, SIGABRT, as the signal or through a shell) still collects them
    for crash in (-signal.SIGSEGV, -signal.SIGABRT, 139, 134):
        codes = [crash, 0]
        assert module.mutation_run(
            max_children=2, budget=0, run=lambda c, e, codes=codes: codes.pop(0),
            collect_stats=lambda: parts.append("stats") or 0, survivors=lambda: [],
        ) == 0  # fmt: skip
    assert parts == ["stats"] * 4


def test_mutants_whose_tests_never_started_run_once_more_by_name_under_the_budget(
    capsys: pytest.CaptureFixture[str],
) -> None:
    module = _run_core()
    calls: list[tuple[list[str], dict[str, str]]] = []
    codes = [0, 0]

    def run(command: list[str], env: dict[str, str]) -> int:
        calls.append((list(command), env))
        return codes.pop(0)

    assert module.mutation_run(
        max_children=2, budget=10, min_rate=90, run=run, collect_stats=lambda: 0,
        survivors=lambda: [], kill_rate=lambda: 95.0,
        not_run=lambda: ["evalwh.a.x_f__mutmut_3", "evalwh.a.x_f__mutmut_4"],
    ) == 0  # fmt: skip
    mutmut = ["mutmut", "run", "--max-children", "2"]
    assert calls == [
        (mutmut, {"EVALWH_MUTATION_BUDGET": "10"}),
        ([*mutmut, "evalwh.a.x_f__mutmut_3", "evalwh.a.x_f__mutmut_4"],
         {"EVALWH_MUTATION_BUDGET": "10"}),
    ]  # fmt: skip
    assert "2 mutants whose tests never started: running them again" in capsys.readouterr().out
    # that second try failing stops the run, saying so
    codes[:] = [0, 1]
    assert module.mutation_run(
        max_children=2, budget=10, run=run, collect_stats=lambda: 0, survivors=lambda: [],
        not_run=lambda: ["evalwh.a.x_f__mutmut_3"],
    ) == 1  # fmt: skip
    assert "the run of the mutants not run did not finish" in capsys.readouterr().err


def test_core_rate_lists_the_mutants_not_run_by_name(tmp_path: Path) -> None:
    module = _script("core_rate")
    meta = tmp_path / "evalwh" / "engine" / "plan.py.meta"
    meta.parent.mkdir(parents=True)
    codes = {"evalwh.engine.plan.x_f__mutmut_1": 255, "evalwh.engine.plan.x_f__mutmut_2": 1,
             "evalwh.engine.plan.x_f__mutmut_3": -1, "evalwh.engine.plan.x_f__mutmut_4": 0}  # fmt: skip
    meta.write_text(json.dumps({"exit_code_by_key": codes}), encoding="utf-8")
    assert module.not_run(tmp_path) == [
        "evalwh.engine.plan.x_f__mutmut_1",
        "evalwh.engine.plan.x_f__mutmut_3",
    ]


def test_the_whole_run_stops_with_1_when_a_step_fails_and_skips_an_empty_recheck(
    capsys: pytest.CaptureFixture[str],
) -> None:
    module = _run_core()
    calls: list[list[str]] = []

    def runner(codes: list[int]) -> Any:
        def run(command: list[str], env: dict[str, str]) -> int:
            calls.append(list(command))
            return codes.pop(0)

        return run

    # no survivors: no second pass (a bare `mutmut run` would mean every mutant)
    assert module.mutation_run(
        max_children=2, budget=10, run=runner([0]), collect_stats=lambda: 0,
        survivors=lambda: [],
    ) == 0  # fmt: skip
    assert len(calls) == 1
    # the stats in parts fail, or mutmut fails again after them: exit 1, saying so
    for codes, stats in (([1], 1), ([1, 1], 0)):
        assert module.mutation_run(
            max_children=2, budget=10, run=runner(codes), collect_stats=lambda s=stats: s,
            survivors=lambda: ["x"],
        ) == 1  # fmt: skip
        assert "the mutation run did not finish" in capsys.readouterr().err
    # budget 0: the first pass already ran every test, no recheck
    calls.clear()
    assert module.mutation_run(
        max_children=2, budget=0, run=runner([0]), collect_stats=lambda: 0,
        survivors=lambda: ["x"],
    ) == 0  # fmt: skip
    assert calls == [["mutmut", "run", "--max-children", "2"]]
    # a recheck that does not finish
    assert module.mutation_run(
        max_children=2, budget=5, run=runner([0, 2]), collect_stats=lambda: 0,
        survivors=lambda: ["x"],
    ) == 1  # fmt: skip
    assert "the run of the survivors did not finish" in capsys.readouterr().err


def test_the_recheck_is_skipped_only_when_the_budgeted_lower_bound_meets_the_target(
    capsys: pytest.CaptureFixture[str],
) -> None:
    module = _run_core()
    calls: list[list[str]] = []

    def run(command: list[str], env: dict[str, str]) -> int:
        calls.append(list(command))
        return 0

    def whole(rate: float, min_rate: float | None) -> int:
        calls.clear()
        return int(
            module.mutation_run(
                max_children=2, budget=10, min_rate=min_rate, run=run,
                collect_stats=lambda: 0, survivors=lambda: ["evalwh.a.x_f__mutmut_1"],
                kill_rate=lambda: rate,
            )
        )  # fmt: skip

    # exactly at the target: a lower bound that meets it needs no recheck
    assert whole(90.0, 90.0) == 0
    assert calls == [["mutmut", "run", "--max-children", "2"]]
    out = capsys.readouterr().out
    assert "90.0% killed within a budget of 10 s" in out and "no recheck" in out
    # just below it: the survivors run again with no budget
    assert whole(89.9, 90.0) == 0
    assert calls[1] == ["mutmut", "run", "--max-children", "2", "evalwh.a.x_f__mutmut_1"]
    # no target (--recheck): always rechecked, whatever the rate
    assert whole(99.0, None) == 0
    assert len(calls) == 2


def test_the_total_rate_leaves_out_equivalents_and_unchecked_mutants(tmp_path: Path) -> None:
    module = _script("core_rate")
    meta = tmp_path / "evalwh" / "engine" / "plan.py.meta"
    meta.parent.mkdir(parents=True)
    # mutmut's exit codes: 1 killed, 0 survived, None not checked
    codes = {"evalwh.engine.plan.x_f__mutmut_1": 1, "evalwh.engine.plan.x_f__mutmut_2": 1,
             "evalwh.engine.plan.x_f__mutmut_3": 1, "evalwh.engine.plan.x_f__mutmut_4": 0,
             "evalwh.engine.plan.x_f__mutmut_5": 0, "evalwh.engine.plan.x_f__mutmut_6": None}  # fmt: skip
    meta.write_text(json.dumps({"exit_code_by_key": codes}), encoding="utf-8")
    assert module.total_rate(tmp_path, set()) == pytest.approx(60.0)
    assert module.total_rate(tmp_path, {"evalwh.engine.plan.x_f__mutmut_5"}) == pytest.approx(75.0)


def test_the_weekly_workflow_runs_the_mutation_command_and_keeps_an_unfinished_runs_results() -> (
    None
):
    """The job runs the documented command under a step time limit shorter than the job's,
    so that its results are saved even when it runs out of time, and a later start of the
    same commit restores them (mutmut goes on where it stopped); another commit starts
    afresh."""
    import yaml

    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "mutation.yml").read_text())
    job = workflow["jobs"]["python"]
    steps = {step.get("name", ""): step for step in job["steps"]}
    run = steps["mutation run on the core"]
    assert run["run"].startswith("uv run python tests/mutation/run_core.py ")
    assert "--min-rate 90" in run["run"]
    assert run["timeout-minutes"] < job["timeout-minutes"]
    restore = steps["results of an unfinished run of this commit"]["with"]
    save_step = steps["keep the results for the next start"]
    assert save_step["if"] == "always()"
    save = save_step["with"]
    assert restore["path"] == save["path"] == "mutants"
    assert save["key"].startswith(restore["restore-keys"])
    assert restore["restore-keys"] == "mutmut-${{ github.sha }}-"
    names = list(steps)
    assert (
        names.index("results of an unfinished run of this commit")
        < names.index("mutation run on the core")
        < names.index("keep the results for the next start")
    )


OLD = """\
def judge(call):
    if call.failed:
        return Result(0.0, error="failed")
    return Result(1.0)
"""
# a new branch above makes the same mutation (0.0 -> 1.0) of another line first
NEW = """\
def judge(call):
    if call.unrenderable:
        return Result(0.0, error="render")
    if call.failed:
        return Result(0.0, error="failed")
    return Result(1.0)
"""


def test_a_row_follows_its_mutation_when_an_edit_renumbers_the_function() -> None:
    renumber = _script("renumber")
    before, after = renumber.signatures("m", OLD), renumber.signatures("m", NEW)
    (failed,) = [n for n, s in before.items() if "failed" in s[1] and s[2:4] == ("0.0", "1.0")]
    (moved,) = [n for n, s in after.items() if "failed" in s[1] and s[2:4] == ("0.0", "1.0")]
    assert failed != moved  # the edit renumbered it
    assert renumber.renames("m", OLD, NEW, [failed, "m.x_judge__mutmut_99"]) == {
        failed: moved,
        "m.x_judge__mutmut_99": None,  # not a mutant of OLD
    }
    # a line edited away: its mutations are gone
    assert renumber.renames("m", OLD, OLD.replace("1.0)", "2.0)"), ["m.x_judge__mutmut_1"]) == {
        "m.x_judge__mutmut_1": "m.x_judge__mutmut_1"
    }
    gone = [n for n, s in before.items() if s[1] == "return Result(1.0)"]
    assert set(renumber.renames("m", OLD, OLD.replace("1.0)", "2.0)"), gone).values()) == {None}


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_renumber_rewrites_the_rows_it_is_given_and_only_with_check_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    renumber = _script("renumber")
    checkout = tmp_path / "checkout"
    (checkout / "evalwh").mkdir(parents=True)
    (checkout / "evalwh" / "m.py").write_text(OLD, encoding="utf-8")
    for command in (["init", "-q"], ["add", "."], ["commit", "-qm", "old"]):
        git(checkout, *command)
    (checkout / "evalwh" / "m.py").write_text(NEW, encoding="utf-8")
    monkeypatch.setattr(renumber, "ROOT", checkout)
    before, after = renumber.signatures("m", OLD), renumber.signatures("m", NEW)
    (failed,) = [n for n, s in before.items() if "failed" in s[1] and s[2:4] == ("0.0", "1.0")]
    (moved,) = [n for n, s in after.items() if "failed" in s[1] and s[2:4] == ("0.0", "1.0")]
    old, new = (f"evalwh.{name}" for name in (failed, moved))  # module evalwh.m
    table = tmp_path / "equivalent_core.md"
    row = f"| `{old}` | a mutation | a reason |\n"
    table.write_text("# t\n\n" + row, encoding="utf-8")
    argv = ["HEAD", old, "--table", str(table)]
    assert renumber.main([*argv, "--check"]) == 1
    assert table.read_text(encoding="utf-8").endswith(row)  # --check writes nothing
    assert renumber.main(argv) == 0
    assert table.read_text(encoding="utf-8").endswith(row.replace(old, new))
    assert renumber.main(["no-such-commit", new, "--table", str(table)]) == 2
