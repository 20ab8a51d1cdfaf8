"""The statistics of sql/compare.sql, slice.sql, repeats.sql and flaky.sql against hand-computed
fixtures and reference implementations (statistics, math.comb), on a real DuckDB file built
row by row so that every number is known."""

from __future__ import annotations

import json
import math
import re
import statistics
from datetime import datetime, timezone
from typing import Any

import pytest

from evalwh.analysis.compare import compare, deltas
from evalwh.analysis.nolook import NOTICE
from evalwh.analysis.slices import slice_run
from evalwh.errors import UsageError
from evalwh.warehouse.connect import write_connection
from evalwh.warehouse.store import Warehouse

Z = 1.959963984540054
T975 = {2: 4.302652729749464, 7: 2.3646242515927844}  # scipy.stats.t.ppf(0.975, df)
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def add_run(con: Any, run_id: str, rows: list[dict[str, Any]], *, suite: str = "s") -> None:
    """Insert a run and its case rows (one criterion 'k1' mirroring the verdict, 'k2' always
    passing) into a migrated warehouse."""
    con.execute(
        "INSERT INTO runs (run_id, label, suite, status, config_hash, dataset_hash, "
        "n_planned, started_at, evalwh_version) VALUES (?, ?, ?, 'completed', 'h', 'd', ?, ?, 't')",
        [run_id, run_id, suite, len(rows), NOW],
    )
    for r in rows:
        row = {
            "variant": "v",
            "model": "m1",
            "repeat": 0,
            "cost_usd": 0.001,
            "latency_ms": 100.0,
            "error": None,
            "metadata": {},
            **r,
        }
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, metadata, error, "
            "latency_ms, cost_usd, cached, request_hash, attempts, score, passed, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, false, 'x', 1, ?, ?, ?)",
            [
                run_id,
                row["variant"],
                row["model"],
                row["case_id"],
                row["repeat"],
                json.dumps(row["metadata"]),
                row["error"],
                row["latency_ms"],
                row["cost_usd"],
                row["score"],
                row["passed"],
                NOW,
            ],
        )
        for criterion, passed, score in (
            ("k1", row["passed"], row["score"]),
            ("k2", True, 1.0),
        ):
            con.execute(
                "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, scorer, "
                "score, passed, weight, required) VALUES (?, ?, ?, ?, ?, ?, 'x', ?, ?, 1, true)",
                [
                    run_id,
                    row["variant"],
                    row["model"],
                    row["case_id"],
                    row["repeat"],
                    criterion,
                    score,
                    passed,
                ],
            )


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
        add_run(con, "A", a)
        add_run(con, "B", b)
        add_run(con, "R", r)
        add_run(con, "W", wil)
    return Warehouse(path)


def _row(table: Any, scope: str, target: str) -> dict[str, Any]:
    rows = [r for r in table.to_pylist() if r["scope"] == scope and r["target"] == target]
    assert len(rows) == 1, (scope, target, rows)
    return rows[0]


