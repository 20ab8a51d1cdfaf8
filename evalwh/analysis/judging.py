"""Pairwise win rates and judge calibration of a stored run (sql/pairwise.sql and friends).

Calibration comes first: a win rate is only a headline when the judge agrees with the
user's labels (Cohen's kappa at or above ``calibration.min_kappa`` on at least
``calibration.min_labels`` labels) and does not flip with the answers' order more than
``calibration.max_flip_rate``. Otherwise every place the win rate appears marks it
UNCALIBRATED; with ``on_below_floor: fail`` the gate fails too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalwh.analysis.runinfo import snapshot

if TYPE_CHECKING:
    from evalwh.warehouse.store import Warehouse

UNCALIBRATED = "UNCALIBRATED"
DEFAULTS = {
    "min_kappa": 0.6,
    "min_labels": 20,
    "max_flip_rate": 0.30,
    "on_below_floor": "flag",
    "within": 1.0,  # numeric pointwise labels: agreement within this many points
}


def calibration_settings(config: dict[str, Any]) -> dict[str, Any]:
    return {**DEFAULTS, **(config.get("calibration") or {})}


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
    out: dict[str, Any] = {
        "calibration": cal,
        "comparisons": comparisons,
        "pointwise": pointwise(store, run_id, float(cal["within"])),
    }
    if by:
        out["slices"] = store.query("calibration_slices", run_id=run_id, key=by).to_pylist()
        out["pointwise_slices"] = pointwise(store, run_id, float(cal["within"]), key=by)
    return out


def pointwise(
    store: Warehouse, run_id: str, within: float = 1.0, *, key: str | None = None
) -> list[dict[str, Any]]:
    """``sql/calibration_pointwise.sql``: per llm-judge criterion (and slice of ``key``)."""
    rows: list[dict[str, Any]] = store.query(
        "calibration_pointwise", run_id=run_id, within=float(within), key=key
    ).to_pylist()
    return rows


def flags(row: dict[str, Any], cal: dict[str, Any]) -> list[str]:
    """Why a comparison's win rate is not a headline (empty when it is)."""
    out = []
    if row["kappa"] is None:
        out.append(f"{UNCALIBRATED}: kappa undefined (n_labels={row['n_labels']})")
    elif row["kappa"] < cal["min_kappa"]:
        out.append(f"{UNCALIBRATED}: kappa {row['kappa']:.2f} below the floor {cal['min_kappa']:g}")
    if row["n_labels"] < cal["min_labels"]:
        out.append(f"{UNCALIBRATED}: {row['n_labels']} label(s), fewer than {cal['min_labels']}")
    if row["flip_flagged"]:
        out.append(f"FLIPPY: flip rate {row['flip_rate']:.2f} above {cal['max_flip_rate']:g}")
    return out


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
