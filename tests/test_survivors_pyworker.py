"""The python scorer's worker process seen from evalwh's side (evalwh/scoring/pyworker.py):
what a scorer that raises, hangs, exits, is killed or closes its pipe turns into, the load
errors' wording and place, and an interpreter that ends with a worker still alive.

Written from mutants that survived the mutation run (docs/testing.md): each test names what it
pins. tests/test_pyworker.py covers the worker's own loop in this process; these start it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evalwh.config.model import Case, Criterion
from evalwh.errors import ConfigError
from evalwh.scoring import pyworker
from evalwh.scoring.pyworker import ScorerWorker

REPO = Path(__file__).resolve().parents[1]
FIX = "run the scorer file with python to see the error, and fix it"


def criterion(function: str = "attack.py:fn") -> Criterion:
    return Criterion(name="c", type="python", options={"function": function}, where="sc[0]")


def worker(tmp_path: Path, source: str, *, timeout_s: float = 30.0) -> ScorerWorker:
    (tmp_path / "attack.py").write_text(textwrap.dedent(source), encoding="utf-8")
    return ScorerWorker(criterion(), tmp_path, "eval.yaml", timeout_s=timeout_s)


def test_a_raising_scorer_is_a_zero_score_with_its_error(tmp_path: Path) -> None:
    fn = worker(tmp_path, "def fn(output, case):\n    raise ValueError('bad ' + output)\n")
    try:
        result = fn("x", Case(id="a"))
    finally:
        fn.close()
    assert (result.score, result.passed, result.error) == (0.0, False, "ValueError: bad x")


def test_a_timeout_names_the_option_that_gives_more_time(tmp_path: Path) -> None:
    fn = worker(tmp_path, "import time\ndef fn(output, case):\n    time.sleep(60)\n", timeout_s=0.3)
    try:
        result = fn("x", Case(id="a"))
    finally:
        fn.close()
    assert result.error == (
        "python scorer attack.py:fn: timed out after 0.3 s and was stopped (raise `timeout_s` on"
        " the criterion if it needs longer)"
    )


def test_a_worker_killed_between_calls_is_reported_with_its_code_and_then_replaced(
    tmp_path: Path,
) -> None:
    # attack: something else kills the worker (the OOM killer, a user's kill). The next call's
    # request meets a broken pipe: that call is a scorer error naming the signal, and the call
    # after it starts a fresh worker instead of writing to the dead one again.
    fn = worker(tmp_path, "def fn(output, case):\n    return len(output) / 10\n")
    try:
        proc = fn._proc
        assert proc is not None
        proc.kill()
        proc.wait()
        result = fn("abc", Case(id="a"))
        assert (result.score, result.passed) == (0.0, False)
        assert result.error == (
            "python scorer attack.py:fn: exited with code -9 instead of returning"
            " (sys.exit or os._exit in the scorer?)"
        )
        assert fn._proc is None  # closed: nothing is written to the dead process again
        assert fn("abcd", Case(id="b")).score == 0.4
        assert fn._proc is not None and fn._proc.pid != proc.pid
    finally:
        fn.close()


def test_a_scorer_that_closes_the_reply_pipe_and_lingers_is_stopped_without_a_code(
    tmp_path: Path,
) -> None:
    # attack: the scorer closes every descriptor but the standard three (the worker's reply pipe
    # among them) and keeps running. evalwh sees the pipe end, gives the process 5 s to exit,
    # then kills it: the error has no exit code to name. (Waiting with no bound would hold the
    # run for the whole sleep, and then name the code of the worker's own failure.)
    fn = worker(
        tmp_path,
        """
        import os, time
        def fn(output, case):
            os.closerange(3, 1024)
            time.sleep(12)
        """,
    )
    try:
        result = fn("x", Case(id="a"))
    finally:
        fn.close()
    assert result.error == (
        "python scorer attack.py:fn: exited instead of returning (sys.exit or os._exit in the"
        " scorer?)"
    )


def test_a_worker_that_exits_while_importing_is_a_config_error_naming_the_function(
    tmp_path: Path,
) -> None:
    # before the load reply, the scorer is known by its `function` option only
    with pytest.raises(ConfigError) as info:
        worker(tmp_path, "import os\nos._exit(5)\n")
    error = info.value
    assert error.message == (
        "the python scorer 'attack.py:fn' could not start: the worker exited while importing it"
        " (code 5)"
    )
    assert (error.file, error.where, error.fix) == ("eval.yaml", "sc[0].function", FIX)


def test_an_import_slower_than_the_load_timeout_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pyworker, "LOAD_TIMEOUT_S", 0.5)
    with pytest.raises(ConfigError) as info:
        worker(tmp_path, "import time\ntime.sleep(30)\n")
    assert info.value.message == (
        "the python scorer 'attack.py:fn' could not start: importing it took longer than 0.5 s"
    )
    assert (info.value.where, info.value.fix) == ("sc[0].function", FIX)


def test_evalwh_exits_with_a_worker_still_alive(tmp_path: Path) -> None:
    # the reader thread of a worker nobody closed must not hold the interpreter at exit: it
    # blocks on the worker's replies for as long as the worker lives, and the worker is only
    # stopped by the exit hook that runs after the interpreter waited for its threads
    (tmp_path / "attack.py").write_text("def fn(output, case):\n    return 1\n")
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from evalwh.config.model import Case, Criterion\n"
        "from evalwh.scoring.pyworker import ScorerWorker\n"
        "crit = Criterion(name='c', type='python', options={'function': 'attack.py:fn'},"
        " where='sc[0]')\n"
        "fn = ScorerWorker(crit, Path(sys.argv[1]), 'eval.yaml', timeout_s=5)\n"
        "print(fn('x', Case(id='a')).score, flush=True)\n"
        "KEEP = fn\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    # cwd: in mutmut's stats pass the child records its calls too, which reads mutmut's
    # config from the working folder (the tests run in a temporary one)
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        capture_output=True, text=True, timeout=60, env=env, cwd=REPO, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "1.0\n"), done.stderr