def test_paired_differences_match_a_reference(store: Warehouse) -> None:
    cell = _row(deltas(store, "A", "B"), "cell", "v × m1")
    d_pass = [PASS_B[c] - PASS_A[c] for c in SCORE_DIFF]
    d_score = list(SCORE_DIFF.values())
    assert cell["n"] == 8 and cell["n_a"] == 8 and cell["n_b"] == 8
    assert cell["n_fixed"] == 2 and cell["n_broken"] == 1
    for metric, d in (("pass_rate", d_pass), ("score", d_score)):
        se = statistics.stdev(d) / math.sqrt(len(d))
        assert cell[f"{metric}_delta"] == pytest.approx(statistics.mean(d))
        assert cell[f"{metric}_se"] == pytest.approx(se)
        # a t-interval with n - 1 = 7 df (scipy.stats.t.ppf(0.975, 7)), not the normal z
        assert cell[f"{metric}_lo"] == pytest.approx(statistics.mean(d) - T975[7] * se)
        assert cell[f"{metric}_hi"] == pytest.approx(statistics.mean(d) + T975[7] * se)
    assert cell["pass_rate_a"] == pytest.approx(0.5) and cell["pass_rate_b"] == pytest.approx(0.625)
    # cost: every pair +0.001 (sd 0); latency: c8 has none in B, so 7 pairs
    assert cell["cost_usd_delta"] == pytest.approx(0.001) and cell["cost_usd_se"] == pytest.approx(
        0
    )
    assert cell["latency_ms_n"] == 7
    assert cell["latency_ms_delta"] == pytest.approx(statistics.mean(10 * i for i in range(7)))
    # the run row pools the pairs of the overlapping cell only
    run = _row(deltas(store, "A", "B"), "run", "run")
    assert (run["n"], run["n_a"], run["n_b"]) == (8, 9, 9)
    assert run["pass_rate_delta"] == pytest.approx(cell["pass_rate_delta"])


def test_hand_computed_fixture_of_the_paired_se(store: Warehouse) -> None:
    # d_pass = [0, -1, 0, 0, 1, 1, 0, 0]: mean 1/8, sum of squares 2.875, sd sqrt(2.875 / 7)
    # = 0.6408..., SE = sd / sqrt(8) = 0.2266...; d_score: mean 0.15, sum of squares
    # 0.60 - 8 * 0.15^2 = 0.42, SE = sqrt(0.42 / 7 / 8) = 0.0866...
    cell = _row(deltas(store, "A", "B"), "cell", "v × m1")
    assert cell["pass_rate_delta"] == pytest.approx(1 / 8)
    assert cell["pass_rate_se"] == pytest.approx(math.sqrt(2.875 / 7) / math.sqrt(8))
    assert cell["pass_rate_se"] == pytest.approx(0.22658, abs=1e-5)
    assert cell["score_se"] == pytest.approx(math.sqrt(0.42 / 7 / 8))
    assert cell["score_se"] == pytest.approx(0.086603, abs=1e-6)


def test_cells_only_in_one_run_are_listed(store: Warehouse) -> None:
    table = deltas(store, "A", "B")
    only_a, only_b = _row(table, "cell", "v × m2"), _row(table, "cell", "w × m1")
    assert (only_a["n"], only_a["n_a"], only_a["n_b"], only_a["verdict"]) == (0, 1, 0, "only in A")
    assert (only_b["n"], only_b["n_a"], only_b["n_b"], only_b["verdict"]) == (0, 0, 1, "only in B")


def cluster_se(d: list[float], groups: list[str]) -> float:
    """CR1: sqrt(G/(G-1) * sum_g (sum_{i in g} (d_i - mean))^2) / n."""
    mean, n = statistics.mean(d), len(d)
    sums: dict[str, float] = {}
    for value, g in zip(d, groups, strict=True):
        sums[g] = sums.get(g, 0.0) + value - mean
    big_g = len(sums)
    return math.sqrt(big_g / (big_g - 1) * sum(s * s for s in sums.values())) / n


def test_clustered_standard_error_matches_the_hand_computed_fixture(store: Warehouse) -> None:
    table = deltas(store, "A", "B", cluster="doc")
    cell = _row(table, "cell", "v × m1")
    assert cell["n_clusters"] == 3
    assert cell["score_se"] == pytest.approx(CLUSTER_SE_BY_HAND)
    assert pytest.approx(0.10326694, abs=1e-8) == CLUSTER_SE_BY_HAND
    # clustered: a t quantile with G - 1 = 2 df
    assert cell["score_lo"] == pytest.approx(0.15 - T975[2] * CLUSTER_SE_BY_HAND)
    d_pass = [PASS_B[c] - PASS_A[c] for c in SCORE_DIFF]
    groups = [DOC[c] for c in SCORE_DIFF]
    assert cell["pass_rate_se"] == pytest.approx(cluster_se(d_pass, groups))
    # criterion k1 mirrors the case verdict and score, so its clustered SE is the same
    assert _row(table, "criterion", "k1")["score_se"] == pytest.approx(CLUSTER_SE_BY_HAND)


