"""Pinning baselines (evalwh/analysis/baselines.py) called directly: the run a pin replaced, the
refused names' message, and unpinning a name that is not pinned."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from evalwh.analysis import baselines
from evalwh.analysis.baselines import check_name, list_baselines, remove_baseline, set_baseline
from evalwh.errors import UsageError
from evalwh.warehouse.connect import write_connection
from evalwh.warehouse.store import Warehouse
from tests.builders import ROWS, add_run, lake_store, lose_the_first_commit


@pytest.fixture
def store(tmp_path: Path) -> Warehouse:
    path = tmp_path / "w.duckdb"
    with write_connection(path) as con:
        add_run(con, "A", ROWS[:4])
        add_run(con, "B", ROWS[4:])
    return Warehouse(path)


def test_a_pin_says_which_run_it_replaced(store: Warehouse) -> None:
    # `evalwh baseline set` prints "(was A)" and the MCP tool returns it: the first pin of a
    # name replaced nothing, a second one names the run it moved from
    first = set_baseline(store, "A", "prod")
    assert (first["name"], first["run_id"], first["previous_run_id"]) == ("prod", "A", None)
    second = set_baseline(store, "B", "prod")
    assert (second["run_id"], second["previous_run_id"]) == ("B", "A")
    assert set_baseline(store, "B", "other")["previous_run_id"] is None  # another name
    assert [(b["name"], b["run_id"]) for b in baselines.list_baselines(store)] == [
        ("other", "B"),
        ("prod", "B"),
    ]


@pytest.mark.parametrize("name", ["latest", "1st", "-x", "a b", "", "a/b"])
def test_a_refused_name_says_what_a_name_may_hold(name: str) -> None:
    with pytest.raises(UsageError) as info:
        check_name(name)
    assert str(info.value) == (
        f"bad baseline name {name!r}: start with a letter, then letters, digits, '.', '_' or '-'"
        " (and not 'latest')"
    )


def test_unpinning_a_name_that_is_not_pinned_lists_the_pinned_ones(empty_warehouse: Path) -> None:
    store = Warehouse(empty_warehouse)
    with pytest.raises(UsageError) as none_pinned:
        remove_baseline(store, "main")
    assert str(none_pinned.value) == "no baseline named 'main' (pinned: none)"

    import duckdb

    con = duckdb.connect(str(empty_warehouse))
    for run_id in ("r1", "r2"):
        con.execute(
            "INSERT INTO runs (run_id, label, suite, status, config_hash, dataset_hash, "
            "n_planned, started_at, evalwh_version) "
            "VALUES (?, NULL, 's', 'completed', 'h', 'd', 1, now(), 't')",
            [run_id],
        )
    con.execute("INSERT INTO baselines VALUES ('nightly', 'r1', now()), ('rc', 'r2', now())")
    con.close()
    with pytest.raises(UsageError) as two_pinned:
        remove_baseline(store, "main")
    assert str(two_pinned.value) == "no baseline named 'main' (pinned: nightly, rc)"
    assert remove_baseline(store, "rc")["run_id"] == "r2"
    assert [row["name"] for row in list_baselines(store)] == ["nightly"]


def test_an_unpinning_that_lost_a_lake_race_is_retried_and_logged_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from evalwh.analysis.baselines import list_baselines, remove_baseline
    from evalwh.warehouse import connect

    store = lake_store(tmp_path, monkeypatch)

    def pin(con: Any) -> None:
        con.execute(
            "INSERT INTO runs (run_id, suite, status, config_hash, dataset_hash, n_planned, "
            "started_at, evalwh_version) VALUES ('r1', 's', 'completed', 'h', 'd', 1, now(), 't')"
        )
        con.execute("INSERT INTO baselines VALUES ('nightly', 'r1', now())")

    connect.write_transaction(store.path, pin, what="pin a run")
    tries = lose_the_first_commit(monkeypatch)
    with caplog.at_level(logging.DEBUG, logger="evalwh.warehouse"):
        assert remove_baseline(store, "nightly")["run_id"] == "r1"
    assert len(tries) == 2 and list_baselines(store) == []
    retried = [r.getMessage() for r in caplog.records if "DuckLake conflict" in r.getMessage()]
    assert retried == [
        "unpin baseline nightly: DuckLake conflict (try 1), retrying: "
        "Transaction conflict: another writer committed"
    ]
