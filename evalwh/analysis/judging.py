"""Pairwise win rates and judge calibration of a stored run (sql/pairwise.sql and friends),
and the one place a judged number's flags are decided.

Calibration comes first: a win rate is only a headline when the judge agrees with the
user's labels (Cohen's kappa at or above ``calibration.min_kappa`` on at least
``calibration.min_labels`` labels) and does not flip with the answers' order more than
``calibration.max_flip_rate``; an llm-judge criterion's scores likewise need its pointwise
agreement at the floor. Each miss is a flag:

- ``UNCALIBRATED``: kappa below ``min_kappa`` or undefined, or no human labels at all;
- ``LOW-N``: fewer labels than ``min_labels`` (the kappa rests on too few);
- ``FLIPPY``: a comparison's flip rate above ``max_flip_rate``.

:func:`report` gathers them under ``flags`` (``{"pairwise:<name>" | "criterion:<name>":
[reason, ...]}``); the CLI, ``evalwh decide``, the HTML report, the viewer, MCP and the
json/md exports all print that dict (:func:`flag_lines`), never a set of their own. With
``on_below_floor: fail`` the gate fails too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalwh.analysis.runinfo import snapshot
from evalwh.warehouse.reading import one_connection

if TYPE_CHECKING:
    from evalwh.warehouse.store import Warehouse

UNCALIBRATED = "UNCALIBRATED"
LOW_N = "LOW-N"
FLIPPY = "FLIPPY"
DEFAULTS = {
    "min_kappa": 0.6,
    "min_labels": 20,
    "max_flip_rate": 0.30,
    "on_below_floor": "flag",
    "within": 1.0,  # numeric pointwise labels: agreement within this many points
    "weights": "quadratic",  # numeric pointwise labels: the weighted kappa's weights
}
WEIGHTS = ("quadratic", "linear")


def calibration_settings(config: dict[str, Any]) -> dict[str, Any]:
    return {**DEFAULTS, **(config.get("calibration") or {})}


@one_connection
def report(
    store: Warehouse,
    run_id: str,
    config: dict[str, Any] | None = None,
    *,
    by: str | None = None,
    within: float | None = None,
) -> dict[str, Any]:
    """Pairwise comparisons (calibration, then win rate), confusion matrices, pointwise
    calibration of llm-judge criteria (numeric labels: exact, within-N and weighted kappa;
    ``within`` overrides ``calibration.within``), and optionally both by one metadata key."""
    config = snapshot(store, run_id) if config is None else config
    cal = calibration_settings(config)
    if within is not None:
        cal["within"] = within
    comparisons = store.query(
        "pairwise",
        run_id=run_id,
        min_kappa=float(cal["min_kappa"]),
        min_labels=int(cal["min_labels"]),
        max_flip_rate=float(cal["max_flip_rate"]),
    ).to_pylist()
    confusion = store.query("calibration", run_id=run_id).to_pylist()
    for row in comparisons:
        row["flags"] = flags(row, cal)
        row["confusion"] = [
            {"human": c["human"], "judge": c["judge"], "n": c["n"]}
            for c in confusion
            if c["comparison"] == row["comparison"]
        ]
    # one pass: the overall rows (slice None), then those of each slice of `by`
    rows = pointwise(store, run_id, float(cal["within"]), key=by, weights=str(cal["weights"]))
    points = [p for p in rows if p["slice"] is None]
    by_name = {p["criterion"]: p for p in points}
    for p in points:
        p["flags"] = criterion_flags(p, cal)
    out: dict[str, Any] = {
        "calibration": cal,
        "comparisons": comparisons,
        "pointwise": points,
        "flags": {
            **{f"pairwise:{c['comparison']}": c["flags"] for c in comparisons if c["flags"]},
            **{
                f"criterion:{name}": reasons
                for name in judged_criteria(config)
                if (reasons := criterion_flags(by_name.get(name), cal))
            },
        },
    }
    if by:
        out["slices"] = store.query("calibration_slices", run_id=run_id, key=by).to_pylist()
        out["pointwise_slices"] = [p for p in rows if p["slice"] is not None]
    return out


def pointwise(
    store: Warehouse,
    run_id: str,
    within: float = 1.0,
    *,
    key: str | None = None,
    weights: str = "quadratic",
) -> list[dict[str, Any]]:
    """``sql/calibration_pointwise.sql``: per llm-judge criterion (slice None), then per slice
    of ``key`` when given, each row with ``label_units``, what its labels are (:func:`label_units`)."""
    rows: list[dict[str, Any]] = store.query(
        "calibration_pointwise", run_id=run_id, within=float(within), key=key, weights=weights
    ).to_pylist()
    for row in rows:
        row["label_units"] = label_units(row)
    return rows


def label_units(p: dict[str, Any]) -> str:
    """What a criterion's labels are, as every surface prints it: labels of single answers
    (each against the judge's verdict on that answer), and labels of whole cases, each judged
    against the majority of the case's N answers (the meaning a label naming no answer keeps)."""
    parts = []
    if p.get("n_answer_labels"):
        parts.append(f"{p['n_answer_labels']} answer label(s)")
    if p.get("n_case_labels"):
        lo, hi = p["case_label_answers_min"], p["case_label_answers_max"]
        many = str(lo) if lo == hi else f"{lo}–{hi}"
        parts.append(
            f"{p['n_case_labels']} per-case label(s) (judged against the majority of {many} answers)"
        )
    return "; ".join(parts)


def _floor(kappa: float | None, n: int, cal: dict[str, Any], name: str = "kappa") -> list[str]:
    """The UNCALIBRATED and LOW-N reasons of an agreement ``kappa`` on ``n`` labels."""
    out = []
    if kappa is None:
        out.append(f"{UNCALIBRATED}: {name} undefined (n_labels={n})")
    elif kappa < cal["min_kappa"]:
        out.append(f"{UNCALIBRATED}: {name} {kappa:.2f} below the floor {cal['min_kappa']:g}")
    if n < cal["min_labels"]:
        out.append(f"{LOW_N}: {n} label(s), fewer than {cal['min_labels']}")
    return out


def flags(row: dict[str, Any], cal: dict[str, Any]) -> list[str]:
    """Why a comparison's win rate is not a headline (empty when it is)."""
    out = _floor(row["kappa"], row["n_labels"], cal)
    if row["flip_flagged"]:
        out.append(f"{FLIPPY}: flip rate {row['flip_rate']:.2f} above {cal['max_flip_rate']:g}")
    return out


def criterion_flags(p: dict[str, Any] | None, cal: dict[str, Any]) -> list[str]:
    """Why an llm-judge criterion's scores are not calibrated (empty when they are), from its
    row of sql/calibration_pointwise.sql (None: no label names it). Pass/fail labels decide
    by Cohen's kappa on their n; a criterion labelled with scores only, by the weighted kappa
    on the numeric labels' n."""
    if p is None or not (p["n_labels"] or p.get("n_numeric")):
        return [f"{UNCALIBRATED}: no human labels"]
    if not p["n_labels"]:  # scores only
        return _floor(p["weighted_kappa"], p["n_numeric"], cal, "weighted kappa")
    return _floor(p["kappa"], p["n_labels"], cal)


def judged_criteria(config: dict[str, Any]) -> list[str]:
    """The run's llm-judge criteria, in scorecard order (from its config snapshot)."""
    return [
        str(c["name"])
        for c in config.get("scorecard") or []
        if isinstance(c, dict) and c.get("type") == "llm-judge" and c.get("name")
    ]


@one_connection
def run_flags(store: Warehouse, run_id: str) -> dict[str, list[str]]:
    """:func:`report`'s ``flags`` of a stored run (empty when it used no judge)."""
    config = snapshot(store, run_id)
    if not (config.get("pairwise") or config.get("judges")):
        return {}
    flagged: dict[str, list[str]] = report(store, run_id, config)["flags"]
    return flagged


def flag_lines(flags: dict[str, list[str]]) -> list[str]:
    """``report()["flags"]`` as lines (``pairwise:<name>: FLIPPY: ...``), the form every
    text surface prints."""
    return [f"{target}: {reason}" for target, reasons in flags.items() for reason in reasons]


def flag_names(reasons: list[str] | None) -> list[str]:
    """The distinct flag names (UNCALIBRATED, LOW-N, FLIPPY) of a target's reasons."""
    return list(dict.fromkeys(r.split(":", 1)[0] for r in reasons or []))


def calibration_rules(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Gate rows for ``calibration.on_below_floor: fail`` (none with ``flag``)."""
    cal = data["calibration"]
    if cal["on_below_floor"] != "fail":
        return []
    rows = []
    for row in data["comparisons"]:
        rows.append(
            {
                "kind": "calibration",
                "scope": "pairwise",
                "target": row["comparison"],
                "metric": "kappa",
                "op": ">=",
                "limit": float(cal["min_kappa"]),
                "value": row["kappa"],
                "n": row["n_labels"],
                "passed": bool(row["headline_eligible"]),
            }
        )
    return rows
