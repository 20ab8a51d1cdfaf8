"""A sharded run's warehouse side (evalwh/warehouse/shards.py): reading `--shard K/N` and
`--run-id` (each refusal with the form and an example), a shard joining its run or being
refused by run id (another shard count, config, dataset, privacy, or a finished run), the
conclusion of the run by exactly one process, and the one row kept when two first shards
both insert it. They run in this process, on real DuckDB files and on a DuckLake whose
catalog is a local DuckDB file (no server). Whole sharded runs through the CLI are in
tests/features/test_scale_out.py; which shard a case belongs to is evalwh/engine/plan.py's."""

from __future__ import annotations

import json
import logging
import os
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb
import pytest

from evalwh.errors import UsageError
from evalwh.warehouse import lake as lakemod
from evalwh.warehouse import shards
from evalwh.warehouse.lake import LakeTarget
from evalwh.warehouse.lease import HOST
from evalwh.warehouse.shards import _check_join, check_run_id, parse_shard
from tests.warehouse.test_store import write_labels


def _set(db: Path, run_id: str, **columns: Any) -> None:
    with duckdb.connect(str(db)) as con:
        sets = ", ".join(f"{name} = ?" for name in columns)
        con.execute(f"UPDATE runs SET {sets} WHERE run_id = ?", [*columns.values(), run_id])


