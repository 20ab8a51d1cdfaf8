"""The named queries' registry (evalwh/warehouse/queries.py): how a query file's header is read
and how a query runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalwh.warehouse import queries
from evalwh.warehouse.store import Warehouse


def test_a_query_file_header_is_parsed_from_its_leading_comments() -> None:
    """queries._parse() runs once per file, before mutmut switches mutants: called here."""
    from evalwh.warehouse.queries import _parse, _strip_comments, registry

    text = (
        "-- title:  Pass rate  \n"
        "--description: per cell\n"
        "-- params: run_id, limit ,\n"
        "\n"
        "-- a note: $ignored here\n"
        "SELECT * FROM cases WHERE run_id = $run_id -- not $this\n"
        "LIMIT $limit  -- title: not a header after SQL\n"
    )
    query = _parse("demo", text)
    assert (query.name, query.title, query.description) == ("demo", "Pass rate", "per cell")
    assert query.params == ("run_id", "limit") and query.sql == text
    assert _strip_comments("a -- b\n-- c\nd") == "a \n\nd"
    assert _strip_comments("a -- b -- c") == "a "  # from the first "--" on
    # a blank line or another comment between the header lines does not end the header
    spaced = _parse("s", "-- title: t\n\n-- a note\n-- description: d\nSELECT 1\n")
    assert (spaced.title, spaced.description) == ("t", "d")
    with pytest.raises(ValueError) as missing:
        _parse("bare", "-- title: t\nSELECT 1\n-- description: too late\n")
    assert str(missing.value) == (
        "sql/bare.sql must start with '-- title:' and '-- description:' lines"
    )
    with pytest.raises(ValueError) as undeclared:
        _parse("p", "-- title: t\n-- description: d\nSELECT $a, $b\n")
    assert str(undeclared.value) == "sql/p.sql declares params () but uses ('a', 'b')"
    with pytest.raises(ValueError, match=r"declares params \('a', 'c'\) but uses \('a',\)"):
        _parse("p", "-- title: t\n-- description: d\n-- params: a, c\nSELECT $a, $a\n")
    # every shipped query parses to what the registry holds
    for name, held in registry().items():
        assert _parse(name, held.sql) == held


def test_an_unknown_query_name_is_refused_listing_the_known_ones(empty_warehouse: Path) -> None:
    from evalwh.warehouse.queries import registry

    with pytest.raises(KeyError) as info:
        Warehouse(empty_warehouse).query("sumary", run_id="r")
    assert info.value.args == (f"no query named 'sumary'; known: {', '.join(registry())}",)
    assert "summary" in registry() and "criteria" in registry()


def test_a_query_without_its_parameters_is_refused_naming_every_missing_one(
    empty_warehouse: Path,
) -> None:
    from evalwh.warehouse.queries import registry

    two = next(name for name, q in registry().items() if len(q.params) >= 2)
    with pytest.raises(TypeError) as info:
        Warehouse(empty_warehouse).query(two)
    assert str(info.value) == (
        f"query {two!r} needs parameter(s): {', '.join(registry()[two].params)}"
    )
    with pytest.raises(TypeError, match=r"^query 'summary' needs parameter\(s\): run_id$"):
        Warehouse(empty_warehouse).query("summary", run="r")  # a misspelt name is not the parameter


def test_every_query_has_a_header_and_declared_params() -> None:
    registry = queries.registry()
    assert {"summary", "case_list", "runs", "run_totals", "criteria", "gate", "resolve_run"} <= set(
        registry
    )
    for q in registry.values():
        assert q.title and q.description


def test_a_query_runs_with_the_shared_macros_on_a_read_only_connection(tmp_path: Path) -> None:
    # bug: a query that uses a macro of sql/macros/*.sql run on a connection that never defined
    # it ("Catalog Error: Scalar Function with name t_975 does not exist"). run_query defines
    # them (as temporary macros, so a read-only connection takes them too) before every query.
    import duckdb

    from evalwh.warehouse.connect import write_connection

    path = tmp_path / "w.duckdb"
    with write_connection(path):
        pass
    assert "CREATE OR REPLACE TEMP MACRO t_975(df)" in queries.macros()
    with duckdb.connect(str(path), read_only=True) as con:
        rows = queries.run_query(con, "run_totals", run_id="none").to_pylist()
        assert rows[0]["n"] == 0
        assert con.execute("SELECT t_975(1), paired_p(0.0, 0.0, 3)").fetchone() == (
            12.7062047361747,
            1.0,
        )
