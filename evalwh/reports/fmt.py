"""Plain-text number formats for exports (Markdown, JUnit). The CLI has its own, with colour."""

from __future__ import annotations

import json
from typing import Any


def pct(x: float | None, digits: int = 1) -> str:
    return "–" if x is None else f"{100 * x:.{digits}f}%"


def pts(x: float | None) -> str:
    """A difference of two rates in percentage points, signed."""
    return "–" if x is None else f"{100 * x:+.1f} pts"


def num(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def signed(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:+.{digits}f}"


def usd(x: float | None) -> str:
    if x is None:
        return "–"
    return f"${x:.4f}" if abs(x) < 1 else f"${x:.2f}"


def rate(row: dict[str, Any], prefix: str = "pass_rate") -> str:
    """``68.8% [54.7%–80.1%] (33/48)``: a rate always with its interval and n."""
    if not row.get("n"):
        return "– (n=0)"
    return (
        f"{pct(row[prefix])} [{pct(row[prefix + '_lo'])}–{pct(row[prefix + '_hi'])}] "
        f"({row['n_passed']}/{row['n']}{cases_note(row)})"
    )


def cases_note(row: dict[str, Any]) -> str:
    """``, 12 cases`` when repeats make the answers more than the cases (the interval's n)."""
    n_cases = row.get("n_cases")
    return f", {n_cases} cases" if n_cases is not None and n_cases != row["n"] else ""


def win_rate(c: dict[str, Any]) -> str:
    """``60.4% [47.7%–64.5%] p=0.125 within noise``: a pairwise comparison's win rate (ties
    count half) with its interval, the sign test's p and the verdict, which agree by
    construction (sql/pairwise.sql); no interval when no case was won or lost."""
    if not c.get("n_cases"):
        return "– (no eligible pairs)"
    if c["win_rate_lo"] is None:
        interval = "[no interval: no case won or lost]"
    else:
        interval = f"[{pct(c['win_rate_lo'])}–{pct(c['win_rate_hi'])}]"
    return f"{pct(c['win_rate'])} {interval} {p_value(c['win_rate_p'])} {c['verdict']}"


def win_counts(c: dict[str, Any]) -> str:
    """``24 cases: 6 won, 17 tied, 1 lost``, the candidate's, with the pairs' counts when
    repeats make the pairs more than the cases (the case is the unit: its pairs decide it)."""
    text = f"{c['n_cases']} cases: {c['cases_won']} won, {c['cases_tied']} tied, {c['cases_lost']} lost"
    if c["n"] != c["n_cases"]:
        text += (
            f"; {c['n']} pairs: {c['candidate_wins']} won, {c['ties']} tied, "
            f"{c['baseline_wins']} lost"
        )
    return text


def delta(row: dict[str, Any], metric: str, unit: str = "pts") -> str:
    """``-6.3 pts [-13.2, +0.6]``: a paired difference with its 95% interval."""
    d, lo, hi = row.get(f"{metric}_delta"), row.get(f"{metric}_lo"), row.get(f"{metric}_hi")
    if d is None:
        return "–"
    if unit == "pts":
        head = pts(d)
        ci = f" [{100 * lo:+.1f}, {100 * hi:+.1f}]" if lo is not None and hi is not None else ""
    else:
        head = signed(d)
        ci = f" [{lo:+.3f}, {hi:+.3f}]" if lo is not None and hi is not None else ""
    return head + ci


def p_value(p: float | None) -> str:
    """``p=0.25``, ``p<0.001``: an exact test's two-sided p-value."""
    if p is None:
        return "–"
    return "p<0.001" if p < 0.001 else f"p={p:.3g}"


def rule_text(rule: dict[str, Any]) -> str:
    """``pass_rate >= 0.5 for run: 0.6875 (n=48)`` (+ how far off, + the interval of a drop);
    a rule that could not be judged (``kind: baseline``) is its message."""
    if rule.get("message"):
        return str(rule["message"])
    where = "run" if rule["scope"] == "run" else f"{rule['scope']} {rule['target']}"
    value = "no data" if rule["value"] is None else f"{rule['value']:.4g}"
    text = f"{rule['metric']} {rule['op']} {rule['limit']:g} for {where}: {value} (n={rule['n']})"
    if rule.get("kind") == "regression" and rule.get("drop_lo") is not None:
        text += f", 95% CI [{rule['drop_lo']:.4g}, {rule['drop_hi']:.4g}]"
        if rule.get("p_value") is not None:
            text += f", exact {p_value(rule['p_value'])}"
        if rule.get("significant_only") and rule["value"] > rule["limit"]:
            text += " (a clear drop)" if rule.get("significant") else " (not a clear drop: passes)"
    if not rule["passed"] and rule["value"] is not None:
        text += f", off by {abs(rule['value'] - rule['limit']):.4g}"
    return text


def rule_name(rule: dict[str, Any]) -> str:
    """The rule without its verdict: ``pass_rate >= 0.5 for run`` (a JUnit test case's name)."""
    where = "run" if rule["scope"] == "run" else f"{rule['scope']} {rule['target']}"
    if rule["limit"] is None:
        return f"{rule['metric']} {rule['op']} for {where}"
    return f"{rule['metric']} {rule['op']} {rule['limit']:g} for {where}"


def json_value(value: Any) -> Any:
    """A JSON column's text parsed (other values, and text that is not JSON, as they are)."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value
