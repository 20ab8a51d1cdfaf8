"""The warehouse's run references, run ids, run rows and label rows (evalwh.warehouse.store,
evalwh.warehouse.refs), called directly: each refusal's exact text, the prefix rule at its
boundary, what `create_run` and `insert_labels` store, and the label each write carries.

Written from mutants that survived the mutation run (docs/testing.md).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import duckdb
import pytest

from evalwh.analysis.baselines import remove_baseline, set_baseline
from evalwh.config.model import Case, Label, PointLabel
from evalwh.errors import RunNotFoundError
from evalwh.warehouse import connect, store
from evalwh.warehouse.connect import write_connection
from evalwh.warehouse.refs import relative_offset
from evalwh.warehouse.store import Warehouse, new_run_id
from tests.test_boundaries import add_run

LIST_HINT = (
    "(use a run id, a unique prefix, a label, 'latest', 'previous', 'latest~N', 'git:REF' or a"
    " baseline name; see `evalwh list` and `evalwh baseline list`)"
)


def warehouse(tmp_path: Path, *run_ids: str, git_dir: Path | None = None) -> Warehouse:
    path = tmp_path / "w.duckdb"
    with write_connection(path) as con:
        for run_id in run_ids:
            add_run(con, run_id, [])
    return Warehouse(path, git_dir=git_dir)


def refused(store_: Warehouse, ref: str) -> str:
    with pytest.raises(RunNotFoundError) as info:
        store_.resolve(ref)
    return str(info.value)


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


def test_a_run_id_is_its_utc_start_to_the_millisecond_and_four_hex_digits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    at = datetime(2026, 12, 2, 5, 6, 7, 500_000, tzinfo=timezone.utc)
    assert re.fullmatch(r"2026-12-02T050607\.500-[0-9a-f]{4}", new_run_id(at))
    # the clock is read in UTC whatever the machine's zone
    monkeypatch.setenv("TZ", "Pacific/Kiritimati")  # UTC+14: another day
    time.tzset()
    try:
        before = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H%M%S")
        made = new_run_id()[:17]
        after = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H%M%S")
    finally:
        monkeypatch.undo()
        time.tzset()
    assert before <= made <= after


def run_row(**extra: Any) -> dict[str, Any]:
    return {
        "run_id": "r-1",
        "suite": "s",
        "status": "running",
        "config_hash": "h",
        "dataset_hash": "d",
        "n_planned": 0,
        "started_at": datetime(2026, 12, 2, tzinfo=timezone.utc),
        "evalwh_version": "t",
        **extra,
    }


def test_a_new_run_stores_its_json_columns_as_json_and_names_its_process(
    tmp_path: Path,
) -> None:
    runs = warehouse(tmp_path)
    runs.create_run(
        run_row(config_snapshot={"name": "s"}, filters={"case": ["c1"]}, datasources=None)
    )
    con = duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True)
    try:
        row = con.execute(
            "SELECT config_snapshot, filters, datasources, host, pid FROM runs"
        ).fetchone()
    finally:
        con.close()
    assert row is not None
    assert (json.loads(row[0]), json.loads(row[1]), row[2]) == (
        {"name": "s"},
        {"case": ["c1"]},
        None,
    )
    assert (row[3], row[4]) == (store.HOST, os.getpid())


def only_row(path: Path, sql: str) -> dict[str, Any]:
    """The one row ``sql`` selects from the warehouse at ``path``, by column name."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        cursor = con.execute(sql)
        names = [d[0] for d in cursor.description]
        rows = cursor.fetchall()
    finally:
        con.close()
    assert len(rows) == 1
    return dict(zip(names, rows[0], strict=True))


def run_state(tmp_path: Path) -> dict[str, Any]:
    return only_row(
        tmp_path / "w.duckdb",
        "SELECT status, totals, datasources, n_planned, lease_token, finished_at IS NOT NULL"
        " AS finished FROM runs WHERE run_id = 'r-1'",
    )


