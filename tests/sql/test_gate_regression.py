"""sql/gate_regression.sql: regression rules over hand-made deltas rows of sql/compare.sql (drops at
their limits, significance, missing rows), against hand-computed fixtures: each warehouse is built
by hand, row by row, and the expected numbers are worked out in the comments.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb

from evalwh.scoring.tolerance import TOLERANCE
from evalwh.warehouse import queries

# Hand-made rows of sql/compare.sql for sql/gate_regression.sql, one cell per target; each
# interval and p-value as the one paired t-test of compare.sql gives them together (the interval
# excludes 0 exactly when p < 0.05):
# target: (n, pass delta, pass lo, pass hi, pass p, score n, score delta, lo, hi, score p)
REGRESSION_DELTAS: dict[str, tuple[Any, ...]] = {
    # both drops 0.25, significant (p 0.01, the intervals below 0)
    "t1": (8, -0.25, -0.5, -0.125, 0.01, 8, -0.25, -0.5, -0.125, 0.01),
    # the same drops, p 0.0625 and intervals holding 0: not significant
    "t2": (8, -0.25, -0.5, 0.05, 0.0625, 8, -0.25, -0.5, 0.05, 0.0625),
    # no drop (p 1 at a mean difference of 0)
    "t3": (9, 0.0, -0.5, 0.5, 1.0, 9, 0.0, -0.5, 0.5, 1.0),
    # a cell only in the baseline: no pairs
    "t4": (0, None, None, None, None, None, None, None, None, None),
    # one pair: no standard error, so no interval and no p
    "t5": (1, -1.0, None, None, None, 1, -0.5, None, None, None),
    # clustered into one cluster: no interval and no p either (never significant)
    "t6": (6, -1.0, None, None, None, 6, -0.5, None, None, None),
    # a score interval ending exactly at 0, p exactly 0.05: not significant
    "t7": (6, 0.0, -0.25, 0.25, 1.0, 6, -0.25, -0.5, 0.0, 0.05),
}


def test_regression_gate_rules_on_hand_made_deltas(tmp_path: Path) -> None:
    # bugs: the significance tests of sql/gate_regression.sql with a bound or a constant moved
    # (t2: p 0.0625; t3: no drop; t7: p 0.05 exactly), the drop interval's signs, a drop exactly
    # on its limit failing, '*' reaching cells without pairs (t4) or missing one pair (t5), a
    # rule naming no target dropped or passed, an undefined p (t5, t6: one case, one cluster)
    # read as significant, significant_only defaulting to true.
    import pyarrow as pa

    names = ["n", "pass_rate_delta", "pass_rate_lo", "pass_rate_hi", "pass_rate_p"]
    names += ["score_n", "score_delta", "score_lo", "score_hi", "score_p"]
    columns: dict[str, Any] = {"scope": ["cell"] * len(REGRESSION_DELTAS)}
    columns["target"] = list(REGRESSION_DELTAS)
    for i, name in enumerate(names):
        values = [row[i] for row in REGRESSION_DELTAS.values()]
        columns[name] = pa.array(values, pa.int64() if name.endswith("n") else pa.float64())
    for side in ("a", "b"):
        columns[f"pass_rate_{side}"] = columns[f"score_{side}"] = [0.5] * len(REGRESSION_DELTAS)
    con = duckdb.connect()
    con.register("deltas", pa.table(columns))

    def gate(*rules: tuple[str, str, float, bool | None]) -> dict[tuple[str, str], Any]:
        keys = ("target", "metric", "limit", "significant_only")
        rows = queries.run_query(
            con,
            "gate_regression",
            rules=json.dumps([{"scope": "cell", **dict(zip(keys, r, strict=True))} for r in rules]),
            tolerance=0.0,
        ).to_pylist()
        return {
            (r["metric"], r["target"]): (
                r["value"], r["n"], r["drop_lo"], r["drop_hi"], r["significant"],
                r["significant_only"], r["passed"],
            )
            for r in rows
        }  # fmt: skip

    assert gate(("*", "pass_rate", 0.125, True)) == {
        ("pass_rate_drop", "t1"): (0.25, 8, 0.125, 0.5, True, True, False),
        ("pass_rate_drop", "t2"): (0.25, 8, -0.05, 0.5, False, True, True),
        ("pass_rate_drop", "t3"): (0.0, 9, -0.5, 0.5, False, True, True),
        ("pass_rate_drop", "t5"): (1.0, 1, None, None, False, True, True),
        ("pass_rate_drop", "t6"): (1.0, 6, None, None, False, True, True),
        ("pass_rate_drop", "t7"): (0.0, 6, -0.25, 0.25, False, True, True),
    }
    assert gate(("*", "score", 0.125, True)) == {
        ("score_drop", "t1"): (0.25, 8, 0.125, 0.5, True, True, False),
        ("score_drop", "t2"): (0.25, 8, -0.05, 0.5, False, True, True),
        ("score_drop", "t3"): (0.0, 9, -0.5, 0.5, False, True, True),
        ("score_drop", "t5"): (0.5, 1, None, None, False, True, True),
        ("score_drop", "t6"): (0.5, 6, None, None, False, True, True),
        ("score_drop", "t7"): (0.25, 6, 0.0, 0.5, False, True, True),
    }
    # a drop exactly on its limit passes; significant_only left out is false; no such target
    assert gate(("t1", "score", 0.25, None), ("nope", "pass_rate", 0.5, None)) == {
        ("score_drop", "t1"): (0.25, 8, 0.125, 0.5, True, False, True),
        ("pass_rate_drop", "nope"): (None, 0, None, None, False, False, False),
    }
    assert gate(("t1", "score", 0.25 - 1 / 64, None))[("score_drop", "t1")][-1] is False


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
    #   C      3       0.5  0.5    0      -0.25   0.25  1.0   |        3  -0.25 -0.5   0.0   0.05
    #   D      4       0.75 0.25  -0.5    -0.75   0.0   0.05  |        4  -0.25 -0.5   0.0   0.05
    #   E      5       0.75 0.25  -0.5    -0.75   0.25  0.125 |        5  -0.25 -0.5   0.125 0.125
    #   F      6       0.25 0.5    0.25    0      0.5   0.5   |     NULL  (no score)
    #   G      7       0.5  0.5    0       0      0     1.0   |        2  -0.5  NULL  NULL   NULL
    # (C and D: p exactly 0.05, so D's hi is exactly 0 as well.)
    # Significant: delta < 0 and p < 0.05 -> only A (C has a pass delta 0 and a score p of
    # 0.05 exactly, D p = 0.05 exactly, E p = 0.125); G's score has none (NULL), shown as false.
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
        ("C", 3, 0.5, 0.5, 0.0, -0.25, 0.25, 1.0, 3, 0.5, 0.25, -0.25, -0.5, 0.0, 0.05),
        ("D", 4, 0.75, 0.25, -0.5, -0.75, 0.0, 0.05, 4, 0.5, 0.25, -0.25, -0.5, 0.0, 0.05),
        ("E", 5, 0.75, 0.25, -0.5, -0.75, 0.25, 0.125, 5, 0.5, 0.25, -0.25, -0.5, 0.125, 0.125),
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
        ("cell", "D", "pass_rate_drop", 0.25, 0.5, 4, 0.0, 0.75, False, False, False),
        ("cell", "E", "pass_rate_drop", 0.25, 0.5, 5, -0.25, 0.75, False, False, False),
        ("cell", "F", "score_drop", 0.0, None, 0, None, None, False, False, False),
        ("run", "run", "pass_rate_drop", 0.05, None, 0, None, None, False, True, False),
        ("cell", "A", "pass_rate_drop", 0.25, at, 1, 0.125, 0.5, True, False, True),
        ("cell", "C", "pass_rate_drop", 0.25, 0.0, 3, -0.25, 0.25, False, False, True),
        ("cell", "C", "score_drop", 0.1, 0.25, 3, 0.0, 0.5, False, True, True),
        ("cell", "D", "score_drop", 0.1, 0.25, 4, 0.0, 0.5, False, True, True),
        ("cell", "E", "score_drop", 0.1, 0.25, 5, -0.125, 0.5, False, True, True),
        ("cell", "F", "pass_rate_drop", 0.25, -0.25, 6, -0.5, 0.0, False, False, True),
        ("cell", "G", "pass_rate_drop", 0.25, 0.0, 7, 0.0, 0.0, False, False, True),
        ("cell", "G", "score_drop", 0.1, 0.5, 2, None, None, False, True, True),
    ]
    a_pass = next(r for r in got if r["target"] == "A" and r["metric"] == "pass_rate_drop")
    assert (a_pass["baseline_value"], a_pass["run_value"], a_pass["p_value"]) == (1.0, 0.75, 0.01)
    assert {r["op"] for r in got} == {"<="}
