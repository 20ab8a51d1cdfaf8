"""Thresholds from eval.yaml as rules for ``sql/gate.sql`` (the comparison itself is SQL)."""

from __future__ import annotations

import json
from typing import Any

METRICS = {
    "min_pass_rate": ("pass_rate", ">="),
    "min_score": ("score", ">="),
    "max_error_rate": ("error_rate", "<="),
    "max_cost_usd": ("cost_usd", "<="),
}


def threshold_rules(thresholds: dict[str, Any]) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = []

    def add(scope: str, target: str, block: dict[str, Any]) -> None:
        for key, value in block.items():
            if key in METRICS:
                metric, op = METRICS[key]
                rules.append(
                    {
                        "scope": scope,
                        "target": target,
                        "metric": metric,
                        "op": op,
                        "limit": float(value),
                    }
                )

    add("run", "run", thresholds)
    add("cell", "*", thresholds.get("per_cell") or {})
    for name, block in (thresholds.get("criteria") or {}).items():
        add("criterion", name, block)
    return rules


def rules_json(thresholds: dict[str, Any]) -> str:
    return json.dumps(threshold_rules(thresholds))
