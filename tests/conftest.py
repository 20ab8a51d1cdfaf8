"""Shared fixtures: every test gets a temp home, a temp working folder and a clean environment."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
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


def run_cli(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run the real `evalwh` command in a subprocess (as a user would)."""
    full_env = {**os.environ, "COLUMNS": "200", **(env or {})}
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


def alias_bomb(indent: str = "") -> str:
    """A "billion laughs" YAML mapping (9 levels of 9 aliases, under 1 KB; 9**9 leaves)."""
    lines = [f'{indent}a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    previous = "a"
    for name in "bcdefghi":
        lines.append(f"{indent}{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
        previous = name
    return "\n".join(lines)
