"""`tests.conftest.run_cli` runs the command in the test process by default
(tests/inprocess.py): what a test sees must be what a fresh `evalwh` process would give."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import tempfile
from pathlib import Path

import pytest

from tests.builders import DATASOURCE_HEAD
from tests.conftest import run_cli, write

ROWS = """
class Rows:
    def __init__(self, params, root):
        pass

    def pages(self, cursor):
        return [{{"id": f"c{{i}}", "q": "x", "expected": "x"}} for i in range({n})], None
"""


def test_the_command_runs_in_this_process_and_process_true_starts_a_real_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A change made in this process shows in the command's output (so mutmut's mutants and
    coverage see the code it runs); ``process=True`` runs the unchanged installed command."""
    import evalwh.cli.main as cli_main

    monkeypatch.setattr(cli_main, "__version__", "0.0.0-in-this-process")
    here = run_cli("--version")
    assert (here.returncode, here.stdout, here.stderr) == (0, "evalwh 0.0.0-in-this-process\n", "")
    real = run_cli("--version", process=True)
    assert real.returncode == 0 and real.stdout.startswith("evalwh ")
    assert "in-this-process" not in real.stdout


def test_exit_codes_and_the_two_streams_come_back_apart(tmp_path: Path) -> None:
    refused = run_cli("show", "no-such-run", "--json", cwd=tmp_path)
    assert refused.returncode == 2
    assert json.loads(refused.stdout)["error"] == "UsageError"
    assert refused.stderr.startswith("error: no warehouse at ")
    usage = run_cli("show", "--no-such-flag")
    assert usage.returncode == 2 and usage.stdout == "" and "No such option" in usage.stderr


def test_an_uncaught_exception_prints_its_traceback_and_exits_1(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import evalwh.cli.main as cli_main

    def broken(**kwargs: object) -> None:
        raise RuntimeError("a bug in a command")

    monkeypatch.setattr(cli_main, "app", broken)
    done = run_cli("list")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("Traceback (most recent call last):")
    assert done.stderr.rstrip().endswith("RuntimeError: a bug in a command")


def _process_state() -> tuple[object, ...]:
    """What a command may change in this process and must put back."""
    from evalwh.cli import state

    root = logging.getLogger()
    return (
        os.getcwd(),
        dict(os.environ),
        list(sys.argv),
        list(sys.path),
        state.STATE.json,
        state.STATE.verbose,
        (root.level, list(root.handlers)),
        (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)),
        tempfile.gettempdir(),
    )


def test_the_process_state_a_command_changes_is_put_back(tmp_path: Path) -> None:
    """Working folder, environment, argv, sys.path, global options, logging, signal
    handlers, tempfile's folder: as they were, whatever the command set."""
    before = _process_state()
    cache = tmp_path / "cache"
    done = run_cli(
        "--json", "-vv", "--cache-dir", str(cache), "cache", "info", cwd=tmp_path,
        env={"EVALWH_PROBE": "1", "TMPDIR": str(tmp_path)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["warehouse"].startswith(str(cache))
    assert _process_state() == before


def test_the_environment_is_the_commands_own(tmp_path: Path) -> None:
    """What a test passes in ``env`` is what the command reads (NO_COLOR, COLUMNS), and the
    console built for it is not the next command's."""
    write(tmp_path / "eval.yaml", DATASOURCE_HEAD + "cases: [{id: a, vars: {q: x}}]\n")
    wide = run_cli("validate", cwd=tmp_path, env={"COLUMNS": "200"})
    narrow = run_cli("validate", cwd=tmp_path, env={"COLUMNS": "40"})
    assert wide.returncode == narrow.returncode == 0, wide.stderr
    assert max(map(len, narrow.stdout.splitlines())) <= 40
    assert max(map(len, wide.stdout.splitlines())) > 40


def test_modules_load_as_in_a_new_process_and_are_forgotten_after(tmp_path: Path) -> None:
    """`python -m` puts the working folder and then PYTHONPATH on sys.path. A module the
    command imports from them is a fresh import each time: two folders with a `mysrc.py`
    of their own each give their own rows, never the first one's."""
    config = DATASOURCE_HEAD + 'cases: [{source: "mysrc:Rows"}]\n'
    for folder, n in (("a", 2), ("b", 3)):
        write(tmp_path / folder / "mysrc.py", ROWS.format(n=n))
        write(tmp_path / folder / "eval.yaml", config)
    from_cwd = run_cli("--json", "-o", "out", "run", "eval.yaml", "-q", cwd=tmp_path / "a")
    assert from_cwd.returncode == 0, from_cwd.stderr
    assert json.loads(from_cwd.stdout)["totals"]["n"] == 2
    assert "mysrc" not in sys.modules
    from_path = run_cli(
        "--json", "-o", "out", "run", str(tmp_path / "b" / "eval.yaml"), "-q",
        cwd=tmp_path, env={"PYTHONPATH": str(tmp_path / "b")},
    )  # fmt: skip
    assert from_path.returncode == 0, from_path.stderr
    assert json.loads(from_path.stdout)["totals"]["n"] == 3
    assert "mysrc" not in sys.modules and str(tmp_path / "b") not in sys.path


def test_a_python_scorers_worker_ends_with_the_command(tmp_path: Path) -> None:
    """A process's exit stops its python scorer workers (atexit); so does the end of a
    command run here."""
    from evalwh.scoring import pyworker

    write(tmp_path / "scorers.py", "def check(output, case):\n    return True\n")
    write(
        tmp_path / "eval.yaml",
        DATASOURCE_HEAD.replace("[{name: exact, type: exact}]", "")
        + "  - {name: fn, type: python, function: scorers.py:check}\n"
        + "cases: [{id: a, vars: {q: x}, expected: x}]\n",
    )
    done = run_cli("run", "eval.yaml", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not [w for w in pyworker._LIVE if w._proc is not None and w._proc.poll() is None]


def test_a_command_run_while_an_event_loop_runs_here_has_none_of_its_own(
    tmp_path: Path,
) -> None:
    """A new process has no running event loop; a test may have one (Playwright's sync API
    runs one in the main thread). The run's own loop starts, and the test's is put back."""
    import asyncio

    write(tmp_path / "eval.yaml", DATASOURCE_HEAD + "cases: [{id: a, vars: {q: x}}]\n")

    async def inside() -> tuple[int, str, bool]:
        loop = asyncio.get_running_loop()
        done = run_cli("run", "eval.yaml", "-q", cwd=tmp_path)
        return done.returncode, done.stderr, asyncio.get_running_loop() is loop

    code, stderr, same_loop = asyncio.run(inside())
    assert code == 0, stderr
    assert same_loop
