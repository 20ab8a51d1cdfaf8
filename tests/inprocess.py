"""Run the `evalwh` command inside the test process, as a fresh process would run it.

A subprocess costs about a second of CPU (Python, evalwh and its libraries imported again);
``run_here`` calls the same entry point (``evalwh.cli.main.main``) with what a new process
would have, and puts everything back afterwards:

- the working folder, the environment (``os.environ`` replaced whole), ``sys.argv``;
- ``sys.path`` as ``python -m`` builds it: the working folder first, then ``PYTHONPATH``;
  the modules the command imported from anywhere but the installed libraries and this
  checkout's ``evalwh`` and ``tests`` are forgotten (a fresh process imports a config's
  ``scorers.py`` or ``mysources.py`` afresh);
- standard streams: stdout and stderr captured apart, an empty stdin;
- no running event loop (a test driving Playwright has one); the global options, the
  console, logging, the SIGINT/SIGTERM handlers, ``tempfile``'s
  folder (it follows ``TMPDIR``) and every cache that reads the environment or the installed
  packages (the plugin registries, the schema verdicts of the user's cache folder);
- at the end what the interpreter does at exit: python scorer workers stopped, threads the
  command left running joined. An uncaught exception prints its traceback and exits 1.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib
import io
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# where a module may come from and still be kept after a command: the interpreter, the
# installed libraries, evalwh and the test helpers (anything else is the command's own input)
KEPT = tuple(
    str(p) + os.sep
    for p in {Path(sys.prefix), Path(sys.base_prefix), ROOT / "evalwh", ROOT / "tests"}
)


def run_here(
    args: list[str], cwd: Path | None, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """`evalwh ARGS` through ``main`` in this process (see the module's docstring)."""
    from evalwh.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with _fresh_process(args, cwd, env, out, err):
        try:
            code = main(args)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except Exception:
            traceback.print_exc()
            code = 1
    command = [sys.executable, "-m", "evalwh.cli.main", *args]
    return subprocess.CompletedProcess(command, code, out.getvalue(), err.getvalue())


@contextlib.contextmanager
def _fresh_process(
    args: list[str], cwd: Path | None, env: dict[str, str], out: io.StringIO, err: io.StringIO
) -> Iterator[None]:
    from evalwh.cli import state

    fields = [field.name for field in dataclasses.fields(state.GlobalState)]
    saved_state = {name: getattr(state.STATE, name) for name in fields}
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_path, saved_argv, saved_modules = list(sys.path), list(sys.argv), set(sys.modules)
    saved_signals = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    saved_tempdir = tempfile.tempdir
    root = logging.getLogger()
    saved_logging = (root.level, list(root.handlers))
    threads = set(threading.enumerate())
    running_loop = asyncio.events._get_running_loop()  # Playwright's sync API runs one here
    try:
        asyncio.events._set_running_loop(None)
        os.environ.clear()
        os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        sys.path[:0] = [os.getcwd(), *extra]
        sys.argv = [str(ROOT / "evalwh" / "cli" / "main.py"), *args]
        importlib.invalidate_caches()
        tempfile.tempdir = None
        for field in dataclasses.fields(state.GlobalState):
            setattr(state.STATE, field.name, field.default)
        _clear_caches()
        with (
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
            _stdin(io.StringIO("")),
        ):
            try:
                yield
            finally:
                _at_exit(threads)
    finally:
        asyncio.events._set_running_loop(running_loop)
        os.chdir(saved_cwd)
        for name, value in saved_state.items():
            setattr(state.STATE, name, value)
        os.environ.clear()
        os.environ.update(saved_env)
        sys.path[:], sys.argv = saved_path, saved_argv
        for name in set(sys.modules) - saved_modules:
            if not _kept(sys.modules[name]):
                del sys.modules[name]
        for sig, handler in saved_signals.items():
            signal.signal(sig, handler)
        tempfile.tempdir = saved_tempdir
        root.setLevel(saved_logging[0])
        root.handlers[:] = saved_logging[1]
        _clear_caches()


@contextlib.contextmanager
def _stdin(stream: io.StringIO) -> Iterator[None]:
    saved, sys.stdin = sys.stdin, stream
    try:
        yield
    finally:
        sys.stdin = saved


def _clear_caches() -> None:
    """The caches a new process starts without: what they hold follows the environment
    (COLUMNS, NO_COLOR, the cache folder) or the packages installed on ``sys.path``."""
    from evalwh import datasources, providers
    from evalwh.cli import state
    from evalwh.config import verdicts
    from evalwh.scoring import base

    for cached in (state._console, verdicts._known, providers.available, base.available):
        cached.cache_clear()
    datasources.available.cache_clear()


def _at_exit(threads: set[threading.Thread]) -> None:
    """What the interpreter does as the process ends: the atexit hook that stops the python
    scorer workers, then a join of every non-daemon thread the command started."""
    pyworker = sys.modules.get("evalwh.scoring.pyworker")
    if pyworker is not None:
        pyworker._close_all()
    for thread in set(threading.enumerate()) - threads:
        if not thread.daemon:
            thread.join()


def _kept(module: object) -> bool:
    """Whether a module imported during a command stays loaded: it comes from the installed
    libraries, evalwh or the test helpers (or from no file at all)."""
    where = getattr(module, "__file__", None)
    if where is None:
        paths = list(getattr(module, "__path__", []) or [])
        where = paths[0] if paths else None
    return where is None or str(where).startswith(KEPT)


def evalwh_inprocess(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `evalwh ARGS`, with the global options reset first and
    put back afterwards (a `--json` here must not leak into the next test)."""
    from evalwh.cli import state
    from evalwh.cli.main import main

    fields = dataclasses.fields(state.GlobalState)
    saved = {f.name: getattr(state.STATE, f.name) for f in fields}
    for f in fields:
        setattr(state.STATE, f.name, f.default)
    capsys.readouterr()
    try:
        code = main(list(args))
    finally:
        for name, value in saved.items():
            setattr(state.STATE, name, value)
    captured = capsys.readouterr()
    return code, captured.out, captured.err
