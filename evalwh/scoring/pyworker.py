"""A ``python`` scorer's function runs in a worker process that evalwh can kill.

A scorer that hangs, calls ``sys.exit(3)`` or ``os._exit`` in evalwh's own process would hang
or end the whole run. Each python criterion therefore gets one long-lived worker
(``python -m evalwh.scoring.pyworker``) that imports the function once and then answers one
call at a time over a pipe, so the common case costs a pipe round trip, not a process:

    worker = ScorerWorker(criterion, root, file, timeout_s=30)   # ConfigError if it won't load
    worker(output, case)        # -> ScoreResult; a timeout or an exit is an error result
    worker(output, case, transcript)   # a function with a ``transcript`` parameter gets it

A python *tool* (evalwh.engine.tools) runs in the same kind of worker:
``worker.call_tool(arguments)`` calls ``fn(**arguments)``.

A call that runs past ``timeout_s`` kills the worker and becomes a scorer error on that case;
an exiting function too. The worker's memory is bounded by ``memory_mb`` (default 2048,
:mod:`evalwh.config.childmemory`): a function that allocates past it gets a ``MemoryError``,
which is that call's error ("ran out of memory (memory_mb: 256)"), and the worker is stopped
(its heap may be left half-built). The next call starts a fresh worker. The worker leads its own
process group (``start_new_session``), and stopping it — at a timeout, an exit, ``close`` or
evalwh's exit — kills the whole group, so what a scorer forked (children, grandchildren)
does not outlive it. (A process that leaves the group on purpose, ``setsid``, escapes.)
Frames are pickles with a 4-byte length, parent and worker being the same Python and the same
evalwh. The worker's stdout is moved to stderr, so a ``print`` in a scorer cannot corrupt
evalwh's ``--json``.

The worker's environment is not evalwh's: it is the minimal base every child of evalwh gets
(:func:`evalwh.config.secrets.check_environment`: ``PATH``, ``HOME``, ``LANG``, ``LC_*``,
``TMPDIR`` ...), what Python reads to start the same interpreter with the same evalwh
(:data:`PYTHON_NAMES`), and the variables the criterion names in ``pass_env`` (their values
become known secrets, redacted wherever evalwh stores text).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import queue
import signal
import struct
import subprocess
import sys
import threading
import weakref
from pathlib import Path
from typing import IO, Any

from evalwh.config.childmemory import DEFAULT_MEMORY_MB, limited, out_of_memory
from evalwh.config.model import Case, Criterion
from evalwh.config.secrets import check_environment
from evalwh.errors import ConfigError
from evalwh.scoring.base import ScoreResult

DEFAULT_TIMEOUT_S = 30.0
LOAD_TIMEOUT_S = 60.0  # importing the module (a slow import, a model load) at startup
_HEADER = struct.Struct(">I")
POSIX = os.name == "posix"
_LIVE: weakref.WeakSet[ScorerWorker] = weakref.WeakSet()
#: What the worker's Python needs to find the same interpreter setup and evalwh: where its
#: packages are (a virtualenv, a source checkout on PYTHONPATH) and how it spells text.
PYTHON_NAMES = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONUTF8", "PYTHONIOENCODING")


@atexit.register
def _close_all() -> None:
    """Stop every worker before the interpreter shuts down (their reader threads end too)."""
    for worker in list(_LIVE):
        with contextlib.suppress(Exception):
            worker.close()


def _send(stream: IO[bytes], message: Any) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _receive(stream: IO[bytes]) -> Any:
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        raise EOFError
    size = _HEADER.unpack(head)[0]
    data = stream.read(size)
    if len(data) < size:
        raise EOFError
    return pickle.loads(data)


class ScorerWorker:
    """One criterion's function in a child process, called like the function itself."""

    def __init__(
        self,
        criterion: Criterion,
        root: Path,
        file: str,
        *,
        timeout_s: float,
        pass_env: tuple[str, ...] = (),
        memory_mb: int = DEFAULT_MEMORY_MB,
    ) -> None:
        self.criterion, self.root, self.file = criterion, root, file
        self.timeout_s, self.memory_mb = timeout_s, memory_mb
        self.env = worker_environment(pass_env)
        self.name = str(criterion.options.get("function"))
        # the function has a ``transcript`` parameter: the scorecard passes the cell's tool
        # loop (evalwh.scoring.transcript), as a list of steps
        self.wants_transcript = False
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._replies: queue.Queue[Any] = queue.Queue()
        with self._lock:
            self._start()  # load errors surface now, as ConfigErrors naming the option

    def _start(self) -> None:
        proc = subprocess.Popen(
            # bounded in memory, with what it forks (through /bin/sh, which execs Python)
            limited([sys.executable, "-m", "evalwh.scoring.pyworker"], self.memory_mb),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=None,
            env=self.env,
            start_new_session=POSIX,  # its own process group: what it forks is killed with it
        )
        self._proc, self._replies = proc, queue.Queue()
        _LIVE.add(self)
        threading.Thread(
            target=self._read, args=(proc, self._replies), daemon=True, name="scorer-reader"
        ).start()
        reply = self._ask(("load", self.criterion, str(self.root), self.file), LOAD_TIMEOUT_S)
        if reply[0] == "config_error":
            self.close()
            raise ConfigError(reply[1], **reply[2])
        if reply[0] != "loaded":
            self.close()
            fix = "run the scorer file with python to see the error, and fix it"
            if reply[0] == "out_of_memory":  # the only reply without a value
                why = f"importing it {out_of_memory(self.memory_mb)}"
                fix = f"raise `memory_mb` (now {self.memory_mb}) on the criterion, or import less"
            else:
                why = {
                    "timeout": f"importing it took longer than {LOAD_TIMEOUT_S:g} s",
                    "exited": f"the worker exited while importing it (code {reply[1]})",
                }.get(reply[0], str(reply[1]))
            raise ConfigError(
                f"the python scorer '{self.name}' could not start: {why}",
                file=self.file,
                where=f"{self.criterion.where}.function",
                fix=fix,
            )
        self.name, self.wants_transcript = reply[1], reply[2]

    @staticmethod
    def _read(proc: subprocess.Popen[bytes], replies: queue.Queue[Any]) -> None:
        assert proc.stdout is not None
        while True:
            try:
                replies.put(_receive(proc.stdout))
            except (EOFError, OSError, pickle.UnpicklingError):
                replies.put(("exited", None))
                return

    def _ask(self, message: Any, timeout_s: float) -> Any:
        """Send ``message``; the reply, ("timeout", s) or ("exited", code); after an
        ("out_of_memory",) reply the worker is stopped."""
        proc = self._proc
        assert proc is not None and proc.stdin is not None
        try:
            _send(proc.stdin, message)
            reply = self._replies.get(timeout=timeout_s or None)
        except (BrokenPipeError, OSError):
            reply = ("exited", None)
        except queue.Empty:
            self.close()
            return ("timeout", timeout_s)
        if reply[0] == "exited":
            try:
                code = proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                code = None
            self.close()
            return ("exited", code)
        if reply[0] == "out_of_memory":
            self.close()  # its heap may be half-built: the next call gets a fresh worker
        return reply

    def __call__(
        self, output: str, case: Case, transcript: list[dict[str, Any]] | None = None
    ) -> ScoreResult:
        """Score ``output``; ``transcript`` (the cell's tool loop) is sent only when the
        function takes it (:attr:`wants_transcript`), as ``[]`` for a cell without one."""
        sent = (transcript or []) if self.wants_transcript else None
        with self._lock:
            if self._proc is None:
                try:
                    self._start()
                except ConfigError as exc:
                    return self._error(f"could not restart: {exc.message}")
            reply = self._ask(("call", output, case, sent), self.timeout_s)
        kind = reply[0]
        if kind == "result":
            return reply[1]  # type: ignore[no-any-return]
        if kind == "raised":  # what the scorecard records for a scorer that raises in-process
            return ScoreResult(0.0, passed=False, error=reply[1])
        if kind == "timeout":
            return self._error(
                f"timed out after {reply[1]:g} s and was stopped (raise `timeout_s` on the "
                "criterion if it needs longer)"
            )
        if kind == "out_of_memory":
            return self._error(
                f"{out_of_memory(self.memory_mb)} and was stopped (raise `memory_mb` on the "
                "criterion if it needs more)"
            )
        code = reply[1]
        return self._error(
            "exited"
            + (f" with code {code}" if code is not None else "")
            + " instead of returning (sys.exit or os._exit in the scorer?)"
        )

    def call_tool(self, arguments: dict[str, Any]) -> tuple[Any, str | None]:
        """Call the loaded function as a tool, ``fn(**arguments)``: (its result, None), or
        (None, why it failed) when it raised, ran past ``timeout_s`` (the worker is killed,
        and whatever it forked), ran out of its ``memory_mb`` or exited."""
        with self._lock:
            if self._proc is None:
                try:
                    self._start()
                except ConfigError as exc:
                    return None, f"could not restart: {exc.message}"
            reply = self._ask(("tool", arguments), self.timeout_s)
        kind = reply[0]
        if kind == "result":
            return reply[1], None
        if kind == "raised":
            return None, str(reply[1])
        if kind == "timeout":
            return None, f"timed out after {reply[1]:g} s and was stopped"
        if kind == "out_of_memory":
            return None, out_of_memory(self.memory_mb)
        code = reply[1]
        return None, "exited" + (f" with code {code}" if code is not None else "")

    def _error(self, message: str) -> ScoreResult:
        return ScoreResult(0.0, passed=False, error=f"python scorer {self.name}: {message}")

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if POSIX:
            _kill_group(proc.pid)  # the worker and everything its scorer forked
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        # stdout is left to its reader thread, which sees EOF now and ends (closing it here
        # while that thread reads would abort the interpreter at shutdown)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # interpreter shutdown
            self.close()


