"""The python scorer's worker process (evalwh/scoring/pyworker.py), from both sides.

Its own loop, in this process: ``_serve`` is fed its frames from memory, so every reply is
checked exactly (and mutmut, docs/testing.md, whose mutants exist only in this process, sees
them); ``main`` keeps the protocol on the original stdout and a scorer's prints off it.

From evalwh's side (``ScorerWorker``, a real worker process): what a scorer that raises, hangs,
exits, is killed or closes its pipe turns into, the load errors' wording and place, and an
interpreter that ends with a worker still alive. tests/scoring/test_python.py drives the same
code through the python scorer.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalwh.config.model import Case, Criterion
from evalwh.errors import ConfigError
from evalwh.scoring import pyworker
from evalwh.scoring.base import ScoreResult
from evalwh.scoring.pyworker import ScorerWorker, _receive, _send, _serve, main
from tests.conftest import ROOT, write

FILE = "eval.yaml"


NAMED = "criterion 'py' (python): "  # how a criterion's option errors begin


SCORERS = """\
import sys

from evalwh.scoring.base import ScoreResult


def is_yes(output, case):
    return output.strip().lower() == "yes"


def counts(output, case, *, word, minimum=1):
    return output.count(word) >= minimum


def boom(output, case):
    raise ValueError("boom on " + case.id)


def silent(output, case):
    raise KeyError()


def leaves(output, case):
    sys.exit(3)


def unsendable(output, case):
    class Local(float):  # a float a pipe cannot carry: pickle cannot find a local class
        pass

    return ScoreResult(Local(0.5))


NOT_CALLABLE = 3


def noisy(output, case):
    import os

    print("printed by the scorer")  # Python-level stdout
    os.write(1, b"written to fd 1\\n")  # what a C library or a child process would do
    return os.read(0, 16) == b""  # stdin is /dev/null: the protocol is not readable
