"""The `evalwh` entry point's global options and exit codes: -q, NO_COLOR, usage errors."""

from __future__ import annotations

from pathlib import Path

from tests.builders import BASE
from tests.conftest import run_cli, write


def test_quiet_and_no_color(quickstart: Path, tmp_path: Path) -> None:
    # the installed command end to end, in a process of its own (the quickstart run)
    result = run_cli(
        "-q", "run", str(quickstart), cwd=tmp_path, env={"NO_COLOR": "1"}, process=True
    )
    assert result.returncode == 0
    assert result.stderr == ""
    assert "\x1b[" not in result.stdout


def test_usage_error_exit_code(tmp_path: Path) -> None:
    result = run_cli("run", "--concurrency", "0", cwd=tmp_path)
    assert result.returncode == 2


def test_json_error_output_is_parseable(tmp_path: Path) -> None:
    import json

    cfg = write(
        tmp_path / "eval.yaml", BASE.replace("provider: mock", "provider: mock\n    colour: red")
    )
    result = run_cli("run", str(cfg), "--json", cwd=tmp_path)
    assert result.returncode == 2
    data = json.loads(result.stdout)
    assert data["error"] == "ConfigError" and data["where"] == "models[0]" and data["line"] == 4
