"""Slicing a run by case metadata (evalwh/analysis/slices.py over sql/slice.sql): n per slice and per
cell, and what a missing or mistyped key says.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evalwh.analysis.slices import slice_run
from evalwh.errors import UsageError
from evalwh.warehouse.store import Warehouse
from tests.builders import fill_run_keys


def test_slices_carry_n_per_slice_and_cell(store: Warehouse) -> None:
    rows = slice_run(store, "A", ["lang"]).to_pylist()
    totals = {r["slice"]: r for r in rows if r["variant"] is None}
    assert totals["lang=en"]["n"] == 4 and totals["lang=en"]["n_passed"] == 4
    assert totals["lang=fr"]["n"] == 4 and totals["lang=fr"]["n_passed"] == 0
    assert totals["lang=(none)"]["n"] == 1  # the m2 row has no metadata
    per_cell = [r for r in rows if r["variant"] is not None]
    assert sum(r["n"] for r in per_cell) == 9
    # each per-cell row keeps its slice label (what `show --by` prints per cell)
    cells = {(r["slice"], r["variant"], r["model"]): (r["n"], r["n_passed"]) for r in per_cell}
    assert cells == {
        ("lang=en", "v", "m1"): (4, 4),
        ("lang=fr", "v", "m1"): (4, 0),
        ("lang=(none)", "v", "m2"): (1, 1),
    }


def test_slicing_by_no_key_says_how_to_name_one(empty_warehouse: Path) -> None:
    from evalwh.analysis.slices import slice_run

    with pytest.raises(UsageError) as caught:
        slice_run(Warehouse(empty_warehouse), "r1", [])
    assert str(caught.value) == "--by needs at least one metadata key, e.g. --by topic,difficulty"


def test_unknown_slicing_keys_are_named_with_the_keys_the_cases_have(empty_warehouse: Path) -> None:
    import duckdb

    from evalwh.analysis.slices import check_keys

    store = Warehouse(empty_warehouse)
    with pytest.raises(UsageError) as bare:
        check_keys(store, ["r1"], ["lang", "topic"])
    assert str(bare.value) == (
        "no case has the metadata key(s) 'lang', 'topic'"
        " (known keys: none: the cases carry no metadata)"
    )
    con = duckdb.connect(str(empty_warehouse))
    con.execute(
        "INSERT INTO cases (run_id, variant, model, case_id, repeat, metadata, cached,"
        " request_hash, attempts, passed, created_at) VALUES"
        " ('r1', 'v', 'm', 'c1', 0, '{\"lang\": \"en\", \"level\": 2}', false, 'h', 1, true, now())"
    )
    fill_run_keys(con)
    con.close()
    check_keys(store, ["r1"], ["lang"])  # known: no error
    with pytest.raises(UsageError) as typo:
        check_keys(store, ["r1"], ["lang", "topik", "langs"])
    assert str(typo.value) == (
        "no case has the metadata key(s) 'topik', 'langs' (known keys: lang, level)"
    )
