"""`evalwh import`: it imports the fixture logs and says when a file was imported before; a
file that is not a results file is refused with a fix and nothing written."""

from __future__ import annotations

import json
from pathlib import Path

from tests.builders import inspect_log, rows
from tests.conftest import run_cli


def test_cli_imports_and_says_when_a_file_was_imported_before(tmp_path: Path) -> None:
    args = ("import", "inspect", str(inspect_log("eval")), str(inspect_log("json")))
    first = run_cli(*args, "-o", str(tmp_path), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert first.stdout.count("imported ") == 2 and "(inspect 0.3.285)" in first.stdout
    again = run_cli(*args, "-o", str(tmp_path), "--json", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert [r["added"] for r in json.loads(again.stdout)["imported"]] == [False, False]
    listed = run_cli("list", "-o", str(tmp_path), "--json", cwd=tmp_path)
    assert len(json.loads(listed.stdout)["runs"]) == 2


def test_cli_refuses_a_file_that_is_not_a_results_file(tmp_path: Path) -> None:
    bad = tmp_path / "notes.json"
    bad.write_text('{"hello": 1}')
    done = run_cli("import", "promptfoo", str(bad), "-o", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 2
    assert str(bad) in done.stderr and "not a promptfoo results file" in done.stderr
    assert "fix:" in done.stderr
    # nothing was written: no run
    assert not (tmp_path / "warehouse.duckdb").exists() or rows(
        tmp_path / "warehouse.duckdb", "SELECT count(*) FROM runs"
    ) == [(0,)]


def test_cli_deep_json_exits_2_naming_the_place(tmp_path: Path) -> None:
    """The attack through the CLI: JSON nested 100,000 deep is exit 2 with the file and the
    line and column, no traceback."""
    bad = tmp_path / "deep.json"
    bad.write_text('{"results": ' + "[" * 100_000 + "]" * 100_000 + "}")
    done = run_cli("import", "promptfoo", str(bad), "-o", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"{bad}: line 1 column 212: JSON nested deeper than 200 levels" in done.stderr
    assert "Traceback" not in done.stderr
