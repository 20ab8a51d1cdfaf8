"""The run commands (evalwh/cli/runs.py): `show` and the other views of stored runs, in text and
as JSON.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

import evalwh
from tests.conftest import ROOT, run_cli
from tests.inprocess import evalwh_inprocess


# -- cli/runs.py: `show --json` keeps every key the docs name --------------------------------
def test_show_json_has_every_documented_key_even_when_empty(
    quickstart: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # bug: `show --json` dropping empty keys (`cases` without --failures) that docs/cli.md names
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    sentence = re.search(r"`show` gives (.*?);", text, re.DOTALL)
    assert sentence, "docs/cli.md no longer says what `show --json` gives"
    documented = re.findall(r"`(\w+)`", sentence.group(1))
    assert {"run", "totals", "summary", "criteria", "gate", "cases"} <= set(documented)
    out = tmp_path / "out"
    evalwh.run_eval(quickstart, output_dir=out)
    code, stdout, _ = evalwh_inprocess(capsys, "show", "--json", "-o", str(out))
    assert code == 0
    data = json.loads(stdout)
    assert set(documented) <= set(data), set(documented) - set(data)
    assert data["cases"] == [] and data["totals"]["n"] == 48 and data["summary"]


def test_show_says_how_many_lake_commits_its_run_retried(
    quickstart: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a run's stored totals hold its writer's retried commits (3 forged here: a file's writers
    # never conflict); show names them, and says nothing of a run that retried none
    import duckdb

    out = tmp_path / "out"
    run = evalwh.run_eval(quickstart, output_dir=out)
    code, stdout, stderr = evalwh_inprocess(capsys, "show", "latest", "-o", str(out))
    assert code == 0 and "retried while it ran" not in stdout + stderr
    with duckdb.connect(str(out / "warehouse.duckdb")) as con:
        con.execute(
            "UPDATE runs SET totals = json_merge_patch(totals, '{\"commit_retries\": 3}') "
            "WHERE run_id = ?",
            [run.run_id],
        )
    code, stdout, stderr = evalwh_inprocess(capsys, "show", "latest", "-o", str(out))
    assert "3 conflicting lake commit(s) retried while it ran" in stdout + stderr
    code, stdout, _ = evalwh_inprocess(capsys, "show", "latest", "--json", "-o", str(out))
    assert json.loads(stdout)["commit_retries"] == 3


def test_show_failures_and_one_case(quickstart: Path, tmp_path: Path) -> None:
    assert run_cli("run", str(quickstart), "-q", cwd=tmp_path).returncode == 0
    failures = run_cli("show", "latest", "--failures", cwd=tmp_path)
    assert failures.returncode == 0
    assert "ERROR math-4" in failures.stdout and "model overloaded (simulated)" in failures.stdout
    assert "thresholds: all 6 passed" in failures.stdout
    headers = [
        line.split()[0]
        for line in failures.stdout.splitlines()
        if line.startswith(("PASS ", "FAIL ", "ERROR "))
    ]
    assert headers and "PASS" not in headers and headers.count("ERROR") == 2
    one = run_cli("show", "latest", "--case", "geo-3", cwd=tmp_path)
    assert one.returncode == 0
    assert one.stdout.count(" geo-3 ") == 4  # every variant x model of that case
    assert "[user] What is the capital of Australia?" in one.stdout
    missing = run_cli("show", "latest", "--case", "nope", cwd=tmp_path)
    assert missing.returncode == 2 and "no case 'nope'" in missing.stderr


def test_init_scaffolds_a_working_eval(tmp_path: Path) -> None:
    assert run_cli("init", "demo", cwd=tmp_path).returncode == 0
    result = run_cli("run", "demo/eval.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "plain" in result.stdout and "friendly" in result.stdout
    again = run_cli("init", "demo", cwd=tmp_path)
    assert again.returncode == 2 and "--force" in again.stderr


def test_list_on_an_empty_folder(tmp_path: Path) -> None:
    result = run_cli("list", cwd=tmp_path)
    assert result.returncode == 0 and "no runs yet" in result.stderr
    assert not (tmp_path / ".evalwh").exists()
    show = run_cli("show", "latest", cwd=tmp_path)
    assert show.returncode == 2 and "no warehouse" in show.stderr


def test_last_suite_shows_the_newest_run_of_that_suite(
    quickstart: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # bug: `evalwh last suite.yaml` was a usage error (issue 51). Two suites share a folder;
    # `other.yaml` keeps its warehouse where its own settings say (other-out, beside it).
    other = quickstart.parent / "other.yaml"
    other.write_text(
        quickstart.read_text()
        .replace("name: quickstart", "name: other")
        .replace("  concurrency: 16", "  concurrency: 16\n  output_dir: other-out")
    )
    out = tmp_path / "out"
    first = evalwh.run_eval(quickstart, output_dir=out, label="q1").run_id
    evalwh.run_eval(other, output_dir=out, label="o1")  # the newest run of the warehouse
    mine = evalwh.run_eval(other, label="o-own").run_id  # into other-out, by its settings

    def last(*args: str) -> tuple[int, Any]:
        code, stdout, stderr = evalwh_inprocess(capsys, "last", "--json", *args)
        return code, json.loads(stdout)["run"] if code == 0 else stderr

    assert last("-o", str(out))[1]["label"] == "o1"
    assert last(str(quickstart), "-o", str(out))[1]["run_id"] == first
    assert last(str(quickstart.parent), "-o", str(out))[1]["label"] == "q1"
    assert last("quickstart", "-o", str(out))[1]["label"] == "q1"
    # a config's settings choose the warehouse when -o does not
    assert last(str(other))[1]["run_id"] == mine
    # a file no run started from: the newest run of its suite's name
    moved = tmp_path / "elsewhere" / "eval.yaml"
    shutil.copytree(quickstart.parent, moved.parent, ignore=shutil.ignore_patterns("other*"))
    assert last(str(moved), "-o", str(out))[1]["run_id"] == first
    code, stderr = last("nope", "-o", str(out))
    assert code == 2 and "no run of suite 'nope'" in stderr
    text = evalwh_inprocess(capsys, "last", "quickstart", "--failures", "-o", str(out))[1]
    assert "(q1) — quickstart —" in text and "math-4" in text


def test_last_is_show_latest(quickstart: Path, tmp_path: Path) -> None:
    out = ("-o", str(tmp_path / "out"))
    assert run_cli("run", str(quickstart), "-q", "--label", "first", *out).returncode == 0
    last = run_cli("last", "--json", *out)
    latest = run_cli("show", "latest", "--json", *out)
    assert last.returncode == 0 and json.loads(last.stdout) == json.loads(latest.stdout)
    assert json.loads(last.stdout)["run"]["label"] == "first"
    failures = run_cli("last", "--failures", *out)
    assert "mock-small" in failures.stdout and "math-4" in failures.stdout