def worker_environment(pass_env: tuple[str, ...] = ()) -> dict[str, str]:
    """The worker's environment: the minimal base of every child and ``pass_env``
    (:func:`~evalwh.config.secrets.check_environment`), and the :data:`PYTHON_NAMES` set in
    evalwh's (paths, not secrets: they are not made known secrets, which would mask them)."""
    env, _dropped = check_environment(pass_env=pass_env)
    for name in PYTHON_NAMES:
        if name in os.environ and name not in env:
            env[name] = os.environ[name]
    return env


def _kill_group(pgid: int) -> None:
    """SIGKILL every process of the worker's group (none left is fine)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _serve(requests: IO[bytes], replies: IO[bytes]) -> None:
    from evalwh.scoring.userfunc import call_function, load_function, takes_transcript

    fn: Any = None
    name = ""
    wants = False
    kwargs: dict[str, Any] | None = None
    while True:
        try:
            message = _receive(requests)
        except EOFError:
            return  # the parent closed the pipe (or died): nothing more to do
        if message[0] == "load":
            _, criterion, root, file = message
            try:
                fn, name = load_function(criterion, Path(root), file)
            except ConfigError as exc:
                fields = {
                    k: v
                    for k, v in exc.to_dict().items()
                    if k in ("file", "where", "line", "column", "fix")
                }
                _send(replies, ("config_error", exc.message, fields))
                continue
            except BaseException as exc:
                if isinstance(exc, MemoryError):
                    break
                _send(replies, ("failed", f"{type(exc).__name__}: {exc}"))
                continue
            kwargs = criterion.options.get("options")
            wants = takes_transcript(fn)
            _send(replies, ("loaded", name, wants))
            continue
        if message[0] == "tool":  # a tool call: fn(**arguments), its value as it is
            try:
                value = fn(**message[1])
            except BaseException as exc:  # SystemExit too: the tool's error, not a dead worker
                if isinstance(exc, MemoryError):
                    break
                _send(
                    replies,
                    ("raised", f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__),
                )
                continue
            try:
                _send(replies, ("result", value))
            except Exception as exc:
                if isinstance(exc, MemoryError):
                    break
                _send(replies, ("raised", f"its result could not be sent back: {exc}"))
            continue
        _, output, case, transcript = message
        try:
            result = call_function(fn, name, kwargs, output, case, transcript if wants else None)
        except BaseException as exc:  # SystemExit too: a scorer error, not a dead worker
            if isinstance(exc, MemoryError):
                break
            if isinstance(exc, SystemExit):
                text = f"python scorer {name}: called sys.exit({exc.code!r}) instead of returning"
            else:
                text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            _send(replies, ("raised", text))
            continue
        try:
            _send(replies, ("result", result))
        except Exception as exc:  # an unpicklable detail: report it, keep serving
            if isinstance(exc, MemoryError):
                break
            _send(replies, ("raised", f"its result could not be sent back: {exc}"))
    # Only a MemoryError leaves the loop (out of its handler, whose traceback held the frames
    # that hold the memory): the reply says so and the worker ends, its heap perhaps
    # half-built; the parent starts a fresh one.
    with contextlib.suppress(Exception):
        _send(replies, ("out_of_memory",))


def main() -> None:
    """Worker entry point: protocol on the original stdin/stdout, prints go to stderr."""
    replies = os.fdopen(os.dup(1), "wb")
    requests = os.fdopen(os.dup(0), "rb")
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    sys.stdout = sys.stderr
    _serve(requests, replies)


if __name__ == "__main__":
    main()
