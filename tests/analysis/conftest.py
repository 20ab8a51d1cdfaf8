"""The analysis tests' shared warehouse: runs A and B (cell v × m1, cases c1..c8 in three clusters of
metadata 'doc', score differences and verdicts worked out by hand below), R (cases sampled up to
five times) and W (5 of 10 pass: the textbook Wilson interval), built row by row in a real DuckDB
file so that every number is known; and paired runs A/B built from pass lists.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from evalwh.warehouse.connect import write_connection
from evalwh.warehouse.store import Warehouse
from tests.builders import add_dict_run, rows_of, warehouse_with

# Cell v x m1, cases c1..c8 in three clusters of "doc". Score differences (B - A), by hand:
#   doc d1: c1 +0.5, c2 +0.1, c3 +0.3 | doc d2: c4 -0.2, c5 0.0 | doc d3: c6 +0.4, c7 +0.2, c8 -0.1
# n = 8, mean = 1.2 / 8 = 0.15; per cluster sum of (d - mean): 0.45, -0.5, 0.05;
# CR1 SE = sqrt(3/2 * (0.45^2 + 0.5^2 + 0.05^2)) / 8 = sqrt(1.5 * 0.455) / 8 = 0.1032669...
SCORE_DIFF = {
    "c1": 0.5,
    "c2": 0.1,
    "c3": 0.3,
    "c4": -0.2,
    "c5": 0.0,
    "c6": 0.4,
    "c7": 0.2,
    "c8": -0.1,
}


DOC = {
    "c1": "d1",
    "c2": "d1",
    "c3": "d1",
    "c4": "d2",
    "c5": "d2",
    "c6": "d3",
    "c7": "d3",
    "c8": "d3",
}


PASS_A = {"c1": 1, "c2": 1, "c3": 1, "c4": 1, "c5": 0, "c6": 0, "c7": 0, "c8": 0}


PASS_B = {
    "c1": 1,
    "c2": 0,
    "c3": 1,
    "c4": 1,
    "c5": 1,
    "c6": 1,
    "c7": 0,
    "c8": 0,
}  # c2 broke, c5/c6 fixed


CLUSTER_SE_BY_HAND = math.sqrt(1.5 * 0.455) / 8


def _meta(case: str) -> dict[str, str]:
    return {"doc": DOC[case], "lang": "en" if case <= "c4" else "fr"}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    path = tmp_path_factory.mktemp("analysis") / "w.duckdb"
    a = [
        {"case_id": c, "passed": bool(PASS_A[c]), "score": 0.5, "metadata": _meta(c)}
        for c in SCORE_DIFF
    ]
    a.append({"case_id": "c1", "model": "m2", "passed": True, "score": 1.0})  # only in A
    b = [
        {
            "case_id": c,
            "passed": bool(PASS_B[c]),
            "score": 0.5 + d,
            "cost_usd": 0.002,
            "latency_ms": None if c == "c8" else 100.0 + 10 * i,
            "metadata": _meta(c),
        }
        for i, (c, d) in enumerate(SCORE_DIFF.items())
    ]
    b.append({"case_id": "c1", "variant": "w", "passed": True, "score": 1.0})  # only in B
    # repeats: case x with n samples and c passes (score = passed), plus a shorter case y
    samples = {"x1": [0, 0, 0, 0, 0], "x2": [1, 0, 1, 0, 0], "x3": [1] * 5, "x4": [1, 1, 0, 1, 0]}
    samples["y"] = [1, 0, 0]
    r = [
        {"case_id": case, "repeat": i, "passed": bool(p), "score": float(p) * 0.8 + 0.1}
        for case, passes in samples.items()
        for i, p in enumerate(passes)
    ]
    # Wilson fixture: 5 of 10 pass -> [0.2366, 0.7634] (the textbook value)
    wil = [
        {"case_id": f"w{i}", "passed": i < 5, "score": 1.0, "metadata": {"k": "x"}}
        for i in range(10)
    ]
    with write_connection(path) as con:
        add_dict_run(con, "A", a)
        add_dict_run(con, "B", b)
        add_dict_run(con, "R", r)
        add_dict_run(con, "W", wil)
    return Warehouse(path)


def paired_runs(tmp_path: Path, a: dict[str, list[int]], b: dict[str, list[int]], **kw: Any):
    return warehouse_with(tmp_path, {"A": rows_of(a, **kw), "B": rows_of(b, **kw)})
