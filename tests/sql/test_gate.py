"""sql/gate.sql: absolute gate rules, a value exactly on its limit passing and a rule matching nothing
failing, against hand-computed fixtures: each warehouse is built by hand, row by row, and the
expected numbers are worked out in the comments.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalwh.warehouse import queries
from tests.sql.conftest import _answer, _warehouse


def test_gate_values_exactly_on_their_limit_pass_and_a_rule_matching_nothing_fails(
    tmp_path: Path,
) -> None:
    # bugs: '>=' as '>' and '<=' as '<' (the gate's own tests go through judge(), whose
    # tolerance is above 0, so a value on its limit passes either way: here the tolerance is
    # 0 and then 0.125); n off by one at each scope; a rule whose target has no rows dropped
    # (inner join), passed, or given n 1. Run r, cell v × m, criterion k: c1, c2, c4 pass,
    # c3 fails; scores mirror the verdicts: pass rate and score 3/4 over 4 cases, no errors.
    con = _warehouse(tmp_path)
    for case, ok in (("c1", True), ("c2", True), ("c3", False), ("c4", True)):
        _answer(con, "r", case, 0, ok)

    def gate(rules: list[tuple[str, str, str, str, float]], tolerance: float) -> list[Any]:
        keys = ("scope", "target", "metric", "op", "limit")
        rows = queries.run_query(
            con,
            "gate",
            run_id="r",
            rules=json.dumps([dict(zip(keys, r, strict=True)) for r in rules]),
            tolerance=tolerance,
        ).to_pylist()
        return [
            (g["scope"], g["target"], g["metric"], g["value"], g["n"], g["passed"]) for g in rows
        ]

    on_limit = [
        ("run", "run", "pass_rate", ">=", 0.75),
        ("run", "run", "error_rate", "<=", 0.0),
        ("cell", "v × m", "score", ">=", 0.75),
        ("criterion", "k", "pass_rate", ">=", 0.75),
        ("cell", "w × x", "pass_rate", ">=", 0.5),  # no such cell
    ]
    assert gate(on_limit, 0.0) == [
        ("cell", "w × x", "pass_rate", None, 0, False),
        ("cell", "v × m", "score", 0.75, 4, True),
        ("criterion", "k", "pass_rate", 0.75, 4, True),
        ("run", "run", "error_rate", 0.0, 4, True),
        ("run", "run", "pass_rate", 0.75, 4, True),
    ]
    # one tolerance past the limit: still on it; a step further: fails
    past = [
        ("run", "run", "pass_rate", ">=", 0.875),
        ("run", "run", "error_rate", "<=", -0.125),
        ("run", "run", "score", ">=", 0.875 + 1 / 64),
    ]
    assert [g[-1] for g in gate(past, 0.125)] == [False, True, True]
    assert [g[2] for g in gate(past, 0.125)] == ["score", "error_rate", "pass_rate"]
