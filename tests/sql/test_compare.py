"""sql/compare.sql: the paired deltas of two runs per scope (means, pair counts, standard errors plain
and clustered, t-intervals per metric's degrees of freedom, exact sign tests, verdicts, Wilson
bounds and row order), against hand-computed fixtures: each warehouse is built by hand, row by row,
and the expected numbers are worked out in the comments.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from pathlib import Path
from typing import Any

import pytest

from evalwh.warehouse import queries
from tests.builders import cluster_se, fill_run_keys
from tests.sql.conftest import _answer, _warehouse, case_rate_interval

DOCS = ["d1", "d1", "d2", "d2"]


def test_compare_scopes_each_give_the_full_querys_rows_and_nothing_else(tmp_path: Path) -> None:
    # Cells v × m (in both runs) and v × only (in A alone), cases with metadata 'doc', one
    # criterion 'k': every scope has rows, and the cell only in A is a presence row. Asked
    # for a subset of scopes, the query returns exactly those scopes' rows of the full query
    # (the viewer's page and its sections ask for them apart): no other row, no number moved.
    con = _warehouse(tmp_path)
    for run, model, case, doc, passed, score, cost in [
        ("A", "m", "c1", "d1", True, 0.5, 0.25),
        ("A", "m", "c2", "d2", False, 0.0, 0.5),
        ("A", "m", "c3", "d2", True, 1.0, 0.25),
        ("A", "only", "c1", "d1", True, 1.0, 0.25),
        ("B", "m", "c1", "d1", True, 1.0, 0.5),
        ("B", "m", "c2", "d2", True, 0.5, 0.25),
        ("B", "m", "c3", "d2", False, 0.25, 0.75),
    ]:
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, metadata, cached, "
            "request_hash, attempts, passed, score, cost_usd, latency_ms, created_at) "
            "VALUES (?, 'v', ?, ?, 0, ?, false, 'x', 1, ?, ?, ?, 100, now())",
            [run, model, case, json.dumps({"doc": doc}), passed, score, cost],
        )
        fill_run_keys(con)
        con.execute(
            "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, scorer, "
            "score, passed, weight, required) VALUES (?, 'v', ?, ?, 0, 'k', 'x', ?, ?, 1, true)",
            [run, model, case, score, passed],
        )
        fill_run_keys(con)

    def rows(scopes: list[str] | None, cluster: str | None) -> list[dict[str, Any]]:
        return queries.run_query(
            con,
            "compare",
            run_a="A",
            run_b="B",
            cluster=cluster,
            keys=["doc"],
            combine=False,
            scopes=scopes,
        ).to_pylist()

    def same(got: list[dict[str, Any]], expected: list[dict[str, Any]]) -> bool:
        # the full query's own floats vary in the last bit from one execution to the next
        # (a standard deviation summed in whichever order the threads deliver): 1e-12 apart
        return len(got) == len(expected) and all(
            g.keys() == e.keys()
            and all(
                g[k] == pytest.approx(e[k], rel=1e-12) if isinstance(e[k], float) else g[k] == e[k]
                for k in e
            )
            for g, e in zip(got, expected, strict=True)
        )

    for cluster in (None, "doc"):
        full = rows(None, cluster)
        assert sorted({r["scope"] for r in full}) == ["cell", "criterion", "run", "slice"]
        assert {r["target"] for r in full if r["scope"] == "cell"} == {"v × m", "v × only"}
        assert same(rows(["run", "cell", "criterion", "slice"], cluster), full)
        for scopes in (["run"], ["cell"], ["criterion"], ["slice"], ["run", "cell"], []):
            assert same(rows(scopes, cluster), [r for r in full if r["scope"] in scopes]), scopes


def test_compare_units_are_a_case_in_its_cell_when_cells_share_case_ids(tmp_path: Path) -> None:
    # Cells v × m1 and v × m2 hold the same case ids c1, c2, each answered once in A and B:
    # four units of one pair each, not two (a unit keyed without the model joins each pair to
    # both cells' units and counts 8 pairs). B fixes c1 in m1 only.
    con = _warehouse(tmp_path)
    for run in ("A", "B"):
        for model in ("m1", "m2"):
            for case in ("c1", "c2"):
                passed = case == "c2" or (run == "B" and model == "m1")
                con.execute(
                    "INSERT INTO cases (run_id, variant, model, case_id, repeat, cached, "
                    "request_hash, attempts, passed, score, created_at) "
                    "VALUES (?, 'v', ?, ?, 0, false, 'x', 1, ?, ?, now())",
                    [run, model, case, passed, float(passed)],
                )
                fill_run_keys(con)
    rows = {
        r["target"]: r
        for r in queries.run_query(
            con, "compare", run_a="A", run_b="B", cluster=None, keys=[], combine=False, scopes=None
        ).to_pylist()
    }
    assert (rows["run"]["n"], rows["run"]["n_pairs"], rows["run"]["n_fixed"]) == (4, 4, 1)
    assert rows["run"]["pass_rate_delta"] == 0.25
    assert (rows["v × m1"]["n"], rows["v × m1"]["n_fixed"]) == (2, 1)
    assert (rows["v × m2"]["n"], rows["v × m2"]["n_fixed"]) == (2, 0)


def test_compare_means_and_pair_counts_with_missing_values(tmp_path: Path) -> None:
    # Cell v × m, cases c1..c4; (passed, score, cost, latency) per run, None = not stored:
    #   A: c1 (1, 0.5, 0.25, 100)  c2 (1, 1.0, None, 200)  c3 (0, 0.0, 0.25, None)  c4 (0, 0.5, 0.25, 100)
    #   B: c1 (1, 1.0, 0.50, 150)  c2 (0, None, 0.50, 100) c3 (1, 0.5, 0.25, 100)  c4 (0, 0.5, None, None)
    # pass: 4 pairs, 0.5 -> 0.5, c3 fixed, c2 broken. score: 3 pairs (c2 has none in B),
    # 1/3 -> 2/3, delta 1/3. cost: a missing cost is 0, so 4 pairs, 0.1875 -> 0.3125, delta
    # 0.125. latency: 2 pairs (c3 has none in A, c4 none in B), 150 -> 125, delta -25.
    con = _warehouse(tmp_path)
    data = {
        "A": [
            (True, 0.5, 0.25, 100),
            (True, 1.0, None, 200),
            (False, 0.0, 0.25, None),
            (False, 0.5, 0.25, 100),
        ],
        "B": [
            (True, 1.0, 0.5, 150),
            (False, None, 0.5, 100),
            (True, 0.5, 0.25, 100),
            (False, 0.5, None, None),
        ],
    }
    for run, rows in data.items():
        for i, (passed, score, cost, latency) in enumerate(rows):
            con.execute(
                "INSERT INTO cases (run_id, variant, model, case_id, repeat, metadata, cached, "
                "request_hash, attempts, passed, score, cost_usd, latency_ms, created_at) "
                "VALUES (?, 'v', 'm', ?, 0, ?, false, 'x', 1, ?, ?, ?, ?, now())",
                [run, f"c{i + 1}", json.dumps({"doc": DOCS[i]}), passed, score, cost, latency],
            )
            fill_run_keys(con)
            # one criterion 'k': the case's score (0 where it has none); its verdict is the
            # case's in A, but passes for c1..c3 in B (so that its pass values are correlated)
            k_passed = passed if run == "A" else i < 3
            con.execute(
                "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, scorer, "
                "score, passed, weight, required) VALUES (?, 'v', 'm', ?, 0, 'k', 'x', ?, ?, 1, true)",
                [run, f"c{i + 1}", score or 0.0, k_passed],
            )
            fill_run_keys(con)
    table = queries.run_query(
        con, "compare", run_a="A", run_b="B", cluster=None, keys=[], combine=False, scopes=None
    )
    # criterion k: 4 pairs, pass A 1 1 0 0 -> B 1 1 1 0: 0.5 -> 0.75 (c3 fixed), differences
    # 0 0 1 0; scores A 0.5 1 0 0.5, B 1 0 0.5 0.5: 0.5 -> 0.5, differences 0.5 -1 0.5 0
    (k,) = [r for r in table.to_pylist() if r["scope"] == "criterion"]
    assert (k["target"], k["n"], k["n_fixed"], k["n_broken"]) == ("k", 4, 1, 0)
    assert k["n_pairs"] == 4  # answers: one per case here (a count off by one per case: 8)
    # the score's p is the paired t-test's on the differences 0.5 -1 0.5 0 (scipy's as reference)
    assert k["score_p"] == pytest.approx(_t_test_p([0.5, -1, 0.5, 0]), abs=1e-12)
    assert (k["pass_rate_a"], k["pass_rate_b"], k["pass_rate_delta"]) == (0.5, 0.75, 0.25)
    assert (k["score_n"], k["score_a"], k["score_b"], k["score_delta"]) == (4, 0.5, 0.5, 0)
    assert k["pass_rate_se"] == pytest.approx(statistics.stdev([0, 0, 1, 0]) / 2)
    assert k["score_se"] == pytest.approx(statistics.stdev([0.5, -1, 0.5, 0]) / 2)
    rows = {(r["scope"], r["target"]): r for r in table.to_pylist()}
    assert set(rows) == {("run", "run"), ("cell", "v × m"), ("criterion", "k")}
    del rows[("criterion", "k")]
    for row in rows.values():
        assert (row["n"], row["n_a"], row["n_b"]) == (4, 4, 4)
        assert (row["n_fixed"], row["n_broken"]) == (1, 1)
        assert (row["pass_rate_a"], row["pass_rate_b"], row["pass_rate_delta"]) == (0.5, 0.5, 0)
        assert row["score_n"] == 3 and row["n_pairs"] == 4
        # the paired t-test on the score differences 0.5 0.5 0 (c2 has no pair)
        assert row["score_p"] == pytest.approx(_t_test_p([0.5, 0.5, 0.0]), abs=1e-12)
        assert row["score_a"] == pytest.approx(1 / 3) and row["score_b"] == pytest.approx(2 / 3)
        assert row["score_delta"] == pytest.approx(1 / 3)
        assert row["cost_usd_n"] == 4
        assert row["cost_usd_a"] == pytest.approx(0.1875)
        assert row["cost_usd_b"] == pytest.approx(0.3125)
        assert row["cost_usd_delta"] == pytest.approx(0.125)
        assert row["latency_ms_n"] == 2
        assert (row["latency_ms_a"], row["latency_ms_b"], row["latency_ms_delta"]) == (
            150,
            125,
            -25,
        )
        # without clusters or repeats, each standard error is the paired sd / sqrt(n)
        for metric, d in (
            ("pass_rate", [0, -1, 1, 0]),
            ("score", [0.5, 0.5, 0.0]),
            ("cost_usd", [0.25, 0.5, 0.0, -0.25]),
            ("latency_ms", [50, -100]),
        ):
            se = statistics.stdev(d) / math.sqrt(len(d))
            assert row[f"{metric}_se"] == pytest.approx(se), metric
    assert (rows[("cell", "v × m")]["variant"], rows[("cell", "v × m")]["model"]) == ("v", "m")

    # clustered by metadata 'doc' (c1, c2 in d1; c3, c4 in d2): CR1 over the pairs each
    # metric has, for the run, the cell and the criterion

    clustered = queries.run_query(
        con, "compare", run_a="A", run_b="B", cluster="doc", keys=[], combine=False, scopes=None
    ).to_pylist()
    for row in clustered:
        assert row["n_clusters"] == 2, row["scope"]
        expected = {
            "pass_rate": ([0, -1, 1, 0], DOCS),
            "score": ([0.5, 0.5, 0.0], ["d1", "d2", "d2"]),
        }
        if row["scope"] == "criterion":
            expected["pass_rate"] = ([0, 0, 1, 0], DOCS)
            expected["score"] = ([0.5, -1, 0.5, 0], DOCS)
        else:
            expected["cost_usd"] = ([0.25, 0.5, 0.0, -0.25], DOCS)
            # both latency pairs are in d1: one cluster, no cluster-robust SE
            assert row["latency_ms_se"] is None and row["latency_ms_delta"] == -25
        for metric, (d, groups) in expected.items():
            se = cluster_se(d, groups)
            assert row[f"{metric}_se"] == pytest.approx(se), (row["scope"], metric)
    assert (rows[("run", "run")]["variant"], rows[("run", "run")]["model"]) == (None, None)


def test_compare_of_runs_with_more_than_55_thousand_cases_does_not_overflow(
    tmp_path: Path,
) -> None:
    # bug: the t quantile above 30 degrees of freedom took df**4 in BIGINT, which overflows past
    # ~55,000 paired cases ("Overflow in multiplication of INT64"); at that n it is ~1.96
    con = _warehouse(tmp_path)
    n = 60_000
    for run in ("A", "B"):
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, metadata, cached, "
            "request_hash, attempts, passed, score, cost_usd, latency_ms, created_at) "
            "SELECT ?, 'v', 'm', 'c' || i, 0, '{}', false, 'x', 1, i % 2 = 0, "
            "CASE WHEN ? = 'A' THEN 0.5 ELSE (i % 3) / 2.0 END, 0.0, 100, now() "
            "FROM range(?) t(i)",
            [run, run, n],
        )
        fill_run_keys(con)
    rows = queries.run_query(
        con, "compare", run_a="A", run_b="B", cluster=None, keys=[], combine=False, scopes=None
    ).to_pylist()
    (run,) = [r for r in rows if r["scope"] == "run"]
    assert run["n"] == n
    half_width = (run["score_hi"] - run["score_lo"]) / 2
    assert half_width == pytest.approx(1.959963984540054 * run["score_se"], rel=1e-4)


def test_compare_averages_a_cases_repeats_and_takes_a_single_pair_as_it_is(
    tmp_path: Path,
) -> None:
    # u1 paired twice: A (pass, fail) -> 0.5, B (pass, pass) -> 1; u2 paired once: A fail
    # -> 0, B pass -> 1; u3 only in B (no pair). Over the 2 paired cases: A 0.25, B 1.0,
    # delta 0.75 from 3 paired answers; per criterion k the same.
    con = _warehouse(tmp_path)
    for run, case, repeat, ok in (
        ("A", "u1", 0, True), ("A", "u1", 1, False), ("A", "u2", 0, False),
        ("B", "u1", 0, True), ("B", "u1", 1, True), ("B", "u2", 0, True), ("B", "u3", 0, True),
    ):  # fmt: skip
        _answer(con, run, case, repeat, ok)
    rows = queries.run_query(
        con, "compare", run_a="A", run_b="B", cluster=None, keys=["t"], combine=False, scopes=None
    ).to_pylist()
    by_scope = {r["scope"]: r for r in rows}
    for scope in ("run", "criterion", "slice"):
        r = by_scope[scope]
        assert (r["n"], r["n_pairs"]) == (2, 3), scope
        assert (r["pass_rate_a"], r["pass_rate_b"]) == (pytest.approx(0.25), pytest.approx(1.0))
        assert r["pass_rate_delta"] == pytest.approx(0.75)
        assert r["score_delta"] == pytest.approx(0.75)


def test_clustered_se_counts_only_the_clusters_a_metric_has_and_unequal_cost_sums(
    tmp_path: Path,
) -> None:
    # bugs: a cluster without score pairs counted among the score's clusters (`>=` for `>` on
    # its pair count); a cluster residual s - m * delta with `/` or `+` (the fixture above has
    # equal clusters, where some of these give the same square: unequal sizes here); a single
    # cluster given a cluster-robust SE (G / (G - 1) divides by zero: infinity, not NULL).
    # Cell v × m; metadata doc: c1, c2 in d1, c3 in d2, c4 in d3; every case has team 't1'.
    # (passed, score, cost, latency ms) per run:
    #   A: c1 (1, 0.5, 0.1, 100)  c2 (1, 0.5, 0.2, 200)   c3 (0, 0.0, 0.1, 300)   c4 (0, 0.5, 0.1, 100)
    #   B: c1 (1, 1.0, 0.3, 150)  c2 (0, 0.25, 0.2, 150)  c3 (1, None, 0.4, 500)  c4 (1, 0.75, 0.3, 400)
    # score: pairs c1 +0.5, c2 -0.25 (d1), c4 +0.25 (d3): 2 clusters (d2 has no score pair)
    # cost +0.2, 0, +0.3, +0.2 and latency +50, -50, +200, +300 over d1, d1, d2, d3

    con = _warehouse(tmp_path)
    data = {
        "A": [(True, 0.5, 0.1, 100), (True, 0.5, 0.2, 200), (False, 0.0, 0.1, 300)],
        "B": [(True, 1.0, 0.3, 150), (False, 0.25, 0.2, 150), (True, None, 0.4, 500)],
    }
    data["A"].append((False, 0.5, 0.1, 100))
    data["B"].append((True, 0.75, 0.3, 400))
    docs = ["d1", "d1", "d2", "d3"]
    for run, rows in data.items():
        for i, (passed, score, cost, latency) in enumerate(rows):
            con.execute(
                "INSERT INTO cases (run_id, variant, model, case_id, repeat, metadata, cached, "
                "request_hash, attempts, passed, score, cost_usd, latency_ms, created_at) "
                "VALUES (?, 'v', 'm', ?, 0, ?, false, 'x', 1, ?, ?, ?, ?, now())",
                [
                    run,
                    f"c{i + 1}",
                    json.dumps({"doc": docs[i], "team": "t1", "half": "h1" if i < 2 else "h2"}),
                    passed,
                    score,
                    cost,
                    latency,
                ],
            )
            fill_run_keys(con)
    table = queries.run_query(
        con, "compare", run_a="A", run_b="B", cluster="doc", keys=[], combine=False, scopes=None
    )
    run = next(r for r in table.to_pylist() if r["scope"] == "run")
    assert run["n_clusters"] == 3
    assert run["score_delta"] == pytest.approx(0.5 / 3)
    assert run["score_se"] == pytest.approx(cluster_se([0.5, -0.25, 0.25], ["d1", "d1", "d3"]))
    assert run["pass_rate_se"] == pytest.approx(cluster_se([0, -1, 1, 1], docs))
    assert run["cost_usd_se"] == pytest.approx(cluster_se([0.2, 0.0, 0.3, 0.2], docs))
    assert run["latency_ms_se"] == pytest.approx(cluster_se([50, -50, 200, 300], docs))
    # clustered intervals have clusters - 1 degrees of freedom: 3 clusters -> 2, and 1 for the
    # score's 2 (not the 4 or 3 pairs less one)
    from scipy.stats import t as student_t

    for metric, df in (("cost_usd", 2), ("latency_ms", 2), ("score", 1), ("pass_rate", 2)):
        half = student_t.ppf(0.975, df) * run[f"{metric}_se"]
        lo, hi = run[f"{metric}_delta"] - half, run[f"{metric}_delta"] + half
        if metric in ("score", "pass_rate"):
            lo, hi = max(-1.0, lo), min(1.0, hi)
        assert (run[f"{metric}_lo"], run[f"{metric}_hi"]) == (
            pytest.approx(lo),
            pytest.approx(hi),
        ), metric
    # two clusters (h1: c1, c2; h2: c3, c4) still give a cluster-robust SE (bug: `> 2`)
    halves = queries.run_query(
        con, "compare", run_a="A", run_b="B", cluster="half", keys=[], combine=False, scopes=None
    ).to_pylist()
    two = next(r for r in halves if r["scope"] == "run")
    assert two["n_clusters"] == 2
    h = ["h1", "h1", "h2", "h2"]
    assert two["latency_ms_se"] == pytest.approx(cluster_se([50, -50, 200, 300], h))
    assert two["cost_usd_se"] == pytest.approx(cluster_se([0.2, 0.0, 0.3, 0.2], h))
    assert two["pass_rate_se"] == pytest.approx(cluster_se([0, -1, 1, 1], h))
    one = queries.run_query(
        con, "compare", run_a="A", run_b="B", cluster="team", keys=[], combine=False, scopes=None
    ).to_pylist()
    for row in one:
        assert row["n_clusters"] == 1
        assert (row["pass_rate_se"], row["score_se"], row["cost_usd_se"]) == (None, None, None)
        assert row["latency_ms_se"] is None


@pytest.mark.slow  # a long end-to-end proof; CI runs it (`pytest -m slow`)
def test_every_t_quantile_of_the_intervals_matches_scipy_by_degrees_of_freedom(
    tmp_path: Path,
) -> None:
    # bugs: one entry of the t table (df 1..30) off by 0.1; the table's BETWEEN bounds moved;
    # the cost and latency intervals on n + 1 or n - 2 degrees of freedom, or on the clustered
    # count when unclustered. Slices g1..g30 and g40 of one cell: slice gk holds k + 1 cases,
    # so each metric's interval there has k degrees of freedom (n - 1), and every bound must be
    # delta -/+ t(0.975, k) * se with scipy's t quantile (Cornish-Fisher above 30: within 1e-7).
    from scipy.stats import t as student_t

    con = _warehouse(tmp_path)
    sizes = [*range(1, 32), 40]  # 31: the first df past the table
    i = 0
    for k in sizes:
        for j in range(k + 1):
            i += 1
            meta = json.dumps({"g": f"g{k}"})
            # B - A: score 0.01 * (j % 3), cost 0.001 * (j % 4), latency 10 * (j % 5) + j
            for run, score, cost, latency in (
                ("A", 0.5, 0.01, 100.0),
                (
                    "B",
                    0.5 + 0.01 * (j % 3) + 0.001 * j,
                    0.01 + 0.001 * (j % 4),
                    100.0 + 10 * (j % 5) + j,
                ),
            ):
                con.execute(
                    "INSERT INTO cases (run_id, variant, model, case_id, repeat, metadata, "
                    "cached, request_hash, attempts, passed, score, cost_usd, latency_ms, "
                    "created_at) VALUES (?, 'v', 'm', ?, 0, ?, false, 'x', 1, ?, ?, ?, ?, now())",
                    [run, f"c{i}", meta, run == "B" and j % 2 == 0, score, cost, latency],
                )
                fill_run_keys(con)
    rows = queries.run_query(
        con, "compare", run_a="A", run_b="B", cluster=None, keys=["g"], combine=False, scopes=None
    ).to_pylist()
    by_slice = {r["target"]: r for r in rows if r["scope"] == "slice"}
    assert sorted(by_slice) == sorted(f"g=g{k}" for k in sizes)
    for k in sizes:
        row = by_slice[f"g=g{k}"]
        q = student_t.ppf(0.975, k)
        for metric in ("score", "cost_usd", "latency_ms", "pass_rate"):
            delta, se = row[f"{metric}_delta"], row[f"{metric}_se"]
            lo, hi = delta - q * se, delta + q * se
            if metric in ("score", "pass_rate"):
                lo, hi = max(-1.0, lo), min(1.0, hi)
            assert row[f"{metric}_lo"] == pytest.approx(lo, rel=1e-7, abs=1e-9), (k, metric)
            assert row[f"{metric}_hi"] == pytest.approx(hi, rel=1e-7, abs=1e-9), (k, metric)
        if k > 30:
            # the quantile itself, read back from the cost interval (no clamp there): the
            # expansion is within 3e-8 of scipy at 31 df; 0.1 more on its last coefficient is 0.1 / 31^4
            # = 1.1e-7 more
            cost = (row["cost_usd_hi"] - row["cost_usd_delta"]) / row["cost_usd_se"]
            assert cost == pytest.approx(q, abs=5e-8), k


def test_compare_averages_cost_and_latency_over_a_cases_repeats(tmp_path: Path) -> None:
    # bug: the repeat-averaging path keeping the repeats where the other side is *missing*
    # (IS NULL for IS NOT NULL) for cost or latency: no pair then, and NULL means.
    # u1 answered twice a side: A cost 0.1, 0.3 (latency 100, 300) -> 0.2 (200); B 0.2, 0.2
    # (150, 250) -> 0.2 (200). u2 once: A 0.1 (100), B 0.4 (400). Units: cost A 0.2, 0.1 ->
    # mean 0.15, B 0.2, 0.4 -> 0.3, delta 0.15; latency A 200, 100 -> 150, B 200, 400 -> 300,
    # delta 150.
    con = _warehouse(tmp_path)
    for run, case, repeat, cost, latency in (
        ("A", "u1", 0, 0.1, 100), ("A", "u1", 1, 0.3, 300), ("A", "u2", 0, 0.1, 100),
        ("B", "u1", 0, 0.2, 150), ("B", "u1", 1, 0.2, 250), ("B", "u2", 0, 0.4, 400),
    ):  # fmt: skip
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, cached, request_hash, "
            "attempts, score, passed, cost_usd, latency_ms, created_at) "
            "VALUES (?, 'v', 'm', ?, ?, false, 'h', 1, 1, true, ?, ?, now())",
            [run, case, repeat, cost, latency],
        )
        fill_run_keys(con)
    (run,) = [
        r
        for r in queries.run_query(
            con, "compare", run_a="A", run_b="B", cluster=None, keys=[], combine=False,
            scopes=["run"],
        ).to_pylist()
        if r["scope"] == "run"
    ]  # fmt: skip
    assert (run["n"], run["n_pairs"]) == (2, 3)
    assert (run["cost_usd_a"], run["cost_usd_b"]) == (pytest.approx(0.15), pytest.approx(0.3))
    assert run["cost_usd_delta"] == pytest.approx(0.15)
    assert (run["latency_ms_a"], run["latency_ms_b"], run["latency_ms_delta"]) == (
        pytest.approx(150),
        pytest.approx(300),
        pytest.approx(150),
    )


def _t_test_p(d: list[float]) -> float:
    """The two-sided p-value of the one-sample t-test of mean 0 on the differences (scipy)."""
    from scipy.stats import ttest_1samp

    return float(ttest_1samp(d, 0.0).pvalue)


def test_each_metric_has_its_own_degrees_of_freedom_and_t_test(tmp_path: Path) -> None:
    # bugs: an interval or p read at another metric's degrees of freedom (the same when every
    # metric has the same n, as in the test above). Slices of n = 4, 6, 9, 12, 15 and 23
    # cases; case j: A passes when j % 3 == 0, B when j is even; B's score is missing when
    # j % 5 == 4 (fewer score pairs), else 0.5 - 0.1 when j % 3 == 0 and 0.5 + 0.1 otherwise;
    # B's latency is missing when j % 4 == 3 (fewer latency pairs). Expected values from
    # scipy's t quantile and ttest_1samp.
    from scipy.stats import t as student_t

    con = _warehouse(tmp_path)
    sizes = [4, 6, 9, 12, 15, 23]
    for n in sizes:
        for j in range(n):
            meta = json.dumps({"g": f"n{n}"})
            b_score = None if j % 5 == 4 else 0.5 + (0.1 if j % 3 else -0.1)
            b_latency = None if j % 4 == 3 else 100.0 + 10 * (j % 5) - 15
            for run, passed, score, cost, latency in (
                ("A", j % 3 == 0, 0.5, 0.01, 100.0),
                ("B", j % 2 == 0, b_score, 0.01 + 0.001 * (j % 4), b_latency),
            ):
                con.execute(
                    "INSERT INTO cases (run_id, variant, model, case_id, repeat, metadata, "
                    "cached, request_hash, attempts, passed, score, cost_usd, latency_ms, "
                    "created_at) VALUES (?, 'v', 'm', ?, 0, ?, false, 'x', 1, ?, ?, ?, ?, now())",
                    [run, f"n{n}-{j}", meta, passed, score, cost, latency],
                )
                fill_run_keys(con)
    # slice "wide": 2 cases, differences 1 and 0 in pass and score: delta 0.5, se 0.5, t(1)
    # 12.7: the interval is clipped to [-1, 1] (a difference of rates lies there)
    for j, (a, b) in enumerate(((0.0, 1.0), (0.0, 0.0))):
        for run, value in (("A", a), ("B", b)):
            con.execute(
                "INSERT INTO cases (run_id, variant, model, case_id, repeat, metadata, cached, "
                "request_hash, attempts, passed, score, created_at) "
                "VALUES (?, 'v', 'm', ?, 0, '{\"g\": \"wide\"}', false, 'x', 1, ?, ?, now())",
                [run, f"w{j}", value == 1.0, value],
            )
            fill_run_keys(con)
    rows = queries.run_query(
        con, "compare", run_a="A", run_b="B", cluster=None, keys=["g"], combine=False, scopes=None
    ).to_pylist()
    by_slice = {r["target"]: r for r in rows if r["scope"] == "slice"}
    wide = by_slice["g=wide"]
    for metric in ("pass_rate", "score"):
        assert (wide[f"{metric}_delta"], wide[f"{metric}_se"]) == (0.5, pytest.approx(0.5))
        assert (wide[f"{metric}_lo"], wide[f"{metric}_hi"]) == (-1.0, 1.0), metric
    differs = set()
    for n in sizes:
        row = by_slice[f"g=n{n}"]
        js = range(n)
        scored = [j for j in js if j % 5 != 4]
        df = {
            "pass_rate": n - 1,
            "score": len(scored) - 1,
            "cost_usd": n - 1,
            "latency_ms": sum(1 for j in js if j % 4 != 3) - 1,
        }
        differs |= {df["score"] != df["pass_rate"], df["latency_ms"] != df["cost_usd"]}
        for metric, d in df.items():
            half = student_t.ppf(0.975, d) * row[f"{metric}_se"]
            lo, hi = row[f"{metric}_delta"] - half, row[f"{metric}_delta"] + half
            if metric in ("score", "pass_rate"):
                lo, hi = max(-1.0, lo), min(1.0, hi)
            assert row[f"{metric}_lo"] == pytest.approx(lo, rel=1e-9), (n, metric)
            assert row[f"{metric}_hi"] == pytest.approx(hi, rel=1e-9), (n, metric)
        pass_d = [int(j % 2 == 0) - int(j % 3 == 0) for j in js]
        score_d = [-0.1 if j % 3 == 0 else 0.1 for j in scored]
        cost_d = [0.001 * (j % 4) for j in js]
        latency_d = [10.0 * (j % 5) - 15 for j in js if j % 4 != 3]
        for metric, d in (
            ("pass_rate", pass_d), ("score", score_d), ("cost_usd", cost_d),
            ("latency_ms", latency_d),
        ):  # fmt: skip
            assert row[f"{metric}_p"] == pytest.approx(_t_test_p(d), rel=1e-9, abs=1e-12), (
                n,
                metric,
            )
    assert True in differs  # some slices tell each metric's degrees of freedom apart


# One cell per verdict branch of sql/compare.sql, each on the near side of its boundary:
# (variant, model) -> the answers (run, case, repeat, passed, score) are built below. The
# verdict is the paired t-test's: p < 0.05 (scipy's ttest_1samp as the reference).
VERDICT_CELLS = {
    # 4 cases broken of 8: differences -1 x4, 0 x4, t = -2.65 on 7 df, p 0.033
    ("a", "worse-pass"): "worse",
    # 3 broken of 8: t = -2.05, p 0.080, not below 0.05 (nor is 3 fixed of 8)
    ("a", "noise-down"): "within noise",
    ("a", "noise-up"): "within noise",
    # 4 fixed of 8
    ("a", "better-pass"): "better",
    # verdicts unchanged, every score -0.4 (6 cases): no spread, interval [-0.4, -0.4], p 0
    ("a", "worse-score"): "worse",
    ("a", "better-score"): "better",
    # 2 of 5 scores down by 0.4: t = -1.63 on 4 df, p 0.18
    ("a", "noise-score-down"): "within noise",
    ("a", "noise-score-up"): "within noise",
    # 7 scores up (the sign test would say 2 / 2^7) but spread so wide that t's p is 0.26
    ("a", "noise-score-wide"): "within noise",
    # 11 cases passing both times, no scores
    ("a", "same"): "same",
    # 1 case fixed (+1) and 8 cases answered 8 times, broken once each (-1/8): delta exactly 0,
    # p 1 (the sign test gave 0.035): neither better nor worse
    ("a", "zero-delta"): "same",
    ("b", "no-pairs"): "no pairs",
    ("b", "only-a"): "only in A",
    ("b", "only-b"): "only in B",
    # one pair: fixed, score 0.2 -> 0.6; no standard error: no interval, no p
    ("b", "single"): "within noise",
}


def _verdict_answers() -> list[tuple[str, str, str, str, int, bool, float | None]]:
    """(run, variant, model, case, repeat, passed, score) of every answer of VERDICT_CELLS."""
    rows: list[tuple[str, str, str, str, int, bool, float | None]] = []

    def both(
        model: str, n: int, a: tuple[bool, float | None], b: tuple[bool, float | None]
    ) -> None:
        for j in range(n):
            rows.append(("A", "a", model, f"c{j}", 0, *a))
            rows.append(("B", "a", model, f"c{j}", 0, *b))

    def moved(model: str, n: int, k: int, a: tuple[bool, float], b: tuple[bool, float]) -> None:
        for j in range(n):  # the first k cases move from a to b, the others stay at a
            rows.append(("A", "a", model, f"c{j}", 0, *a))
            rows.append(("B", "a", model, f"c{j}", 0, *(b if j < k else a)))

    moved("worse-pass", 8, 4, (True, 0.5), (False, 0.5))
    moved("noise-down", 8, 3, (True, 0.5), (False, 0.5))
    moved("noise-up", 8, 3, (False, 0.5), (True, 0.5))
    moved("better-pass", 8, 4, (False, 0.5), (True, 0.5))
    for model, n, k, score_a, score_b in (
        ("worse-score", 6, 6, 0.9, 0.5),
        ("better-score", 6, 6, 0.5, 0.9),
        ("noise-score-down", 5, 2, 0.9, 0.5),
        ("noise-score-up", 5, 2, 0.5, 0.9),
    ):
        for j in range(n):  # verdicts unchanged: every other case passes
            rows += [("A", "a", model, f"c{j}", 0, j % 2 == 0, score_a)]
            rows += [("B", "a", model, f"c{j}", 0, j % 2 == 0, score_b if j < k else score_a)]
    for j in range(7):
        rows += [("A", "a", "noise-score-wide", f"c{j}", 0, True, 0.5)]
        rows += [("B", "a", "noise-score-wide", f"c{j}", 0, True, 0.95 if j == 6 else 0.5 + 1 / 64)]
    both("same", 11, (True, None), (True, None))
    rows += [("A", "a", "zero-delta", "u0", 0, False, None)]
    rows += [("B", "a", "zero-delta", "u0", 0, True, None)]
    for j in range(1, 9):
        for repeat in range(8):
            rows += [("A", "a", "zero-delta", f"u{j}", repeat, True, None)]
            rows += [("B", "a", "zero-delta", f"u{j}", repeat, repeat != j - 1, None)]
    rows += [("A", "b", "no-pairs", "x1", 0, True, 0.5), ("B", "b", "no-pairs", "x2", 0, True, 0.5)]
    rows += [("A", "b", "only-a", "c0", 0, True, 0.5), ("B", "b", "only-b", "c0", 0, False, 0.5)]
    rows += [("A", "b", "single", "c0", 0, False, 0.2), ("B", "b", "single", "c0", 0, True, 0.6)]
    return rows


@pytest.mark.slow  # a long end-to-end proof; CI runs it (`pytest -m slow`)
def test_compare_verdicts_wilson_bounds_presence_and_row_order_by_hand(tmp_path: Path) -> None:
    # bugs: any operator or constant of the verdict CASE moved (each cell of VERDICT_CELLS sits
    # next to one boundary: p 0.033 or 0.080, a delta of exactly 0, a zero spread, a score
    # interval holding 0, a cell with no pairs or one pair); the per-side Wilson bounds
    # (statsmodels' as the reference, clamped to exactly 0 and 1: at n = 11 the unclamped upper
    # bound of 11/11 is 1 + 2^-52) and the CLT bounds of a side with fractional cases; n_pairs
    # of a cell only one run has; no p for a single pair; the documented row order (run, cells
    # by variant then model, criteria, then slices, each worst first).
    from statsmodels.stats.proportion import proportion_confint

    con = _warehouse(tmp_path)
    for run, variant, model, case, repeat, passed, score in _verdict_answers():
        meta = json.dumps({"g": "lo" if model == "worse-pass" else "hi"})
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, metadata, cached, "
            "request_hash, attempts, passed, score, cost_usd, latency_ms, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, false, 'x', 1, ?, ?, 0.01, 100, now())",
            [run, variant, model, case, repeat, meta, passed, score],
        )
        fill_run_keys(con)
        con.execute(
            "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, scorer, "
            "score, passed, weight, required) VALUES (?, ?, ?, ?, ?, 'k', 'x', ?, ?, 1, true)",
            [run, variant, model, case, repeat, float(passed) if score is None else score, passed],
        )
        fill_run_keys(con)
    rows = queries.run_query(
        con, "compare", run_a="A", run_b="B", cluster=None, keys=["g"], combine=False, scopes=None
    ).to_pylist()
    cells = {(r["variant"], r["model"]): r for r in rows if r["scope"] == "cell"}
    assert {cell: r["verdict"] for cell, r in cells.items()} == VERDICT_CELLS
    zero = cells[("a", "zero-delta")]
    assert (zero["pass_rate_delta"], zero["n_fixed"], zero["n_broken"]) == (0.0, 1, 8)
    assert zero["pass_rate_p"] == pytest.approx(_t_test_p([1] + [-1 / 8] * 8)) == 1.0
    worse, noise = cells[("a", "worse-pass")], cells[("a", "noise-down")]
    assert worse["pass_rate_p"] == pytest.approx(_t_test_p([-1] * 4 + [0] * 4))
    assert noise["pass_rate_p"] == pytest.approx(_t_test_p([-1] * 3 + [0] * 5))
    assert worse["pass_rate_p"] < 0.05 < noise["pass_rate_p"]
    assert worse["pass_rate_hi"] < 0 < noise["pass_rate_hi"]
    flat = cells[("a", "worse-score")]
    assert (flat["score_p"], flat["score_lo"], flat["score_hi"]) == (
        0.0,
        *[pytest.approx(-0.4)] * 2,
    )
    wide = cells[("a", "noise-score-wide")]
    assert wide["score_p"] == pytest.approx(_t_test_p([1 / 64] * 6 + [0.45]))
    assert wide["score_p"] > 0.05 and wide["score_lo"] < 0 < wide["score_hi"]
    single = cells[("b", "single")]
    assert (single["n"], single["pass_rate_p"], single["score_p"]) == (1, None, None)
    assert (single["pass_rate_lo"], single["pass_rate_hi"]) == (None, None)  # not [-1, 1]
    assert (single["score_lo"], single["score_hi"]) == (None, None)
    # presence: answers a side, pairs
    presence = {
        cell: (cells[cell]["n_a"], cells[cell]["n_b"], cells[cell]["n"], cells[cell]["n_pairs"])
        for cell in [("b", "no-pairs"), ("b", "only-a"), ("b", "only-b"), ("a", "zero-delta")]
    }
    assert presence == {
        ("b", "no-pairs"): (1, 1, 0, 0),
        ("b", "only-a"): (1, 0, 0, 0),
        ("b", "only-b"): (0, 1, 0, 0),
        ("a", "zero-delta"): (65, 65, 9, 65),
    }
    # B's side of zero-delta has fractional cases (7/8): the CLT interval on the case means
    b_means = [1.0] + [7 / 8] * 8
    assert (zero["pass_rate_b_lo"], zero["pass_rate_b_hi"]) == pytest.approx(
        case_rate_interval(b_means)
    )
    # Wilson bounds of each side's pass rate over the n paired cases, where no case repeats
    for r in rows:
        if not r["n"] or r["n_pairs"] != r["n"]:
            continue
        for side in ("a", "b"):
            n, p = r["n"], r[f"pass_rate_{side}"]
            lo, hi = proportion_confint(round(p * n), n, alpha=0.05, method="wilson")
            got = (r[f"pass_rate_{side}_lo"], r[f"pass_rate_{side}_hi"])
            assert got == (pytest.approx(lo, abs=1e-12), pytest.approx(hi, abs=1e-12)), (r, side)
            assert got[0] == 0.0 if p == 0 else got[0] > 0, (r["target"], side)
            assert got[1] == 1.0 if p == 1 else got[1] < 1, (r["target"], side)
    same = cells[("a", "same")]
    assert (same["n"], same["pass_rate_a_hi"], same["pass_rate_b_hi"]) == (11, 1.0, 1.0)
    # the row order
    order = [(r["scope"], r["target"]) for r in rows]
    assert order == [
        ("run", "run"),
        *[("cell", f"{v} × {m}") for v, m in sorted(VERDICT_CELLS)],
        ("criterion", "k"),
        ("slice", "g=lo"),
        ("slice", "g=hi"),
    ]
    assert next(r["pass_rate_delta"] for r in rows if r["scope"] == "slice") == -0.5
    assert rows[-3]["pass_rate_delta"] > -0.5  # the criterion sorts before a worse slice


def test_compare_a_score_interval_ending_exactly_at_zero_does_not_exclude_zero(
    tmp_path: Path,
) -> None:
    # bugs: a zero standard error read as significant at a delta of 0. Clustered on doc, each
    # cluster's score differences sum to 0 (+5/8 once, -1/8 five times: exact in binary), so
    # the mean difference and the CR1 standard error are exactly 0: the interval is [0, 0] and
    # p is 1 (the sign test on 2 up and 10 down gave 0.0386). Verdicts unchanged: 'same', not
    # worse (nor better).
    con = _warehouse(tmp_path)
    for doc in ("d1", "d2"):
        for j in range(6):
            a, b = (0.25, 0.875) if j == 0 else (0.5, 0.375)
            for run, score in (("A", a), ("B", b)):
                con.execute(
                    "INSERT INTO cases (run_id, variant, model, case_id, repeat, metadata, "
                    "cached, request_hash, attempts, passed, score, created_at) "
                    "VALUES (?, 'v', 'm', ?, 0, ?, false, 'x', 1, true, ?, now())",
                    [run, f"{doc}-{j}", json.dumps({"doc": doc}), score],
                )
                fill_run_keys(con)
    rows = queries.run_query(
        con, "compare", run_a="A", run_b="B", cluster="doc", keys=[], combine=False,
        scopes=["cell"],
    ).to_pylist()  # fmt: skip
    (cell,) = rows
    assert (cell["score_delta"], cell["score_se"], cell["score_lo"], cell["score_hi"]) == (
        0.0, 0.0, 0.0, 0.0,
    )  # fmt: skip
    assert cell["score_p"] == 1.0
    assert cell["verdict"] == "same"


def test_compare_scales_by_filtering_runs_first() -> None:
    """Every CTE over a big table filters by run key, then run id (the key lets the zone maps
    skip the other runs' row groups: tests/sql/test_run_key.py); no correlated subquery."""
    from evalwh.warehouse.queries import get

    for name in ("compare", "compare_cases", "slice", "repeats", "flaky", "export_cases"):
        sql = get(name).sql
        for table in ("cases", "scores"):
            for chunk in sql.split(f"FROM {table}")[1:]:
                assert re.search(
                    r"WHERE (\w+\.)?run_key = run_key\((\$run_\w+)\) AND (\w+\.)?run_id = \2",
                    chunk[:300],
                ), (name, chunk)
