"""sql/resolve_git.sql: `git:REF` finds the run of that commit, or of its nearest ancestor."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import evalwh
from evalwh.warehouse import queries
from tests.builders import git
from tests.conftest import run_cli
from tests.sql.conftest import _runs, _warehouse


def test_git_ref_finds_the_run_of_that_commit_or_its_nearest_ancestor(
    quickstart: Path, tmp_path: Path
) -> None:
    from evalwh.errors import RunNotFoundError, UsageError

    repo = quickstart.parent
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "one")
    first = git(repo, "rev-parse", "HEAD")
    out = tmp_path / "out"
    run_one = evalwh.run_eval(quickstart, output_dir=out).run_id
    git(repo, "tag", "v1")
    (repo / "notes.txt").write_text("two\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "two")  # no run at this commit
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "notes.txt").write_text("three\n")
    git(repo, "commit", "-q", "-am", "three")
    run_three = evalwh.run_eval(quickstart, output_dir=out).run_id
    view = evalwh.open_warehouse(config=quickstart, output_dir=out)
    assert view.resolve("git:v1") == run_one
    assert view.resolve(f"git:{first[:10]}") == run_one
    assert view.resolve("git:main") == run_one  # main's head has no run: its parent has
    assert view.resolve("git:feature") == run_three
    with pytest.raises(RunNotFoundError, match="cannot resolve"):
        view.resolve("git:no-such-branch")
    # the attack: a ref that is an option of git is refused before git runs
    with pytest.raises(UsageError, match="not a git ref"):
        view.resolve("git:--output=/tmp/pwned")
    assert not Path("/tmp/pwned").exists()
    # usable as --baseline of a run
    done = run_cli("gate", "latest", "--baseline", "git:v1", "-c", str(quickstart), "-o", str(out))
    assert done.returncode in (0, 1) and "error" not in done.stderr.lower()


def test_git_references_take_the_nearest_commit_then_the_newest_run(tmp_path: Path) -> None:
    con = _warehouse(tmp_path)
    t1, t2, t3 = (f"2026-01-01 00:00:0{i}+00" for i in (1, 2, 3))
    _runs(con, [("x1", "s", t1, "c1"), ("y1", "s", t2, "c1"), ("y2", "s", t2, "c1")])
    _runs(con, [("z9", "s", t3, "c2"), ("n0", "s", t3, None)])

    def found(commits: list[str]) -> list[Any]:
        rows = queries.run_query(con, "resolve_git", commits=commits).to_pylist()
        return [(r["run_id"], r["distance"]) for r in rows]

    # c1 is nearer than c2 (a later run at c2 does not win); at c1, the newest start, and of
    # two at the same instant the greatest run id
    assert found(["c0", "c1", "c2"]) == [("y2", 2)]
    assert found(["c2", "c1"]) == [("z9", 1)]
    assert found(["c7"]) == []
