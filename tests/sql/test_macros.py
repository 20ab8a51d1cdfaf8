"""sql/macros/stats.sql: the statistical functions the named queries share (Student's t quantile
and two-sided p-value, erfc, the p of a paired mean difference, Wilson and CLT bounds of a pass
rate), against scipy and by hand at their edges."""

from __future__ import annotations

import math

import duckdb
import pytest
from scipy.stats import t as student_t

from evalwh.warehouse.queries import macros


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    connection.execute(macros())
    return connection


def test_t_p_matches_scipy_on_every_branch(con: duckdb.DuckDBPyConnection) -> None:
    # bugs: a term of A&S 26.7.3 (odd df) or 26.7.4 (even df) off by one, the branch at 100
    # df moved, a coefficient of Hill's expansion changed, erfc's series cut short. df 1..130
    # covers both closed forms and Hill's expansion past 100; 500 .. 10^6 the expansion's
    # small-y series; t from 0 to far in the tail, negative t as its absolute value.
    dfs = [*range(1, 131), 500, 5000, 60_000, 10**6]
    ts = [0.0, 0.01, 0.3, 1.0, 1.5, 1.96, 2.0, 2.5, 3.0, 4.5, 7.0, 12.0, -2.2]
    rows = con.execute(
        "SELECT t, df, t_p(t, df) FROM unnest(?) a(t), unnest(?) b(df)", [ts, dfs]
    ).fetchall()
    assert len(rows) == len(ts) * len(dfs)
    for t, df, p in rows:
        assert p == pytest.approx(2 * student_t.sf(abs(t), df), rel=1e-9, abs=1e-13), (t, df)
    assert con.execute("SELECT t_p(2.0, 0), t_p(NULL, 3), t_p(1.0, NULL)").fetchone() == (
        None,
        None,
        None,
    )


def test_t_975_matches_scipy(con: duckdb.DuckDBPyConnection) -> None:
    dfs = [*range(1, 41), 100, 1000, 60_000]
    got = dict(con.execute("SELECT df, t_975(df) FROM unnest(?) a(df)", [dfs]).fetchall())
    for df in dfs:
        assert got[df] == pytest.approx(student_t.ppf(0.975, df), abs=5e-8), df
    assert con.execute("SELECT t_975(0)").fetchone() == (None,)
    # the interval's quantile and the p-value agree: at |t| = t_975(df), p = 0.05
    for df in (1, 7, 30, 31, 99, 101, 500):
        (p,) = con.execute("SELECT t_p(t_975(?), ?)", [df, df]).fetchone()
        assert p == pytest.approx(0.05, abs=1e-7), df


def test_erfc_series_matches_math_erfc(con: duckdb.DuckDBPyConnection) -> None:
    xs = [0.0, 1e-6, 0.1, 0.5, 1.0, 1.3859, 2.0, 3.5, 5.0, 8.9, 9.5, 30.0]
    got = dict(con.execute("SELECT x, erfc_series(x) FROM unnest(?) a(x)", [xs]).fetchall())
    for x in xs:
        assert got[x] == pytest.approx(math.erfc(x), abs=1e-13), x


def test_paired_p_without_spread_or_without_a_standard_error(
    con: duckdb.DuckDBPyConnection,
) -> None:
    # no spread: a change is p 0 (t infinite), none p 1; no standard error (one case, one
    # cluster: df 0) or no delta: NULL; else the t of delta / se
    got = con.execute(
        "SELECT paired_p(-0.4, 0.0, 5), paired_p(0.0, 0.0, 5), paired_p(-1.0, NULL, 0), "
        "paired_p(0.5, 0.5, 0), paired_p(NULL, 0.1, 3), paired_p(-0.2, 0.1, 9)"
    ).fetchone()
    assert got[:5] == (0.0, 1.0, None, None, None)
    assert got[5] == pytest.approx(2 * student_t.sf(2.0, 9), rel=1e-12)


def test_case_rate_bounds_are_wilson_for_zero_one_cases_else_clt(
    con: duckdb.DuckDBPyConnection,
) -> None:
    # 5 of 10 cases pass: Wilson [0.2366, 0.7634]; case means with mean 0.35, sd 0.3837 over
    # 15 cases: 0.35 -/+ t(14) 0.3837 / sqrt(15), within [0, 1]; one fractional case: NULL;
    # no case: NULL; Wilson at 0/n and n/n exactly 0 and 1.
    z = 1.959963984540054
    rows = con.execute(
        "SELECT case_rate_lo(0.5, 0.527, 10, true), case_rate_hi(0.5, 0.527, 10, true), "
        "case_rate_lo(0.35, 0.3837, 15, false), case_rate_hi(0.35, 0.3837, 15, false), "
        "case_rate_lo(0.5, NULL, 1, false), case_rate_hi(0.5, NULL, 1, false), "
        "case_rate_lo(NULL, NULL, 0, NULL), wilson_lo(0.0, 7), wilson_hi(1.0, 11)"
    ).fetchone()
    centre, half = 0.5 + z * z / 20, z * math.sqrt(0.25 / 10 + z * z / 400)
    assert rows[0] == pytest.approx((centre - half) / (1 + z * z / 10))
    assert rows[1] == pytest.approx((centre + half) / (1 + z * z / 10))
    clt = student_t.ppf(0.975, 14) * 0.3837 / math.sqrt(15)
    assert rows[2:4] == (pytest.approx(0.35 - clt), pytest.approx(0.35 + clt))
    assert rows[4:] == (None, None, None, 0.0, 1.0)
