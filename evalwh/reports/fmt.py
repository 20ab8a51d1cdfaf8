"""Plain-text formats for exports (Markdown, JUnit) and the pages: numbers, rates, a long
text cut to a page's bound. The CLI has its own, with colour."""

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
    return f"{pct(row[prefix])} {interval(row, prefix)} ({row['n_passed']}/{row['n']}{cases_note(row)})"


def interval(row: dict[str, Any], prefix: str = "pass_rate") -> str:
    """``[54.7%–80.1%]``, or ``[undefined]`` for a rate without one (a single case answered with
    mixed verdicts: the CLT interval of one case mean has no spread to measure)."""
    lo, hi = row.get(prefix + "_lo"), row.get(prefix + "_hi")
    return "[undefined]" if lo is None or hi is None else f"[{pct(lo)}–{pct(hi)}]"


ENDINGS = (
    ("n_truncated", "truncated"),
    ("n_refused", "refused"),
    ("n_blocked", "blocked by a safety filter"),
    ("n_finish_error", "ended by a provider error"),
    ("n_tool_calls", "called tools"),
)


def endings(row: dict[str, Any]) -> str:
    """How a cell's answers ended when not plainly (a row of sql/finish_reasons.sql):
    ``3 truncated, 1 refused (of 40 answers)``."""
    said = [f"{row[key]} {words}" for key, words in ENDINGS if row.get(key)]
    return f"{', '.join(said)} (of {row['n']} answers)" if said else ""


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


def delta(row: dict[str, Any], metric: str, unit: str = "pts", *, with_p: bool = True) -> str:
    """``-6.3 pts [-13.2, +0.6] p=0.12``: a paired difference with its 95% interval and the p of
    the same paired t-test (``with_p``); ``-100.0 pts, interval and p undefined (n=1)`` where
    there is no standard error (one case, or one cluster), never a made-up range."""
    d, lo, hi = row.get(f"{metric}_delta"), row.get(f"{metric}_lo"), row.get(f"{metric}_hi")
    if d is None:
        return "–"
    head = pts(d) if unit == "pts" else signed(d)
    if lo is None or hi is None:
        return f"{head}, interval and p undefined ({undefined_why(row, metric)})"
    scale, digits = (100, 1) if unit == "pts" else (1, 3)
    text = f"{head} [{scale * lo:+.{digits}f}, {scale * hi:+.{digits}f}]"
    p = row.get(f"{metric}_p")
    return text + (f" {p_value(p)}" if with_p and p is not None else "")


def undefined_why(row: dict[str, Any], metric: str) -> str:
    """Why a delta has no standard error: ``n=1`` (one case) or ``1 cluster``."""
    n = row.get(f"{metric}_n", row.get("n"))
    if n is not None and n < 2:
        return f"n={n}"
    return "1 cluster" if row.get("n_clusters") == 1 else "no standard error"


def p_value(p: float | None) -> str:
    """``p=0.25``, ``p<0.001``: a two-sided p-value (a paired t-test's, the interval's; a
    pairwise comparison's exact sign test)."""
    if p is None:
        return "–"
    return "p<0.001" if p < 0.001 else f"p={p:.3g}"


# How a verdict is reached, said where the verdicts are shown (under the tables of the compare
# page and of the run page's win rates). Each restates its query's CASE: sql/compare.sql and
# sql/pairwise.sql; tests/reports/test_fmt.py holds the two to the same threshold.
VERDICT_ALPHA = 0.05


def compare_test(cluster: str | None = None) -> str:
    """The test behind each paired delta's interval and p (sql/compare.sql)."""
    if cluster:
        return (
            f"paired t-test on the case differences B − A, standard errors clustered over "
            f"{cluster} (CR1, clusters − 1 degrees of freedom), two-sided"
        )
    return "paired t-test on the case differences B − A (n − 1 degrees of freedom), two-sided"


def compare_rule(cluster: str | None = None) -> str:
    """The compare verdict rule in words: exactly sql/compare.sql's ``verdict``."""
    return (
        f"p: {compare_test(cluster)}; its 95% interval excludes 0 exactly when "
        f"p < {VERDICT_ALPHA:g}, and neither exists without a standard error (one case or one "
        f"cluster). Verdict: worse when the pass rate's or the score's p < {VERDICT_ALPHA:g} "
        f"with a drop; better when one of them rose with p < {VERDICT_ALPHA:g} and neither "
        "dropped so; same when neither moved; else within noise."
    )


def pairwise_rule() -> str:
    """The pairwise verdict rule in words: exactly sql/pairwise.sql's ``verdict``."""
    return (
        "p: exact two-sided sign test of the cases won against the cases lost (ties left "
        f"out). Verdict: better when p < {VERDICT_ALPHA:g} and more cases were won than lost, "
        f"worse when p < {VERDICT_ALPHA:g} and more were lost; same when no case was won or "
        "lost; else within noise."
    )


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
            text += f", {p_value(rule['p_value'])}"
    elif rule.get("kind") == "regression" and rule["value"] is not None:
        text += ", 95% CI and p undefined (one case or one cluster)"
    judged = rule.get("kind") == "regression" and rule["value"] is not None
    if judged and rule.get("significant_only") and rule["value"] > rule["limit"]:
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


def part_label(part: dict[str, Any]) -> str:
    """A message part as one line shows it: its text, or ``[image photo: image/png]``."""
    if part.get("type", "text") == "text":
        return str(part.get("text", ""))
    what = part.get("name") or part.get("url") or ""
    return f"[{part['type']} {what}: {part.get('media_type') or 'url'}]"


MAX_TEXT = 4000  # characters of one output, prompt or detail kept in a page


def cut(text: Any, limit: int = MAX_TEXT) -> str | None:
    """``text`` as a string of at most ``limit`` characters (None stays None)."""
    if text is None:
        return None
    shown: str = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
    return shown if len(shown) <= limit else shown[:limit]


def json_value(value: Any) -> Any:
    """A JSON column's text parsed (other values, and text that is not JSON, as they are)."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value
