"""docs/ci.md runs as written: it embeds the recipes of examples/ci/ verbatim (GitHub Actions,
GitLab CI, CircleCI) and each recipe's shell steps run with bash, as a push to the main branch
and then as two pushes to a pull request that plants a regression. The comment steps talk to
a fake forge on loopback (tests/fakes/forge.py): GitHub's through a fake `gh` on PATH
(tests/fakes/gh.py) or curl, GitLab's through curl; the pre-commit hook's entry runs on a good
and a bad eval.yaml."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.builders import TERSE_RULE
from tests.conftest import QUICKSTART, ROOT
from tests.fakes.forge import FakeForge

CI = ROOT / "docs" / "ci.md"


WORKFLOW = ROOT / "examples" / "ci" / "evalwh.yml"


# -- docs/ci.md ---------------------------------------------------------------------------
CONDITIONS = {  # every `if:` of the workflow, per event
    None: {"push": True, "pull_request": True},
    "always()": {"push": True, "pull_request": True},
    "always() && github.event_name == 'pull_request'": {"push": False, "pull_request": True},
    "github.ref == 'refs/heads/main'": {"push": True, "pull_request": False},
}


OFFLINE = ("pip install",)  # steps that need the network


REGRESSION = "  regression:\n    max_drop_pass_rate: 0.02\n"
MARKER = "<!-- evalwh-report -->"
Step = tuple[str, str, bool]  # name, shell script, whether it runs after a failed step


def ci_env(cwd: Path, forge: FakeForge | None, **extra: str) -> dict[str, str]:
    """The environment of a CI step: this Python's evalwh and the fake gh first on PATH."""
    bin_dir = cwd.parent / "bin"
    bin_dir.mkdir(exist_ok=True)
    gh = bin_dir / "gh"
    gh.write_text(
        f'#!/bin/sh\nexec "{sys.executable}" "{ROOT / "tests" / "fakes" / "gh.py"}" "$@"\n'
    )
    gh.chmod(0o755)
    path = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), os.environ["PATH"]])
    return {
        **os.environ,
        "PATH": path,
        "COLUMNS": "200",
        "FAKE_GH_API": forge.url if forge else "http://127.0.0.1:9",
        "FAKE_GH_LOG": str(cwd.parent / "gh.log"),
        **extra,
    }


def run_ci(
    steps: list[Step], cwd: Path, env: dict[str, str]
) -> dict[str, subprocess.CompletedProcess]:
    """Each step's script in bash -e -o pipefail (as the CI systems run them), in order; after
    a failed step only the steps that run always."""
    results: dict[str, subprocess.CompletedProcess] = {}
    failed = False
    for name, script, always in steps:
        if failed and not always:
            continue
        result = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", script],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
        )
        results[name] = result
        failed = failed or result.returncode != 0
    return results


def github_steps(
    workflow: dict, event: str, context: dict[str, str]
) -> list[tuple[Step, dict[str, str]]]:
    """The workflow's `run:` steps this event runs, `${{ ... }}` filled from ``context``, each
    with its own `env:`."""

    def fill(text: str) -> str:
        for expression, value in context.items():
            text = text.replace("${{ " + expression + " }}", value)
        assert "${{" not in text, text
        return text

    steps = []
    for step in workflow["jobs"]["eval"]["steps"]:
        if "run" not in step or any(word in step["run"] for word in OFFLINE):
            continue
        condition = step.get("if")
        assert condition in CONDITIONS, f"teach this test the condition {condition!r}"
        if not CONDITIONS[condition][event]:
            continue
        env = {k: fill(str(v)) for k, v in (step.get("env") or {}).items()}
        steps.append(
            (
                (
                    step["name"],
                    fill(step["run"]),
                    condition is not None and "always()" in condition,
                ),
                env,
            )
        )
    return steps


def run_github(
    workflow: dict, event: str, cwd: Path, forge: FakeForge
) -> dict[str, subprocess.CompletedProcess]:
    context = {
        "github.sha": f"sha-{event}",
        "github.token": forge.token,
        "github.repository": "team/app",
        "github.event.pull_request.number": "7",
    }
    env = ci_env(cwd, forge, GITHUB_STEP_SUMMARY=str(cwd / "summary.md"))
    results: dict[str, subprocess.CompletedProcess] = {}
    failed = False
    for (name, script, always), step_env in github_steps(workflow, event, context):
        if failed and not always:
            continue
        results.update(run_ci([(name, script, always)], cwd, {**env, **step_env}))
        failed = failed or results[name].returncode != 0
    return results


