"""Plain-text formats (evalwh/reports/fmt.py) every surface shares: a paired delta with its
interval and the p of the same test, a delta without a standard error said to be undefined (not
a made-up range), a regression rule's line, a rate whose interval is undefined, a pairwise win
rate with its interval, sign test and verdict, and the case and pair counts."""

from __future__ import annotations

from typing import Any

from evalwh.cli.render_analysis import delta_text
from evalwh.reports import fmt


def _row(**values: Any) -> dict[str, Any]:
    return {"n": 10, "n_clusters": None, **values}


def test_a_delta_shows_its_interval_and_p_or_says_they_are_undefined() -> None:
    row = _row(pass_rate_delta=-0.4, pass_rate_lo=-0.769, pass_rate_hi=-0.031, pass_rate_p=0.0368)
    assert fmt.delta(row, "pass_rate") == "-40.0 pts [-76.9, -3.1] p=0.0368"
    assert fmt.delta(row, "pass_rate", with_p=False) == "-40.0 pts [-76.9, -3.1]"
    score = _row(score_n=8, score_delta=0.15, score_lo=-0.1, score_hi=0.4, score_p=0.21)
    assert fmt.delta(score, "score", "abs") == "+0.150 [-0.100, +0.400] p=0.21"
    # one case: no standard error, so no interval and no p (was [-100.0, +100.0])
    one = _row(n=1, pass_rate_delta=-1.0, pass_rate_lo=None, pass_rate_hi=None, pass_rate_p=None)
    assert fmt.delta(one, "pass_rate") == "-100.0 pts, interval and p undefined (n=1)"
    assert str(delta_text(one, "pass_rate")) == "-100.0 pts, interval and p undefined (n=1)"
    # every case in one cluster
    clustered = _row(n=8, n_clusters=1, score_n=8, score_delta=-0.5, score_lo=None)
    assert fmt.delta(clustered, "score", "abs").endswith("interval and p undefined (1 cluster)")
    assert fmt.delta(_row(pass_rate_delta=None), "pass_rate") == "–"


def test_a_regression_rule_names_its_p_or_its_undefined_interval() -> None:
    rule = {
        "kind": "regression", "scope": "run", "target": "run", "metric": "pass_rate_drop",
        "op": "<=", "limit": 0.05, "value": 0.1, "n": 40, "drop_lo": 0.002833, "drop_hi": 0.1972,
        "p_value": 0.044, "significant": True, "significant_only": False, "passed": False,
    }  # fmt: skip
    assert fmt.rule_text(rule) == (
        "pass_rate_drop <= 0.05 for run: 0.1 (n=40), 95% CI [0.002833, 0.1972], p=0.044, "
        "off by 0.05"
    )
    single = {**rule, "n": 1, "value": 1.0, "drop_lo": None, "drop_hi": None, "p_value": None}
    single |= {"significant": False, "significant_only": True, "passed": True}
    assert fmt.rule_text(single) == (
        "pass_rate_drop <= 0.05 for run: 1 (n=1), 95% CI and p undefined (one case or one "
        "cluster) (not a clear drop: passes)"
    )


def test_a_rate_without_an_interval_says_so() -> None:
    row = {"n": 3, "n_cases": 1, "n_passed": 2, "pass_rate": 2 / 3}
    assert fmt.rate({**row, "pass_rate_lo": None, "pass_rate_hi": None}) == (
        "66.7% [undefined] (2/3, 1 cases)"
    )
    assert fmt.rate({**row, "pass_rate_lo": 0.5, "pass_rate_hi": 0.75}) == (
        "66.7% [50.0%–75.0%] (2/3, 1 cases)"
    )


def _comparison(**values: Any) -> dict[str, Any]:
    row = {
        "n_cases": 24,
        "n": 24,
        "win_rate": 14.5 / 24,
        "win_rate_lo": 0.47704,
        "win_rate_hi": 0.64478,
        "win_rate_p": 0.125,
        "verdict": "within noise",
        "cases_won": 6,
        "cases_tied": 17,
        "cases_lost": 1,
        "candidate_wins": 6,
        "ties": 17,
        "baseline_wins": 1,
    }
    return {**row, **values}


def test_win_rate_text_and_counts() -> None:
    c = _comparison()
    assert fmt.win_rate(c) == "60.4% [47.7%–64.5%] p=0.125 within noise"
    assert fmt.win_counts(c) == "24 cases: 6 won, 17 tied, 1 lost"


def test_win_rate_without_a_decisive_case_or_an_eligible_pair() -> None:
    # every case tied: the rate is 1/2 and no interval exists (never shown as [0%, 100%]);
    # no eligible pair: nothing but that
    tied = _comparison(win_rate=0.5, win_rate_lo=None, win_rate_hi=None, win_rate_p=1.0)
    tied["verdict"] = "same"
    assert fmt.win_rate(tied) == "50.0% [no interval: no case won or lost] p=1 same"
    none = _comparison(n_cases=0, n=0, win_rate=None, win_rate_lo=None, win_rate_hi=None)
    assert fmt.win_rate(none) == "– (no eligible pairs)"


def test_win_counts_add_the_pairs_when_repeats_make_them_more() -> None:
    c = _comparison(n=32, candidate_wins=23, ties=5, baseline_wins=4, n_cases=11)
    c.update(cases_won=8, cases_tied=2, cases_lost=1)
    assert fmt.win_counts(c) == "11 cases: 8 won, 2 tied, 1 lost; 32 pairs: 23 won, 5 tied, 4 lost"


def test_the_verdict_rules_say_the_threshold_and_tests_the_queries_use() -> None:
    """The words under the compare tables and the win rates restate sql/compare.sql's and
    sql/pairwise.sql's verdicts: the same p threshold, the same test, the same direction."""
    import re

    from tests.conftest import ROOT

    compare = (ROOT / "sql" / "compare.sql").read_text(encoding="utf-8")
    pairwise = (ROOT / "sql" / "pairwise.sql").read_text(encoding="utf-8")
    verdict = compare[compare.index("END AS verdict") - 900 : compare.index("END AS verdict")]
    assert set(re.findall(r"(pass_rate|score)_p < ([0-9.]+)", verdict)) == {
        ("pass_rate", str(fmt.VERDICT_ALPHA)),
        ("score", str(fmt.VERDICT_ALPHA)),
    }
    assert set(re.findall(r"win_rate_p < ([0-9.]+)", pairwise)) == {str(fmt.VERDICT_ALPHA)}
    rule = fmt.compare_rule()
    assert "paired t-test" in rule and "two-sided" in rule
    assert "worse when the pass rate's or the score's p < 0.05 with a drop" in rule
    assert "better when one of them rose with p < 0.05 and neither dropped so" in rule
    assert "clustered over team (CR1" in fmt.compare_rule("team")
    said = fmt.pairwise_rule()
    assert "exact two-sided sign test" in said and "ties left out" in said
    assert "better when p < 0.05 and more cases were won than lost" in said
