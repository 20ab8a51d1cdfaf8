"""Shared fixtures: every test gets a temp home, a temp working folder and a clean environment."""

from __future__ import annotations

import locale
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.lake import S3, Lake, Postgres, start_postgres, start_s3
from tests.fakes.servers import FakeLLMServer

# Machines that set PYTHONDONTWRITEBYTECODE=1 (CI's do) would compile evalwh and its libraries
# from source in every `evalwh` subprocess a test starts (~0.35 s each, hundreds of them): the
# suite, and the processes it starts, keep their bytecode as a developer's machine does.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = ROOT / "examples" / "quickstart"
PAIRWISE = ROOT / "examples" / "pairwise"


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto` (the default in pyproject.toml): two workers per core. Many tests wait on the
    processes, servers and browsers they start, so one worker per core leaves cores idle."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return 2 * (cores or 1)


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
    # wide enough that no message wraps: a worker's temp folders are longer
    # (pytest-xdist adds popen-gwN/), and tests that check wrapping set COLUMNS themselves
    monkeypatch.setenv("COLUMNS", "1000")
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


def run_cli(
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    process: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run the `evalwh` command as a user would, and return its exit code, stdout and stderr.

    It runs in this process (tests/inprocess.py: the entry point `main`, with the working
    folder, environment, streams and global state of a fresh process, all put back
    afterwards), about a second of CPU cheaper than a process, and visible to mutmut and
    coverage. ``process=True`` starts the real command in a subprocess instead (bounded by
    ``timeout``), for a test whose subject is the process: signals, exit on a kill, two
    commands at once, what children inherit (docs/testing.md)."""
    from tests.inprocess import run_here

    full_env = {**os.environ, "COLUMNS": "200", **(env or {})}
    if not process:
        return run_here(list(args), cwd, full_env)
    return subprocess.run(
        [sys.executable, "-m", "evalwh.cli.main", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


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


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> Iterator[type]:
    """The ``counting`` provider (tests.builders.Counting), registered and emptied for a test."""
    from evalwh import providers
    from tests.builders import Counting

    monkeypatch.setitem(providers.BUILTIN, "counting", "tests.builders:Counting")
    providers.available.cache_clear()
    Counting.calls, Counting.behaviour = [], {}
    yield Counting
    providers.available.cache_clear()


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A run of the pairwise example with script-bearing text planted in case q03."""
    from evalwh import api
    from tests.report_runs import pairwise_copy

    root = tmp_path_factory.mktemp("hostile")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(root))
        mp.setenv("EVALWH_CONFIG_DIR", str(root / "config"))
        config = pairwise_copy(root, hostile=True)
        result = api.run_eval(config, output_dir=root / ".evalwh", html=root / "report.html")
    view = api.open_warehouse(root / ".evalwh" / "warehouse.duckdb")
    return {
        "config": config,
        "run_id": result.run_id,
        "view": view,
        "page": Path(result.report or "").read_text(encoding="utf-8"),
        "root": root,
    }


@pytest.fixture(scope="session")
def tool_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two runs of the tools example with script-bearing text in a tool's result and error
    (tests/report_runs.py): ``run_id`` (its page at ``page``) and ``no_look_id``, a no-look
    run of it, in one warehouse (``view``)."""
    from evalwh import api
    from tests.report_runs import tools_copy

    root = tmp_path_factory.mktemp("tool-runs")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(root))
        mp.setenv("EVALWH_CONFIG_DIR", str(root / "config"))
        config = tools_copy(root, hostile=True)
        out = root / ".evalwh"
        result = api.run_eval(config, output_dir=out, html=root / "report.html")
        blind = api.run_eval(config, output_dir=out, no_look=True, label="no-look")
    return {
        "config": config,
        "run_id": result.run_id,
        "no_look_id": blind.run_id,
        "view": api.open_warehouse(out / "warehouse.duckdb"),
        "page": Path(result.report or "").read_text(encoding="utf-8"),
        "root": root,
    }


@pytest.fixture(scope="session")
def tool_compare(tmp_path_factory: pytest.TempPathFactory, tool_runs: dict[str, Any]) -> Any:
    """``tool_runs``' warehouse copied, with a run of it whose case warmer called a made-up
    tool named with a script (tests/report_runs.py's changed_tool_run): ``view``, ``a`` (the
    tools run), ``b`` (the changed one), ``no_look`` (the no-look run)."""
    from evalwh import api
    from tests.report_runs import changed_tool_run

    folder = tmp_path_factory.mktemp("tool-compare")
    db = folder / "warehouse.duckdb"
    shutil.copy(tool_runs["root"] / ".evalwh" / "warehouse.duckdb", db)
    b = changed_tool_run(db, tool_runs["run_id"])
    return {
        "view": api.open_warehouse(db),
        "a": tool_runs["run_id"],
        "b": b,
        "no_look": tool_runs["no_look_id"],
    }


@pytest.fixture
def ascii_locale() -> Iterator[None]:
    """A user whose locale is not UTF-8 (LANG=C without UTF-8 mode; Windows' cp1252)."""
    old = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    try:
        yield
    finally:
        locale.setlocale(locale.LC_CTYPE, old)


@pytest.fixture
def sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The datasource classes of tests.builders.DATASOURCE_MODULE, importable as `mysources`
    (a config names them "mysources:Counting"); a fresh module, so its STATE starts empty."""
    import importlib

    from tests.builders import DATASOURCE_MODULE

    write(tmp_path / "mysources.py", DATASOURCE_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("mysources", None)
    return importlib.import_module("mysources")


@pytest.fixture
def pairwise_example(tmp_path: Path) -> Path:
    """A private copy of the pairwise example (tests may edit it): its eval.yaml."""
    shutil.copytree(PAIRWISE, tmp_path / "pairwise", ignore=shutil.ignore_patterns(".evalwh"))
    return tmp_path / "pairwise" / "eval.yaml"


@pytest.fixture
def empty_warehouse(tmp_path: Path) -> Path:
    """An empty warehouse, migrated: its path."""
    from evalwh.warehouse import connect

    path = tmp_path / "w.duckdb"
    with connect.write_connection(path):
        pass
    return path


@pytest.fixture(scope="module")
def quickstart_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """Two quickstart runs (one labelled "first") in one warehouse, shared by a module's read
    tests (tests/warehouse, tests/sql)."""
    import evalwh

    root = tmp_path_factory.mktemp("stored")
    shutil.copytree(QUICKSTART, root / "qs", ignore=shutil.ignore_patterns(".evalwh"))
    out = root / "out"
    a = evalwh.run_eval(root / "qs" / "eval.yaml", output_dir=out, label="first")
    b = evalwh.run_eval(root / "qs" / "eval.yaml", output_dir=out)
    return out, [a.run_id, b.run_id]


# -- a DuckLake on loopback servers (tests/fakes/lake.py): PostgreSQL for the catalog, moto
# for S3; used by tests/warehouse/test_lake.py and tests/features/test_scale_out.py


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    pg = start_postgres()
    yield pg
    pg.stop()


@pytest.fixture(scope="session")
def s3() -> Iterator[S3]:
    server = start_s3()
    yield server
    server.stop()


@pytest.fixture
def lake(postgres: Postgres, s3: S3, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Lake:
    """A fresh lake (database + bucket); every evalwh command here points at it."""
    made = Lake(postgres, s3, postgres.create_database(), s3.create_bucket())
    made.user_config(tmp_path / "home" / ".config" / "evalwh")
    for key, value in made.env().items():
        monkeypatch.setenv(key, value)
    return made


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    """A fake LLM server on 127.0.0.1 (tests/fakes/servers.py), stopped after the test."""
    with FakeLLMServer() as srv:
        yield srv