"""


@pytest.fixture
def scorers(tmp_path: Path) -> Iterator[str]:
    """A module of scorers importable as ``<name>:function`` from ``tmp_path``."""
    name = f"workerfns_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(SCORERS)
    yield name
    sys.modules.pop(name, None)


def criterion(function: str, **options: Any) -> Criterion:
    return Criterion(
        name="py", type="python", options={"function": function, **options}, where="scorecard[2]"
    )


def serve(frames: list[Any], *, cut: int = 0) -> list[Any]:
    """The replies of ``_serve`` to ``frames`` (the last ``cut`` bytes left off the input)."""
    buffer = io.BytesIO()
    for frame in frames:
        _send(buffer, frame)
    data = buffer.getvalue()
    replies = io.BytesIO()
    _serve(io.BytesIO(data[: len(data) - cut]), replies)
    replies.seek(0)
    out = []
    while True:
        try:
            out.append(_receive(replies))
        except EOFError:
            return out


def load(crit: Criterion, root: Path) -> tuple[str, Criterion, str, str]:
    return ("load", crit, str(root), FILE)


def test_a_loaded_function_answers_each_call_in_order(tmp_path: Path, scorers: str) -> None:
    replies = serve(
        [
            load(criterion(f"{scorers}:is_yes"), tmp_path),
            ("call", " Yes ", Case(id="a"), None),
            ("call", "no", Case(id="b"), None),
        ]
    )
    assert replies == [
        ("loaded", f"{scorers}:is_yes", False),
        ("result", ScoreResult(1.0, passed=True)),
        ("result", ScoreResult(0.0, passed=False)),
    ]


def test_options_are_passed_as_keyword_arguments(tmp_path: Path, scorers: str) -> None:
    crit = criterion(f"{scorers}:counts", options={"word": "ab", "minimum": 2})
    replies = serve(
        [
            load(crit, tmp_path),
            ("call", "ab ab", Case(id="a"), None),
            ("call", "ab", Case(id="b"), None),
        ]
    )
    assert [r[1].score for r in replies[1:]] == [1.0, 0.0]


LEAVES = "python scorer {scorers}:leaves: called sys.exit(3) instead of returning"


@pytest.mark.parametrize(
    ("function", "raised"),
    [
        pytest.param("boom", ["ValueError: boom on a", "ValueError: boom on b"], id="raises"),
        # sys.exit in a scorer is a scorer error, not a dead worker
        pytest.param("leaves", [LEAVES, LEAVES], id="sys-exit"),
    ],
)
def test_a_function_that_raises_or_exits_is_a_reply_and_the_worker_keeps_serving(
    tmp_path: Path, scorers: str, function: str, raised: list[str]
) -> None:
    replies = serve(
        [
            load(criterion(f"{scorers}:{function}"), tmp_path),
            ("call", "x", Case(id="a"), None),
            ("call", "x", Case(id="b"), None),
        ]
    )
    assert replies[1:] == [("raised", r.format(scorers=scorers)) for r in raised]


def test_an_exception_without_a_message_is_named_by_its_type(tmp_path: Path, scorers: str) -> None:
    replies = serve(
        [load(criterion(f"{scorers}:silent"), tmp_path), ("call", "x", Case(id="a"), None)]
    )
    assert replies[1] == ("raised", "KeyError")


def test_a_result_the_pipe_cannot_carry_is_reported_and_serving_goes_on(
    tmp_path: Path, scorers: str
) -> None:
    replies = serve(
        [
            load(criterion(f"{scorers}:unsendable"), tmp_path),
            ("call", "x", Case(id="a"), None),
            ("call", "x", Case(id="b"), None),
        ]
    )
    assert [r[0] for r in replies] == ["loaded", "raised", "raised"]
    assert replies[1][1].startswith("its result could not be sent back: ")
    assert "Local" in replies[1][1]


def test_a_load_config_error_keeps_its_place_and_fix(tmp_path: Path, scorers: str) -> None:
    replies = serve([load(criterion(f"{scorers}:nope"), tmp_path)])
    assert len(replies) == 1
    kind, message, fields = replies[0]
    assert (kind, message) == ("config_error", f"{NAMED}'{scorers}' has no attribute 'nope'")
    assert fields == {
        "file": FILE,
        "where": "scorecard[2].function",
        "line": None,
        "column": None,
        "fix": "define `def nope(output, case): ...` in " + scorers + ", or fix the name",
    }
    # the parent rebuilds the same error from it
    rebuilt = ConfigError(message, **fields)
    assert rebuilt.where == "scorecard[2].function" and rebuilt.file == FILE


def test_a_load_that_raises_beyond_exception_is_failed(tmp_path: Path) -> None:
    (tmp_path / "quits.py").write_text(
        "raise SystemExit(4)\n\ndef fn(output, case):\n    return 1\n"
    )
    replies = serve([load(criterion("quits.py:fn"), tmp_path)])
    assert replies == [("failed", "SystemExit: 4")]
    assert not [m for m in sys.modules if m.startswith("_evalwh_scorer_quits")]


def test_a_failed_load_leaves_the_worker_serving_the_next_load(
    tmp_path: Path, scorers: str
) -> None:
    replies = serve(
        [
            load(criterion(f"{scorers}:NOT_CALLABLE"), tmp_path),
            load(criterion(f"{scorers}:is_yes"), tmp_path),
            ("call", "yes", Case(id="a"), None),
        ]
    )
    assert replies[0][:2] == (
        "config_error",
        f"{NAMED}'{scorers}:NOT_CALLABLE' is a int, not a function",
    )
    assert replies[1:] == [
        ("loaded", f"{scorers}:is_yes", False),
        ("result", ScoreResult(1.0, passed=True)),
    ]


@pytest.mark.parametrize("cut", [1, 5, 12])
def test_a_frame_cut_short_ends_the_worker_quietly(tmp_path: Path, scorers: str, cut: int) -> None:
    """A parent that dies mid-frame (a cut header or body) leaves the worker nothing to do."""
    replies = serve(
        [load(criterion(f"{scorers}:is_yes"), tmp_path), ("call", "yes", Case(id="a"), None)],
        cut=cut,
    )
    assert replies == [("loaded", f"{scorers}:is_yes", False)]


def test_main_keeps_the_protocol_on_the_original_stdout_and_prints_off_it(
    tmp_path: Path, scorers: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The worker's entry point, in this process with its descriptors swapped for files: the
    frames arrive on fd 0 and the replies leave on fd 1, while a scorer's print() and a raw
    write to fd 1 both land on stderr (fd 2), and the scorer reads an empty stdin. A print
    that reached the reply stream would corrupt the next frame."""
    requests, replies, stderr = (tmp_path / n for n in ("requests", "replies", "stderr"))
    with requests.open("wb") as out:
        _send(out, load(criterion(f"{scorers}:noisy"), tmp_path))
        _send(out, ("call", "x", Case(id="a"), None))
    saved = {fd: os.dup(fd) for fd in (0, 1, 2)}
    python_stdout = sys.stdout
    try:
        with requests.open("rb") as r, replies.open("wb") as w, stderr.open("wb") as e:
            for fd, file in ((0, r), (1, w), (2, e)):
                os.dup2(file.fileno(), fd)
            main()
            assert sys.stdout is sys.stderr  # print() goes where stderr goes
    finally:
        for fd, copy in saved.items():
            os.dup2(copy, fd)
            os.close(copy)
        sys.stdout = python_stdout
    with replies.open("rb") as got:
        assert _receive(got) == ("loaded", f"{scorers}:noisy", False)
        assert _receive(got) == ("result", ScoreResult(1.0, passed=True))
        assert got.read() == b""  # nothing else on the protocol stream
    assert stderr.read_bytes() == b"written to fd 1\n"
    assert capsys.readouterr().err == "printed by the scorer\n"