@pytest.mark.slow  # the longest of its kind; CI runs it (`pytest -m slow`)
def test_ci_doc_embeds_the_workflow_and_its_steps_work(tmp_path: Path) -> None:
    workflow = _recipe(WORKFLOW)
    repo = _repo(tmp_path)
    config = repo / "examples" / "quickstart" / "eval.yaml"

    with FakeForge() as forge:
        thread = ("github", "team/app", 7)
        forge.add(thread, "LGTM")  # someone else's comment: never touched
        main = run_github(workflow, "push", repo, forge)
        assert main["Run the evals (the gate)"].returncode == 0, main[
            "Run the evals (the gate)"
        ].stderr
        assert main["Pin the baseline"].returncode == 0
        assert "**Gate: ✅ passed**" in (repo / "evalwh-report.md").read_text()
        assert "Comment on the pull request" not in main and forge.comments[thread] == [
            {"id": 1001, "body": "LGTM"}
        ]

        # a pull request that makes mock-small answer terse prompts badly more often
        _regress(config)
        pr = run_github(workflow, "pull_request", repo, forge)
        gate = pr["Run the evals (the gate)"]
        assert gate.returncode == 1 and "FAIL pass_rate_drop <= 0.02 vs baseline" in gate.stdout
        assert pr["Reports, even when the gate failed"].returncode == 0
        report = (repo / "evalwh-report.md").read_text()
        assert "**Gate: ❌ failed**" in report and "### vs baseline" in report
        assert report in (repo / "summary.md").read_text()
        assert "Pin the baseline" not in pr
        junit = (repo / "evalwh-junit.xml").read_text()
        assert "<failure" in junit and "pass_rate_drop" in junit
        assert (repo / "evalwh-report.html").read_text().startswith("<!doctype html>")
        comment = pr["Comment on the pull request"]
        assert comment.returncode == 0, comment.stderr
        assert forge.comments[thread][1]["body"] == f"{MARKER}\n{report}"

        # a second push to the pull request updates that comment, and adds none
        pr_again = run_github(workflow, "pull_request", repo, forge)
        assert pr_again["Comment on the pull request"].returncode == 0
        assert [c["id"] for c in forge.comments[thread]] == [1001, 1002]
        assert forge.requests[-2:] == [
            ("GET", "/repos/team/app/issues/7/comments"),
            ("PATCH", "/repos/team/app/issues/comments/1002"),
        ]
    calls = [json.loads(line) for line in (tmp_path / "gh.log").read_text().splitlines()]
    assert [c[:3] for c in calls] == [
        ["api", "--paginate", "repos/team/app/issues/7/comments"],
        ["api", "--method", "POST"],
        ["api", "--paginate", "repos/team/app/issues/7/comments"],
        ["api", "--method", "PATCH"],
    ]


def _recipe(path: Path) -> dict:
    """A recipe of examples/ci/, parsed, after checking docs/ci.md shows it verbatim."""
    text = path.read_text(encoding="utf-8")
    assert f"```yaml\n{text}```" in CI.read_text(encoding="utf-8"), path.name
    return yaml.safe_load(text)


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(
        QUICKSTART, repo / "examples" / "quickstart", ignore=shutil.ignore_patterns(".evalwh")
    )
    return repo


def _regress(config: Path) -> None:
    """The pull request's change: mock-small answers terse prompts badly more often, and the
    suite limits the drop versus the baseline."""
    config.write_text(
        config.read_text().replace(TERSE_RULE, TERSE_RULE.replace("0.3", "0.8")) + REGRESSION
    )


# -- GitLab CI ------------------------------------------------------------------------------
GITLAB = ROOT / "examples" / "ci" / "gitlab-ci.yml"


