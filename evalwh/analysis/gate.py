"""The gate: absolute thresholds (sql/gate.sql) and regression versus a baseline
(sql/compare.sql's paired deltas judged by sql/gate_regression.sql).

Config (``thresholds.regression``)::

    regression:
      baseline: baseline          # the pinned name to compare with (default: baseline)
      on_missing_baseline: fail   # no such pin (or one of another suite): fail (default) or pass
      max_drop_pass_rate: 0.05    # run level, in absolute units (0.05 = 5 points)
      max_drop_score: 0.05
      significant_only: true      # fail only on a significant drop (paired t-test, p < 0.05)
      per_cell: {max_drop_pass_rate: 0.10}
      criteria: {correct: {max_drop_pass_rate: 0.10}}
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalwh.analysis.baselines import DEFAULT_NAME, pinned
from evalwh.analysis.compare import check_cluster, deltas
from evalwh.analysis.runinfo import cluster_key, snapshot
from evalwh.scoring.tolerance import TOLERANCE
from evalwh.warehouse.reading import one_connection

if TYPE_CHECKING:
    from evalwh.warehouse.store import Warehouse

log = logging.getLogger("evalwh.analysis.thresholds")
DROPS = {"max_drop_pass_rate": "pass_rate", "max_drop_score": "score"}
EXTRA = (
    "baseline",
    "baseline_value",
    "run_value",
    "drop_lo",
    "drop_hi",
    "p_value",
    "significant",
    "significant_only",
)


@dataclass
class GateResult:
    """Every rule's verdict: absolute ones (``kind: absolute``) then regression ones."""

    run_id: str
    baseline_id: str | None
    rules: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(rule["passed"] for rule in self.rules)

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [rule for rule in self.rules if not rule["passed"]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "baseline_id": self.baseline_id,
            "passed": self.passed,
            "rules": self.rules,
            "notes": self.notes,
        }


def regression_rules(thresholds: dict[str, Any]) -> list[dict[str, Any]]:
    """``thresholds.regression`` as rules for sql/gate_regression.sql."""
    block = thresholds.get("regression") or {}
    significant = bool(block.get("significant_only", False))
    rules: list[dict[str, Any]] = []

    def add(scope: str, target: str, limits: dict[str, Any]) -> None:
        for key, metric in DROPS.items():
            if limits.get(key) is not None:
                rules.append(
                    {
                        "scope": scope,
                        "target": target,
                        "metric": metric,
                        "limit": float(limits[key]),
                        "significant_only": significant,
                    }
                )

    add("run", "run", block)
    add("cell", "*", block.get("per_cell") or {})
    for name, limits in (block.get("criteria") or {}).items():
        add("criterion", name, limits or {})
    return rules


@one_connection
def judge(
    store: Warehouse,
    run_id: str,
    config: dict[str, Any] | None = None,
    *,
    baseline: str | None = None,
) -> GateResult:
    """Judge a stored run by the thresholds of ``config`` (default: the run's own snapshot).

    ``baseline`` (a run reference) overrides the pinned baseline of
    ``thresholds.regression.baseline``. Regression rules need a baseline: when the pinned one
    cannot be resolved, a ``kind: baseline`` rule fails the gate and says why (a gate never
    passes a limit it could not check), unless ``thresholds.regression.on_missing_baseline``
    is ``pass``: then the rules are skipped with a note (e.g. a project's first run).
    """
    from evalwh.analysis.thresholds import rules_json

    config = snapshot(store, run_id) if config is None else config
    thresholds = config.get("thresholds") or {}
    absolute = store.query(
        "gate", run_id=run_id, rules=rules_json(thresholds), tolerance=TOLERANCE
    ).to_pylist()
    rows = [{"kind": "absolute", **row, **dict.fromkeys(EXTRA)} for row in absolute]
    rules = regression_rules(thresholds)
    notes: list[str] = []
    baseline_id = None
    if rules or baseline is not None:
        baseline_id, why = find_baseline(store, run_id, thresholds, baseline)
        if why and on_missing_baseline(thresholds) == "pass":
            notes.append(f"regression thresholds skipped (on_missing_baseline: pass): {why}")
        elif why:
            rows.append(_unresolved(thresholds, why))
    if rules and baseline_id:
        rows += _regression(store, run_id, baseline_id, config, rules, notes)
    elif baseline_id:
        notes.append(
            f"baseline {baseline_id} given, but thresholds.regression sets no limit: "
            "nothing was judged against it"
        )
    if config.get("pairwise") and (config.get("calibration") or {}).get("on_below_floor") == "fail":
        from evalwh.analysis.judging import calibration_rules, report

        rows += [
            {**dict.fromkeys(EXTRA), **rule}
            for rule in calibration_rules(report(store, run_id, config))
        ]
    return GateResult(run_id, baseline_id, rows, notes)


