"""Shared fixtures: every test gets a temp home, a temp working folder and a clean environment."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = ROOT / "examples" / "quickstart"


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test reads the real user config or writes into the checkout."""
    home = tmp_path / "home"
    home.mkdir()
    for key in list(os.environ):
        if key.startswith("EVALWH_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("EVALWH_CONFIG_DIR", str(home / ".config" / "evalwh"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    from evalwh.cli.state import _console

    _console.cache_clear()  # its width follows COLUMNS, which a test may set
    from evalwh.config import verdicts

    verdicts._known.cache_clear()  # the schema verdicts of this test's own (temp) home
    return work


@pytest.fixture
def quickstart(tmp_path: Path) -> Path:
    """A private copy of the quickstart example (tests may edit it)."""
    target = tmp_path / "quickstart"
    shutil.copytree(QUICKSTART, target, ignore=shutil.ignore_patterns(".evalwh", "__pycache__"))
    return target / "eval.yaml"


def under_mutmut() -> bool:
    """Whether mutmut runs this test: it names the mutant under test (or its stats pass) in
    ``MUTANT_UNDER_TEST``. Its mutants live in this process only, so a subprocess would run
    the unmutated code, and mutmut could not see which tests reach which function."""
    return bool(os.environ.get("MUTANT_UNDER_TEST"))


def run_cli(
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    process: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run the real `evalwh` command in a subprocess (as a user would).

    Under mutmut (docs/testing.md) the command runs in this process instead, through the same
    entry point, unless the test needs a process of its own (``process=True``: signals,
    timeouts, two commands at once)."""
    full_env = {**os.environ, "COLUMNS": "200", **(env or {})}
    if under_mutmut() and not process:
        return _run_cli_here(list(args), cwd, full_env)
    return subprocess.run(
        [sys.executable, "-m", "evalwh.cli.main", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _run_cli_here(
    args: list[str], cwd: Path | None, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """`evalwh ARGS` through ``main`` in this process, with the working folder, environment,
    standard streams, global options, logging and signal handlers of a fresh process, all
    restored afterwards; an uncaught exception prints its traceback and exits 1, as Python
    does."""
    import contextlib
    import dataclasses
    import io
    import logging
    import signal
    import traceback

    from evalwh.cli import state
    from evalwh.cli.main import main

    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    fields = [field.name for field in dataclasses.fields(state.GlobalState)]
    saved_state = {name: getattr(state.STATE, name) for name in fields}
    saved_signals = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    root = logging.getLogger()
    saved_logging = (root.level, list(root.handlers))
    out, err = io.StringIO(), io.StringIO()
    try:
        os.environ.clear()
        os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        for field in dataclasses.fields(state.GlobalState):
            setattr(state.STATE, field.name, field.default)
        state._console.cache_clear()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(args)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except Exception:
                traceback.print_exc()
                code = 1
    finally:
        os.chdir(saved_cwd)
        for name, value in saved_state.items():
            setattr(state.STATE, name, value)
        os.environ.clear()
        os.environ.update(saved_env)
        for sig, handler in saved_signals.items():
            signal.signal(sig, handler)
        root.setLevel(saved_logging[0])
        root.handlers[:] = saved_logging[1]
        state._console.cache_clear()
    command = [sys.executable, "-m", "evalwh.cli.main", *args]
    return subprocess.CompletedProcess(command, code, out.getvalue(), err.getvalue())


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@contextmanager
def installed_package(
    site: Path, package: str, entry_points: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """Install the package folder ``site/<package>`` as pip would: a ``.dist-info`` beside it
    holding ``entry_points`` (entry_points.txt text) and ``site`` on sys.path. The provider and
    scorer registries are read afresh inside, and the package is forgotten afterwards."""
    from evalwh import providers
    from evalwh.scoring import base

    info = site / f"{package}-0.1.0.dist-info"
    name = package.replace("_", "-")
    write(info / "METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1.0\n")
    write(info / "entry_points.txt", entry_points)
    monkeypatch.syspath_prepend(str(site))
    providers.available.cache_clear()
    base.available.cache_clear()
    try:
        yield
    finally:
        providers.available.cache_clear()
        base.available.cache_clear()
        for module in [m for m in sys.modules if m.split(".")[0] == package]:
            monkeypatch.delitem(sys.modules, module)


def alias_bomb(indent: str = "") -> str:
    """A "billion laughs" YAML mapping (9 levels of 9 aliases, under 1 KB; 9**9 leaves)."""
    lines = [f'{indent}a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    previous = "a"
    for name in "bcdefghi":
        lines.append(f"{indent}{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
        previous = name
    return "\n".join(lines)


@pytest.fixture(params=["aiohttp", "httpx"])
def transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each HTTP transport in turn: aiohttp's pool (the default when httpx-aiohttp is
    installed) and httpcore's sharded pools (EVALWH_HTTP_TRANSPORT=httpx)."""
    if request.param == "httpx":
        monkeypatch.setenv("EVALWH_HTTP_TRANSPORT", "httpx")
    else:
        monkeypatch.delenv("EVALWH_HTTP_TRANSPORT", raising=False)
    return str(request.param)


def dead_pid() -> int:
    """The id of a process that has ended (a short-lived child, waited for)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid
