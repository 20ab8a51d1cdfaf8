"""Reading the warehouse, pinned where mutation testing found it loose (docs/testing.md): a
read-only query's row limit (what it returns, what it says about the rest, how much it
reads), unpinning a baseline that is not there, and the repeats report of a run without
repeats."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalwh.analysis import readonly
from evalwh.analysis.baselines import list_baselines, remove_baseline
from evalwh.analysis.readonly import run_readonly
from evalwh.analysis.repeats import repeats_report
from evalwh.errors import UsageError
from evalwh.warehouse import connect
from evalwh.warehouse.store import Warehouse


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    path = tmp_path / "w.duckdb"
    with connect.write_connection(path):
        pass  # an empty warehouse, migrated
    return path


def values(table: Any) -> list[int]:
    return [int(v) for v in table.column("i").to_pylist()]


# --- a read-only query and its row limit ----------------------------------------------------


def test_exactly_the_limit_of_rows_is_all_of_them_and_nothing_is_left(warehouse: Path) -> None:
    table, more = run_readonly(warehouse, "SELECT range AS i FROM range(3)", limit=3)
    assert (values(table), more) == ([0, 1, 2], False)


def test_rows_past_the_limit_are_cut_from_the_end_and_said_to_be_left(warehouse: Path) -> None:
    table, more = run_readonly(warehouse, "SELECT range AS i FROM range(5) ORDER BY i", limit=3)
    assert (values(table), more) == ([0, 1, 2], True)


def test_without_a_limit_every_row_comes_back_and_nothing_is_left(warehouse: Path) -> None:
    table, more = run_readonly(warehouse, "SELECT range AS i FROM range(25000)")
    assert (table.num_rows, more) == (25000, False)


def test_a_query_with_no_rows_keeps_its_columns(warehouse: Path) -> None:
    table, more = run_readonly(warehouse, "SELECT 1 AS i, 'x' AS name WHERE false", limit=10)
    assert (table.num_rows, table.column_names, more) == (0, ["i", "name"], False)


def test_a_limited_query_reads_about_its_limit_not_the_whole_result(
    warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Bound in memory: an MCP client asking for 5 rows of a ten-million-row query must not
    # make evalwh fetch the first ten thousand.
    fetched: list[int] = []
    stream = readonly.stream_readonly

    @contextlib.contextmanager
    def counting(*args: Any, **kwargs: Any) -> Iterator[Any]:
        with stream(*args, **kwargs) as (schema, batches):

            def counted() -> Iterator[Any]:
                for batch in batches:
                    fetched.append(batch.num_rows)
                    yield batch

            yield schema, counted()

    monkeypatch.setattr(readonly, "stream_readonly", counting)
    table, more = run_readonly(warehouse, "SELECT range AS i FROM range(10000000)", limit=5)
    assert (table.num_rows, more) == (5, True)
    assert sum(fetched) <= 10, fetched


# --- unpinning a baseline -----------------------------------------------------------------


def test_unpinning_a_name_that_is_not_pinned_lists_the_pinned_ones(warehouse: Path) -> None:
    store = Warehouse(warehouse)
    with pytest.raises(UsageError) as none_pinned:
        remove_baseline(store, "main")
    assert str(none_pinned.value) == "no baseline named 'main' (pinned: none)"

    import duckdb

    con = duckdb.connect(str(warehouse))
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


# --- the repeats report -----------------------------------------------------------------


def test_the_repeats_report_of_a_run_without_answers_is_zero_repeats_and_empty_lists(
    warehouse: Path,
) -> None:
    assert repeats_report(Warehouse(warehouse), "no-such-run") == {
        "repeats": 0,
        "stats": [],
        "flaky": [],
    }


# --- slicing by metadata: what a missing or mistyped key says -------------------------------


def test_slicing_by_no_key_says_how_to_name_one(warehouse: Path) -> None:
    from evalwh.analysis.slices import slice_run

    with pytest.raises(UsageError) as caught:
        slice_run(Warehouse(warehouse), "r1", [])
    assert str(caught.value) == "--by needs at least one metadata key, e.g. --by topic,difficulty"


def test_unknown_slicing_keys_are_named_with_the_keys_the_cases_have(warehouse: Path) -> None:
    import duckdb

    from evalwh.analysis.slices import check_keys

    store = Warehouse(warehouse)
    with pytest.raises(UsageError) as bare:
        check_keys(store, ["r1"], ["lang", "topic"])
    assert str(bare.value) == (
        "no case has the metadata key(s) 'lang', 'topic'"
        " (known keys: none: the cases carry no metadata)"
    )
    con = duckdb.connect(str(warehouse))
    con.execute(
        "INSERT INTO cases (run_id, variant, model, case_id, repeat, metadata, cached,"
        " request_hash, attempts, passed, created_at) VALUES"
        " ('r1', 'v', 'm', 'c1', 0, '{\"lang\": \"en\", \"level\": 2}', false, 'h', 1, true, now())"
    )
    con.close()
    check_keys(store, ["r1"], ["lang"])  # known: no error
    with pytest.raises(UsageError) as typo:
        check_keys(store, ["r1"], ["lang", "topik", "langs"])
    assert str(typo.value) == (
        "no case has the metadata key(s) 'topik', 'langs' (known keys: lang, level)"
    )


# --- a named query asked for wrongly (``wh.query(name, **params)``, docs/python-api.md) -------


def test_an_unknown_query_name_is_refused_listing_the_known_ones(warehouse: Path) -> None:
    from evalwh.warehouse.queries import registry

    with pytest.raises(KeyError) as info:
        Warehouse(warehouse).query("sumary", run_id="r")
    assert info.value.args == (f"no query named 'sumary'; known: {', '.join(registry())}",)
    assert "summary" in registry() and "criteria" in registry()


def test_a_query_without_its_parameters_is_refused_naming_every_missing_one(
    warehouse: Path,
) -> None:
    from evalwh.warehouse.queries import registry

    two = next(name for name, q in registry().items() if len(q.params) >= 2)
    with pytest.raises(TypeError) as info:
        Warehouse(warehouse).query(two)
    assert str(info.value) == (
        f"query {two!r} needs parameter(s): {', '.join(registry()[two].params)}"
    )
    with pytest.raises(TypeError, match=r"^query 'summary' needs parameter\(s\): run_id$"):
        Warehouse(warehouse).query("summary", run="r")  # a misspelt name is not the parameter
