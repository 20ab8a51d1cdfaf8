"""Thresholds of eval.yaml as rules for sql/gate.sql (evalwh/analysis/thresholds.py): each
``min_*``/``max_*`` key reaches the SQL as the documented operator. The comparisons at their limits
are in tests/analysis/test_gate.py.
"""

from __future__ import annotations

import json


def test_gate_rules_reach_the_sql_as_documented_operators() -> None:
    from evalwh.analysis.thresholds import threshold_rules

    rules = threshold_rules(
        {"min_pass_rate": 0.5, "min_score": 0.5, "max_error_rate": 0.1, "max_cost_usd": 2}
    )
    assert [(r["metric"], r["op"], r["limit"]) for r in rules] == [
        ("pass_rate", ">=", 0.5),
        ("score", ">=", 0.5),
        ("error_rate", "<=", 0.1),
        ("cost_usd", "<=", 2.0),
    ]
    assert json.loads(json.dumps(rules)) == rules