def on_missing_baseline(thresholds: dict[str, Any]) -> str:
    """``thresholds.regression.on_missing_baseline``: ``fail`` (the default) or ``pass``."""
    return str((thresholds.get("regression") or {}).get("on_missing_baseline") or "fail")


def _unresolved(thresholds: dict[str, Any], why: str) -> dict[str, Any]:
    """The failed rule of a regression baseline that could not be resolved."""
    name = (thresholds.get("regression") or {}).get("baseline") or DEFAULT_NAME
    return {
        "kind": "baseline",
        "scope": "run",
        "target": "run",
        "metric": "baseline",
        "op": "resolves",
        "limit": None,
        "value": None,
        "n": 0,
        "passed": False,
        **dict.fromkeys(EXTRA),
        "message": (
            f"regression baseline {name!r} could not be resolved: {why}; limits not judged "
            "(on_missing_baseline: pass skips them)"
        ),
    }


def find_baseline(
    store: Warehouse, run_id: str, thresholds: dict[str, Any], explicit: str | None
) -> tuple[str | None, str | None]:
    """The baseline run id for ``run_id`` and, when there is none, a note saying why.

    An explicit reference wins; else the name in ``thresholds.regression.baseline`` (default
    ``baseline``) if pinned to a run of the same suite.
    """
    if explicit is not None:
        return store.resolve(explicit), None
    name = (thresholds.get("regression") or {}).get("baseline") or DEFAULT_NAME
    row = pinned(store, name)
    if row is None:
        return None, (
            f"no baseline pinned as {name!r} (pin one with `evalwh baseline set RUN"
            + ("`)" if name == DEFAULT_NAME else f" --name {name}`)")
        )
    suite = store.run_row(run_id).get("suite")
    if row["suite"] != suite:
        return None, (
            f"the baseline {name!r} is run {row['run_id']} of suite {row['suite']!r}, not "
            f"{suite!r} (pass --baseline to use it anyway)"
        )
    return str(row["run_id"]), None


def _regression(
    store: Warehouse,
    run_id: str,
    baseline_id: str,
    config: dict[str, Any],
    rules: list[dict[str, Any]],
    notes: list[str],
) -> list[dict[str, Any]]:
    from evalwh.warehouse.connect import read_connection
    from evalwh.warehouse.queries import run_query

    key = cluster_key(config)
    notes.extend(check_cluster(store, [baseline_id, run_id], key, strict=False))
    table = deltas(store, baseline_id, run_id, cluster=key)
    with read_connection(store.path) as con:
        con.register("deltas", table)
        judged = run_query(
            con, "gate_regression", rules=json.dumps(rules), tolerance=TOLERANCE
        ).to_pylist()
    if baseline_id == run_id:
        notes.append("the baseline is this run itself: every drop is 0")
    return [{"kind": "regression", **row, "baseline": baseline_id} for row in judged]


def log_notes(result: GateResult) -> None:
    for note in result.notes:
        log.warning(note)
