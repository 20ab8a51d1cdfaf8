"""Paired comparison of two runs (evalwh/analysis/compare.py over sql/compare.sql and
compare_cases.sql): paired differences, standard errors (plain and cluster-robust CR1),
t-intervals and the p-values of the same t statistics, verdicts, movers, the scopes a caller may ask
for apart, and the notes that say what cannot be trusted.

Numbers are checked against hand-computed fixtures (the shared ``store`` of
tests/analysis/conftest.py) and reference implementations run on the same data: ``statistics``,
``scipy.stats.t`` and ``ttest_1samp``, and statsmodels' OLS with ``cov_type="cluster"``.
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
        files = {"files"} if name == "movers" else set()  # the movers' inlined images
        assert set(part) == {"a", "b", "cluster", "slice_keys", name} | files
        key = "case_id" if name == "movers" else "target"
        assert [r[key] for r in part[name]] == [r[key] for r in whole[name]], name
        assert len(part[name]) > 0
    moved = compare_section(store, "A", "B", "movers")["movers"]
    assert [m["movement"] for m in moved][:1] == ["broken"] and len(moved) == 8
    assert moved[0]["len_a"] == len(whole["movers"][0]["output_a"] or "")
    assert {"prompt", "vars", "expected", "att"} <= set(moved[0])  # the question, in context
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
def test_pass_rate_p_is_the_paired_t_tests(tmp_path, n11, fixed, broken, n00):
    # fixed and broken stay counts; the p is the paired t-test's on the differences (scipy),
    # with no spread 0 for a change (3 broken of 3, 3 fixed of 3) and 1 for none
    a, b = {}, {}
    pairs = [(1, 1)] * n11 + [(0, 1)] * fixed + [(1, 0)] * broken + [(0, 0)] * n00
    for i, (pa, pb) in enumerate(pairs):
        a[f"c{i}"], b[f"c{i}"] = [pa], [pb]
    store = paired_runs(tmp_path, a, b)
    run = next(r for r in deltas(store, "A", "B").to_pylist() if r["scope"] == "run")
    expected = _reference_p([pb - pa for pa, pb in pairs])
    assert (run["n_fixed"], run["n_broken"]) == (fixed, broken)
    assert run["pass_rate_p"] == pytest.approx(expected, rel=1e-9, abs=1e-12)
    significant = expected < 0.05
    assert (run["verdict"] in ("better", "worse")) == significant, run["verdict"]
    assert (run["pass_rate_lo"] > 0 or run["pass_rate_hi"] < 0) == significant


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


def _reference_p(d: list[float], groups: list[str] | None = None) -> float | None:
    """The two-sided p of the paired t-test of mean 0 on the case differences ``d``: scipy's
    ttest_1samp, or with ``groups`` statsmodels' cluster-robust OLS on a constant with a t on
    G - 1 df. No standard error (n 1, one cluster): None; no spread: 0 for a change, 1 for none."""
    from scipy.stats import ttest_1samp

    if len(d) < 2 or (groups is not None and len(set(groups)) < 2):
        return None
    mean = statistics.mean(d)
    if groups is None and statistics.pstdev(d) < 1e-12:
        return 0.0 if abs(mean) > 1e-12 else 1.0
    if groups is None:
        return float(ttest_1samp(d, 0.0).pvalue)
    fit = OLS(np.array(d), np.ones(len(d))).fit(
        cov_type="cluster", cov_kwds={"groups": np.array(groups)}, use_t=True
    )
    if fit.bse[0] < 1e-12:
        return 0.0 if abs(mean) > 1e-12 else 1.0
    return float(fit.pvalues[0])


METRICS = ("pass_rate", "score", "cost_usd", "latency_ms")


def _sweep_runs(rng: random.Random) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Runs A and B for the sweep: cell v x m{n} holds n cases (n = 1..30), each answered 1, 2
    or 3 times a side (by n), its score drawn around the case's own level with a shift by cell
    (-0.3 .. +0.3) in B, passing at 0.5; cost and latency drawn too. Case j of a cell is in
    document d{j % g} with g = 1 + n % 6 documents (one in cells 6, 12, ...), and in language
    en or fr (slices). Cell flat: 4 cases that all break by the same amount (no spread); still:
    5 cases that do not move."""
    a: list[dict[str, Any]] = []
    b: list[dict[str, Any]] = []
    for n in range(1, 31):
        model, repeats, docs, shift = f"m{n:02d}", 1 + n % 3, 1 + n % 6, 0.15 * (n % 5 - 2)
        for j in range(n):
            level = rng.random()
            meta = {"doc": f"{model}-d{j % docs}", "lang": "en" if j % 2 else "fr"}
            for r in range(repeats):
                for rows, moved in ((a, 0.0), (b, shift)):
                    score = min(1.0, max(0.0, level + moved + rng.gauss(0, 0.25)))
                    rows.append(
                        {
                            "model": model, "case_id": f"c{j}", "repeat": r, "metadata": meta,
                            "score": score, "passed": score >= 0.5,
                            "cost_usd": round(rng.uniform(0.001, 0.01), 6),
                            "latency_ms": round(rng.uniform(50, 500), 1),
                        }
                    )  # fmt: skip
    for model, n, (pa, sa), (pb, sb) in (
        ("flat", 4, (True, 0.875), (False, 0.375)),
        ("still", 5, (True, 0.75), (True, 0.75)),
    ):
        for j in range(n):
            meta = {"doc": f"{model}-d{j % 2}", "lang": "en"}
            a.append(
                {"model": model, "case_id": f"c{j}", "passed": pa, "score": sa, "metadata": meta}
            )
            b.append(
                {"model": model, "case_id": f"c{j}", "passed": pb, "score": sb, "metadata": meta}
            )
    return a, b


