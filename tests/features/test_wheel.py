"""The built wheel carries sql/ and migrations/ and runs the quickstart from a clean venv."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import duckdb
import pytest

from tests.conftest import QUICKSTART, ROOT

pytestmark = pytest.mark.e2e


def _uv() -> str:
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH")
    return uv


def test_wheel_installs_and_runs_the_quickstart(tmp_path: Path) -> None:
    uv = _uv()
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    dist = tmp_path / "dist"
    subprocess.run(
        [uv, "build", "--wheel", "--out-dir", str(dist), str(ROOT)],
        check=True,
        env=env,
        capture_output=True,
    )
    wheel = next(dist.glob("evalwh-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "evalwh/_resources/migrations/0001_init.sql" in names
    assert "evalwh/_resources/sql/summary.sql" in names
    assert "evalwh/config/eval.schema.json" in names
    for template in ("run.html.j2", "compare.html.j2", "base.html.j2", "report.js", "report.css"):
        assert f"evalwh/reports/templates/{template}" in names

    venv = tmp_path / "venv"
    subprocess.run(
        [uv, "venv", "--python", sys.executable, str(venv)],
        check=True,
        env=env,
        capture_output=True,
    )
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    subprocess.run(
        [uv, "pip", "install", "--python", str(python), str(wheel)],
        check=True,
        env=env,
        capture_output=True,
    )
    work = tmp_path / "work"
    shutil.copytree(
        QUICKSTART, work / "quickstart", ignore=shutil.ignore_patterns(".evalwh", "__pycache__")
    )
    evalwh = venv / ("Scripts/evalwh.exe" if os.name == "nt" else "bin/evalwh")
    clean_env = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    result = subprocess.run(
        [str(evalwh), "run", "quickstart/eval.yaml", "-q", "--html", "report.html"],
        cwd=work,
        env=clean_env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "Content-Security-Policy" in (work / "report.html").read_text(encoding="utf-8")
    # the installed package, not the checkout, answered
    where = subprocess.run(
        [str(python), "-c", "import evalwh.warehouse.resources as r; print(r.resource_dir('sql'))"],
        cwd=work,
        env=clean_env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "_resources" in where.stdout and str(ROOT) not in where.stdout
    with duckdb.connect(str(work / ".evalwh" / "warehouse.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM cases").fetchone() == (48,)