def test_singleton_clusters_give_the_paired_se(store: Warehouse) -> None:
    # With one case per cluster, CR1 reduces to sd / sqrt(n): 'case_id' without repeats.
    plain = _row(deltas(store, "A", "B"), "cell", "v × m1")
    by_case = _row(deltas(store, "A", "B", cluster="case_id"), "cell", "v × m1")
    assert by_case["n_clusters"] == 8
    assert by_case["score_se"] == pytest.approx(plain["score_se"])
    assert by_case["pass_rate_se"] == pytest.approx(plain["pass_rate_se"])
    assert by_case["cost_usd_se"] == pytest.approx(plain["cost_usd_se"])
    assert by_case["latency_ms_se"] == pytest.approx(plain["latency_ms_se"])


def test_criteria_and_slices_come_worst_first(store: Warehouse) -> None:
    table = deltas(store, "A", "B", keys=["lang", "doc"], combine=False)
    crit = [r for r in table.to_pylist() if r["scope"] == "criterion"]
    assert [r["target"] for r in crit] == ["k2", "k1"]  # k2 unchanged (0) is worse than k1 (+)
    slices = {r["target"]: r for r in table.to_pylist() if r["scope"] == "slice"}
    assert set(slices) == {"lang=en", "lang=fr", "doc=d1", "doc=d2", "doc=d3"}
    assert slices["lang=en"]["n"] == 4 and slices["lang=en"]["n_broken"] == 1
    assert slices["lang=en"]["pass_rate_delta"] == pytest.approx(-0.25)
    ordered = [r["pass_rate_delta"] for r in table.to_pylist() if r["scope"] == "slice"]
    assert ordered == sorted(ordered)
    combined = deltas(store, "A", "B", keys=["lang", "doc"], combine=True)
    names = {r["target"] for r in combined.to_pylist() if r["scope"] == "slice"}
    assert names == {"lang=en, doc=d1", "lang=en, doc=d2", "lang=fr, doc=d2", "lang=fr, doc=d3"}


def test_compare_movers_and_verdicts(store: Warehouse) -> None:
    result = compare(store, "A", "B", movers=None)
    moved = result.movers.to_pylist()
    assert [m["movement"] for m in moved][:1] == ["broken"] and moved[0]["case_id"] == "c2"
    assert {m["case_id"] for m in moved if m["movement"] == "fixed"} == {"c5", "c6"}
    assert moved[0]["criteria_broken"] == ["k1"]
    assert len(moved) == 8  # 7 scores changed; c5 kept its score but flipped its verdict
    data = result.to_dict()
    assert data["slice_keys"] == ["doc", "lang"]  # default: every metadata key on its own
    assert {c["verdict"] for c in data["cells"]} == {"within noise", "only in A", "only in B"}
    with pytest.raises(UsageError, match="metadata key"):
        compare(store, "A", "B", by=["nope"])
    with pytest.raises(UsageError, match="cluster key"):
        compare(store, "A", "B", cluster="nope")


