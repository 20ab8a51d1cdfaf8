"""evalwh/reports/verdict_rule.py says what sql/compare.sql does: the verdict's CASE checks,
in the order the text gives them, the pass rate's and the score's p against 0.05 with the
sign of their deltas, and the p is the paired t-test's (sql/macros/stats.sql: paired_p)."""

from __future__ import annotations

import re

from evalwh.reports.verdict_rule import P_TEST, VERDICT_RULE
from evalwh.warehouse.resources import resource_dir


def test_the_verdict_rule_is_the_case_of_sql_compare() -> None:
    sql = (resource_dir("sql") / "compare.sql").read_text(encoding="utf-8")
    case = sql[sql.index("WHEN n = 0 AND n_b = 0") : sql.index("END AS verdict")]
    whens = [
        re.sub(r"\s+", " ", w.strip()) for w in re.findall(r"WHEN (.*?) THEN", case, flags=re.S)
    ]
    verdicts = re.findall(r"THEN '([A-Za-z ]+)'", case)
    assert verdicts == ["only in A", "only in B", "no pairs", "worse", "better", "same"]
    assert whens[3] == (
        "(pass_rate_p < 0.05 AND pass_rate_delta < 0) OR (score_p < 0.05 AND score_delta < 0)"
    )
    assert whens[4] == (
        "(pass_rate_p < 0.05 AND pass_rate_delta > 0) OR (score_p < 0.05 AND score_delta > 0)"
    )
    assert whens[5] == "pass_rate_delta = 0 AND coalesce(score_delta, 0) = 0"
    assert "ELSE 'within noise'" in case
    # the text gives the same order and thresholds
    order = [VERDICT_RULE.index(w) for w in ("worse", "better", "same", "within noise")]
    assert order == sorted(order) and VERDICT_RULE.count("p < 0.05") == 2
    assert "paired_p(" in sql and "paired t-test" in P_TEST and "two-sided" in P_TEST