def test_finishing_a_run_records_its_end_and_releases_its_lease(tmp_path: Path) -> None:
    runs = warehouse(tmp_path)
    runs.create_run(run_row(lease_token="tok"))
    runs.finish_run("r-1", "exporting", {"n": 3}, token="other")  # not its lease: nothing
    assert run_state(tmp_path)["status"] == "running"
    runs.finish_run(
        "r-1", "exporting", {"n": 3}, token="tok", datasources=[{"name": "src"}], n_planned=7
    )
    state = run_state(tmp_path)
    assert (json.loads(state["totals"]), json.loads(state["datasources"])) == (
        {"n": 3},
        [{"name": "src"}],
    )
    assert (state["status"], state["n_planned"], state["lease_token"], state["finished"]) == (
        "exporting",
        7,
        "tok",  # exporting keeps the lease until the export is in place
        True,
    )
    runs.finish_run("r-1", "interrupted", token="tok")  # no totals or datasources: kept
    state = run_state(tmp_path)
    assert (state["status"], json.loads(state["totals"]), state["n_planned"]) == (
        "interrupted",
        {"n": 3},
        7,
    )
    assert state["lease_token"] is None


def test_the_final_status_releases_the_lease_and_only_for_its_holder(tmp_path: Path) -> None:
    runs = warehouse(tmp_path)
    runs.create_run(run_row(lease_token="tok"))
    runs.set_status("r-1", "failed", token="other")
    assert run_state(tmp_path)["status"] == "running"
    runs.set_status("r-1", "completed", token="tok")
    state = run_state(tmp_path)
    assert (state["status"], state["lease_token"]) == ("completed", None)


def labels_of(tmp_path: Path) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True)
    try:
        return con.execute(
            "SELECT kind, comparison, case_id, prefer, label, note FROM labels "
            "ORDER BY kind, case_id, comparison NULLS FIRST"
        ).fetchall()
    finally:
        con.close()


CONFIG = SimpleNamespace(
    labels=[Label("cmp", "c1", "candidate", "longer")],
    point_labels=[PointLabel("judged", "c2", "fail")],
    cases=[Case(id="c1", human_label="pass"), Case(id="c2"), Case(id="c3", human_label=0.5)],
)


def test_a_runs_labels_are_the_configs_pairwise_pointwise_and_case_labels(
    tmp_path: Path,
) -> None:
    runs = warehouse(tmp_path, "r-1")
    runs.insert_labels("r-1", CONFIG)  # pointwise by default
    assert labels_of(tmp_path) == [
        ("pairwise", "cmp", "c1", "candidate", None, "longer"),
        ("pointwise", None, "c1", None, '"pass"', None),  # a case's own label: every criterion
        ("pointwise", "judged", "c2", None, '"fail"', None),
        ("pointwise", None, "c3", None, "0.5", None),
    ]


def test_a_no_look_run_stores_only_the_pairwise_labels(tmp_path: Path) -> None:
    # in a no-look run a case's label is case data the judge may not see stored as a label
    runs = warehouse(tmp_path, "r-1")
    runs.insert_labels("r-1", CONFIG, pointwise=False)
    assert labels_of(tmp_path) == [("pairwise", "cmp", "c1", "candidate", None, "longer")]


def write_labels(monkeypatch: pytest.MonkeyPatch, *modules: Any) -> list[str]:
    """The ``what`` of every write_transaction the given modules call from now on (the label
    that names a write in the log of a lake's conflict retries)."""
    labels: list[str] = []
    real = connect.write_transaction

    def spy(path: Any, body: Any, *, what: str = "write") -> Any:
        labels.append(what)
        return real(path, body, what=what)

    for module in modules:
        monkeypatch.setattr(module, "write_transaction", spy)
    return labels


def test_each_write_carries_its_label(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    labels = write_labels(monkeypatch, store, connect)  # baselines import it when called
    runs = warehouse(tmp_path)
    runs.create_run(run_row())
    runs.insert_labels("r-1", CONFIG)
    runs.insert_labels("r-1", SimpleNamespace(labels=[], point_labels=[], cases=[]))  # none
    set_baseline(runs, "r-1", "prod")
    remove_baseline(runs, "prod")
    runs.finish_run("r-1", "completed")
    runs.set_status("r-1", "completed")
    assert labels == [
        "create a run",
        "store labels",
        "pin baseline prod",
        "unpin baseline prod",
        "finish run r-1",
        "set the status of run r-1",
    ]
