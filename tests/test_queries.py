"""Named queries that no test checked against hand-computed values (found by the SQL mutation
run, tests/mutation/sql_mutants.py): sql/calibration_slices.sql, cache_info.sql, run_cells.sql.
Each fixture warehouse is built by hand; the expected numbers are worked out in the comments.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

import duckdb
import pytest

from evalwh.warehouse import connect, queries


def _warehouse(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    path = tmp_path / "w.duckdb"
    with connect.write_connection(path):
        pass  # migrated
    return duckdb.connect(str(path))


def test_calibration_by_slice_matches_a_hand_computed_kappa(tmp_path: Path) -> None:
    # Comparison 'c', pairs labelled by a human, sliced by metadata 'lang':
    #   en: (human, judge) cand-cand 3, cand-base 1, base-base 2, base-cand 0 -> n 6, agree 5;
    #       human marginals cand 4 base 2, judge cand 3 base 3: chance = (4*3 + 2*3) / 36 = 0.5,
    #       kappa = (5/6 - 0.5) / (1 - 0.5) = 2/3
    #   fr: cand-cand 2 -> n 2, agree 2, chance (2*2) / 4 = 1: kappa undefined (NULL)
    #   no 'lang': base-cand 1 -> slice '(none)', n 1, agree 0, chance 0, kappa 0
    # Not counted: an ineligible pair, an unlabelled pair, a label of another run.
    con = _warehouse(tmp_path)
    rows = (
        [("en", "candidate", "candidate")] * 3
        + [("en", "candidate", "baseline")]
        + [("en", "baseline", "baseline")] * 2
        + [("fr", "candidate", "candidate")] * 2
        + [(None, "baseline", "candidate")]
    )

    def pair(case: str, lang: str | None, verdict: str, eligible: bool = True) -> None:
        con.execute(
            "INSERT INTO pairs (run_id, comparison, case_id, repeat, baseline_variant, "
            "baseline_model, candidate_variant, candidate_model, judge, judge_model, verdict, "
            "flipped, eligible, baseline_ok, candidate_ok, metadata, created_at) VALUES "
            "('r', 'c', ?, 0, 'v', 'a', 'v', 'b', 'j', 'jm', ?, false, ?, true, true, ?, now())",
            [case, verdict, eligible, json.dumps({"lang": lang} if lang else {})],
        )

    def label(case: str, prefer: str, run: str = "r") -> None:
        con.execute(
            "INSERT INTO labels VALUES (?, 'pairwise', 'c', ?, ?, NULL, NULL)", [run, case, prefer]
        )

    for i, (lang, human, judge) in enumerate(rows):
        pair(f"k{i}", lang, judge)
        label(f"k{i}", human)
    pair("x1", "en", "candidate", eligible=False)
    label("x1", "baseline")
    pair("x2", "en", "candidate")  # unlabelled
    label("x2", "baseline", run="other")
    got = {
        r["slice"]: r
        for r in queries.run_query(con, "calibration_slices", run_id="r", key="lang").to_pylist()
    }
    assert sorted(got) == ["(none)", "en", "fr"]
    en, fr, none = got["en"], got["fr"], got["(none)"]
    assert (en["comparison"], en["n"]) == ("c", 6)
    assert en["agreement"] == pytest.approx(5 / 6)
    assert en["kappa"] == pytest.approx(2 / 3)
    assert (fr["n"], fr["agreement"], fr["kappa"]) == (2, 1.0, None)
    assert (none["n"], none["agreement"]) == (1, 0.0)
    assert none["kappa"] == pytest.approx(0.0)


def test_cache_info_counts_entries_and_bytes_per_model(tmp_path: Path) -> None:
    # p/m1: 2 entries, outputs 'abc' + 'hello' = 8 bytes; p/m2: 1 entry, 'xy' = 2 bytes
    # ('é' would be 2 bytes: strlen counts bytes) -> m3 'é' 2 bytes
    con = _warehouse(tmp_path)
    entries = [
        ("h1", "m1", "abc", "2026-01-01 00:00:00"),
        ("h2", "m1", "hello", "2026-01-03 00:00:00"),
        ("h3", "m2", "xy", "2026-01-02 00:00:00"),
        ("h4", "m3", "é", "2026-01-02 00:00:00"),
    ]
    cols = [
        r[0]
        for r in con.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_name = 'response_cache' ORDER BY ordinal_position"
        ).fetchall()
    ]
    for key, model, output, at in entries:
        values = {
            "request_hash": key,
            "provider": "p",
            "model": model,
            "output": output,
            "created_at": at,
        }
        names = [c for c in cols if c in values]
        con.execute(
            f"INSERT INTO response_cache ({', '.join(names)}) VALUES "
            f"({', '.join('?' for _ in names)})",
            [values[c] for c in names],
        )
    rows = queries.run_query(con, "cache_info").to_pylist()
    assert [(r["provider"], r["model"], r["entries"], r["text_bytes"]) for r in rows] == [
        ("p", "m1", 2, 8),
        ("p", "m2", 1, 2),
        ("p", "m3", 1, 2),
    ]
    m1 = rows[0]
    assert (str(m1["oldest"])[:10], str(m1["newest"])[:10]) == ("2026-01-01", "2026-01-03")


def test_run_cells_lists_stored_cells_or_only_the_errored_ones(tmp_path: Path) -> None:
    # run r: (v, m, c1, 0) ok, (v, m, c1, 1) error, (v, m, c2, 0) ok; run s: (v, m, c3, 0) error
    con = _warehouse(tmp_path)
    for run, case, repeat, error in (
        ("r", "c1", 0, None),
        ("r", "c1", 1, "boom"),
        ("r", "c2", 0, None),
        ("s", "c3", 0, "boom"),
    ):
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, error, cached, "
            "request_hash, attempts, score, passed, created_at) "
            "VALUES (?, 'v', 'm', ?, ?, ?, false, 'x', 1, 0, false, now())",
            [run, case, repeat, error],
        )

    def cells(errors_only: bool) -> set[tuple[str, str, str, int]]:
        table = queries.run_query(con, "run_cells", run_id="r", errors_only=errors_only)
        return {(r["variant"], r["model"], r["case_id"], r["repeat"]) for r in table.to_pylist()}

    assert cells(False) == {("v", "m", "c1", 0), ("v", "m", "c1", 1), ("v", "m", "c2", 0)}
    assert cells(True) == {("v", "m", "c1", 1)}


def test_baselines_carry_their_runs_pass_rate_and_n(tmp_path: Path) -> None:
    # 'prod' -> run r: 3 of 4 cases pass -> n 4, n_passed 3, pass rate 0.75
    # 'empty' -> run e with no case rows -> n 0, pass rate NULL (not a division by zero)
    con = _warehouse(tmp_path)
    for run in ("r", "e"):
        con.execute(
            "INSERT INTO runs (run_id, label, suite, status, config_hash, dataset_hash, "
            "n_planned, started_at, evalwh_version) "
            "VALUES (?, ?, 's', 'completed', 'h', 'd', 4, now(), 't')",
            [run, f"label-{run}"],
        )
    for i, passed in enumerate((True, True, False, True)):
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, cached, request_hash, "
            "attempts, score, passed, created_at) "
            "VALUES ('r', 'v', 'm', ?, 0, false, 'x', 1, 0, ?, now())",
            [f"c{i}", passed],
        )
    con.execute("INSERT INTO baselines VALUES ('prod', 'r', now()), ('empty', 'e', now())")
    rows = queries.run_query(con, "baselines").to_pylist()
    got = [
        (r["name"], r["run_id"], r["label"], r["n"], r["n_passed"], r["pass_rate"]) for r in rows
    ]
    assert got == [("empty", "e", "label-e", 0, 0, None), ("prod", "r", "label-r", 4, 3, 0.75)]


def _cache(con: duckdb.DuckDBPyConnection, entries: list[tuple[str, str, str]]) -> None:
    """Response-cache rows (request_hash, provider, model), output = the hash."""
    for key, provider, model in entries:
        con.execute(
            "INSERT INTO response_cache (request_hash, provider, model, output, created_at) "
            "VALUES (?, ?, ?, ?, now())",
            [key, provider, model, f"out-{key}"],
        )


def test_cache_lookup_returns_exactly_the_planned_hashes(tmp_path: Path) -> None:
    import pyarrow as pa

    con = _warehouse(tmp_path)
    _cache(con, [("h1", "p", "m"), ("h2", "p", "m"), ("h3", "p", "m")])
    for planned, expected in ((["h2"], ["h2"]), (["h1", "h3", "hX"], ["h1", "h3"]), (["hX"], [])):
        con.register("planned_hashes", pa.table({"request_hash": pa.array(planned, pa.string())}))
        rows = queries.run_query(con, "cache_lookup").to_pylist()
        assert sorted(r["request_hash"] for r in rows) == expected
        assert all(r["output"] == f"out-{r['request_hash']}" for r in rows)
        con.unregister("planned_hashes")


def test_cache_for_model_holds_only_that_provider_and_model(tmp_path: Path) -> None:
    con = _warehouse(tmp_path)
    _cache(con, [("a", "p", "m1"), ("b", "p", "m2"), ("c", "q", "m1"), ("d", "p", "m1")])
    rows = queries.run_query(con, "cache_for_model", provider="p", model="m1").to_pylist()
    assert sorted(r["request_hash"] for r in rows) == ["a", "d"]


def test_the_confusion_matrix_counts_eligible_labelled_pairs_of_the_run(tmp_path: Path) -> None:
    # run r, comparison c: (human, judge) cand-cand 2, base-cand 1, plus an ineligible pair and
    # a pointwise label (not counted); run s has a labelled pair of its own (not counted)
    con = _warehouse(tmp_path)

    def pair(run: str, case: str, verdict: str, human: str, *, eligible: bool = True) -> None:
        con.execute(
            "INSERT INTO pairs (run_id, comparison, case_id, repeat, baseline_variant, "
            "baseline_model, candidate_variant, candidate_model, judge, judge_model, verdict, "
            "flipped, eligible, baseline_ok, candidate_ok, created_at) VALUES "
            "(?, 'c', ?, 0, 'v', 'a', 'v', 'b', 'j', 'jm', ?, false, ?, true, true, now())",
            [run, case, verdict, eligible],
        )
        con.execute(
            "INSERT INTO labels VALUES (?, 'pairwise', 'c', ?, ?, NULL, NULL)", [run, case, human]
        )

    pair("r", "k1", "candidate", "candidate")
    pair("r", "k2", "candidate", "candidate")
    pair("r", "k3", "candidate", "baseline")
    pair("r", "k4", "tie", "tie", eligible=False)
    pair("s", "k1", "tie", "tie")
    con.execute("INSERT INTO labels VALUES ('r', 'pointwise', 'c', 'k1', 'tie', NULL, NULL)")
    rows = queries.run_query(con, "calibration", run_id="r").to_pylist()
    counts = {(r["human"], r["judge"]): r["n"] for r in rows if r["n"]}
    assert counts == {("candidate", "candidate"): 2, ("baseline", "candidate"): 1}
    assert len(rows) == 9 and {r["comparison"] for r in rows} == {"c"}


def test_criteria_summary_matches_hand_counts_and_wilson(tmp_path: Path) -> None:
    # run r: criterion 'a' 10 rows, 5 pass, 1 scorer error, scores 0.0 .. 0.9 (mean 0.45),
    #   weight 2, one row not required -> required false; Wilson 5/10: [0.2366, 0.7634]
    #   (the textbook value); criterion 'b' 4 rows, all pass, score 1: Wilson 4/4 lower bound
    #   n / (n + z^2) = 4 / 7.8415 = 0.5101, upper 1. Run s: rows that must not count.
    from tests.test_analysis import wilson

    con = _warehouse(tmp_path)
    rows = [
        ("r", "a", i, i < 5, i / 10, "boom" if i == 9 else None, i != 3, 2.0) for i in range(10)
    ]
    rows += [("r", "b", i, True, 1.0, None, True, 1.0) for i in range(4)]
    rows += [("s", "a", i, False, 0.0, "x", True, 1.0) for i in range(3)]
    for run, criterion, i, passed, score, error, required, weight in rows:
        con.execute(
            "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, scorer, "
            "score, passed, weight, required, error) "
            "VALUES (?, 'v', 'm', ?, 0, ?, 'exact', ?, ?, ?, ?, ?)",
            [run, f"c{i}", criterion, score, passed, weight, required, error],
        )
    got = {r["criterion"]: r for r in queries.run_query(con, "criteria", run_id="r").to_pylist()}
    a, b = got["a"], got["b"]
    assert sorted(got) == ["a", "b"]
    assert (a["scorer"], a["weight"], a["required"]) == ("exact", 2.0, False)
    assert (a["n"], a["n_passed"], a["n_errors"]) == (10, 5, 1)
    assert a["pass_rate"] == 0.5 and a["mean_score"] == pytest.approx(0.45)
    assert (a["pass_rate_lo"], a["pass_rate_hi"]) == (
        pytest.approx(0.2366, abs=1e-4),
        pytest.approx(0.7634, abs=1e-4),
    )
    assert (b["required"], b["n"], b["n_passed"], b["n_errors"]) == (True, 4, 4, 0)
    assert (b["pass_rate_lo"], b["pass_rate_hi"]) == pytest.approx(wilson(4, 4))
    assert b["pass_rate_lo"] == pytest.approx(4 / (4 + 1.959963984540054**2))
    assert b["pass_rate_hi"] == pytest.approx(1.0)


def test_case_list_filters_orders_and_keeps_each_rows_own_criteria(tmp_path: Path) -> None:
    # run G (test_boundaries.ROWS): m1 c3 and c4 fail, the other six cases pass. Run H has the
    # same cells with other scores: none of its criterion rows may show up in G's listing.
    from tests.test_boundaries import ROWS, add_run

    con = _warehouse(tmp_path)
    add_run(con, "G", ROWS)
    add_run(con, "H", [(m, c, not p, 0.25, e) for m, c, p, _, e in ROWS])

    def listing(only_failures: bool = False, case_id: str | None = None) -> list[Any]:
        return queries.run_query(
            con, "case_list", run_id="G", only_failures=only_failures, case_id=case_id, limit=None
        ).to_pylist()

    rows = listing()
    # failures first, then by case id, variant, model
    assert [(r["model"], r["case_id"], r["passed"]) for r in rows] == [
        ("m1", "c3", False),
        ("m1", "c4", False),
        ("m1", "c1", True),
        ("m2", "c1", True),
        ("m1", "c2", True),
        ("m2", "c2", True),
        ("m2", "c3", True),
        ("m2", "c4", True),
    ]
    for r in rows:
        assert [c["criterion"] for c in r["criteria"]] == ["k1", "k2"]
        assert r["criteria"][0]["score"] == r["score"] and r["criteria"][0]["passed"] == r["passed"]
    assert [(r["model"], r["case_id"]) for r in listing(only_failures=True)] == [
        ("m1", "c3"),
        ("m1", "c4"),
    ]
    assert [(r["model"], r["passed"]) for r in listing(case_id="c4")] == [
        ("m1", False),
        ("m2", True),
    ]
    assert listing(only_failures=True, case_id="c1") == []


DOCS = ["d1", "d1", "d2", "d2"]


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
            # one criterion 'k': the case's score (0 where it has none); its verdict is the
            # case's in A, but passes for c1..c3 in B (so that its pass values are correlated)
            k_passed = passed if run == "A" else i < 3
            con.execute(
                "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, scorer, "
                "score, passed, weight, required) VALUES (?, 'v', 'm', ?, 0, 'k', 'x', ?, ?, 1, true)",
                [run, f"c{i + 1}", score or 0.0, k_passed],
            )
    table = queries.run_query(
        con, "compare", run_a="A", run_b="B", cluster=None, keys=[], combine=False
    )
    # criterion k: 4 pairs, pass A 1 1 0 0 -> B 1 1 1 0: 0.5 -> 0.75 (c3 fixed), differences
    # 0 0 1 0; scores A 0.5 1 0 0.5, B 1 0 0.5 0.5: 0.5 -> 0.5, differences 0.5 -1 0.5 0
    (k,) = [r for r in table.to_pylist() if r["scope"] == "criterion"]
    assert (k["target"], k["n"], k["n_fixed"], k["n_broken"]) == ("k", 4, 1, 0)
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
        assert row["score_n"] == 3
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
    from tests.test_analysis import cluster_se

    clustered = queries.run_query(
        con, "compare", run_a="A", run_b="B", cluster="doc", keys=[], combine=False
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


def test_movers_by_hand_worst_first_with_the_criteria_that_moved(tmp_path: Path) -> None:
    # Cell v × m; (passed, score) in A -> B and the criteria (k1, k2, k3) that changed:
    #   c1 pass 1.0 -> fail 0.5: broken, k1 broke, k3 got fixed      (delta -0.5)
    #   c2 fail 0.2 -> pass 0.9: fixed, k1 got fixed                   (delta +0.7)
    #   c3 pass 0.8 -> pass 0.6: score down                            (delta -0.2)
    #   c4 pass 0.6 -> pass 0.7: score up                              (delta +0.1)
    #   c5 pass 0.5 -> pass 0.5 and c6 fail 0.3 -> fail 0.3: did not move
    # Worst first: broken, then by score delta, then fixed: c1, c3, c4, c2. Run C holds other
    # verdicts for the same cases and criteria; none of them may leak in.
    con = _warehouse(tmp_path)
    cases = {
        "c1": ((True, 1.0), (False, 0.5)),
        "c2": ((False, 0.2), (True, 0.9)),
        "c3": ((True, 0.8), (True, 0.6)),
        "c4": ((True, 0.6), (True, 0.7)),
        "c5": ((True, 0.5), (True, 0.5)),
        "c6": ((False, 0.3), (False, 0.3)),
    }
    criteria = {  # (k1, k2, k3) verdicts in A and B
        "c1": ((True, True, False), (False, True, True)),
        "c2": ((False, True, True), (True, True, True)),
    }
    for side, run in enumerate(("A", "B")):
        for case, states in cases.items():
            passed, score = states[side]
            con.execute(
                "INSERT INTO cases (run_id, variant, model, case_id, repeat, metadata, cached, "
                "request_hash, attempts, passed, score, output, created_at) "
                "VALUES (?, 'v', 'm', ?, 0, '{}', false, 'x', 1, ?, ?, ?, now())",
                [run, case, passed, score, f"{run}-{case}"],
            )
            verdicts = criteria.get(case, ((passed,) * 3, (passed,) * 3))[side]
            for run_id, ks in ((run, verdicts), ("C", (not verdicts[0], False, False))):
                for k, ok in zip(("k1", "k2", "k3"), ks, strict=True):
                    con.execute(
                        "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, "
                        "scorer, score, passed, weight, required) "
                        "VALUES (?, 'v', 'm', ?, 0, ?, 'x', 0, ?, 1, true)",
                        [run_id, case, k, ok],
                    )

    def movers(limit: int | None) -> list[tuple[Any, ...]]:
        rows = queries.run_query(con, "compare_cases", run_a="A", run_b="B", limit=limit)
        return [
            (
                r["case_id"],
                r["movement"],
                round(r["score_delta"], 9),
                r["criteria_broken"],
                r["criteria_fixed"],
                r["output_a"],
                r["output_b"],
            )
            for r in rows.to_pylist()
        ]

    assert movers(None) == [
        ("c1", "broken", -0.5, ["k1"], ["k3"], "A-c1", "B-c1"),
        ("c3", "score down", -0.2, [], [], "A-c3", "B-c3"),
        ("c4", "score up", 0.1, [], [], "A-c4", "B-c4"),
        ("c2", "fixed", 0.7, [], ["k1"], "A-c2", "B-c2"),
    ]
    assert [m[0] for m in movers(2)] == ["c1", "c3"]


def test_errors_group_by_message_most_frequent_first(tmp_path: Path) -> None:
    # run r: 'HTTP 500' on c1..c6 (model m, six cases: five examples shown), 'timeout' on c7,
    # and 'bad key' on c8 and c9 (models m2, m1); c10 answered. Run s: errors that do not count.
    con = _warehouse(tmp_path)
    rows = [("r", f"c{i}", "m", "HTTP 500", "server") for i in range(1, 7)]
    rows += [("r", "c7", "m", "timeout", "timeout"), ("r", "c10", "m", None, None)]
    rows += [("r", "c8", "m2", "bad key", "auth"), ("r", "c9", "m1", "bad key", "auth")]
    rows += [("s", "c1", "m", "timeout", "timeout"), ("s", "c2", "m", "timeout", "timeout")]
    for run, case, model, error, kind in rows:
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, error, error_kind, "
            "cached, request_hash, attempts, passed, score, created_at) "
            "VALUES (?, 'v', ?, ?, 0, ?, ?, false, 'x', 1, false, 0, now())",
            [run, model, case, error, kind],
        )
    got = [
        (r["error"], r["error_kind"], r["n"], r["examples"])
        for r in queries.run_query(con, "errors", run_id="r").to_pylist()
    ]
    assert got == [
        ("HTTP 500", "server", 6, [f"c{i} v × m" for i in range(1, 6)]),
        ("bad key", "auth", 2, ["c8 v × m2", "c9 v × m1"]),
        ("timeout", "timeout", 1, ["c7 v × m"]),
    ]


def test_summary_matrix_by_hand(tmp_path: Path) -> None:
    # Cell v × m1 of run r, five cases (passed, error, cached, latency, tokens in/out, cost):
    #   c1 pass      -       100  10/1  0.25     c2 pass  cached   200  20/2  0.5
    #   c3 fail  'boom'      300  none  none     c4 fail  -        400  30/3  0.25
    #   c5 pass      -      1000  40/4  0.5
    # n 5, passed 3, errors 1, cached 1; latency p50 300, p95 880 (linear between 400 and
    # 1000: 400 + 0.8 * 600); tokens 100/10; cost without the cached row 1.0, with it 1.5.
    # Cell v × m2: one case without tokens or cost -> 0, not NULL. Run s does not count.
    con = _warehouse(tmp_path)
    rows = [
        ("r", "m1", "c1", True, None, False, 100, 10, 1, 0.25),
        ("r", "m1", "c2", True, None, True, 200, 20, 2, 0.5),
        ("r", "m1", "c3", False, "boom", False, 300, None, None, None),
        ("r", "m1", "c4", False, None, False, 400, 30, 3, 0.25),
        ("r", "m1", "c5", True, None, False, 1000, 40, 4, 0.5),
        ("r", "m2", "c1", True, None, False, 50, None, None, None),
        ("s", "m1", "c1", False, "x", True, 1, 1, 1, 1.0),
    ]
    for run, model, case, passed, error, cached, latency, tin, tout, cost in rows:
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, error, cached, "
            "request_hash, attempts, passed, score, latency_ms, input_tokens, output_tokens, "
            "cost_usd, created_at) VALUES (?, 'v', ?, ?, 0, ?, ?, 'x', 1, ?, ?, ?, ?, ?, ?, now())",
            [run, model, case, error, cached, passed, float(passed), latency, tin, tout, cost],
        )
    m1, m2 = queries.run_query(con, "summary", run_id="r").to_pylist()
    assert (m1["model"], m1["n"], m1["n_passed"], m1["n_errors"], m1["n_cached"]) == (
        "m1",
        5,
        3,
        1,
        1,
    )
    assert m1["pass_rate"] == 0.6 and m1["mean_score"] == pytest.approx(0.6)
    assert (m1["p50_latency_ms"], m1["p95_latency_ms"]) == (300, pytest.approx(880))
    assert (m1["input_tokens"], m1["output_tokens"]) == (100, 10)
    assert (m1["cost_usd"], m1["cost_uncached_usd"]) == (1.0, 1.5)
    assert (m2["model"], m2["n"], m2["input_tokens"], m2["output_tokens"]) == ("m2", 1, 0, 0)
    assert (m2["cost_usd"], m2["cost_uncached_usd"]) == (0, 0)


def test_exported_cases_name_their_failed_criteria(tmp_path: Path) -> None:
    # run G (test_boundaries.ROWS): criterion k1 mirrors the case, k2 passes on every other
    # row: (m1, c1) fails none, (m1, c2) fails k2, (m1, c3) fails k1, (m1, c4) fails k1 and k2
    from tests.test_boundaries import ROWS, add_run

    con = _warehouse(tmp_path)
    add_run(con, "G", ROWS)
    rows = queries.run_query(con, "export_cases", run_id="G").to_pylist()
    failed = {(r["model"], r["case_id"]): r["failed_criteria"] for r in rows}
    assert [failed[("m1", c)] for c in ("c1", "c2", "c3", "c4")] == ["", "k2", "k1", "k1, k2"]
    crit = json.loads(rows[3]["criteria"])  # (m1, c4)
    assert crit["k1"] == {"score": 0.0, "passed": False, "error": None}


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
    rows = queries.run_query(
        con, "compare", run_a="A", run_b="B", cluster=None, keys=[], combine=False
    ).to_pylist()
    (run,) = [r for r in rows if r["scope"] == "run"]
    assert run["n"] == n
    half_width = (run["score_hi"] - run["score_lo"]) / 2
    assert half_width == pytest.approx(1.959963984540054 * run["score_se"], rel=1e-4)
