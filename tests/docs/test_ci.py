"""docs/ci.md runs as written: it embeds examples/ci/evalwh.yml verbatim, and the workflow's
`evalwh` steps run with bash, as a push to main and then as a pull request that plants a
regression."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from tests.builders import TERSE_RULE
from tests.conftest import QUICKSTART, ROOT

CI = ROOT / "docs" / "ci.md"


WORKFLOW = ROOT / "examples" / "ci" / "evalwh.yml"


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
