"""The built wheel carries sql/ and migrations/ and works outside the repository: installed
into a fresh venv, with the working folder outside the checkout and PYTHONPATH unset, it runs
the quickstart, `evalwh init` + `run` + `show` in an empty folder, and the README's minimal
eval saved in a new folder with the command the README gives; and the README's `uvx --from`
line runs it from the checkout with nothing installed."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest

from tests.conftest import QUICKSTART, ROOT

pytestmark = pytest.mark.e2e

BIN = "Scripts" if os.name == "nt" else "bin"


@dataclass
class Installed:
    wheel: Path
    python: Path
    bin: Path
    uv: str
    cache: str  # uv's own cache, which holds evalwh's dependencies once the wheel is installed


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The wheel built from the checkout and installed into a fresh venv outside it (set up
    before the per-test home, so uv uses its own cache)."""
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH")
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    where = tmp_path_factory.mktemp("wheel")
    dist = where / "dist"
    subprocess.run(
        [uv, "build", "--wheel", "--out-dir", str(dist), str(ROOT)],
        check=True,
        env=env,
        capture_output=True,
    )
    wheel = next(dist.glob("evalwh-*.whl"))
    venv = where / "venv"
    subprocess.run(
        [uv, "venv", "--python", sys.executable, str(venv)],
        check=True,
        env=env,
        capture_output=True,
    )
    python = venv / BIN / ("python.exe" if os.name == "nt" else "python")
    subprocess.run(
        [uv, "pip", "install", "--python", str(python), str(wheel)],
        check=True,
        env=env,
        capture_output=True,
    )
    cache = subprocess.run(
        [uv, "cache", "dir"], check=True, env=env, capture_output=True, text=True
    ).stdout.strip()
    return Installed(wheel=wheel, python=python, bin=venv / BIN, uv=uv, cache=cache)


def outside(installed: Installed) -> dict[str, str]:
    """The environment of a user's shell: the venv's commands on PATH, no PYTHONPATH, no
    active virtual environment, the test's own home and evalwh config."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{installed.bin}{os.pathsep}{env.get('PATH', '')}"
    return env


def shell(command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    assert ROOT not in cwd.resolve().parents, f"{cwd} is inside the checkout"
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)


def test_the_wheel_carries_its_resources(installed: Installed) -> None:
    names = zipfile.ZipFile(installed.wheel).namelist()
    assert "evalwh/_resources/migrations/0001_init.sql" in names
    assert "evalwh/_resources/sql/summary.sql" in names
    assert "evalwh/config/eval.schema.json" in names
    for template in ("run.html.j2", "compare.html.j2", "base.html.j2", "report.js", "report.css"):
        assert f"evalwh/reports/templates/{template}" in names


def test_wheel_installs_and_runs_the_quickstart(installed: Installed, tmp_path: Path) -> None:
    work = tmp_path / "work"
    shutil.copytree(
        QUICKSTART, work / "quickstart", ignore=shutil.ignore_patterns(".evalwh", "__pycache__")
    )
    env = outside(installed)
    result = shell(
        [
            str(installed.bin / "evalwh"),
            "run",
            "quickstart/eval.yaml",
            "-q",
            "--html",
            "report.html",
        ],
        work,
        env,
    )
    assert result.returncode == 0, result.stderr
    assert "Content-Security-Policy" in (work / "report.html").read_text(encoding="utf-8")
    # the installed package, not the checkout, answered
    where = shell(
        [
            str(installed.python),
            "-c",
            "import evalwh.warehouse.resources as r; print(r.resource_dir('sql'))",
        ],
        work,
        env,
    )
    assert "_resources" in where.stdout and str(ROOT) not in where.stdout
    with duckdb.connect(str(work / ".evalwh" / "warehouse.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM cases").fetchone() == (48,)


def test_init_run_and_show_in_an_empty_folder(installed: Installed, tmp_path: Path) -> None:
    work = tmp_path / "new-evals"
    work.mkdir()
    env = outside(installed)
    assert shutil.which("evalwh", path=env["PATH"]) == str(installed.bin / "evalwh")
    init = shell(["evalwh", "init"], work, env)
    assert init.returncode == 0, init.stderr
    assert "created eval.yaml" in init.stdout and "next: evalwh run eval.yaml" in init.stdout
    run = shell(["evalwh", "run", "eval.yaml"], work, env)
    assert run.returncode == 0, run.stderr
    assert "thresholds: all 1 passed" in run.stdout
    show = shell(["evalwh", "show", "latest"], work, env)
    assert show.returncode == 0, show.stderr
    assert "my-eval" in show.stdout and "thresholds: all 1 passed" in show.stdout
    module = shell(
        [str(installed.python), "-c", "import evalwh; print(evalwh.__file__)"], work, env
    )
    assert str(installed.bin.parent) in module.stdout and str(ROOT) not in module.stdout


def readme_minimal_eval() -> tuple[str, list[str]]:
    """The README's minimal eval and the command it says to run it with in a new folder."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    part = readme.split("## A minimal eval\n", 1)[1].split("\n## ", 1)[0]
    yaml = re.search(r"^```yaml\n(.*?)^```", part, re.M | re.S)
    said = re.search(r"Save it as `eval.yaml` in a new folder and run `([^`]+)` there", part)
    assert yaml and said, "README.md's minimal eval or its command moved"
    return yaml.group(1), shlex.split(said.group(1))


def test_the_readme_minimal_eval_runs_in_a_new_folder(installed: Installed, tmp_path: Path) -> None:
    config, command = readme_minimal_eval()
    assert command == ["evalwh", "run", "eval.yaml"]
    work = tmp_path / "capitals"
    work.mkdir()
    (work / "eval.yaml").write_text(config, encoding="utf-8")
    result = shell(command, work, outside(installed))
    assert result.returncode == 0, result.stderr
    assert "(1/2)" in result.stdout  # "one case passes, one fails"


def test_the_readme_uvx_line_runs_an_eval_with_nothing_installed(
    installed: Installed, tmp_path: Path
) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    line = re.search(r"^(uvx --from /path/to/evalwh evalwh run eval.yaml) ", readme, re.M)
    assert line, "README.md's Install section lost its uvx line"
    uvx, *args = shlex.split(line.group(1))
    assert uvx == "uvx"  # uv's alias of `uv tool run`; the checkout stands for /path/to/evalwh
    command = [
        installed.uv,
        "tool",
        "run",
        *(str(ROOT) if a == "/path/to/evalwh" else a for a in args),
    ]
    config, _ = readme_minimal_eval()
    work = tmp_path / "once"
    work.mkdir()
    (work / "eval.yaml").write_text(config, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(UV_CACHE_DIR=installed.cache, UV_OFFLINE="1", UV_PYTHON_DOWNLOADS="never")
    result = shell(command, work, env)
    assert result.returncode == 0, result.stderr
    assert "(1/2)" in result.stdout
