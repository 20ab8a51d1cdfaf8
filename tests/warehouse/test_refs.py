"""Run references (evalwh/warehouse/refs.py, resolved by Warehouse.resolve): a run id, a
unique prefix, a label, 'latest', 'previous', 'latest~N' and 'git:REF', and each refusal's
exact text (the prefix rule at its boundary, how far a git reference looked). Resolving a git ref to its commits runs against a stand-in git on PATH: a ref that could be an option is refused before git runs, a hanging git is stopped at
the time bound, and git's own failures are named with the folder and the fix."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from evalwh.errors import RunNotFoundError, UsageError
from evalwh.warehouse.refs import relative_offset
from evalwh.warehouse.store import Warehouse
from tests.conftest import write
from tests.warehouse.test_store import warehouse


def fake_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    folder = tmp_path / "fakebin"
    git = write(folder / "git", "#!/bin/sh\n" + script)
    git.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}:/usr/bin:/bin")


@pytest.mark.parametrize("ref", ["-x", "a b", ""])
def test_a_ref_that_could_be_an_option_or_is_not_a_ref_is_refused_before_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ref: str
) -> None:
    from evalwh.warehouse.refs import git_ancestors

    fake_git(tmp_path, monkeypatch, "echo deadbeef\n")
    with pytest.raises(UsageError) as info:
        git_ancestors(ref, tmp_path)
    assert not isinstance(info.value, RunNotFoundError)
    assert str(info.value) == (
        f"git:{ref}: not a git ref (use a branch, tag or commit, e.g. git:main, git:v1.2)"
    )


def test_a_git_that_hangs_is_stopped_at_the_time_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalwh.warehouse import refs

    fake_git(tmp_path, monkeypatch, "exec sleep 5\n")
    monkeypatch.setattr(refs, "GIT_TIMEOUT_S", 0.3)
    with pytest.raises(UsageError) as info:
        refs.git_ancestors("main", tmp_path)
    assert str(info.value).startswith(f"git:main: could not run git in {tmp_path} (")
    assert "timed out after 0.3 seconds" in str(info.value)


def test_git_that_cannot_start_is_named_with_the_folder(tmp_path: Path) -> None:
    from evalwh.warehouse.refs import git_ancestors

    gone = tmp_path / "gone"
    with pytest.raises(UsageError) as info:
        git_ancestors("main", gone)
    assert str(info.value).startswith(f"git:main: could not run git in {gone} (")


@pytest.mark.parametrize(
    ("stderr", "reason"),
    [("warning: x\\nfatal: bad revision nope", "fatal: bad revision nope"), ("", None)],
)
def test_a_ref_git_cannot_resolve_gives_git_s_last_line_and_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stderr: str, reason: str | None
) -> None:
    from evalwh.warehouse.refs import git_ancestors

    fake_git(tmp_path, monkeypatch, f"printf '{stderr}' >&2\nexit 128\n")
    with pytest.raises(RunNotFoundError) as info:
        git_ancestors("nope", tmp_path)
    assert str(info.value) == (
        f"git:nope: git cannot resolve it in {tmp_path} ({reason or 'unknown revision'}); run "
        "from the repository of the eval (or give -c CONFIG inside it)"
    )


def test_a_resolved_ref_lists_git_s_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalwh.warehouse.refs import git_ancestors

    fake_git(tmp_path, monkeypatch, "printf 'aaa\\nbbb\\n'\n")
    assert git_ancestors("main", tmp_path) == ["aaa", "bbb"]


LIST_HINT = (
    "(use a run id, a unique prefix, a label, 'latest', 'previous', 'latest~N', 'git:REF' or a"
    " baseline name; see `evalwh list` and `evalwh baseline list`)"
)


def refused(store_: Warehouse, ref: str) -> str:
    with pytest.raises(RunNotFoundError) as info:
        store_.resolve(ref)
    return str(info.value)


def test_run_references(quickstart_runs: tuple[Path, list[str]]) -> None:
    out, (run_a, run_b) = quickstart_runs
    wh = Warehouse(out / "warehouse.duckdb")
    assert wh.resolve(run_a) == run_a
    assert wh.resolve("latest") == run_b
    assert wh.resolve("first") == run_a
    assert wh.resolve(run_b[:-2]) == run_b
    with pytest.raises(RunNotFoundError, match="no run matches"):
        wh.resolve("zzz")
    with pytest.raises(RunNotFoundError, match="prefix of several runs"):
        wh.resolve("20")


@pytest.mark.parametrize(
    ("ref", "offset"),
    [("previous", 1), ("latest~0", 0), ("latest~3", 3), ("latest~123456", 123456)],
)
def test_a_relative_reference_names_its_offset(ref: str, offset: int) -> None:
    assert relative_offset(ref) == offset


@pytest.mark.parametrize("ref", ["latest", "PREVIOUS", "latest~", "latest~1234567", "x~1"])
def test_other_references_are_not_relative(ref: str) -> None:
    assert relative_offset(ref) is None


def test_each_unresolvable_reference_says_what_would_resolve(tmp_path: Path) -> None:
    runs = warehouse(tmp_path, "r-1", "r-2")
    assert runs.resolve("previous") == "r-1" and runs.resolve("latest~1") == "r-1"
    assert refused(runs, "latest~5") == (
        "no run 'latest~5': the newest run's suite has 5 run(s) or fewer (see `evalwh list`)"
    )
    assert refused(runs, "baseline") == (
        "no baseline is pinned yet: pin one with `evalwh baseline set RUN`"
    )
    assert refused(runs, "nope") == f"no run matches 'nope' {LIST_HINT}"
    assert refused(runs, "Baseline") == f"no run matches 'Baseline' {LIST_HINT}"


def test_a_prefix_must_name_one_run_and_the_refusal_lists_five(tmp_path: Path) -> None:
    two = warehouse(tmp_path / "two", "run-a1", "run-a2", "other")
    assert two.resolve("oth") == "other"  # a unique prefix
    assert refused(two, "run-a") == (
        "'run-a' is a prefix of several runs (run-a2, run-a1); give more of the id"
    )
    seven = warehouse(tmp_path / "seven", *(f"r{i}" for i in range(7)))
    assert refused(seven, "r") == (
        "'r' is a prefix of several runs (r6, r5, r4, r3, r2); give more of the id"
    )


def test_a_git_reference_with_no_run_at_its_commits_says_how_far_it_looked(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "one"],
                 ["commit", "-q", "--allow-empty", "-m", "two"]):  # fmt: skip
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    runs = warehouse(tmp_path, "r-1", git_dir=repo)
    assert refused(runs, "git:HEAD") == (
        "no run recorded at git:HEAD or any of its last 2 ancestor commit(s) (runs record the"
        " commit of the config's repository)"
    )