REPO = ROOT


FIX = "run the scorer file with python to see the error, and fix it"


def attack_criterion(function: str = "attack.py:fn") -> Criterion:
    return Criterion(name="c", type="python", options={"function": function}, where="sc[0]")


def worker(tmp_path: Path, source: str, *, timeout_s: float = 30.0) -> ScorerWorker:
    (tmp_path / "attack.py").write_text(textwrap.dedent(source), encoding="utf-8")
    return ScorerWorker(attack_criterion(), tmp_path, "eval.yaml", timeout_s=timeout_s)


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


def exit_with_a_live_worker(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """A Python process that starts a worker on ``tmp_path/attack.py:fn``, calls it once,
    prints the score and exits without closing it (the exit hook stops it)."""
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
    return subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        capture_output=True, text=True, timeout=60, env=env, cwd=REPO, check=False,
    )  # fmt: skip


def test_evalwh_exits_with_a_worker_still_alive(tmp_path: Path) -> None:
    # the reader thread of a worker nobody closed must not hold the interpreter at exit: it
    # blocks on the worker's replies for as long as the worker lives, and the worker is only
    # stopped by the exit hook that runs after the interpreter waited for its threads
    (tmp_path / "attack.py").write_text("def fn(output, case):\n    return 1\n")
    done = exit_with_a_live_worker(tmp_path)
    assert (done.returncode, done.stdout) == (0, "1.0\n"), done.stderr


def test_a_call_before_any_load_is_a_raised_reply_naming_no_function(tmp_path: Path) -> None:
    assert serve([("call", "x", Case(id="a"), None)]) == [
        ("raised", "TypeError: 'NoneType' object is not callable")
    ]


def test_a_load_that_exits_leaves_the_worker_serving_the_next_load(tmp_path: Path) -> None:
    write(tmp_path / "quits.py", "raise SystemExit(4)\n")
    write(tmp_path / "fine.py", "def fn(output, case):\n    return output == 'yes'\n")
    replies = serve(
        [
            ("load", criterion("quits.py:fn"), str(tmp_path), FILE),
            ("load", criterion("fine.py:fn"), str(tmp_path), FILE),
            ("call", "yes", Case(id="a"), None),
        ]
    )
    assert replies == [
        ("failed", "SystemExit: 4"),
        ("loaded", "fine.py:fn", False),
        ("result", ScoreResult(1.0, passed=True)),
    ]


# ---- the worker's process group dies with it (issue 46) ----

FORKS_FOREVER = """
import os, time

PIDS = {pids!r}

def fn(output, case):
    read, write = os.pipe()
    if os.fork() == 0:  # a child, which forks a grandchild; both sleep forever
        grandchild = os.fork()
        if grandchild == 0:
            while True:
                time.sleep(3600)
        os.write(write, f"{{os.getpid()}} {{grandchild}}\\n".encode())
        while True:
            time.sleep(3600)
    line = b""
    while not line.endswith(b"\\n"):
        line += os.read(read, 64)
    with open(PIDS, "w") as out:
        out.write(line.decode())
    {then}
"""


