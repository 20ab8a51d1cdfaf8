"""docs/analysis.md runs as written: every ```sql block through `evalwh sql`'s read-only path,
every ```python block (in page order, one namespace), every `evalwh` line of the ```sh blocks,
against a warehouse made from the quickstart: runs labelled v1 and v2, v1 pinned as the
baseline."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

import evalwh
from tests.builders import TERSE_RULE
from tests.conftest import QUICKSTART, ROOT
from tests.inprocess import evalwh_inprocess

FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)


ANALYSIS = ROOT / "docs" / "analysis.md"


def blocks(path: Path, lang: str) -> list[str]:
    return [body for kind, body in FENCE.findall(path.read_text(encoding="utf-8")) if kind == lang]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("docs")
    shutil.copytree(QUICKSTART, root / "qs", ignore=shutil.ignore_patterns(".evalwh"))
    config = root / "qs" / "eval.yaml"
    v2 = root / "qs" / "v2.yaml"
    v2.write_text(config.read_text().replace(TERSE_RULE, TERSE_RULE.replace("0.3", "0.5")))
    evalwh.run_eval(config, output_dir=root / ".evalwh", label="v1")
    evalwh.run_eval(v2, output_dir=root / ".evalwh", label="v2")
    evalwh.open_warehouse(root / ".evalwh" / "warehouse.duckdb").set_baseline("v1")
    return root


def test_sql_recipes_run_read_only(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    view = evalwh.open_warehouse()
    sqls = blocks(ANALYSIS, "sql")
    assert len(sqls) >= 4
    for sql in sqls:
        table, _ = view.read_sql(sql)
        assert table.num_rows > 0, sql


def test_python_recipes_run(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    namespace: dict[str, object] = {}
    pythons = blocks(ANALYSIS, "python")
    assert len(pythons) >= 4
    for code in pythons:
        exec(compile(code, str(ANALYSIS), "exec"), namespace)


@pytest.mark.slow  # a long end-to-end proof; CI runs it (`pytest -m slow`)
def test_shell_recipes_run(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(project)
    lines = [line for body in blocks(ANALYSIS, "sh") for line in body.splitlines()]
    commands = [shlex.split(line, comments=True) for line in lines if line.strip()]
    assert len(commands) >= 10 and all(c[0] == "evalwh" for c in commands)
    for command in commands:
        args, target = command[1:], None
        if ">" in args:
            args, target = args[: args.index(">")], args[args.index(">") + 1]
        code, out, err = evalwh_inprocess(capsys, *args)
        assert code == 0, (command, out, err)
        if target:
            Path(target).write_text(out)
    assert (project / "report.md").read_text().startswith("## evalwh")
    assert len((project / "cases.csv").read_text().splitlines()) > 48
