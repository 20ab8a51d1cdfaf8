"""Hand-computed fixtures that pin each named query's numbers, written to kill the SQL mutants
that tests/mutation/sql_mutants.py found alive (issue 21): values exactly at each comparison's
boundary, the full documented order, NULL handling and counts. Each fixture warehouse is built
by hand (or, for sql/gate_regression.sql, its ``deltas`` relation); the expected values are
worked out in the comments.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import duckdb

from evalwh.scoring.tolerance import TOLERANCE
from evalwh.warehouse import queries
from tests.test_queries import _answer, _warehouse


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


# --- pairwise -------------------------------------------------------------------------------


def _judged(
    con: duckdb.DuckDBPyConnection,
    comparison: str,
    case: str,
    verdict: str,
    *,
    repeat: int = 0,
    eligible: bool = True,
    flipped: bool = False,
    baseline_ok: bool = True,
    candidate_ok: bool = True,
    cost: float | None = None,
) -> None:
    """One judged pair of run r: baseline v x a against candidate v x b."""
    con.execute(
        "INSERT INTO pairs (run_id, comparison, case_id, repeat, baseline_variant, "
        "baseline_model, candidate_variant, candidate_model, judge, judge_model, verdict, "
        "flipped, eligible, baseline_ok, candidate_ok, cost_usd, created_at) VALUES "
        "('r', ?, ?, ?, 'v', 'a', 'v', 'b', 'j', 'jm', ?, ?, ?, ?, ?, ?, now())",
        [comparison, case, repeat, verdict, flipped, eligible, baseline_ok, candidate_ok, cost],
    )


def _prefer(
    con: duckdb.DuckDBPyConnection, comparison: str, case: str, prefer: str, run: str = "r"
) -> None:
    con.execute(
        "INSERT INTO labels (run_id, kind, comparison, case_id, prefer) "
        "VALUES (?, 'pairwise', ?, ?, ?)",
        [run, comparison, case, prefer],
    )


def _confusion(
    con: duckdb.DuckDBPyConnection, comparison: str, cells: tuple[int, int, int, int], flips: int
) -> None:
    """Labelled cases by (human, judge): (candidate, candidate), (candidate, baseline),
    (baseline, candidate), (baseline, baseline) in these numbers; the first ``flips`` flipped."""
    pairs = [("candidate", "candidate"), ("candidate", "baseline")]
    pairs += [("baseline", "candidate"), ("baseline", "baseline")]
    i = 0
    for (human, judge), count in zip(pairs, cells, strict=True):
        for _ in range(count):
            _judged(con, comparison, f"k{i}", judge, flipped=i < flips)
            _prefer(con, comparison, f"k{i}", human)
            i += 1


def test_pairwise_counts_majority_verdicts_kappa_bands_and_headline_boundaries(
    tmp_path: Path,
) -> None:
    con = _warehouse(tmp_path)
    # 'a': k1 repeats candidate, candidate, baseline -> judge candidate (2 of 3), case win 2/3;
    # k2 candidate, baseline -> a tie between the top counts: judge 'tie', win 1/2; k3 baseline
    # (candidate not ok) -> 0; k4 tie, flipped -> 0; k5 two ineligible pairs (baseline, tie),
    # baseline not ok. Cost 0.25 a pair.
    for repeat, verdict in enumerate(["candidate", "candidate", "baseline"]):
        _judged(con, "a", "k1", verdict, repeat=repeat, cost=0.25)
    for repeat, verdict in enumerate(["candidate", "baseline"]):
        _judged(con, "a", "k2", verdict, repeat=repeat, cost=0.25)
    _judged(con, "a", "k3", "baseline", candidate_ok=False, cost=0.25)
    _judged(con, "a", "k4", "tie", flipped=True, cost=0.25)
    for repeat, verdict in enumerate(["baseline", "tie"]):
        _judged(
            con, "a", "k5", verdict, repeat=repeat, eligible=False, baseline_ok=False, cost=0.25
        )
    # Labels (human, judge): k1 (candidate, candidate), k2 (tie, tie), k3 (candidate,
    # baseline), k4 (candidate, tie): n 4, agree 2 -> 0.5; human candidate 3, tie 1 -> base
    # rate 3/4; judge candidate 1, tie 2, baseline 1 -> chance (3*1 + 1*2) / 16 = 5/16;
    # kappa (1/2 - 5/16) / (11/16) = 3/11 ~ 0.27: 'fair'.
    for case, prefer in (("k1", "candidate"), ("k2", "tie"), ("k3", "candidate")):
        _prefer(con, "a", case, prefer)
    _prefer(con, "a", "k4", "candidate")
    # 'b': no labels of run r (run s labels b/k1), no costs.
    _judged(con, "b", "k1", "candidate")
    _judged(con, "b", "k2", "baseline")
    _prefer(con, "b", "k1", "baseline", run="s")
    # 'c': only an ineligible pair: no cases, no win rate, no flip rate.
    _judged(con, "c", "k1", "candidate", eligible=False)
    # 'd': one case, judge candidate, human tie: no category in common, so no chance term
    # (0): kappa (0 - 0) / 1 = 0 exactly, 'slight'. One case: win rate 1, interval on n 1.
    _judged(con, "d", "k1", "candidate")
    _prefer(con, "d", "k1", "tie")
    # 'e': 11 cases all won: the interval's upper end rounds to 1.0000000000000002, kept at 1.
    for i in range(11):
        _judged(con, "e", f"k{i}", "candidate")
    # Kappa exactly on each band's upper bound (in binary floating point too), and just
    # above the next bound down:
    #   k20 (1, 0, 2, 1): agree 2/4, chance 6/16 -> 0.2 'slight'
    #   k40 (1, 0, 2, 6): agree 7/9, chance 51/81 -> 0.4 'fair'
    #   k50 (1, 1, 0, 2): agree 3/4, chance 8/16 -> 0.5 'moderate', 1 flip of 4 = 0.25
    #   k60 (1, 0, 1, 6): agree 7/8, chance 38/64 -> 0.6 'moderate'
    #   k62 (2, 0, 1, 2): agree 4/5, chance 13/25 -> 8/13 ~ 0.615 'substantial'
    #   k80 (4, 0, 1, 5): agree 9/10, chance 50/100 -> 0.8 'substantial'
    #   k81 (4, 0, 1, 6): agree 10/11, chance 65/121 -> 48/59 ~ 0.814 'almost perfect'
    bands = {
        "k20": (1, 0, 2, 1),
        "k40": (1, 0, 2, 6),
        "k50": (1, 1, 0, 2),
        "k60": (1, 0, 1, 6),
        "k62": (2, 0, 1, 2),
        "k80": (4, 0, 1, 5),
        "k81": (4, 0, 1, 6),
    }
    for name, cells in bands.items():
        _confusion(con, name, cells, flips=1 if name == "k50" else 0)
    # Calibrated: n_labels >= 4 and kappa >= 0.5, both met exactly by k50; flagged: flip rate
    # over 0.25, k50's is exactly 0.25 (not flagged, so its headline stands).
    got = {
        r["comparison"]: r
        for r in queries.run_query(
            con, "pairwise", run_id="r", min_kappa=0.5, min_labels=4, max_flip_rate=0.25
        ).to_pylist()
    }
    assert list(got) == ["a", "b", "c", "d", "e", *bands]
    a = got["a"]
    assert (a["baseline"], a["candidate"], a["judge"], a["judge_model"]) == (
        "v × a",
        "v × b",
        "j",
        "jm",
    )
    counts = ("n_pairs", "n", "n_cases", "n_excluded", "candidate_wins", "baseline_wins", "ties")
    assert [a[k] for k in counts] == [9, 7, 4, 2, 3, 3, 1]
    assert (a["n_labels"], a["agreement"], a["base_rate"]) == (4, 0.5, 0.75)
    assert a["chance_agreement"] == 5 / 16
    assert math.isclose(a["kappa"], 3 / 11)
    assert a["kappa_band"] == "fair"
    assert math.isclose(a["win_rate"], (2 / 3 + 1 / 2) / 4)
    assert (a["n_flipped"], a["flip_rate"]) == (1, 1 / 7)
    assert (a["baseline_pass_rate"], a["candidate_pass_rate"]) == (7 / 9, 8 / 9)
    assert a["judge_cost_usd"] == 9 * 0.25
    b = got["b"]
    assert (b["n_labels"], b["kappa"], b["kappa_band"], b["judge_cost_usd"]) == (
        0,
        None,
        "undefined",
        0,
    )
    assert (b["n_pairs"], b["n_cases"], b["win_rate"]) == (2, 2, 0.5)
    c = got["c"]
    assert (c["n_pairs"], c["n"], c["n_cases"], c["n_excluded"]) == (1, 0, 0, 1)
    assert (c["win_rate"], c["win_rate_lo"], c["win_rate_hi"], c["flip_rate"]) == (None,) * 4
    assert (c["flip_flagged"], c["calibrated"], c["headline_eligible"]) == (False,) * 3
    d = got["d"]
    assert (d["n_labels"], d["agreement"], d["chance_agreement"], d["kappa"]) == (1, 0, 0, 0)
    assert d["kappa_band"] == "slight"
    # Wilson on 1 of 1: lo = (1 + z^2/2 - z * sqrt(z^2/4)) / (1 + z^2) = 1 / (1 + z^2)
    z = 1.959963984540054
    assert math.isclose(d["win_rate_lo"], 1 / (1 + z * z))
    assert d["win_rate_hi"] == 1.0
    assert (got["e"]["n_cases"], got["e"]["win_rate"], got["e"]["win_rate_hi"]) == (11, 1.0, 1.0)
    assert [
        (got[k]["kappa"], got[k]["kappa_band"]) for k in ("k20", "k40", "k50", "k60", "k80")
    ] == [
        (0.2, "slight"),
        (0.4, "fair"),
        (0.5, "moderate"),
        (0.6, "moderate"),
        (0.8, "substantial"),
    ]
    assert math.isclose(got["k62"]["kappa"], 8 / 13)
    assert math.isclose(got["k81"]["kappa"], 48 / 59)
    assert (got["k62"]["kappa_band"], got["k81"]["kappa_band"]) == ("substantial", "almost perfect")
    flags = ("n_labels", "flip_rate", "calibrated", "flip_flagged", "headline_eligible")
    assert {k: tuple(r[f] for f in flags) for k, r in got.items()} == {
        "a": (4, 1 / 7, False, False, False),
        "b": (0, 0.0, False, False, False),
        "c": (0, None, False, False, False),
        "d": (1, 0.0, False, False, False),
        "e": (0, 0.0, False, False, False),
        "k20": (4, 0.0, False, False, False),
        "k40": (9, 0.0, False, False, False),
        "k50": (4, 0.25, True, False, True),
        "k60": (8, 0.0, True, False, True),
        "k62": (5, 0.0, True, False, True),
        "k80": (10, 0.0, True, False, True),
        "k81": (11, 0.0, True, False, True),
    }


# --- repeats --------------------------------------------------------------------------------


def test_repeats_give_the_fewest_and_most_repeats_per_k_up_to_the_most_sampled_case(
    tmp_path: Path,
) -> None:
    # Cell v x m: c1 answered 3 times (pass, pass, fail), c2 twice (pass, pass). k runs 1..3
    # (the most repeats of a case); k 1 and 2 average both cases (2 and 3 repeats), k 3 only c1.
    # pass@1 = mean(1 - C(1,1)/C(3,1), 1) = (2/3 + 1) / 2; pass^3 of c1 = C(2,3) = 0.
    con = _warehouse(tmp_path)
    for case, repeat, ok in (
        ("c1", 0, True),
        ("c1", 1, True),
        ("c1", 2, False),
        ("c2", 0, True),
        ("c2", 1, True),
    ):
        _answer(con, "r", case, repeat, ok)
    got = queries.run_query(con, "repeats", run_id="r").to_pylist()
    keys = ("variant", "model", "k", "n_cases", "n_samples", "min_repeats", "max_repeats")
    assert [tuple(r[k] for k in keys) for r in got] == [
        (None, None, 1, 2, 5, 2, 3),
        (None, None, 2, 2, 5, 2, 3),
        (None, None, 3, 1, 3, 3, 3),
        ("v", "m", 1, 2, 5, 2, 3),
        ("v", "m", 2, 2, 5, 2, 3),
        ("v", "m", 3, 1, 3, 3, 3),
    ]
    assert math.isclose(got[0]["pass_at_k"], (2 / 3 + 1) / 2)
    assert (got[2]["pass_hat_k"], got[2]["n_flaky"]) == (0.0, 1)


# --- point_list -----------------------------------------------------------------------------


def test_point_list_takes_first_repeats_judged_answers_and_the_criterions_own_label(
    tmp_path: Path,
) -> None:
    # Run r, answers '<variant>/<model>/<case>/<repeat>' (messages '<variant>/<model>'):
    #   k1: v1 x m repeats 0 and 1, v1 x m2, v2 x m, v2 x m2; k2, k3: v1 x m.
    # llm-judge scores (passed, raw, error):
    #   q/k1: v1 x m r0 (T, 1.0), r1 (F, 0.0); v1 x m2 (T, 1.0); v2 x m (F, 0.5);
    #         v2 x m2 (F, 0.0, judge failed). Judged answers without error: 2 of 4 passed ->
    #         0.5, exactly half: a pass; raw mean (1 + 0 + 1 + 0.5) / 4 = 0.625.
    #   p/k1: v1 x m (F, 0.0).  q/k2: v1 x m (F, 0.25).  q/k3: v1 x m (F, 0.0, judge failed):
    #         no judged answer, so no verdict.
    #   An 'exact' criterion x on k1 (no judge) is not an item.
    # Run s: the same q/k1 answers of v1 x m and v2 x m, both failed, and a label.
    # Labels of r, pointwise: k1 criterion q 'good', k1 any criterion 'bad', k2 any criterion
    # 'fine', k2 criterion zz 'zz'; pairwise k2 (ignored). Run s: k2 criterion q 'other'.
    con = _warehouse(tmp_path)

    def answer(run: str, variant: str, model: str, case: str, repeat: int = 0) -> None:
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, messages, expected, "
            "output, cached, request_hash, attempts, score, passed, created_at) VALUES "
            "(?, ?, ?, ?, ?, ?, ?, ?, false, 'h', 1, 0, false, now())",
            [
                run,
                variant,
                model,
                case,
                repeat,
                json.dumps(f"{variant}/{model}"),
                json.dumps(f"e-{case}"),
                f"{variant}/{model}/{case}/{repeat}",
            ],
        )

    def judged(
        run: str,
        criterion: str,
        variant: str,
        model: str,
        case: str,
        ok: bool,
        raw: float,
        *,
        repeat: int = 0,
        error: str | None = None,
        scorer: str = "llm-judge",
    ) -> None:
        con.execute(
            "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, scorer, "
            "score, passed, weight, required, error, judge_model, raw_score, rationale) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1, true, ?, ?, ?, 'why')",
            [
                run,
                variant,
                model,
                case,
                repeat,
                criterion,
                scorer,
                float(ok),
                ok,
                error,
                None if scorer != "llm-judge" else "jm",
                raw,
            ],
        )

    for run in ("r", "s"):
        for variant, model in (("v1", "m"), ("v1", "m2"), ("v2", "m"), ("v2", "m2")):
            answer(run, variant, model, "k1")
    answer("r", "v1", "m", "k1", repeat=1)
    answer("r", "v1", "m", "k2")
    answer("r", "v1", "m", "k3")
    judged("r", "q", "v1", "m", "k1", False, 0.0, repeat=1)
    judged("r", "q", "v1", "m", "k1", True, 1.0)
    judged("r", "q", "v1", "m2", "k1", True, 1.0)
    judged("r", "q", "v2", "m", "k1", False, 0.5)
    judged("r", "q", "v2", "m2", "k1", False, 0.0, error="judge failed")
    judged("r", "p", "v1", "m", "k1", False, 0.0)
    judged("r", "x", "v1", "m", "k1", True, 1.0, scorer="exact")
    judged("r", "q", "v1", "m", "k2", False, 0.25)
    judged("r", "q", "v1", "m", "k3", False, 0.0, error="judge failed")
    judged("s", "q", "v1", "m", "k1", False, 0.0)
    judged("s", "q", "v2", "m", "k1", False, 0.0)
    for run, kind, comparison, case, label in (
        ("r", "pointwise", "q", "k1", "good"),
        ("r", "pointwise", None, "k1", "bad"),
        ("r", "pointwise", None, "k2", "fine"),
        ("r", "pointwise", "zz", "k2", "zz"),
        ("r", "pairwise", "q", "k2", "pairwise"),
        ("s", "pointwise", "q", "k2", "other"),
    ):
        con.execute(
            "INSERT INTO labels (run_id, kind, comparison, case_id, label) VALUES (?, ?, ?, ?, ?)",
            [run, kind, comparison, case, json.dumps(label)],
        )
    got = queries.run_query(con, "point_list", run_id="r").to_pylist()

    def human(value: str | None) -> str | None:
        return None if value is None else json.loads(value)

    assert [
        (r["criterion"], r["case_id"], r["judge_passed"], r["judge_raw_score"], human(r["human"]))
        for r in got
    ] == [
        ("p", "k1", False, 0.0, "bad"),
        ("q", "k1", True, 0.625, "good"),
        ("q", "k2", False, 0.25, "fine"),
        ("q", "k3", None, None, None),
    ]
    fields = ("variant", "model", "output", "passed", "raw_score", "judge_error")
    assert [tuple(a[f] for f in fields) for a in got[1]["answers"]] == [
        ("v1", "m", "v1/m/k1/0", True, 1.0, None),
        ("v1", "m2", "v1/m2/k1/0", True, 1.0, None),
        ("v2", "m", "v2/m/k1/0", False, 0.5, None),
        ("v2", "m2", "v2/m2/k1/0", False, 0.0, "judge failed"),
    ]
    assert [[a["output"] for a in r["answers"]] for r in (got[0], got[2], got[3])] == [
        ["v1/m/k1/0"],
        ["v1/m/k2/0"],
        ["v1/m/k3/0"],
    ]
    assert [(json.loads(r["messages"]), json.loads(r["expected"])) for r in got] == [
        ("v1/m", "e-k1"),
        ("v1/m", "e-k1"),
        ("v1/m", "e-k2"),
        ("v1/m", "e-k3"),
    ]


def test_point_list_shows_the_prompt_of_the_first_answer_even_when_a_name_extends_another(
    tmp_path: Path,
) -> None:
    # Variants 'v' and 'v\x01x' (names are not restricted to printable characters), model 'z':
    # the answers list 'v' first (a prefix sorts first), and the prompt shown is v's. The
    # (variant, model) sort key must separate the two with a character below any in a name.
    con = _warehouse(tmp_path)
    for variant in ("v", "v\x01x"):
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, messages, output, "
            "cached, request_hash, attempts, score, passed, created_at) VALUES "
            "('r', ?, 'z', 'k', 0, ?, 'o', false, 'h', 1, 0, false, now())",
            [variant, json.dumps(variant)],
        )
        con.execute(
            "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, scorer, "
            "score, passed, weight, required, judge_model, raw_score) "
            "VALUES ('r', ?, 'z', 'k', 0, 'q', 'llm-judge', 1, true, 1, true, 'jm', 1)",
            [variant],
        )
    (row,) = queries.run_query(con, "point_list", run_id="r").to_pylist()
    assert [a["variant"] for a in row["answers"]] == ["v", "v\x01x"]
    assert json.loads(row["messages"]) == "v"


# --- rows_since, run_attachments, slice_criterion -------------------------------------------


def test_rows_since_gives_the_answers_stored_strictly_after_oldest_first(tmp_path: Path) -> None:
    # Run r: c1 at 10:00, c2 and c3 at 10:01 (same instant: by case), c4 at 10:02; run s: one
    # answer at 10:01. After 10:01: only c4 (an answer stored exactly then is not new).
    con = _warehouse(tmp_path)
    for run, case, minute in (
        ("r", "c3", 1),
        ("r", "c4", 2),
        ("r", "c1", 0),
        ("r", "c2", 1),
        ("s", "c9", 1),
    ):
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, cached, request_hash, "
            "attempts, score, passed, created_at) "
            "VALUES (?, 'v', 'm', ?, 0, false, 'h', 1, 1, true, ?::TIMESTAMPTZ)",
            [run, case, f"2026-01-01 10:0{minute}:00+00"],
        )

    def since(after: str | None, limit: int = 10) -> list[str]:
        rows = queries.run_query(con, "rows_since", run_id="r", after=after, limit=limit)
        return [r["case_id"] for r in rows.to_pylist()]

    assert since(None) == ["c1", "c2", "c3", "c4"]
    assert since(None, limit=2) == ["c1", "c2"]
    assert since("2026-01-01 10:01:00+00") == ["c4"]
    assert since("2026-01-01 09:00:00+00") == ["c1", "c2", "c3", "c4"]


def test_run_attachments_count_distinct_files_bytes_and_case_rows(tmp_path: Path) -> None:
    # Run r: c1 img (sha a, png, 10 bytes) + doc (sha b, text, 5); c2 img a again; c3 img
    # (sha c, png, 20); c4 img (sha e, jpeg, 7); c5 no attachments. Run s: img (sha d, png, 99).
    # img png: files a, c -> 2, 10 + 20 = 30 bytes, case rows c1 c2 c3 -> 3.
    con = _warehouse(tmp_path)

    def att(sha: str, media: str, size: int) -> dict[str, Any]:
        return {"sha256": sha, "media_type": media, "bytes": size}

    png, text, jpeg = "image/png", "text/plain", "image/jpeg"
    for run, case, files in (
        ("r", "c1", {"img": att("a", png, 10), "doc": att("b", text, 5)}),
        ("r", "c2", {"img": att("a", png, 10)}),
        ("r", "c3", {"img": att("c", png, 20)}),
        ("r", "c4", {"img": att("e", jpeg, 7)}),
        ("r", "c5", None),
        ("s", "c1", {"img": att("d", png, 99)}),
    ):
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, attachments, cached, "
            "request_hash, attempts, score, passed, created_at) "
            "VALUES (?, 'v', 'm', ?, 0, ?, false, 'h', 1, 1, true, now())",
            [run, case, None if files is None else json.dumps(files)],
        )
    got = queries.run_query(con, "run_attachments", run_id="r").to_pylist()
    assert [(r["name"], r["media_type"], r["files"], r["bytes"], r["case_rows"]) for r in got] == [
        ("doc", text, 1, 5, 1),
        ("img", jpeg, 1, 7, 1),
        ("img", png, 2, 30, 3),
    ]


def test_slice_criterion_cuts_one_criterion_by_a_key_worst_first(tmp_path: Path) -> None:
    # Run r, criterion q: c1 en pass, c2 en fail, c3 fr pass, c4 (no lang) fail, c5 de pass.
    # By lang: (none) 0/1, en 1/2, then de and fr both 1/1 (by name). Whole run: 3/5.
    # Not counted: criterion x of run r, criterion q of run s.
    con = _warehouse(tmp_path)
    for case, lang, ok in (
        ("c1", "en", True),
        ("c2", "en", False),
        ("c3", "fr", True),
        ("c4", None, False),
        ("c5", "de", True),
    ):
        _case(con, "r", case, metadata={"lang": lang} if lang else {"t": 1})
        _score(con, "r", case, "q", ok)
        _score(con, "r", case, "x", not ok)
    _case(con, "s", "c1", metadata={"lang": "en"})
    _score(con, "s", "c1", "q", False)

    def sliced(key: str | None) -> list[tuple[str, int, float, float]]:
        rows = queries.run_query(con, "slice_criterion", run_id="r", key=key, criterion="q")
        return [(r["slice"], r["n"], r["pass_rate"], r["mean_score"]) for r in rows.to_pylist()]

    assert sliced("lang") == [
        ("(none)", 1, 0.0, 0.0),
        ("en", 2, 0.5, 0.5),
        ("de", 1, 1.0, 1.0),
        ("fr", 1, 1.0, 1.0),
    ]
    assert sliced(None) == [("(all)", 5, 0.6, 0.6)]


# --- resolve_run ----------------------------------------------------------------------------


def test_resolve_run_ranks_exact_id_then_latest_or_baseline_then_label_then_prefix(
    tmp_path: Path,
) -> None:
    # Runs (started minute, label): abc1 (1), zzz9 (3), yyy8 (4, label 'abc1'), abc1x (5),
    # qqq1 (2, label 'rel'), rel77 (6), ttt0 (6). A baseline named 'abc1' pins zzz9.
    # 'abc1': the exact id (how 0) beats the baseline (1, although newer), the label (2) and the
    # prefix match abc1x (3). 'rel': the label (2) beats the newer prefix match rel77 (3).
    # 'latest': every run ranks 1, newest first; ttt0 and rel77 started at the same instant:
    # the greater run id first.
    con = _warehouse(tmp_path)
    for run_id, minute, label in (
        ("abc1", 1, None),
        ("zzz9", 3, None),
        ("yyy8", 4, "abc1"),
        ("abc1x", 5, None),
        ("qqq1", 2, "rel"),
        ("rel77", 6, None),
        ("ttt0", 6, None),
    ):
        con.execute(
            "INSERT INTO runs (run_id, suite, label, status, config_hash, dataset_hash, "
            "n_planned, started_at, evalwh_version) "
            "VALUES (?, 's', ?, 'completed', 'h', 'd', 1, ?::TIMESTAMPTZ, 't')",
            [run_id, label, f"2026-01-01 10:0{minute}:00+00"],
        )
    con.execute("INSERT INTO baselines VALUES ('abc1', 'zzz9', now())")

    def resolve(ref: str) -> list[tuple[str, int]]:
        rows = queries.run_query(con, "resolve_run", ref=ref).to_pylist()
        return [(r["run_id"], r["how"]) for r in rows]

    assert resolve("abc1") == [("abc1", 0), ("zzz9", 1), ("yyy8", 2), ("abc1x", 3)]
    assert resolve("rel") == [("qqq1", 2), ("rel77", 3)]
    assert resolve("latest") == [
        ("ttt0", 1),
        ("rel77", 1),
        ("abc1x", 1),
        ("yyy8", 1),
        ("zzz9", 1),
        ("qqq1", 1),
        ("abc1", 1),
    ]


# --- run_totals, runs -----------------------------------------------------------------------

_Z = 1.959963984540054  # the 97.5 % normal quantile every Wilson interval in sql/ uses


def _wilson(p: float, n: int) -> tuple[float, float]:
    centre, spread = p + _Z * _Z / (2 * n), _Z * math.sqrt(p * (1 - p) / n + _Z * _Z / (4 * n * n))
    return (centre - spread) / (1 + _Z * _Z / n), (centre + spread) / (1 + _Z * _Z / n)


def _row(con: duckdb.DuckDBPyConnection, run: str, **values: Any) -> None:
    """One cases row: run_id and the given columns over defaults of a passed, uncached answer."""
    row: dict[str, Any] = {
        "run_id": run,
        "variant": "v",
        "model": "m",
        "case_id": "c1",
        "repeat": 0,
        "cached": False,
        "request_hash": "h",
        "attempts": 1,
        "score": 1.0,
        "passed": True,
        "created_at": "2026-01-01 00:00:00+00",
        **values,
    }
    con.execute(
        f"INSERT INTO cases ({', '.join(row)}) VALUES ({', '.join('?' for _ in row)})",
        list(row.values()),
    )


def test_run_totals_by_hand_with_cached_errored_and_judged_answers(tmp_path: Path) -> None:
    # Run r: v x m c1 r0 pass (cost 0.5, tokens 10/20, judge 0.25, score 1); c1 r1 fail from
    # the cache (cost 0.5, tokens 10/20, score 0.5); c2 error (no cost, no tokens, score 0);
    # w x m c1 fail (cost 0.25, tokens 5/0, score 0.25). Pairs of r cost 1.0 + 0.5 (+ one
    # without a cost); a pair of run s costs 8.
    # n 4, passed 1, errors 1, cached 1; cases: v c1 1/2, v c2 0, w c1 0 -> p = 1/6 on 3;
    # score (1 + 0.5 + 0 + 0.25) / 4; cost not from the cache 0.75, with it 1.25; judges
    # 0.25 + 1.5. Run s (one answer) is not counted.
    con = _warehouse(tmp_path)
    _row(con, "r", cost_usd=0.5, input_tokens=10, output_tokens=20, judge_cost_usd=0.25)
    _row(
        con,
        "r",
        repeat=1,
        passed=False,
        cached=True,
        score=0.5,
        cost_usd=0.5,
        input_tokens=10,
        output_tokens=20,
    )
    _row(con, "r", case_id="c2", passed=False, score=0.0, error="boom")
    _row(con, "r", variant="w", passed=False, score=0.25, cost_usd=0.25, input_tokens=5)
    _row(con, "s", cost_usd=9.0, input_tokens=99, judge_cost_usd=9.0)
    for run, cost in (("r", 1.0), ("r", 0.5), ("r", None), ("s", 8.0)):
        _judged(con, "c", f"k{cost}", "tie", cost=cost)
        con.execute("UPDATE pairs SET run_id = ? WHERE case_id = ?", [run, f"k{cost}"])
    (t,) = queries.run_query(con, "run_totals", run_id="r").to_pylist()
    counts = ("n", "n_cases", "n_passed", "n_errors", "n_cached")
    assert [t[k] for k in counts] == [4, 3, 1, 1, 1]
    assert math.isclose(t["pass_rate"], 1 / 6)
    lo, hi = _wilson(1 / 6, 3)
    assert math.isclose(t["pass_rate_lo"], lo) and math.isclose(t["pass_rate_hi"], hi)
    assert (t["error_rate"], t["mean_score"]) == (0.25, 1.75 / 4)
    assert (t["cost_usd"], t["cost_uncached_usd"], t["judge_cost_usd"]) == (0.75, 1.25, 1.75)
    assert (t["input_tokens"], t["output_tokens"]) == (25, 40)


def test_run_totals_of_an_empty_run_and_of_a_single_case(tmp_path: Path) -> None:
    # No answers: zeros, and no rates or interval (not 0 and 1). One passed case: the Wilson
    # interval on n 1 is [1 / (1 + z^2), 1]; an answer without costs or tokens sums to 0.
    con = _warehouse(tmp_path)
    (empty,) = queries.run_query(con, "run_totals", run_id="none").to_pylist()
    assert [empty[k] for k in ("n", "n_cases", "n_passed", "n_errors", "n_cached")] == [0] * 5
    nothing = ("pass_rate", "pass_rate_lo", "pass_rate_hi", "error_rate", "mean_score")
    assert [empty[k] for k in nothing] == [None] * 5
    zero = ("cost_usd", "cost_uncached_usd", "input_tokens", "output_tokens", "judge_cost_usd")
    assert [empty[k] for k in zero] == [0] * 5
    _row(con, "one")
    (one,) = queries.run_query(con, "run_totals", run_id="one").to_pylist()
    assert (one["n_cases"], one["pass_rate"], one["pass_rate_hi"]) == (1, 1.0, 1.0)
    assert math.isclose(one["pass_rate_lo"], 1 / (1 + _Z * _Z))
    assert [one[k] for k in zero] == [0] * 5
    # 11 passed cases: the interval's upper end rounds to 1.0000000000000002, kept at 1.
    for i in range(11):
        _row(con, "eleven", case_id=f"c{i}")
    (eleven,) = queries.run_query(con, "run_totals", run_id="eleven").to_pylist()
    assert (eleven["n_cases"], eleven["pass_rate"], eleven["pass_rate_hi"]) == (11, 1.0, 1.0)


def test_runs_filter_each_parameter_at_its_bounds_newest_first(tmp_path: Path) -> None:
    # r1 (suite a, label L, completed, 10:01): answers pass (cost 0.5) and error (cached, 0.25);
    # r2 (b, running, 10:02); r3 (a, L, failed, 10:03): one pass without a cost; r4 (a,
    # completed, 10:04). Since is inclusive, until exclusive.
    con = _warehouse(tmp_path)
    for run_id, suite, label, status, minute in (
        ("r1", "a", "L", "completed", 1),
        ("r2", "b", None, "running", 2),
        ("r3", "a", "L", "failed", 3),
        ("r4", "a", None, "completed", 4),
    ):
        con.execute(
            "INSERT INTO runs (run_id, suite, label, status, config_hash, dataset_hash, "
            "n_planned, started_at, evalwh_version) "
            "VALUES (?, ?, ?, ?, 'h', 'd', 1, ?::TIMESTAMPTZ, 't')",
            [run_id, suite, label, status, f"2026-01-01 10:0{minute}:00+00"],
        )
    _row(con, "r1", cost_usd=0.5)
    _row(con, "r1", case_id="c2", passed=False, error="boom", cached=True, cost_usd=0.25)
    _row(con, "r3")

    def runs(limit: int = 10, **given: str) -> list[str]:
        params = {k: given.get(k) for k in ("suite", "label", "status", "since", "until")}
        return [
            r["run_id"] for r in queries.run_query(con, "runs", limit=limit, **params).to_pylist()
        ]

    every = queries.run_query(
        con, "runs", limit=10, suite=None, label=None, status=None, since=None, until=None
    ).to_pylist()
    keys = ("run_id", "n", "n_passed", "n_errors", "pass_rate", "cost_usd")
    assert [tuple(r[k] for k in keys) for r in every] == [
        ("r4", 0, 0, 0, None, 0),
        ("r3", 1, 1, 0, 1.0, 0),
        ("r2", 0, 0, 0, None, 0),
        ("r1", 2, 1, 1, 0.5, 0.5),
    ]
    assert runs(limit=2) == ["r4", "r3"]
    assert runs(suite="a") == ["r4", "r3", "r1"]
    assert runs(label="L") == ["r3", "r1"]
    assert runs(status="completed") == ["r4", "r1"]
    assert runs(since="2026-01-01 10:02:00+00") == ["r4", "r3", "r2"]
    assert runs(until="2026-01-01 10:03:00+00") == ["r2", "r1"]
    assert runs(suite="a", status="completed", until="2026-01-01 10:04:00+00") == ["r1"]


# --- slice ----------------------------------------------------------------------------------


def test_slices_by_two_keys_average_repeats_per_case_and_cell(tmp_path: Path) -> None:
    # Run r, by lang and tier:
    #   v x m c1 {en, 1}: r0 pass (score 1, cost 0.5), r1 fail from the cache (0.5, 2.0);
    #   v x m c2 {en, 1}: error (score 0, no cost); w x m c1 {en, 1}: pass (1, 0.25);
    #   w x m c3 {fr}: pass (0.75, 0.125). Run s: c1 {en, 1} fail (not counted).
    # 'lang=en, tier=1': n 4, cases v c1 1/2, v c2 0, w c1 1 -> 3 cases, rate 0.5; passes 2,
    #   errors 1, score 2.5 / 4, cost not from the cache 0.75. v x m: n 3, 2 cases, rate 0.25,
    #   score 0.5, cost 0.5. w x m: 1 case, rate 1, cost 0.25.
    # 'lang=fr, tier=(none)': w x m c3 alone. 'lang=de, tier=2': v x m c4, pass without a cost
    # (0); and 11 passing cases of x x m, whose interval's upper end rounds above 1: kept at 1.
    con = _warehouse(tmp_path)
    en, fr = json.dumps({"lang": "en", "tier": 1}), json.dumps({"lang": "fr"})
    _row(con, "r", metadata=en, cost_usd=0.5)
    _row(con, "r", metadata=en, repeat=1, passed=False, score=0.5, cost_usd=2.0, cached=True)
    _row(con, "r", metadata=en, case_id="c2", passed=False, score=0.0, error="boom")
    _row(con, "r", metadata=en, variant="w", cost_usd=0.25)
    _row(con, "r", metadata=fr, variant="w", case_id="c3", score=0.75, cost_usd=0.125)
    _row(con, "s", metadata=en, passed=False)
    de = json.dumps({"lang": "de", "tier": 2})
    _row(con, "r", metadata=de, case_id="c4")
    for i in range(11):
        _row(con, "r", metadata=json.dumps({"lang": "x"}), variant="x", case_id=f"x{i}")
    got = queries.run_query(con, "slice", run_id="r", keys=["lang", "tier"]).to_pylist()
    de_s, x_s = "lang=de, tier=2", "lang=x, tier=(none)"
    assert [(r["slice"], r["variant"], r["n_cases"], r["pass_rate_hi"]) for r in got[:2]] == [
        (de_s, None, 1, 1.0),
        (de_s, "v", 1, 1.0),
    ]
    assert [(r["cost_usd"], r["n_cases"], r["pass_rate_hi"]) for r in got[-2:]] == [
        (0, 11, 1.0)
    ] * 2
    assert [r["slice"] for r in got[-2:]] == [x_s, x_s]
    assert got[0]["cost_usd"] == 0
    got = got[2:-2]
    keys = ("slice", "slice_values", "variant", "model", "n", "n_cases", "n_passed", "n_errors")
    en_s, fr_s = "lang=en, tier=1", "lang=fr, tier=(none)"
    assert [tuple(r[k] for k in keys) for r in got] == [
        (en_s, ["en", "1"], None, None, 4, 3, 2, 1),
        (en_s, ["en", "1"], "v", "m", 3, 2, 1, 1),
        (en_s, ["en", "1"], "w", "m", 1, 1, 1, 0),
        (fr_s, ["fr", "(none)"], None, None, 1, 1, 1, 0),
        (fr_s, ["fr", "(none)"], "w", "m", 1, 1, 1, 0),
    ]
    assert [(r["pass_rate"], r["mean_score"], r["cost_usd"]) for r in got] == [
        (0.5, 0.625, 0.75),
        (0.25, 0.5, 0.5),
        (1.0, 1.0, 0.25),
        (1.0, 0.75, 0.125),
        (1.0, 0.75, 0.125),
    ]
    for r in got:
        lo, hi = _wilson(r["pass_rate"], r["n_cases"])
        assert math.isclose(r["pass_rate_lo"], lo)
        assert math.isclose(r["pass_rate_hi"], min(1.0, hi))


# --- summary --------------------------------------------------------------------------------


def test_summary_averages_repeats_per_case_and_gives_the_wilson_interval_on_cases(
    tmp_path: Path,
) -> None:
    # Run r, cell a x z: c1 pass then fail, c2 pass, c3 fail -> n 4, 3 cases, rate
    # (1/2 + 1 + 0) / 3 = 0.5. Cell b x a: c1 pass -> [1 / (1 + z^2), 1] on 1 case.
    # Run s: another case of a x z (not counted).
    con = _warehouse(tmp_path)
    _row(con, "r", variant="a", model="z")
    _row(con, "r", variant="a", model="z", repeat=1, passed=False)
    _row(con, "r", variant="a", model="z", case_id="c2")
    _row(con, "r", variant="a", model="z", case_id="c3", passed=False)
    _row(con, "r", variant="b", model="a")
    _row(con, "s", variant="a", model="z", case_id="c9")
    for i in range(11):  # 11 passed cases: the upper end rounds above 1, kept at 1
        _row(con, "r", variant="c", model="a", case_id=f"x{i}")
    az, ba, ca = queries.run_query(con, "summary", run_id="r").to_pylist()
    assert (ca["n_cases"], ca["pass_rate"], ca["pass_rate_hi"]) == (11, 1.0, 1.0)
    assert [(r["variant"], r["model"], r["n"], r["n_cases"], r["n_passed"]) for r in (az, ba)] == [
        ("a", "z", 4, 3, 2),
        ("b", "a", 1, 1, 1),
    ]
    assert az["pass_rate"] == 0.5
    lo, hi = _wilson(0.5, 3)
    assert math.isclose(az["pass_rate_lo"], lo) and math.isclose(az["pass_rate_hi"], hi)
    assert (ba["pass_rate"], ba["pass_rate_hi"]) == (1.0, 1.0)
    assert math.isclose(ba["pass_rate_lo"], 1 / (1 + _Z * _Z))