def test_compare_scopes_apart_give_the_whole_comparisons_rows(store: Warehouse) -> None:
    # The viewer's compare page asks for the run and cell scopes, then for criteria, slices
    # and movers in requests of their own: each part is the whole comparison's.
    from evalwh.reports.html import compare_section

    whole = compare(store, "A", "B").to_dict()
    head = compare(store, "A", "B", scopes=("run", "cell"), movers=0).to_dict()
    assert (head["criteria"], head["slices"], head["movers"]) == ([], [], [])
    assert head["notes"] == whole["notes"] and head["overall"]["n"] == whole["overall"]["n"]
    for name in ("criteria", "slices", "movers"):
        part = compare_section(store, "A", "B", name)
        assert set(part) == {"a", "b", "cluster", "slice_keys", name}
        key = "case_id" if name == "movers" else "target"
        assert [r[key] for r in part[name]] == [r[key] for r in whole[name]], name
        assert len(part[name]) > 0
    moved = compare_section(store, "A", "B", "movers")["movers"]
    assert [m["movement"] for m in moved][:1] == ["broken"] and len(moved) == 8
    assert moved[0]["len_a"] == len(whole["movers"][0]["output_a"] or "")
    # without the run scope there is no overall row: its notes are not made up
    alone = compare(store, "A", "A", scopes=("criterion",))
    assert alone.overall == {} and alone.notes == [
        "both references name the same run: every delta is 0"
    ]
    with pytest.raises(UsageError, match="unknown compare scope"):
        compare(store, "A", "B", scopes=("run", "case"))