def forks_forever(tmp_path: Path, then: str = "return 1") -> str:
    return FORKS_FOREVER.format(pids=str(tmp_path / "pids"), then=then)


def alive(pid: int) -> bool:
    """Running, not a zombie (a killed orphan waits for PID 1 to reap it)."""
    try:
        os.kill(pid, 0)
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (ProcessLookupError, FileNotFoundError):
        return False
    return fields[0] != "Z"


def left_alive(pids_file: Path) -> list[int]:
    """The scorer's child and grandchild still running once SIGKILL had time to land (a
    bounded wait: the test fails, never hangs)."""
    pids = [int(p) for p in pids_file.read_text().split()]
    assert len(pids) == 2
    for _ in range(600):
        if not any(alive(pid) for pid in pids):
            return []
        time.sleep(0.05)
    for pid in pids:  # leave nothing behind, then fail
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return [pid for pid in pids if alive(pid)] or pids


@pytest.mark.skipif(os.name != "posix", reason="process groups are POSIX")
def test_python_scorer_forking_a_grandchild_leaves_no_process_after_close(
    tmp_path: Path,
) -> None:
    fn = worker(tmp_path, forks_forever(tmp_path))
    try:
        assert fn("x", Case(id="a")).score == 1.0
    finally:
        fn.close()
    assert left_alive(tmp_path / "pids") == []


@pytest.mark.skipif(os.name != "posix", reason="process groups are POSIX")
def test_python_scorer_forking_a_grandchild_then_hanging_leaves_no_process_after_its_timeout(
    tmp_path: Path,
) -> None:
    fn = worker(tmp_path, forks_forever(tmp_path, then="time.sleep(3600)"), timeout_s=5)
    try:
        result = fn("x", Case(id="a"))
    finally:
        fn.close()
    assert result.error is not None and "timed out" in result.error
    assert left_alive(tmp_path / "pids") == []


@pytest.mark.skipif(os.name != "posix", reason="process groups are POSIX")
def test_python_scorer_forking_a_grandchild_leaves_no_process_after_evalwh_exits(
    tmp_path: Path,
) -> None:
    (tmp_path / "attack.py").write_text(forks_forever(tmp_path))
    try:  # survivors would hold its stderr open: the run then times out, and they are killed
        done = exit_with_a_live_worker(tmp_path)
    finally:
        survivors = left_alive(tmp_path / "pids")
    assert (done.returncode, done.stdout) == (0, "1.0\n"), done.stderr
    assert survivors == []


ENV_READER = """\
import os
import sys


def fn(output, case):
    names = ("AWS_SECRET_ACCESS_KEY", "CORP_CRED", "OPENAI_API_KEY", "PATH", "HOME")
    seen = {name: os.environ.get(name) for name in names}
    return {"score": 1.0, "details": {"seen": seen, "path": sys.path}}
"""


def test_a_python_scorer_reading_an_unpassed_secret_finds_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the attack: a scorer (or a package it imports) reads evalwh's environment, where the
    # API keys live; only what the criterion names in pass_env reaches it
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-value-0001")
    monkeypatch.setenv("CORP_CRED", "corp-cred-value-0001")  # a name that does not look secret
    monkeypatch.setenv("OPENAI_API_KEY", "openai-key-value-0001")
    write(tmp_path / "attack.py", ENV_READER)
    plain = ScorerWorker(attack_criterion(), tmp_path, FILE, timeout_s=30)
    passed = ScorerWorker(attack_criterion(), tmp_path, FILE, timeout_s=30, pass_env=("CORP_CRED",))
    try:
        unpassed = plain("x", Case(id="a")).details["seen"]
        named = passed("x", Case(id="a")).details["seen"]
    finally:
        plain.close()
        passed.close()
    expected = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME")}
    assert unpassed == {
        "AWS_SECRET_ACCESS_KEY": None, "CORP_CRED": None, "OPENAI_API_KEY": None, **expected
    }  # fmt: skip
    assert named == {
        "AWS_SECRET_ACCESS_KEY": None,
        "CORP_CRED": "corp-cred-value-0001",
        "OPENAI_API_KEY": None,
        **expected,
    }