def _units(rows: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """Per (model, case): the means over its repeats of each metric, and its document."""
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        grouped.setdefault((r["model"], r["case_id"]), []).append(r)
    return {
        key: {
            "pass_rate": statistics.mean(float(r["passed"]) for r in rs),
            "score": statistics.mean(r["score"] for r in rs),
            "cost_usd": statistics.mean(r.get("cost_usd", 0.001) for r in rs),
            "latency_ms": statistics.mean(r.get("latency_ms", 100.0) for r in rs),
            "doc": rs[0]["metadata"]["doc"],
        }
        for key, rs in grouped.items()
    }


def _check_one_rule(row: dict[str, Any]) -> None:
    """Every delta of a compare row: interval and p defined together; the interval excludes 0
    exactly when p < 0.05, on the side of the delta; the verdict is better/worse exactly when
    the pass rate's or the score's p < 0.05, in the direction of that delta."""
    significant = {}
    for metric in METRICS:
        delta, lo, hi, p = (row[f"{metric}_{k}"] for k in ("delta", "lo", "hi", "p"))
        where = (row["scope"], row["target"], metric)
        assert (lo is None) == (hi is None) == (p is None) == (row[f"{metric}_se"] is None), where
        if p is None:
            significant[metric] = False
            continue
        assert 0.0 <= p <= 1.0 and lo <= delta <= hi, where
        significant[metric] = p < 0.05
        assert (lo > 0 or hi < 0) == significant[metric], (where, lo, hi, p)
        if significant[metric]:
            assert (lo > 0) == (delta > 0) and (hi < 0) == (delta < 0), where
    if not row["n"]:
        return
    down = any(significant[m] and row[f"{m}_delta"] < 0 for m in ("pass_rate", "score"))
    up = any(significant[m] and row[f"{m}_delta"] > 0 for m in ("pass_rate", "score"))
    if down or up:
        assert row["verdict"] == ("worse" if down else "better"), row
    elif row["pass_rate_delta"] == 0 and not row["score_delta"]:
        assert row["verdict"] == "same", row
    else:
        assert row["verdict"] == "within noise", row


@pytest.mark.parametrize("cluster", [None, "doc"])
def test_every_delta_has_one_significance_rule_over_small_n_repeats_and_clusters(tmp_path, cluster):
    # The sweep: cells of 1 to 30 paired cases, with repeats, clustered or not. For
    # every delta compare prints (run, cells, criteria, slices; pass rate, score, cost,
    # latency): "interval excludes 0 <=> p < 0.05 <=> verdict better/worse", the direction of
    # the delta; the p of each cell and of the run against scipy's ttest_1samp (statsmodels'
    # cluster-robust OLS when clustered); undefined (n 1, one cluster) as None, never [-1, 1].
    # Then the gate's regression rows on the same runs: significant exactly when the drop's
    # interval excludes 0 and its p < 0.05, and a significant_only limit fails on those alone.
    from evalwh.analysis.gate import judge
    from evalwh.scoring.tolerance import TOLERANCE

    a, b = _sweep_runs(random.Random(44))
    store = warehouse_with(tmp_path, {"A": a, "B": b})
    rows = deltas(store, "A", "B", cluster=cluster, keys=["lang"]).to_pylist()
    assert {r["scope"] for r in rows} == {"run", "cell", "criterion", "slice"}
    for row in rows:
        _check_one_rule(row)
    units_a, units_b = _units(a), _units(b)
    by_cell: dict[str, list[tuple[str, str]]] = {}
    for key in units_a:
        by_cell.setdefault(key[0], []).append(key)
    targets = {f"v × {model}": keys for model, keys in by_cell.items()}
    targets["run"] = list(units_a)
    verdicts = set()
    undefined = 0
    for target, keys in targets.items():
        row = _row_of(rows, "run" if target == "run" else "cell", target)
        verdicts.add(row["verdict"])
        groups = [units_a[k]["doc"] for k in keys] if cluster else None
        for metric in METRICS:
            d = [units_b[k][metric] - units_a[k][metric] for k in keys]
            expected = _reference_p(d, groups)
            undefined += expected is None
            if expected is None:
                assert row[f"{metric}_p"] is None, (target, metric)
            else:
                assert row[f"{metric}_p"] == pytest.approx(expected, rel=1e-7, abs=1e-10), (
                    target, metric,
                )  # fmt: skip
    assert {"better", "worse", "within noise", "same"} <= verdicts and undefined > 0
    limits = {"max_drop_pass_rate": 0.0, "max_drop_score": 0.0}
    config = {
        "analysis": {"cluster": cluster},
        "thresholds": {
            "regression": {
                **limits, "significant_only": True, "per_cell": limits, "criteria": {"k1": limits},
            }
        },
    }  # fmt: skip
    gate = [r for r in judge(store, "B", config, baseline="A").rules if r["kind"] == "regression"]
    assert len(gate) == 2 * (1 + len(by_cell) + 1)
    for rule in gate:
        p, lo = rule["p_value"], rule["drop_lo"]
        excludes = lo is not None and (lo > 0 or rule["drop_hi"] < 0)
        assert excludes == (p is not None and p < 0.05), rule
        assert rule["significant"] == (excludes and rule["value"] > 0), rule
        assert rule["passed"] == (rule["value"] <= TOLERANCE or not rule["significant"]), rule
    assert any(not r["passed"] for r in gate) and any(r["value"] > 0 and r["passed"] for r in gate)


def _row_of(rows: list[dict[str, Any]], scope: str, target: str) -> dict[str, Any]:
    (row,) = [r for r in rows if r["scope"] == scope and r["target"] == target]
    return row


def test_repeats_that_mostly_improve_are_not_worse_on_a_sign_test(tmp_path):
    # The issue's --repeat 3 case: 30 cases each up by 1/3 (one more repeat of three passes)
    # and 11 cases down by 1 (all three repeats break). The mean delta is
    # (30/3 - 11) / 41 = -0.024; the sign test (30 up, 11 down) gave p = 0.0043 and, with the
    # direction of the mean, "worse", failing the gate. The paired t on the case means: p 0.80,
    # the interval holds 0, within noise, and the gate passes.
    a: dict[str, list[int]] = {}
    b: dict[str, list[int]] = {}
    for i in range(30):
        a[f"u{i}"], b[f"u{i}"] = [1, 0, 0], [1, 1, 0]
    for i in range(11):
        a[f"d{i}"], b[f"d{i}"] = [1, 1, 1], [0, 0, 0]
    store = paired_runs(tmp_path, a, b)
    run = _row_of(deltas(store, "A", "B").to_pylist(), "run", "run")
    d = [1 / 3] * 30 + [-1.0] * 11
    assert (run["n"], run["n_fixed"], run["n_broken"]) == (41, 30, 11)
    assert run["pass_rate_delta"] == pytest.approx(statistics.mean(d))
    assert run["pass_rate_p"] == pytest.approx(_reference_p(d), rel=1e-9)
    assert run["pass_rate_p"] > 0.5 and run["pass_rate_lo"] < 0 < run["pass_rate_hi"]
    assert run["verdict"] == "within noise"
    from evalwh.analysis.gate import judge

    config = {"thresholds": {"regression": {"max_drop_pass_rate": 0.0, "significant_only": True}}}
    result = judge(store, "B", config, baseline="A")
    assert result.passed, result.failed


def test_one_broken_document_fails_neither_compare_nor_the_gate_when_clustered(tmp_path):
    # The cluster case: 40 cases in 5 documents of 8; 6 cases of document d0 break, no
    # other case moves. Unclustered, the paired t finds the drop (p 0.012: worse); clustered by
    # document the 6 breaks are one document's, the cluster-robust interval holds 0, p 0.37:
    # within noise, and the gate's significant_only limit passes (McNemar's p was 0.031).
    from evalwh.analysis.gate import judge

    a = [{"case_id": f"c{i}", "passed": True, "score": 1.0, "metadata": {"doc": f"d{i // 8}"}}
         for i in range(40)]  # fmt: skip
    b = [{**r, "passed": i >= 6, "score": float(i >= 6)} for i, r in enumerate(a)]
    store = warehouse_with(tmp_path, {"A": a, "B": b})
    d = [-1.0] * 6 + [0.0] * 34
    docs = [f"d{i // 8}" for i in range(40)]
    plain = _row_of(deltas(store, "A", "B").to_pylist(), "run", "run")
    assert plain["pass_rate_p"] == pytest.approx(_reference_p(d), rel=1e-9)
    assert plain["verdict"] == "worse" and plain["pass_rate_hi"] < 0
    clustered = _row_of(deltas(store, "A", "B", cluster="doc").to_pylist(), "run", "run")
    assert clustered["n_clusters"] == 5
    assert clustered["pass_rate_p"] == pytest.approx(_reference_p(d, docs), rel=1e-9)
    assert clustered["pass_rate_p"] > 0.05
    assert clustered["pass_rate_lo"] < 0 < clustered["pass_rate_hi"]
    assert clustered["verdict"] == "within noise"
    regression = {"max_drop_pass_rate": 0.05, "significant_only": True}
    config = {"analysis": {"cluster": "doc"}, "thresholds": {"regression": regression}}
    assert judge(store, "B", config, baseline="A").passed
    assert not judge(store, "B", {"thresholds": {"regression": regression}}, baseline="A").passed


def test_one_paired_case_has_no_interval_and_no_p_not_the_whole_range(tmp_path):
    # n = 1 (and one cluster): no standard error, so the interval and the p are undefined
    # (None), not [-1, +1] (greatest/least turned NULL into the bounds); within noise.
    store = paired_runs(tmp_path, {"a": [1]}, {"a": [0]}, metadata={"doc": "d"})
    for cluster in (None, "doc"):
        run = _row_of(deltas(store, "A", "B", cluster=cluster).to_pylist(), "run", "run")
        for metric in METRICS:
            assert [run[f"{metric}_{k}"] for k in ("se", "lo", "hi", "p")] == [None] * 4
        assert (run["pass_rate_delta"], run["verdict"]) == (-1.0, "within noise")