def wilson(k: int, n: int) -> tuple[float, float]:
    p = k / n
    centre = p + Z * Z / (2 * n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return (centre - half) / (1 + Z * Z / n), (centre + half) / (1 + Z * Z / n)


def test_wilson_intervals_in_slices_and_compare(store: Warehouse) -> None:
    (overall,) = [r for r in slice_run(store, "W", ["k"]).to_pylist() if r["variant"] is None]
    assert (overall["n"], overall["n_passed"]) == (10, 5)
    assert overall["pass_rate_lo"] == pytest.approx(0.2366, abs=1e-4)
    assert overall["pass_rate_hi"] == pytest.approx(0.7634, abs=1e-4)
    cell = _row(deltas(store, "A", "B"), "cell", "v × m1")
    lo, hi = wilson(5, 8)
    assert (cell["pass_rate_b_lo"], cell["pass_rate_b_hi"]) == (
        pytest.approx(lo),
        pytest.approx(hi),
    )


def test_slices_carry_n_per_slice_and_cell(store: Warehouse) -> None:
    rows = slice_run(store, "A", ["lang"]).to_pylist()
    totals = {r["slice"]: r for r in rows if r["variant"] is None}
    assert totals["lang=en"]["n"] == 4 and totals["lang=en"]["n_passed"] == 4
    assert totals["lang=fr"]["n"] == 4 and totals["lang=fr"]["n_passed"] == 0
    assert totals["lang=(none)"]["n"] == 1  # the m2 row has no metadata
    per_cell = [r for r in rows if r["variant"] is not None]
    assert sum(r["n"] for r in per_cell) == 9
    # each per-cell row keeps its slice label (what `show --by` prints per cell)
    cells = {(r["slice"], r["variant"], r["model"]): (r["n"], r["n_passed"]) for r in per_cell}
    assert cells == {
        ("lang=en", "v", "m1"): (4, 4),
        ("lang=fr", "v", "m1"): (4, 0),
        ("lang=(none)", "v", "m2"): (1, 1),
    }


def test_pass_at_k_and_pass_hat_k_match_math_comb(store: Warehouse) -> None:
    samples = {"x1": (5, 0), "x2": (5, 2), "x3": (5, 5), "x4": (5, 3), "y": (3, 1)}
    rows = {r["k"]: r for r in store.query("repeats", run_id="R").to_pylist() if r["variant"]}
    assert sorted(rows) == [1, 2, 3, 4, 5]
    for k, row in rows.items():
        cases = [(n, c) for n, c in samples.values() if n >= k]
        at_k = statistics.mean(1 - math.comb(n - c, k) / math.comb(n, k) for n, c in cases)
        hat_k = statistics.mean(math.comb(c, k) / math.comb(n, k) for n, c in cases)
        assert row["n_cases"] == len(cases)
        # k 1..3 take y (3 samples) with the x cases (5): the fewest and most repeats
        assert (row["min_repeats"], row["max_repeats"]) == (min(cases)[0], max(cases)[0])
        assert row["pass_at_k"] == pytest.approx(at_k, abs=1e-12)
        assert row["pass_hat_k"] == pytest.approx(hat_k, abs=1e-12)
    assert rows[1]["pass_at_k"] == pytest.approx(7 / 15)  # k=1: the mean of per-case pass rates
    assert rows[1]["n_flaky"] == 3  # x2, x4, y


def test_flaky_cases_and_their_spread(store: Warehouse) -> None:
    flaky = {r["case_id"]: r for r in store.query("flaky", run_id="R").to_pylist()}
    assert set(flaky) == {"x2", "x4", "y"}
    x2 = flaky["x2"]
    assert (x2["n"], x2["n_passed"]) == (5, 2)
    assert x2["passed_by_repeat"] == [True, False, True, False, False]
    assert x2["score_sd"] == pytest.approx(statistics.stdev([0.9, 0.1, 0.9, 0.1, 0.1]))
    assert (x2["pass_rate"], x2["n_errors"], x2["min_score"], x2["max_score"]) == (0.4, 0, 0.1, 0.9)
    assert x2["mean_score"] == pytest.approx(0.42)
    # closest to a coin flip first: x2 (2/5) and x4 (3/5) tie on that and on sd, then y (1/3)
    assert [r["case_id"] for r in store.query("flaky", run_id="R").to_pylist()] == ["x2", "x4", "y"]
    spread = store.query("repeats", run_id="R").to_pylist()[0]
    assert spread["variant"] is None  # the overall row comes first
    per_case = [
        statistics.stdev(s)
        for s in ([0.1] * 5, [0.9, 0.1, 0.9, 0.1, 0.1], [0.9] * 5, [0.9, 0.9, 0.1, 0.9, 0.1])
    ] + [statistics.stdev([0.9, 0.1, 0.1])]
    assert spread["mean_score_sd"] == pytest.approx(statistics.mean(per_case))


def test_compare_scales_by_filtering_runs_first() -> None:
    """Every CTE over a big table filters by run id; no correlated subquery."""
    from evalwh.warehouse.queries import get

    for name in ("compare", "compare_cases", "slice", "repeats", "flaky", "export_cases"):
        sql = get(name).sql
        for table in ("cases", "scores"):
            for chunk in sql.split(f"FROM {table}")[1:]:
                assert re.search(r"WHERE (\w+\.)?run_id (= \$run|IN)", chunk[:300]), (name, chunk)


# -- survivors of mutmut on evalwh/analysis/compare.py (issue 21) ------------------------


def test_a_cluster_key_no_case_carries_is_named_with_the_fix(store: Warehouse) -> None:
    from evalwh.analysis.compare import check_cluster

    message = (
        "cluster key 'nope' is in no case's metadata (use a metadata key, or 'case_id' "
        "to cluster the cells of a case)"
    )
    assert check_cluster(store, ["A", "B"], "nope", strict=False) == [
        message + "; every case is its own cluster"
    ]
    with pytest.raises(UsageError) as info:
        check_cluster(store, ["A", "B"], "nope", strict=True)
    assert info.value.args[0] == message
    for fine in (None, "", "case_id", "doc"):
        assert check_cluster(store, ["A", "B"], fine, strict=True) == []


def test_compare_arguments_are_checked_with_exact_messages(store: Warehouse) -> None:
    with pytest.raises(UsageError) as scope:
        deltas(store, "A", "B", scopes=("run", "case"))
    assert (
        scope.value.args[0] == "unknown compare scope(s) ['case']: use run, cell, criterion, slice"
    )
    with pytest.raises(UsageError) as movers:
        compare(store, "A", "B", movers=-1)
    assert movers.value.args[0] == "--movers must be 0 or more"
    assert compare(store, "A", "B", movers=0).movers.num_rows == 0  # 0 is allowed


def test_compare_defaults_to_the_latest_run_and_separate_slice_keys(store: Warehouse) -> None:
    latest = compare(store, "A", movers=0)
    assert latest.to_dict()["b"]["run_id"] == store.resolve("latest")
    separate = deltas(store, "A", "B", keys=["doc", "lang"]).to_pylist()
    assert separate == deltas(store, "A", "B", keys=["doc", "lang"], combine=False).to_pylist()
    assert separate != deltas(store, "A", "B", keys=["doc", "lang"], combine=True).to_pylist()


def test_compare_by_keys_combines_them_and_without_by_slices_each_key_alone(
    store: Warehouse,
) -> None:
    def slices(result: Any) -> set[str]:
        return {r["target"] for r in result.deltas.to_pylist() if r["scope"] == "slice"}

    by = compare(store, "A", "B", by=["lang", "doc"], movers=0)
    assert slices(by) == {
        "lang=en, doc=d1",
        "lang=en, doc=d2",
        "lang=fr, doc=d2",
        "lang=fr, doc=d3",
    }
    assert slices(compare(store, "A", "B", movers=0)) == {
        "lang=en", "lang=fr", "doc=d1", "doc=d2", "doc=d3"
    }  # fmt: skip


def test_compare_notes_name_what_cannot_be_trusted(store: Warehouse) -> None:
    nothing = compare(store, "R", "W", movers=0)
    assert nothing.notes == ["the runs share no (variant, model, case_id, repeat): nothing to pair"]
    by_doc = compare(store, "A", "B", cluster="doc", movers=0)
    assert by_doc.to_dict()["cluster"] == "doc"
    n = by_doc.overall["n_clusters"]
    assert 0 < n < 10
    assert by_doc.notes == [
        f"only {n} cluster(s) of 'doc': cluster-robust standard errors need more (say 10+) "
        "to be trusted"
    ]
    # exactly 10 clusters (W has 10 cases, each its own cluster) is enough: no note
    ten = compare(store, "W", "W", cluster="case_id", movers=0)
    assert ten.overall["n_clusters"] == 10
    assert ten.notes == ["both references name the same run: every delta is 0"]
    assert ten.to_dict()["no_look"] is False


def test_a_cluster_key_and_a_no_look_side_count_from_either_run(tmp_path: Any) -> None:
    """Run B has no ``analysis.cluster`` but run A has: A's key is used. Only B is no-look:
    the comparison is no-look all the same, and its movers lose both sides' outputs."""
    path = tmp_path / "w.duckdb"
    rows = [
        {"case_id": f"c{i}", "passed": i % 2 == 0, "score": 0.5, "metadata": {"doc": f"d{i}"}}
        for i in range(4)
    ]
    flipped = [{**r, "passed": not r["passed"]} for r in rows]
    with write_connection(path) as con:
        add_run(con, "A", rows)
        add_run(con, "B", flipped)
        con.execute(
            "UPDATE runs SET config_snapshot = ? WHERE run_id = 'A'",
            [json.dumps({"analysis": {"cluster": "doc"}})],
        )
        con.execute("UPDATE runs SET no_look = true WHERE run_id = 'B'")
    store = Warehouse(path)
    result = compare(store, "A", "B")
    assert result.to_dict()["cluster"] == "doc"
    assert result.to_dict()["no_look"] is True
    assert NOTICE in result.notes
    assert result.movers.num_rows == 4
    assert "output_a" not in result.movers.column_names
    assert "output_b" not in result.movers.column_names
    assert {"case_id", "passed_a", "passed_b"} <= set(result.movers.column_names)
    # neither side no-look: outputs are shown, and no notice
    with write_connection(path) as con:
        con.execute("UPDATE runs SET no_look = false")
    seen = compare(store, "A", "B")
    assert seen.to_dict()["no_look"] is False
    assert "output_a" in seen.movers.column_names and NOTICE not in seen.notes
