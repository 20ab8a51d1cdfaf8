"""Hand-computed fixtures that pin each named query's numbers, written to kill the SQL mutants
that tests/mutation/sql_mutants.py found alive (issue 21): values exactly at each comparison's
boundary, the full documented order, NULL handling and counts. Each fixture warehouse is built
by hand (or, for sql/gate_regression.sql, its ``deltas`` relation); the expected values are
worked out in the comments.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb

from evalwh.scoring.tolerance import TOLERANCE
from evalwh.warehouse import queries
from tests.test_queries import _warehouse


def _case(
    con: duckdb.DuckDBPyConnection,
    run: str,
    case: str,
    *,
    repeat: int = 0,
    metadata: dict[str, Any] | None = None,
    error: str | None = None,
    output: str | None = "out",
) -> None:
    """One answer (or failed request) of cell v x m."""
    con.execute(
        "INSERT INTO cases (run_id, variant, model, case_id, repeat, metadata, output, error, "
        "cached, request_hash, attempts, score, passed, created_at) "
        "VALUES (?, 'v', 'm', ?, ?, ?, ?, ?, false, 'h', 1, 0, false, now())",
        [run, case, repeat, None if metadata is None else json.dumps(metadata), output, error],
    )


def _score(
    con: duckdb.DuckDBPyConnection, run: str, case: str, criterion: str, ok: bool, repeat: int = 0
) -> None:
    con.execute(
        "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, scorer, "
        "score, passed, weight, required) VALUES (?, 'v', 'm', ?, ?, ?, 'exact', ?, ?, 1, true)",
        [run, case, repeat, criterion, float(ok), ok],
    )


# --- gate_regression ------------------------------------------------------------------------

# The columns of sql/compare.sql that sql/gate_regression.sql reads, in this order.
_DELTA_COLUMNS = (
    "scope VARCHAR, target VARCHAR, n BIGINT, "
    "pass_rate_a DOUBLE, pass_rate_b DOUBLE, pass_rate_delta DOUBLE, pass_rate_lo DOUBLE, "
    "pass_rate_hi DOUBLE, pass_rate_p DOUBLE, score_n BIGINT, score_a DOUBLE, score_b DOUBLE, "
    "score_delta DOUBLE, score_lo DOUBLE, score_hi DOUBLE, score_p DOUBLE"
)
_AT_LIMIT = 0.25 + TOLERANCE  # a pass-rate drop exactly at limit 0.25 + the tolerance


def test_gate_regression_judges_each_drop_at_its_limit_significance_and_missing_rows() -> None:
    # Cells of the baseline-vs-run deltas (drop = 0 - delta, drop_lo = 0 - hi, drop_hi = 0 - lo):
    #   target n  pass: a    b     delta   lo     hi     p     | score: n  delta  lo    hi     p
    #   A      1       1.0  0.75  -at     -0.5   -0.125 0.01  |        1  -0.25 -0.5  -0.125 0.01
    #   B      0       (no pairs: left out of '*')            |        0
    #   C      3       0.5  0.5    0      -0.25   0.25  0.01  |        3  -0.25 -0.5   0.0   0.01
    #   D      4       0.75 0.25  -0.5    -0.75  -0.25  0.05  |        4  -0.25 -0.5  -0.125 0.05
    #   E      5       0.75 0.25  -0.5    -0.75  -0.25  0.125 |        5  -0.25 -0.5  -0.125 0.125
    #   F      6       0.25 0.5    0.25    0      0.5   0.5   |     NULL  (no score)
    #   G      7       0.5  0.5    0       0      0     1.0   |        2  -0.5  NULL  NULL   NULL
    # Significant: pass_rate delta < 0 and p < 0.05 -> only A (C has delta 0, D p = 0.05 exactly,
    # E p = 0.125); score hi < 0 and p < 0.05 -> only A (C hi = 0 exactly, D p = 0.05,
    # E p = 0.125); G's is unknown (NULL), shown as false.
    # Rules:
    #   R1 cell * pass_rate limit 0.25: A at limit + tolerance passes; C 0, F -0.25, G 0 pass;
    #      D and E drop 0.5 fail (not significant_only).
    #   R2 cell * score limit 0.1 significant_only: every drop is over 0.1; only A is
    #      significant so only A fails; G (significance unknown) passes. F has no score pairs
    #      (n 0): left out of '*'.
    #   R3 cell F score limit 0 (no significant_only key): F's score drop is NULL -> fails, n 0.
    #   R4 run run pass_rate limit 0.05: no run row in the deltas -> one failed row, n 0.
    at = _AT_LIMIT
    rows = [
        ("A", 1, 1.0, 0.75, -at, -0.5, -0.125, 0.01, 1, 0.5, 0.25, -0.25, -0.5, -0.125, 0.01),
        ("B", 0, None, None, None, None, None, None, 0, None, None, None, None, None, None),
        ("C", 3, 0.5, 0.5, 0.0, -0.25, 0.25, 0.01, 3, 0.5, 0.25, -0.25, -0.5, 0.0, 0.01),
        ("D", 4, 0.75, 0.25, -0.5, -0.75, -0.25, 0.05, 4, 0.5, 0.25, -0.25, -0.5, -0.125, 0.05),
        ("E", 5, 0.75, 0.25, -0.5, -0.75, -0.25, 0.125, 5, 0.5, 0.25, -0.25, -0.5, -0.125, 0.125),
        ("F", 6, 0.25, 0.5, 0.25, 0.0, 0.5, 0.5, None, None, None, None, None, None, None),
        ("G", 7, 0.5, 0.5, 0.0, 0.0, 0.0, 1.0, 2, 0.75, 0.25, -0.5, None, None, None),
    ]
    con = duckdb.connect()
    con.execute(f"CREATE TABLE deltas ({_DELTA_COLUMNS})")
    con.executemany(
        f"INSERT INTO deltas VALUES ('cell', {', '.join('?' for _ in range(15))})", rows
    )
    rules = [
        {"scope": "cell", "target": "*", "metric": "pass_rate", "limit": 0.25},
        {
            "scope": "cell",
            "target": "*",
            "metric": "score",
            "limit": 0.1,
            "significant_only": True,
        },
        {"scope": "cell", "target": "F", "metric": "score", "limit": 0.0},
        {
            "scope": "run",
            "target": "run",
            "metric": "pass_rate",
            "limit": 0.05,
            "significant_only": True,
        },
    ]
    got = queries.run_query(
        con, "gate_regression", rules=json.dumps(rules), tolerance=TOLERANCE
    ).to_pylist()
    keys = (
        "scope",
        "target",
        "metric",
        "limit",
        "value",
        "n",
        "drop_lo",
        "drop_hi",
        "significant",
        "significant_only",
        "passed",
    )
    # failures first, then by scope, target, metric
    assert [tuple(r[k] for k in keys) for r in got] == [
        ("cell", "A", "score_drop", 0.1, 0.25, 1, 0.125, 0.5, True, True, False),
        ("cell", "D", "pass_rate_drop", 0.25, 0.5, 4, 0.25, 0.75, False, False, False),
        ("cell", "E", "pass_rate_drop", 0.25, 0.5, 5, 0.25, 0.75, False, False, False),
        ("cell", "F", "score_drop", 0.0, None, 0, None, None, False, False, False),
        ("run", "run", "pass_rate_drop", 0.05, None, 0, None, None, False, True, False),
        ("cell", "A", "pass_rate_drop", 0.25, at, 1, 0.125, 0.5, True, False, True),
        ("cell", "C", "pass_rate_drop", 0.25, 0.0, 3, -0.25, 0.25, False, False, True),
        ("cell", "C", "score_drop", 0.1, 0.25, 3, 0.0, 0.5, False, True, True),
        ("cell", "D", "score_drop", 0.1, 0.25, 4, 0.125, 0.5, False, True, True),
        ("cell", "E", "score_drop", 0.1, 0.25, 5, 0.125, 0.5, False, True, True),
        ("cell", "F", "pass_rate_drop", 0.25, -0.25, 6, -0.5, 0.0, False, False, True),
        ("cell", "G", "pass_rate_drop", 0.25, 0.0, 7, 0.0, 0.0, False, False, True),
        ("cell", "G", "score_drop", 0.1, 0.5, 2, None, None, False, True, True),
    ]
    a_pass = next(r for r in got if r["target"] == "A" and r["metric"] == "pass_rate_drop")
    assert (a_pass["baseline_value"], a_pass["run_value"], a_pass["p_value"]) == (1.0, 0.75, 0.01)
    assert {r["op"] for r in got} == {"<="}


# --- metadata_keys --------------------------------------------------------------------------


def test_metadata_keys_count_distinct_values_and_case_rows_of_the_given_runs(
    tmp_path: Path,
) -> None:
    # run r: {lang en, t a} x2, {lang fr} x1, {lang en, t b} x1, no metadata x1;
    # run s (not asked for): {lang de, z 1}.
    # lang: values en, fr -> 2 (3 distinct objects carry it), rows 2 + 1 + 1 = 4;
    # t: values a, b -> 2, rows 2 + 1 = 3. z is only in run s.
    con = _warehouse(tmp_path)
    for i, meta in enumerate(
        [{"lang": "en", "t": "a"}] * 2 + [{"lang": "fr"}, {"lang": "en", "t": "b"}, None]
    ):
        _case(con, "r", f"c{i}", metadata=meta)
    _case(con, "s", "c0", metadata={"lang": "de", "z": 1})
    got = queries.run_query(con, "metadata_keys", run_ids=["r"]).to_pylist()
    assert [(r["key"], r["n_values"], r["n"]) for r in got] == [("lang", 2, 4), ("t", 2, 3)]
    both = queries.run_query(con, "metadata_keys", run_ids=["r", "s"]).to_pylist()
    assert [(r["key"], r["n_values"], r["n"]) for r in both] == [
        ("lang", 3, 5),
        ("t", 2, 3),
        ("z", 1, 1),
    ]


# --- pair_sides -----------------------------------------------------------------------------


def test_pair_sides_keep_failed_cells_and_only_this_runs_passed_criteria(tmp_path: Path) -> None:
    # run r: c1 passed x, failed y; c2 failed its request (no scores). Run s has the same cell
    # c1 with criterion z passed, which is not run r's.
    con = _warehouse(tmp_path)
    _case(con, "r", "c1")
    _score(con, "r", "c1", "x", True)
    _score(con, "r", "c1", "y", False)
    _case(con, "r", "c2", error="boom", output=None)
    _case(con, "s", "c1")
    _score(con, "s", "c1", "z", True)
    got = queries.run_query(con, "pair_sides", run_id="r").to_pylist()
    assert sorted((r["case_id"], r["error"], r["criteria_passed"]) for r in got) == [
        ("c1", None, ["x"]),
        ("c2", "boom", []),
    ]


# --- latency_histogram ----------------------------------------------------------------------


def _latency(
    con: duckdb.DuckDBPyConnection,
    run: str,
    variant: str,
    ms: float | None,
    i: int,
    error: str | None = None,
) -> None:
    con.execute(
        "INSERT INTO cases (run_id, variant, model, case_id, repeat, error, latency_ms, cached, "
        "request_hash, attempts, score, passed, created_at) "
        "VALUES (?, ?, 'm', ?, 0, ?, ?, false, 'h', 1, 0, false, now())",
        [run, variant, f"c{i}", error, ms],
    )


def test_latency_histogram_bins_up_to_the_runs_99th_percentile(tmp_path: Path) -> None:
    # Run r, answers v: 10, 20, 20, 45, 80 ms; w: 5, 80 ms. Sorted 5 10 20 20 45 80 80 (n 7):
    # the 99th percentile sits at position 6 * 0.99 = 5.94, between 80 and 80 -> 80 ms. With 4
    # bins of 20 ms, bin = floor(ms / 20), the 80 ms answers (at the top) in the last bin 3:
    #   v: bin 0 {10}, bin 1 {20, 20}, bin 2 {45}, bin 3 {80};  w: bin 0 {5}, bin 3 {80}.
    # Left out: a failed request of r (500 ms), an answer of r without a latency, and run s
    # (1000 ms).
    con = _warehouse(tmp_path)
    for i, (variant, ms) in enumerate(
        [("v", 10), ("v", 20), ("v", 20), ("v", 45), ("v", 80), ("w", 5), ("w", 80)]
    ):
        _latency(con, "r", variant, ms, i)
    _latency(con, "r", "v", 500, 10, error="boom")
    _latency(con, "r", "v", None, 11)
    _latency(con, "s", "v", 1000, 0)
    got = queries.run_query(con, "latency_histogram", run_id="r", bins=4).to_pylist()
    assert [(r["variant"], r["model"], r["bin"], r["lo_ms"], r["hi_ms"], r["n"]) for r in got] == [
        ("v", "m", 0, 0.0, 20.0, 1),
        ("v", "m", 1, 20.0, 40.0, 2),
        ("v", "m", 2, 40.0, 60.0, 1),
        ("v", "m", 3, 60.0, 80.0, 1),
        ("w", "m", 0, 0.0, 20.0, 1),
        ("w", "m", 3, 60.0, 80.0, 1),
    ]


def test_latency_histogram_of_instant_answers_has_one_bin_a_millionth_ms_wide(
    tmp_path: Path,
) -> None:
    # Every latency 0: the 99th percentile is 0, raised to the 1e-6 ms floor (no division by
    # zero); both answers in bin 0 of 4, which spans 0 to 1e-6 / 4 ms.
    con = _warehouse(tmp_path)
    _latency(con, "t", "v", 0, 0)
    _latency(con, "t", "v", 0, 1)
    got = queries.run_query(con, "latency_histogram", run_id="t", bins=4).to_pylist()
    assert [(r["bin"], r["lo_ms"], r["hi_ms"], r["n"]) for r in got] == [(0, 0.0, 1e-6 / 4, 2)]


# --- pair_list ------------------------------------------------------------------------------


def test_pair_list_gives_each_cases_first_repeat_with_its_own_answers_and_label(
    tmp_path: Path,
) -> None:
    # Cells of run r: v1 x m, v2 x m, v1 x m2, v2 x m2, each answering k1 (repeats 0 and 1) and
    # k2, with output '<variant>/<model>/<case>/<repeat>'; k3 answered only by v2 x m2 and k4
    # only by v1 x m2. Run s has the same answers, output prefixed 's:'.
    # Comparison c judges v1 x m (baseline) against v2 x m: k1 (repeats 1 and 0), k2.
    # Comparison d judges v1 x m2 against v2 x m2: k1, k3 (no baseline answer), k4 (no
    # candidate answer). Run s has a pair c/k1 of its own.
    # Labels of r: c/k1 candidate (note 'n1'), c/k2 tie; of run s: d/k1 baseline.
    con = _warehouse(tmp_path)
    cells = [("v1", "m"), ("v2", "m"), ("v1", "m2"), ("v2", "m2")]
    answers = [("k1", 0), ("k1", 1), ("k2", 0)]
    for run, prefix in (("r", ""), ("s", "s:")):
        for variant, model in cells:
            for case, repeat in answers:
                con.execute(
                    "INSERT INTO cases (run_id, variant, model, case_id, repeat, output, "
                    "cached, request_hash, attempts, score, passed, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, false, 'h', 1, 0, false, now())",
                    [
                        run,
                        variant,
                        model,
                        case,
                        repeat,
                        f"{prefix}{variant}/{model}/{case}/{repeat}",
                    ],
                )
    for variant, case in (("v2", "k3"), ("v1", "k4")):
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, output, cached, "
            "request_hash, attempts, score, passed, created_at) "
            "VALUES ('r', ?, 'm2', ?, 0, ?, false, 'h', 1, 0, false, now())",
            [variant, case, f"{variant}/m2/{case}/0"],
        )

    def pair(run: str, comparison: str, case: str, repeat: int) -> None:
        model = "m" if comparison == "c" else "m2"
        con.execute(
            "INSERT INTO pairs (run_id, comparison, case_id, repeat, baseline_variant, "
            "baseline_model, candidate_variant, candidate_model, judge, judge_model, verdict, "
            "flipped, eligible, baseline_ok, candidate_ok, created_at) VALUES "
            "(?, ?, ?, ?, 'v1', ?, 'v2', ?, 'j', 'jm', 'tie', false, true, true, true, now())",
            [run, comparison, case, repeat, model, model],
        )

    pair("r", "c", "k1", 1)
    pair("r", "c", "k1", 0)
    pair("r", "c", "k2", 0)
    pair("r", "d", "k1", 0)
    pair("r", "d", "k3", 0)
    pair("r", "d", "k4", 0)
    pair("s", "c", "k1", 0)
    for run, comparison, case, prefer, note in (
        ("r", "c", "k1", "candidate", "n1"),
        ("r", "c", "k2", "tie", None),
        ("s", "d", "k1", "baseline", None),
    ):
        con.execute(
            "INSERT INTO labels (run_id, kind, comparison, case_id, prefer, note) "
            "VALUES (?, 'pairwise', ?, ?, ?, ?)",
            [run, comparison, case, prefer, note],
        )
    got = queries.run_query(con, "pair_list", run_id="r").to_pylist()
    keys = ("comparison", "case_id", "repeat", "baseline_output", "candidate_output", "human")
    assert [tuple(r[k] for k in keys) for r in got] == [
        ("c", "k1", 0, "v1/m/k1/0", "v2/m/k1/0", "candidate"),
        ("c", "k2", 0, "v1/m/k2/0", "v2/m/k2/0", "tie"),
        ("d", "k1", 0, "v1/m2/k1/0", "v2/m2/k1/0", None),
        ("d", "k3", 0, None, "v2/m2/k3/0", None),
        ("d", "k4", 0, "v1/m2/k4/0", None, None),
    ]
    assert [r["note"] for r in got] == ["n1", None, None, None, None]
