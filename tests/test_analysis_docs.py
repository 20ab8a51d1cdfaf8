"""The recipes of docs/analysis.md and docs/ci.md run as written.

- docs/analysis.md: every ```sql block through `evalwh sql`'s read-only path, every ```python
  block (in page order, one namespace), every `evalwh` line of the ```sh blocks, against a
  warehouse made from the quickstart: runs labelled v1 and v2, v1 pinned as the baseline.
- docs/ci.md: embeds examples/ci/evalwh.yml verbatim; its `evalwh` steps run with bash, as a
  push to main and then as a pull request that plants a regression.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import evalwh
from tests.conftest import QUICKSTART, ROOT
from tests.inprocess import evalwh_inprocess

FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
ANALYSIS = ROOT / "docs" / "analysis.md"
CI = ROOT / "docs" / "ci.md"
WORKFLOW = ROOT / "examples" / "ci" / "evalwh.yml"
TERSE_RULE = '          rate: 0.3\n          reply: "The answer is {{ expected }}."'


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


# -- docs/ci.md ---------------------------------------------------------------------------
CONDITIONS = {  # every `if:` of the workflow, per event
    None: {"push": True, "pull_request": True},
    "always()": {"push": True, "pull_request": True},
    "always() && github.event_name == 'pull_request'": {"push": False, "pull_request": True},
    "github.ref == 'refs/heads/main'": {"push": True, "pull_request": False},
}
OFFLINE = ("pip install", "gh pr comment")  # steps that need the network
REGRESSION = "  regression:\n    max_drop_pass_rate: 0.02\n"


def run_steps(workflow: dict, event: str, cwd: Path) -> dict[str, subprocess.CompletedProcess]:
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "GITHUB_STEP_SUMMARY": str(cwd / "summary.md"),
        "COLUMNS": "200",
    }
    results: dict[str, subprocess.CompletedProcess] = {}
    failed = False
    for step in workflow["jobs"]["eval"]["steps"]:
        if "run" not in step or any(word in step["run"] for word in OFFLINE):
            continue
        condition = step.get("if")
        assert condition in CONDITIONS, f"teach this test the condition {condition!r}"
        if (
            not CONDITIONS[condition][event]
            or (failed and condition is None)
            or (failed and condition == "github.ref == 'refs/heads/main'")
        ):
            continue
        script = step["run"].replace("${{ github.sha }}", f"sha-{event}")
        assert "${{" not in script, script
        result = subprocess.run(
            ["bash", "-e", "-c", script], cwd=cwd, env=env, capture_output=True, text=True
        )
        results[step["name"]] = result
        failed = failed or result.returncode != 0
    return results


def test_ci_doc_embeds_the_workflow_and_its_steps_work(tmp_path: Path) -> None:
    text = WORKFLOW.read_text(encoding="utf-8")
    assert f"```yaml\n{text}```" in CI.read_text(encoding="utf-8")
    workflow = yaml.safe_load(text)
    repo = tmp_path / "repo"
    shutil.copytree(
        QUICKSTART, repo / "examples" / "quickstart", ignore=shutil.ignore_patterns(".evalwh")
    )
    config = repo / "examples" / "quickstart" / "eval.yaml"

    main = run_steps(workflow, "push", repo)
    assert main["Run the evals (the gate)"].returncode == 0, main["Run the evals (the gate)"].stderr
    assert main["Pin the baseline"].returncode == 0
    assert "**Gate: ✅ passed**" in (repo / "evalwh-report.md").read_text()

    # a pull request that makes mock-small answer terse prompts badly more often
    config.write_text(
        config.read_text().replace(TERSE_RULE, TERSE_RULE.replace("0.3", "0.8")) + REGRESSION
    )
    pr = run_steps(workflow, "pull_request", repo)
    gate = pr["Run the evals (the gate)"]
    assert gate.returncode == 1 and "FAIL pass_rate_drop <= 0.02 vs baseline" in gate.stdout
    assert pr["Reports, even when the gate failed"].returncode == 0
    report = (repo / "evalwh-report.md").read_text()
    assert "**Gate: ❌ failed**" in report and "### vs baseline" in report
    assert report in (repo / "summary.md").read_text()
    assert "Pin the baseline" not in pr
    junit = (repo / "evalwh-junit.xml").read_text()
    assert "<failure" in junit and "pass_rate_drop" in junit