def gitlab_steps(pipeline: dict, job: str) -> list[Step]:
    """A job's `script` (stops at the first failure) and `after_script` (runs always), its
    `extends` template filled in; `before_script` installs evalwh, already here."""
    spec = {**pipeline[pipeline[job]["extends"]], **pipeline[job]}
    return [
        ("script", "\n".join(spec["script"]), False),
        ("after_script", "\n".join(spec["after_script"]), True),
    ]


# `slow` (CI runs it): the GitHub recipe's test runs the same steps by default
@pytest.mark.slow
def test_the_gitlab_recipe_gates_keeps_the_reports_and_one_merge_request_note(
    tmp_path: Path,
) -> None:
    pipeline = _recipe(GITLAB)
    assert pipeline[".evals"]["artifacts"]["reports"]["junit"] == "evalwh-junit.xml"
    assert pipeline["evals-merge-request"]["cache"]["policy"] == "pull"
    repo = _repo(tmp_path)
    with FakeForge() as forge:
        api = f"{forge.url}/api/v4"
        common = {"CI_API_V4_URL": api, "CI_PROJECT_ID": "42", "EVALWH_GITLAB_TOKEN": forge.token}
        main_env = ci_env(repo, forge, CI_COMMIT_SHA="sha-main", **common)
        main = run_ci(gitlab_steps(pipeline, "evals-default-branch"), repo, main_env)
        assert main["script"].returncode == 0, main["script"].stderr
        assert "baseline 'baseline'" in main["script"].stdout + main["script"].stderr
        assert main["after_script"].returncode == 0 and forge.requests == []  # no MR: no note

        _regress(repo / "examples" / "quickstart" / "eval.yaml")
        thread = ("gitlab", "42", 3)
        forge.add(thread, "Please rebase")
        for push in ("sha-mr-1", "sha-mr-2"):
            env = ci_env(repo, forge, CI_COMMIT_SHA=push, CI_MERGE_REQUEST_IID="3", **common)
            mr = run_ci(gitlab_steps(pipeline, "evals-merge-request"), repo, env)
            assert mr["script"].returncode == 1, mr["script"].stderr  # the gate failed
            assert mr["after_script"].returncode == 0, mr["after_script"].stderr
        report = (repo / "evalwh-report.md").read_text()
        assert "**Gate: ❌ failed**" in report
        assert "<failure" in (repo / "evalwh-junit.xml").read_text()
        assert (repo / "evalwh-report.html").is_file()
        notes = forge.comments[thread]
        assert [n["body"] for n in notes] == ["Please rebase", f"{MARKER}\n{report}"]
        notes_path = "/api/v4/projects/42/merge_requests/3/notes"
        assert forge.requests == [
            ("GET", notes_path),
            ("POST", notes_path),
            ("GET", notes_path),
            ("PUT", f"{notes_path}/{notes[1]['id']}"),
        ]


def test_the_gitlab_note_step_fails_loudly_on_a_refused_token(tmp_path: Path) -> None:
    # a wrong EVALWH_GITLAB_TOKEN: curl -f makes the step fail (the job log says 401), and no
    # note is posted
    pipeline = yaml.safe_load(GITLAB.read_text(encoding="utf-8"))
    note_step = pipeline[".evals"]["after_script"][-1]
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "evalwh-report.md").write_text("## evalwh\n")
    with FakeForge() as forge:
        env = ci_env(
            tmp_path / "repo",
            forge,
            CI_API_V4_URL=f"{forge.url}/api/v4",
            CI_PROJECT_ID="42",
            CI_MERGE_REQUEST_IID="3",
            EVALWH_GITLAB_TOKEN="wrong",
        )
        done = run_ci([("note", note_step, True)], tmp_path / "repo", env)["note"]
        assert done.returncode != 0 and "401" in done.stderr
        assert forge.comments == {}


# -- CircleCI -------------------------------------------------------------------------------
CIRCLECI = ROOT / "examples" / "ci" / "circleci.yml"


