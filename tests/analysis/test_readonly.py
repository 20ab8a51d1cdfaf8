"""``evalwh sql``'s read-only query (evalwh/analysis/readonly.py): the exact refusal for each way a
text is not one read-only query, how the first word is read, a query's row limit (what it returns,
what it says about the rest, how much it reads), the attach that waits out another process's lock
(and only a lock) with doubling sleeps on an injected clock, and the timer that bounds a query."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from evalwh.analysis import readonly
from evalwh.analysis.readonly import (
    QueryBounds,
    QueryTimeoutError,
    _attach_lake,
    check_readonly,
    first_word,
    run_readonly,
)
from evalwh.errors import UsageError, WarehouseError
from evalwh.warehouse import connect, lake


def values(table: Any) -> list[int]:
    return [int(v) for v in table.column("i").to_pylist()]


def test_exactly_the_limit_of_rows_is_all_of_them_and_nothing_is_left(
    empty_warehouse: Path,
) -> None:
    table, more = run_readonly(empty_warehouse, "SELECT range AS i FROM range(3)", limit=3)
    assert (values(table), more) == ([0, 1, 2], False)


def test_rows_past_the_limit_are_cut_from_the_end_and_said_to_be_left(
    empty_warehouse: Path,
) -> None:
    table, more = run_readonly(
        empty_warehouse, "SELECT range AS i FROM range(5) ORDER BY i", limit=3
    )
    assert (values(table), more) == ([0, 1, 2], True)


def test_without_a_limit_every_row_comes_back_and_nothing_is_left(empty_warehouse: Path) -> None:
    table, more = run_readonly(empty_warehouse, "SELECT range AS i FROM range(25000)")
    assert (table.num_rows, more) == (25000, False)


def test_a_query_with_no_rows_keeps_its_columns(empty_warehouse: Path) -> None:
    table, more = run_readonly(empty_warehouse, "SELECT 1 AS i, 'x' AS name WHERE false", limit=10)
    assert (table.num_rows, table.column_names, more) == (0, ["i", "name"], False)


def test_a_limited_query_reads_about_its_limit_not_the_whole_result(
    empty_warehouse: Path, monkeypatch: pytest.MonkeyPatch
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
    table, more = run_readonly(empty_warehouse, "SELECT range AS i FROM range(10000000)", limit=5)
    assert (table.num_rows, more) == (5, True)
    assert sum(fetched) <= 10, fetched


READ_ONLY_FIX = (
    "refused; use SELECT, WITH, FROM, VALUES, DESCRIBE, SHOW or SUMMARIZE "
    "(open the file with duckdb yourself to change it)"
)


def refusal(text: str) -> str:
    with pytest.raises(UsageError) as caught:
        check_readonly(text)
    return str(caught.value)


def test_an_empty_text_is_refused_as_no_sql() -> None:
    assert refusal("  \n ") == "no SQL given"


def test_a_text_that_does_not_parse_says_so_with_duckdbs_reason() -> None:
    message = refusal("SELEC 1")
    assert message.startswith("SQL does not parse: ") and "syntax error" in message.lower()


def test_two_statements_are_refused_with_the_pivot_hint() -> None:
    assert refusal("SELECT 1; SELECT 2") == (
        "evalwh sql runs one statement at a time; got 2 "
        "(a PIVOT statement counts as two: write PIVOT inside a FROM clause instead)"
    )


@pytest.mark.parametrize(
    ("text", "named"),
    [
        # DuckDB's statement type names the refusal ...
        ("DROP TABLE runs", "DROP"),
        ("WITH x AS (SELECT 1 AS a) INSERT INTO t SELECT * FROM x", "INSERT"),
        # ... but a statement DuckDB runs as a SELECT is refused by its first word
        ("PRAGMA version", "PRAGMA"),
    ],
)
def test_a_refusal_names_the_statement_the_user_wrote(text: str, named: str) -> None:
    assert refusal(text) == f"evalwh sql is read-only: {named} statements are {READ_ONLY_FIX}"


@pytest.mark.parametrize(
    ("text", "runs"),
    [
        ("SELECT 1;", "SELECT 1"),
        ("SELECT 1 AS X;", "SELECT 1 AS X"),  # only semicolons go
        ("  select 1 ;; \n", "select 1 "),  # lower case is read as SELECT
        ("(SELECT 1)", "(SELECT 1)"),
        ("-- a comment\n/* and\nanother */ FROM range(3)", None),
    ],
)
def test_an_accepted_query_loses_its_outer_blanks_and_trailing_semicolons(
    text: str, runs: str | None
) -> None:
    assert check_readonly(text) == (runs if runs is not None else text.strip())


def test_the_first_word_skips_comments_reads_parentheses_and_cuts_other_text() -> None:
    assert first_word("/* x */ -- y\n  select 1") == "SELECT"
    assert first_word(" (SELECT 1)") == "("
    assert first_word("1234567890123 and on") == "1234567890"


def test_the_timer_thread_is_a_daemon_and_no_bound_reads_as_zero() -> None:
    import duckdb

    con = duckdb.connect()
    try:
        unbounded = readonly._Deadline(con, None)
        assert unbounded.timeout_s == 0.0 and unbounded._timer is None
        bounded = readonly._Deadline(con, 60.0)
        assert bounded._timer is not None and bounded._timer.daemon  # never holds up an exit
        bounded.cancel()
    finally:
        con.close()


HOLDER = textwrap.dedent(
    """
    import sys, duckdb
    con = duckdb.connect(sys.argv[1])
    print("held", flush=True)
    sys.stdin.readline()
    con.close()
    """
)


@pytest.fixture
def held(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    """A warehouse another process holds open for writing, until it reads a line."""
    # a quote in the path is escaped in the ATTACH statement
    path = tmp_path / "it's.duckdb"
    with connect.write_connection(path):
        pass
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    try:
        assert holder.stdout.readline().strip() == "held"
        yield path, holder
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        holder.stdout.close()
        if holder.stdin is not None and not holder.stdin.closed:
            holder.stdin.close()


def test_a_locked_warehouse_is_waited_for_with_doubling_sleeps_up_to_a_quarter_second(
    held: tuple[Path, subprocess.Popen[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, holder = held
    stdin = holder.stdin
    assert stdin is not None
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 7:  # the other process lets go
            stdin.write("\n")
            stdin.close()
            holder.wait()  # waitpid, no sleep (a timeout would poll with sleep); --timeout bounds it

    monkeypatch.setattr(readonly.time, "sleep", sleep)
    con = readonly._attach(path, QueryBounds())
    try:
        assert slept == [0.01, 0.02, 0.04, 0.08, 0.16, 0.25, 0.25]
        assert con.sql("SELECT current_database()").fetchone() == ("warehouse",)
    finally:
        con.close()


def test_a_lock_that_stays_is_waited_for_30_seconds_then_reported(
    held: tuple[Path, subprocess.Popen[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = held
    clock = [1000.0]  # a clock that moves only by the sleeps
    monkeypatch.setattr(readonly.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(readonly.time, "sleep", lambda s: clock.__setitem__(0, clock[0] + s))
    with pytest.raises(WarehouseError) as caught:
        readonly._attach(path, QueryBounds())
    assert 30.0 < clock[0] - 1000.0 <= 30.25
    assert str(caught.value).startswith(f"cannot open the warehouse {path}: ")
    assert "lock" in str(caught.value)


def test_a_file_that_is_no_warehouse_fails_at_once_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "notes.duckdb"
    path.write_text("not a database\n" * 100)
    slept: list[float] = []
    monkeypatch.setattr(readonly.time, "sleep", slept.append)
    with pytest.raises(WarehouseError) as caught:
        readonly._attach(path, QueryBounds())
    assert slept == []  # not a lock: nothing to wait for
    assert str(caught.value).startswith(f"cannot open the warehouse {path}: ")
    assert str(caught.value).endswith(f"\n  fix: {connect.OPEN_FIX}")


def test_a_query_timeout_names_its_limit_and_how_to_narrow_or_raise_it() -> None:
    error = QueryTimeoutError(2.5)
    assert str(error) == (
        "the query ran longer than 2.5 s and was stopped\n"
        "  fix: narrow it (WHERE, LIMIT, aggregate first), or raise the bound with "
        "--timeout / the setting query_timeout_s (MCP: mcp_query_timeout_s)"
    )
    assert isinstance(error, UsageError)
    assert error.exit_code == 2
    assert error.timeout_s == 2.5


def _lake_of_one_row(target: lake.LakeTarget) -> duckdb.DuckDBPyConnection:
    """A lake holding table t (a = 1), attached read-only as `evalwh sql` attaches it."""
    writer = lake.cursor(target, read_only=False, memory_limit="256MB")
    writer.execute("CREATE TABLE t (a INTEGER)")
    writer.execute("INSERT INTO t VALUES (1)")
    writer.close()
    return _attach_lake(target, QueryBounds(threads=1, memory_limit="300MB"))


def test_evalwh_sql_attaches_a_lake_read_only_bounded_and_locked(tmp_path: Path) -> None:
    target = lake.parse_target(
        "ducklake:meta.ducklake", {"data_path": "data"}, base=tmp_path, where="w"
    )
    con = _lake_of_one_row(target)
    try:
        assert con.execute("SELECT a FROM t").fetchall() == [(1,)]
        with pytest.raises(duckdb.Error, match="attached in read-only mode"):
            con.execute("INSERT INTO t VALUES (2)")
        settings = con.execute(
            "SELECT current_setting('threads'), current_setting('enable_external_access'), "
            "current_setting('lock_configuration'), current_setting('allowed_directories')"
        ).fetchone()
        assert settings is not None
        assert settings[:3] == (1, False, True)
        assert target.data_path in settings[3]
        with pytest.raises(duckdb.Error, match="configuration has been locked"):
            con.execute("SET threads = 2")
        outside = tmp_path / "outside.csv"
        outside.write_text("a\n1\n")
        with pytest.raises(duckdb.Error, match="disabled by configuration"):
            con.execute(f"SELECT * FROM read_csv('{outside}')")
    finally:
        con.close()
        lake.release(target)


def test_a_file_lake_without_a_data_path_is_read_from_the_folder_its_catalog_names(
    tmp_path: Path,
) -> None:
    # bug: without lake.data_path no folder was allowed, so every read of the lake's files
    # (DuckLake's default <catalog>.files/) was refused by the file-access lock
    target = lake.parse_target("ducklake:meta.ducklake", {}, base=tmp_path, where="w")
    con = _lake_of_one_row(target)
    try:
        assert con.execute("SELECT a FROM t").fetchall() == [(1,)]
        allowed = con.execute("SELECT current_setting('allowed_directories')").fetchone()
        assert allowed is not None and str(tmp_path / "meta.ducklake.files") + "/" in allowed[0]
        outside = tmp_path / "outside.csv"
        outside.write_text("a\n1\n")
        with pytest.raises(duckdb.Error, match="disabled by configuration"):
            con.execute(f"SELECT * FROM read_csv('{outside}')")
    finally:
        con.close()
        lake.release(target)


@pytest.mark.parametrize(
    "text",
    [
        "SELECT * FROM duckdb_secrets()",
        "FROM duckdb_secrets",  # a table function named as a table
        'SELECT * FROM "DuckDB_Secrets"()',
        "SELECT * FROM system.main.duckdb_secrets()",
        "WITH s AS (FROM duckdb_secrets()) SELECT * FROM s",
        "FROM query('SELECT * FROM duckdb_' || 'secrets()')",
        "FROM query_table('duckdb_secrets')",
    ],
)
def test_a_query_naming_the_secret_listing_is_refused_however_it_is_spelled(text: str) -> None:
    with pytest.raises(UsageError, match="evalwh sql does not read"):
        check_readonly(text)


@pytest.mark.parametrize(
    "text", ["SELECT 1 AS query", "SELECT 'duckdb_secrets' AS s", "SHOW TABLES", "DESCRIBE t"]
)
def test_a_column_or_text_named_like_a_hidden_function_is_not_refused(text: str) -> None:
    assert check_readonly(text) == text