def _runs(db: Path, run_id: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(
            "SELECT status, host, pid, lease_token FROM runs WHERE run_id = ?", [run_id]
        ).fetchall()


def _shard_row(run_id: str, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "run_id": run_id,
        "suite": "s",
        "status": "running",
        "config_hash": "c1",
        "dataset_hash": "d1",
        "filters": json.dumps({"shards": 2}),
        "no_look": False,
        "n_planned": 4,
        "started_at": datetime.now(timezone.utc),
        "evalwh_version": "v",
    }
    return {**base, **fields}


@pytest.mark.parametrize(
    "text,expected",
    [("1/1", (1, 1)), ("4/4", (4, 4)), (" 3 / 8 ", (3, 8)), ("10000/10000", (10000, 10000))],
)
def test_a_shard_is_k_of_n(text: str, expected: tuple[int, int]) -> None:
    assert parse_shard(text) == expected


@pytest.mark.parametrize("text", ["0/4", "5/4", "1/0", "1/10001", "3", "a/b", "-1/4"])
def test_a_bad_shard_is_refused_with_the_form(text: str) -> None:
    with pytest.raises(UsageError, match="K/N"):
        parse_shard(text)


def test_a_bad_shard_is_refused_with_the_form_and_an_example() -> None:
    with pytest.raises(UsageError) as info:
        shards.parse_shard("5/4")
    assert str(info.value) == (
        "--shard '5/4' is not K/N with 1 <= K <= N <= 10000 (e.g. --shard 3/8: the third of "
        "eight shards)"
    )


@pytest.mark.parametrize("run_id", ["../x", "a/b", "..", "x..y", "", "-x", "a" * 129, "a b"])
def test_a_run_id_that_could_leave_the_exports_folder_is_refused(run_id: str) -> None:
    with pytest.raises(UsageError, match="not a usable run id"):
        check_run_id(run_id)


def test_a_run_id_of_128_characters_is_accepted() -> None:
    assert check_run_id("a" * 128) == "a" * 128
    assert check_run_id("nightly-2026.11.30_1:2") == "nightly-2026.11.30_1:2"


def test_a_bad_run_id_is_refused_with_the_characters_allowed_and_an_example() -> None:
    with pytest.raises(UsageError) as info:
        shards.check_run_id("../x")
    assert str(info.value) == (
        "--run-id '../x' is not a usable run id: use 1-128 letters, digits, '.', '_', "
        "':' or '-', starting with a letter or digit (e.g. nightly-2026-11-30-${CI_PIPELINE_ID})"
    )


def _found(**fields: Any) -> dict[str, Any]:
    base = {
        "filters": json.dumps({"shards": 4}),
        "config_hash": "c1",
        "dataset_hash": "d1",
        "no_look": False,
        "status": "running",
    }
    return {**base, **fields}


ROW = {"run_id": "r-7", "config_hash": "c1", "dataset_hash": "d1", "no_look": False}


def _refusal(found: dict[str, Any], row: dict[str, Any] = ROW, shards: int = 4) -> str:
    with pytest.raises(UsageError) as info:
        _check_join(found, row, shards)
    return str(info.value)


def test_a_matching_running_or_interrupted_run_is_joined() -> None:
    for status in ("running", "interrupted"):
        _check_join(_found(status=status), ROW, 4)  # no error


def test_a_run_with_no_filters_at_all_is_not_a_sharded_run() -> None:
    # a plain run's filters column is empty: the shard is told so, by run id, not a TypeError
    for filters in (None, ""):
        assert _refusal(_found(filters=filters)) == (
            "run r-7 exists and is not a run of 4 shards (it has no shards): give every shard "
            "the same N, or another --run-id"
        )
    assert "(it has 3 shards)" in _refusal(_found(filters=json.dumps({"shards": 3})))


def test_another_config_dataset_privacy_or_a_finished_run_is_refused_by_run_id() -> None:
    assert _refusal(_found(config_hash="c2")) == (
        "run r-7 was started from another config (config_hash differs): every shard must run "
        "the same eval.yaml and cases"
    )
    assert _refusal(_found(dataset_hash="d2")).startswith(
        "run r-7 was started from another dataset (dataset_hash differs)"
    )
    assert _refusal(_found(no_look=True)) == (
        "run r-7 was started as a no-look run and this shard is not: give every shard the "
        "same privacy.no_look (and --no-look)"
    )
    assert _refusal(_found(), {**ROW, "no_look": True}) == (
        "run r-7 was not started as a no-look run and this shard is: give every shard the "
        "same privacy.no_look (and --no-look)"
    )
    assert _refusal(_found(status="completed")) == (
        "run r-7 is already completed: a finished run takes no more shards (start a new run "
        "with another --run-id)"
    )


def test_the_first_shard_creates_the_run_as_this_process_and_the_next_joins_it(
    tmp_path: Path,
) -> None:
    # a row carrying another process's host, pid and token is stamped with this one's
    db = tmp_path / "w.duckdb"
    row = _shard_row("nightly-1", host="ci-runner-7", pid=6257, lease_token="theirs")
    assert shards.join(db, row, 2) is True
    [(status, host, pid, token)] = _runs(db, "nightly-1")
    assert (status, host, pid) == ("running", HOST, os.getpid())
    assert re.fullmatch(r"[0-9a-f]{16}", token), token
    assert shards.join(db, _shard_row("nightly-1"), 2) is False  # joined, not created
    assert _runs(db, "nightly-1") == [("running", HOST, os.getpid(), token)]  # one row, as was


def test_join_and_conclusion_name_their_run_to_the_write_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "w.duckdb"
    names = write_labels(monkeypatch, shards)
    shards.join(db, _shard_row("r-2", n_planned=0), 2)
    shards.join(db, _shard_row("r-2", n_planned=0), 2)
    assert shards.claim_conclusion(db, "r-2") is not None
    assert names == ["join run r-2", "join run r-2", "conclude run r-2"]


def test_a_shard_joining_a_lake_run_commits_once(
    file_catalog_lake: LakeTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the creator checks that one row stayed (two first shards may both insert); a shard
    # that only joins has nothing to check
    names = write_labels(monkeypatch, shards)
    assert shards.join(file_catalog_lake, _shard_row("r-3"), 2) is True
    assert names == ["join run r-3", "join run r-3"]
    assert shards.join(file_catalog_lake, _shard_row("r-3"), 2) is False
    assert names == ["join run r-3"] * 3


def test_of_two_rows_inserted_for_one_sharded_run_the_smallest_token_stays(tmp_path: Path) -> None:
    from evalwh.warehouse.connect import write_connection
    from evalwh.warehouse.shards import _keep_one

    target = lakemod.parse_target(
        f"ducklake:{tmp_path / 'meta.ducklake'}", {"data_path": "d"}, base=tmp_path, where="t"
    )
    try:
        with write_connection(target) as con:
            for token in ("b-token", "a-token"):
                con.execute(
                    "INSERT INTO runs (run_id, suite, status, config_hash, dataset_hash, "
                    "n_planned, started_at, evalwh_version, lease_token) VALUES "
                    "('r', 's', 'running', 'c', 'd', 1, now(), 'v', ?)",
                    [token],
                )
        assert _keep_one(target, "r", "b-token") is False
        assert _keep_one(target, "r", "a-token") is True
        with write_connection(target) as con:
            assert con.execute("SELECT lease_token FROM runs").fetchall() == [("a-token",)]
    finally:
        lakemod.release(target)


def test_concluding_an_unknown_run_names_it(finished_copy: tuple[Path, str]) -> None:
    db, _ = finished_copy
    with pytest.raises(UsageError) as info:
        shards.claim_conclusion(db, "nope")
    assert str(info.value) == "no run nope"
    assert not isinstance(info.value, shards.ShardsMissing)


def test_an_interrupted_run_with_every_cell_is_concluded_by_this_process(
    finished_copy: tuple[Path, str],
) -> None:
    db, run_id = finished_copy
    _set(db, run_id, status="interrupted", host="ci-runner-7", pid=6257, lease_token="theirs")
    token = shards.claim_conclusion(db, run_id)
    assert token is not None and re.fullmatch(r"[0-9a-f]{16}", token), token
    assert _runs(db, run_id) == [("exporting", HOST, os.getpid(), token)]
    assert shards.claim_conclusion(db, run_id) is None  # being concluded: not again


def test_a_finished_run_is_not_concluded_again(finished_copy: tuple[Path, str]) -> None:
    db, run_id = finished_copy
    before = _runs(db, run_id)
    assert before[0][0] == "completed"
    assert shards.claim_conclusion(db, run_id) is None
    assert _runs(db, run_id) == before


def test_a_run_missing_cells_says_how_many_and_both_ways_out(
    finished_copy: tuple[Path, str],
) -> None:
    db, run_id = finished_copy
    _set(db, run_id, status="running", n_planned=3)  # two cells of three stored
    with pytest.raises(shards.ShardsMissing) as info:
        shards.claim_conclusion(db, run_id)
    assert str(info.value) == (
        f"run {run_id} has 2 of its 3 cells: a shard has not finished (re-run the missing "
        "`--shard K/N` commands; each resumes where it stopped), or conclude it as it is with "
        "`evalwh finish RUN --partial`"
    )
    assert _runs(db, run_id)[0][0] == "running"  # unchanged
    token = shards.claim_conclusion(db, run_id, partial=True)
    assert token is not None and _runs(db, run_id)[0][::3] == ("exporting", token)


def test_a_lost_race_while_keeping_one_row_is_logged_as_joining_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A commit conflict in the merge is retried, and the debug log says which run it joins."""
    from evalwh.warehouse.connect import write_connection

    target = lakemod.parse_target(
        f"ducklake:{tmp_path / 'meta.ducklake'}", {"data_path": "d"}, base=tmp_path, where="t"
    )
    real = shards._rows
    raced: list[int] = []

    def racing(con: Any, run_id: str) -> list[dict[str, Any]]:
        if not raced:
            raced.append(1)
            raise duckdb.TransactionException("Transaction conflict - lost the race")
        return real(con, run_id)

    try:
        with write_connection(target) as con:
            con.execute(
                "INSERT INTO runs (run_id, suite, status, config_hash, dataset_hash, "
                "n_planned, started_at, evalwh_version, lease_token) VALUES "
                "('r', 's', 'running', 'c', 'd', 1, now(), 'v', 'a-token')"
            )
        monkeypatch.setattr(shards, "_rows", racing)
        monkeypatch.setattr(lakemod.time, "sleep", lambda s: None)
        with caplog.at_level(logging.DEBUG, logger=lakemod.log.name):
            assert shards._keep_one(target, "r", "a-token") is True
    finally:
        lakemod.release(target)
    assert any(
        r.getMessage().startswith("join run r: DuckLake conflict (try 1)") for r in caplog.records
    ), [r.getMessage() for r in caplog.records]
