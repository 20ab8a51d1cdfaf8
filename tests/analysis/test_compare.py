"""Paired comparison of two runs (evalwh/analysis/compare.py over sql/compare.sql and
compare_cases.sql): paired differences, standard errors (plain and cluster-robust CR1),
t-intervals, McNemar's exact test, verdicts, movers, the scopes a caller may ask for apart, and the
notes that say what cannot be trusted.

Numbers are checked against hand-computed fixtures (the shared ``store`` of
tests/analysis/conftest.py) and reference implementations run on the same data: ``statistics``,
``scipy.stats.t``, statsmodels' ``mcnemar(exact=True)`` and OLS with ``cov_type="cluster"``.
Repeats are the point of some tests: a case sampled three times identically must give the numbers
it gives once; at tiny n the intervals must stay in their ranges.
"""

from __future__ import annotations

import json
import math
import random
import statistics
from typing import Any

import numpy as np
import pytest
from scipy.stats import t as student_t
from statsmodels.regression.linear_model import OLS
from statsmodels.stats.contingency_tables import mcnemar

from evalwh.analysis.compare import compare, deltas
from evalwh.analysis.nolook import NOTICE
from evalwh.analysis.slices import slice_run
from evalwh.errors import UsageError
from evalwh.warehouse.connect import write_connection
from evalwh.warehouse.store import Warehouse
from tests.analysis.conftest import CLUSTER_SE_BY_HAND, DOC, PASS_A, PASS_B, SCORE_DIFF, paired_runs
from tests.builders import add_dict_run, cluster_se, warehouse_with, wilson

T975 = {2: 4.302652729749464, 7: 2.3646242515927844}  # scipy.stats.t.ppf(0.975, df)


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
        add_dict_run(con, "A", rows)
        add_dict_run(con, "B", flipped)
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


@pytest.mark.parametrize(
    ("n11", "fixed", "broken", "n00"),
    [
        (0, 0, 0, 5),
        (0, 0, 3, 0),
        (5, 3, 0, 0),
        (2, 1, 1, 2),
        (10, 7, 1, 4),
        (3, 12, 2, 1),
        (0, 9, 0, 0),
    ],
)
def test_pass_rate_p_is_mcnemars_exact_test(tmp_path, n11, fixed, broken, n00):
    a, b = {}, {}
    for i, (pa, pb) in enumerate(
        [(1, 1)] * n11 + [(0, 1)] * fixed + [(1, 0)] * broken + [(0, 0)] * n00
    ):
        a[f"c{i}"], b[f"c{i}"] = [pa], [pb]
    store = paired_runs(tmp_path, a, b)
    run = next(r for r in deltas(store, "A", "B").to_pylist() if r["scope"] == "run")
    expected = mcnemar(np.array([[n11, broken], [fixed, n00]]), exact=True).pvalue
    assert (run["n_fixed"], run["n_broken"]) == (fixed, broken)
    assert run["pass_rate_p"] == pytest.approx(expected, rel=1e-12)
    significant = expected < 0.05
    assert (run["verdict"] in ("better", "worse")) == significant, run["verdict"]


@pytest.mark.parametrize("n", [2, 3, 5, 12, 30, 31, 45, 200])
def test_mean_deltas_get_a_t_interval(tmp_path, n):
    rng = random.Random(n)
    a = [{"case_id": f"c{i}", "passed": True, "score": rng.random()} for i in range(n)]
    b = [{**r, "score": min(1.0, max(0.0, r["score"] + rng.gauss(0.05, 0.2)))} for r in a]
    store = warehouse_with(tmp_path, {"A": a, "B": b})
    run = next(r for r in deltas(store, "A", "B").to_pylist() if r["scope"] == "run")
    d = np.array([y["score"] - x["score"] for x, y in zip(a, b, strict=True)])
    se = d.std(ddof=1) / math.sqrt(n)
    q = student_t.ppf(0.975, n - 1)
    assert run["score_se"] == pytest.approx(se, rel=1e-9)
    assert run["score_lo"] == pytest.approx(d.mean() - q * se, rel=1e-7, abs=1e-9)
    assert run["score_hi"] == pytest.approx(d.mean() + q * se, rel=1e-7, abs=1e-9)


def test_identical_repeats_give_the_paired_numbers_of_one_sample(tmp_path):
    rng = random.Random(3)
    a1 = {f"c{i}": [int(rng.random() < 0.5)] for i in range(25)}
    b1 = {c: [int(rng.random() < 0.7)] for c in a1}
    (tmp_path / "one").mkdir()
    (tmp_path / "three").mkdir()
    one = paired_runs(tmp_path / "one", a1, b1)
    three = paired_runs(
        tmp_path / "three", {c: p * 3 for c, p in a1.items()}, {c: p * 3 for c, p in b1.items()}
    )
    x = next(r for r in deltas(one, "A", "B").to_pylist() if r["scope"] == "run")
    y = next(r for r in deltas(three, "A", "B").to_pylist() if r["scope"] == "run")
    assert y["n_pairs"] == 3 * x["n_pairs"] and y["n"] == x["n"] == 25
    for key in ("pass_rate_delta", "pass_rate_lo", "pass_rate_hi", "pass_rate_p", "score_lo"):
        assert y[key] == pytest.approx(x[key], abs=1e-15), key
    assert y["pass_rate_a_lo"] == pytest.approx(x["pass_rate_a_lo"], abs=1e-15)


def test_clustered_standard_error_matches_statsmodels(tmp_path):
    rng = random.Random(11)
    a, b = [], []
    groups = []
    for i in range(40):
        g = f"g{i % 7}"
        score = rng.random()
        meta = {"doc": g}
        a.append({"case_id": f"c{i}", "passed": True, "score": score, "metadata": meta})
        moved = min(1.0, max(0.0, score + rng.gauss(0.03, 0.15)))
        b.append({"case_id": f"c{i}", "passed": True, "score": moved, "metadata": meta})
        groups.append(i % 7)
    store = warehouse_with(tmp_path, {"A": a, "B": b})
    run = next(r for r in deltas(store, "A", "B", cluster="doc").to_pylist() if r["scope"] == "run")
    d = np.array([y["score"] - x["score"] for x, y in zip(a, b, strict=True)])
    fit = OLS(d, np.ones(len(d))).fit(cov_type="cluster", cov_kwds={"groups": np.array(groups)})
    assert run["n_clusters"] == 7
    assert run["score_se"] == pytest.approx(fit.bse[0], rel=1e-9)
    q = student_t.ppf(0.975, 7 - 1)  # clusters - 1 degrees of freedom
    assert run["score_lo"] == pytest.approx(d.mean() - q * fit.bse[0], rel=1e-9)


def test_intervals_stay_in_their_ranges_at_tiny_n(tmp_path):
    # n = 2 with a t quantile of 12.7: the raw bounds of a pass-rate delta run past +-1
    store = paired_runs(tmp_path, {"a": [0], "b": [0]}, {"a": [1], "b": [0]})
    run = next(r for r in deltas(store, "A", "B").to_pylist() if r["scope"] == "run")
    assert run["pass_rate_lo"] == -1 and run["pass_rate_hi"] == 1
    (tmp_path / "e").mkdir()
    empty = warehouse_with(tmp_path / "e", {"E": []})  # a run without answers
    (totals,) = empty.query("run_totals", run_id="E").to_pylist()
    assert totals["n"] == 0 and totals["pass_rate_lo"] is None and totals["pass_rate_hi"] is None
