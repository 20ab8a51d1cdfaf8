"""How the CLI renders a run (evalwh/cli/render.py): the criteria table names a json-schema
criterion's mode (native or prompted)."""

from __future__ import annotations

from pathlib import Path

from tests.builders import PLACE_OUTPUT, place_config
from tests.conftest import run_cli


def test_criteria_table_shows_the_mode(tmp_path: Path) -> None:
    model = '{id: m, provider: mock, mock: {default: \'{"city": "Rome"}\'}}'
    cfg = place_config(tmp_path, model, PLACE_OUTPUT)
    assert run_cli("run", str(cfg), "-o", str(tmp_path / "out"), cwd=tmp_path).returncode == 0
    done = run_cli("last", "-o", str(tmp_path / "out"), cwd=tmp_path)
    assert "json-schema (native)" in done.stdout  # the mock takes the schema as asked