def test_the_worker_keeps_what_python_needs_and_makes_no_path_a_secret(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from evalwh.config.secrets import redact

    monkeypatch.setenv("PYTHONPATH", "/opt/src/evalwh-checkout")
    monkeypatch.setenv("VIRTUAL_ENV", "/opt/venvs/evalwh")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    monkeypatch.setenv("EDITOR", "vi")  # in no base, named by no pass_env
    env = pyworker.worker_environment()
    assert env["PYTHONPATH"] == "/opt/src/evalwh-checkout"
    assert env["VIRTUAL_ENV"] == "/opt/venvs/evalwh"
    assert env["LC_ALL"] == "C.UTF-8"
    assert "EDITOR" not in env
    # a folder is no secret: text naming it is stored as written
    assert redact("see /opt/venvs/evalwh") == "see /opt/venvs/evalwh"


# --- memory: a function past its worker's memory_mb ---------------------------------------------


def test_a_memory_error_is_an_out_of_memory_reply_and_the_worker_ends(tmp_path: Path) -> None:
    # the worker's heap may be half-built after a MemoryError: it answers and ends, so the
    # parent starts a fresh one (the frames after it are never answered). A scorer's call
    # goes the same way: test_python_scorer_allocating_past_memory_mb_...
    (tmp_path / "hungry.py").write_text("def fn(**arguments):\n    raise MemoryError\n")
    call = ("tool", {"q": 1})
    replies = serve([load(criterion("hungry.py:fn"), tmp_path), call, call])
    assert [r[0] for r in replies] == ["loaded", "out_of_memory"]
    assert replies[1] == ("out_of_memory",)


@pytest.mark.parametrize("function", ["heavy.py:fn", "heavy:fn"])
def test_a_memory_error_while_importing_is_an_out_of_memory_reply(
    tmp_path: Path, function: str
) -> None:
    (tmp_path / "heavy.py").write_text("raise MemoryError\n")
    try:
        assert serve([load(criterion(function), tmp_path)]) == [("out_of_memory",)]
    finally:
        sys.modules.pop("heavy", None)


HUNGRY = """\
def fn(output, case):
    if output == "8 GiB":
        bytearray(8 << 30)
    return 1.0
"""


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_DATA is enforced on Linux")
def test_python_scorer_allocating_past_memory_mb_is_stopped_and_the_next_call_answers(
    tmp_path: Path,
) -> None:
    # attack: a scorer (fed an untrusted model output) allocates far more than its bound
    (tmp_path / "attack.py").write_text(HUNGRY, encoding="utf-8")
    fn = ScorerWorker(attack_criterion(), tmp_path, "eval.yaml", timeout_s=60, memory_mb=200)
    try:
        first = fn._proc
        result = fn("8 GiB", Case(id="a"))
        assert (result.score, result.passed, result.error) == (
            0.0,
            False,
            "python scorer attack.py:fn: ran out of memory (memory_mb: 200) and was stopped"
            " (raise `memory_mb` on the criterion if it needs more)",
        )
        assert fn._proc is None and first is not None and first.poll() is not None
        assert fn("fine", Case(id="b")).score == 1.0  # a fresh worker answers
    finally:
        fn.close()


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_DATA is enforced on Linux")
def test_an_import_past_memory_mb_is_a_config_error_naming_the_option(tmp_path: Path) -> None:
    (tmp_path / "attack.py").write_text("HOARD = bytearray(8 << 30)\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        ScorerWorker(attack_criterion(), tmp_path, "eval.yaml", timeout_s=60, memory_mb=200)
    assert info.value.message == (
        "the python scorer 'attack.py:fn' could not start: importing it ran out of memory"
        " (memory_mb: 200)"
    )
    assert info.value.fix == "raise `memory_mb` (now 200) on the criterion, or import less"


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_DATA is enforced on Linux")
def test_numpy_and_pandas_code_runs_under_the_default_bound(tmp_path: Path) -> None:
    pytest.importorskip("numpy")
    pytest.importorskip("pandas")
    source = (
        "import numpy, pandas\n"
        "def fn(output, case):\n"
        "    a = numpy.ones((2000, 2000))\n"
        "    frame = pandas.DataFrame({'x': range(10**6)})\n"
        "    return float((a @ a)[0, 0] == 2000 and len(frame) == 10**6)\n"
    )
    fn = worker(tmp_path, source)
    try:
        assert fn.memory_mb == 2048
        assert fn("x", Case(id="a")).score == 1.0
    finally:
        fn.close()
