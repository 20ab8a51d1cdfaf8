"""Plain-text formats (evalwh/reports/fmt.py) every surface shares: a pairwise win rate with its
interval, sign test and verdict, undefined parts shown as such, and the case and pair counts."""

from __future__ import annotations

from typing import Any

from evalwh.reports import fmt


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
