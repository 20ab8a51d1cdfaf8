"""Pinning baselines (evalwh.analysis.baselines) called directly: the run a pin replaced and
the refused names' message (the label of a pin's write: test_survivors_refs_labels.py).

Written from mutants that survived the mutation run (docs/testing.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evalwh.analysis import baselines
from evalwh.analysis.baselines import check_name, set_baseline
from evalwh.errors import UsageError
from evalwh.warehouse.connect import write_connection
from evalwh.warehouse.store import Warehouse
from tests.test_boundaries import ROWS, add_run


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