def circleci_steps(config: dict, branch: str) -> list[Step]:
    """The job's `run` steps on ``branch`` (CircleCI runs each with bash -eo pipefail), a
    `when: equal: [X, << pipeline.git.branch >>]` block's steps only on branch X."""
    steps: list[Step] = []

    def add(items: list) -> None:
        for item in items:
            if isinstance(item, dict) and "when" in item:
                wanted, actual = item["when"]["condition"]["equal"]
                assert actual == "<< pipeline.git.branch >>", actual
                if wanted == branch:
                    add(item["when"]["steps"])
            elif isinstance(item, dict) and "run" in item:
                run = item["run"]
                if isinstance(run, str):
                    run = {"name": run, "command": run}
                if not any(word in run["command"] for word in OFFLINE):
                    steps.append((run["name"], run["command"], run.get("when") == "always"))

    add(config["jobs"]["evals"]["steps"])
    return steps


# `slow` (CI runs it): the GitHub recipe's test runs the same steps by default
@pytest.mark.slow
def test_the_circleci_recipe_gates_keeps_the_reports_and_one_pull_request_comment(
    tmp_path: Path,
) -> None:
    config = _recipe(CIRCLECI)
    stored = [s for s in config["jobs"]["evals"]["steps"] if isinstance(s, dict)]
    assert {"path": "evalwh-report.html"} in [s.get("store_artifacts") for s in stored]
    assert {"path": "test-results"} in [s.get("store_test_results") for s in stored]
    repo = _repo(tmp_path)
    with FakeForge() as forge:
        common = {
            "GITHUB_API_URL": forge.url,
            "GITHUB_TOKEN": forge.token,
            "CIRCLE_PROJECT_USERNAME": "team",
            "CIRCLE_PROJECT_REPONAME": "app",
        }
        main = run_ci(
            circleci_steps(config, "main"), repo, ci_env(repo, forge, CIRCLE_SHA1="m1", **common)
        )
        assert main["Run the evals (the gate)"].returncode == 0
        assert main["Pin the baseline"].returncode == 0 and forge.requests == []

        _regress(repo / "examples" / "quickstart" / "eval.yaml")
        thread = ("github", "team/app", 9)
        for push in ("pr-1", "pr-2"):
            env = ci_env(
                repo,
                forge,
                CIRCLE_SHA1=push,
                CIRCLE_PULL_REQUEST="https://github.com/team/app/pull/9",
                **common,
            )
            pr = run_ci(circleci_steps(config, "feature"), repo, env)
            assert pr["Run the evals (the gate)"].returncode == 1
            assert "Pin the baseline" not in pr
            assert pr["Comment on the pull request"].returncode == 0, pr[
                "Comment on the pull request"
            ].stderr
        report = (repo / "evalwh-report.md").read_text()
        assert "**Gate: ❌ failed**" in report
        assert "<failure" in (repo / "test-results" / "evalwh-junit.xml").read_text()
        assert (repo / "evalwh-report.html").is_file()
        assert [c["body"] for c in forge.comments[thread]] == [f"{MARKER}\n{report}"]
        assert [m for m, _ in forge.requests] == ["GET", "POST", "GET", "PATCH"]


# -- .pre-commit-hooks.yaml -----------------------------------------------------------------
def test_the_pre_commit_hook_validates_each_eval_yaml_it_is_given(tmp_path: Path) -> None:
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert hook["id"] == "evalwh-validate" and hook["language"] == "python"
    files = re.compile(hook["files"])
    assert files.search("eval.yaml") and files.search("suites/qa/eval.yml")
    assert not files.search("docker-compose.yaml") and not files.search("eval.yaml.bak")
    good = _repo(tmp_path) / "examples" / "quickstart"
    bad = tmp_path / "bad"
    shutil.copytree(good, bad)
    (bad / "eval.yaml").write_text(
        (good / "eval.yaml").read_text().replace("\nmodels:", "\nmodles:", 1)
    )
    env = ci_env(tmp_path, None)
    entry = shlex.split(hook["entry"])

    def hook_on(*paths: Path) -> subprocess.CompletedProcess:
        args = [*entry, *map(str, paths)]
        return subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True)

    assert hook_on(good / "eval.yaml").returncode == 0
    failed = hook_on(good / "eval.yaml", bad / "eval.yaml")
    assert failed.returncode == 1 and str(bad / "eval.yaml") in failed.stderr
    assert "unknown key 'modles'" in failed.stderr and "did you mean 'models'?" in failed.stderr
