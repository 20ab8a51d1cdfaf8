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
            "INSERT INTO labels (run_id, kind, comparison, case_id, prefer, label, note) "
            "VALUES (?, 'pairwise', 'c', ?, ?, NULL, NULL)",
            [run, case, prefer],
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
            "INSERT INTO labels (run_id, kind, comparison, case_id, prefer, label, note) "
            "VALUES (?, 'pairwise', 'c', ?, ?, NULL, NULL)",
            [run, case, human],
        )

    pair("r", "k1", "candidate", "candidate")
    pair("r", "k2", "candidate", "candidate")
    pair("r", "k3", "candidate", "baseline")
    pair("r", "k4", "tie", "tie", eligible=False)
    pair("s", "k1", "tie", "tie")
    con.execute(
        "INSERT INTO labels (run_id, kind, comparison, case_id, prefer, label, note) "
        "VALUES ('r', 'pointwise', 'c', 'k1', 'tie', NULL, NULL)"
    )
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
    # 'c': 11 of 11 pass, where the unclamped upper bound is 1 + 2^-52: clamped to exactly 1
    rows += [("r", "c", i, True, 1.0, None, True, 1.0) for i in range(11)]
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
    assert sorted(got) == ["a", "b", "c"]
    assert (got["c"]["n_cases"], got["c"]["pass_rate"], got["c"]["pass_rate_hi"]) == (11, 1.0, 1.0)
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
        con.execute(
            "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, scorer, "
            "score, passed, weight, required) VALUES (?, 'v', ?, ?, 0, 'k', 'x', ?, ?, 1, true)",
            [run, model, case, score, passed],
        )

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
            # one criterion 'k': the case's score (0 where it has none); its verdict is the
            # case's in A, but passes for c1..c3 in B (so that its pass values are correlated)
            k_passed = passed if run == "A" else i < 3
            con.execute(
                "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, scorer, "
                "score, passed, weight, required) VALUES (?, 'v', 'm', ?, 0, 'k', 'x', ?, ?, 1, true)",
                [run, f"c{i + 1}", score or 0.0, k_passed],
            )
    table = queries.run_query(
        con, "compare", run_a="A", run_b="B", cluster=None, keys=[], combine=False, scopes=None
    )
    # criterion k: 4 pairs, pass A 1 1 0 0 -> B 1 1 1 0: 0.5 -> 0.75 (c3 fixed), differences
    # 0 0 1 0; scores A 0.5 1 0 0.5, B 1 0 0.5 0.5: 0.5 -> 0.5, differences 0.5 -1 0.5 0
    (k,) = [r for r in table.to_pylist() if r["scope"] == "criterion"]
    assert (k["target"], k["n"], k["n_fixed"], k["n_broken"]) == ("k", 4, 1, 0)
    assert k["n_pairs"] == 4  # answers: one per case here (a count off by one per case: 8)
    # score sign test on the cases whose score moved: c1, c3 up, c2 down, c4 equal (not a
    # move): exact two-sided p = 2 * P(X <= 1 | n 3) = 2 * 4/8 = 1.0
    assert k["score_p"] == pytest.approx(1.0)
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
        # score moved up in c1 and c3, c4 stayed (not a move): p = 2 * (1/2)^2 = 0.5
        assert row["score_p"] == pytest.approx(0.5)
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
    # cell v × m3: 11 of 11 pass, where the unclamped Wilson upper bound is 1 + 2^-52
    rows += [("r", "m3", f"c{i}", True, None, False, 10, 1, 1, 0.0) for i in range(11)]
    for run, model, case, passed, error, cached, latency, tin, tout, cost in rows:
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, error, cached, "
            "request_hash, attempts, passed, score, latency_ms, input_tokens, output_tokens, "
            "cost_usd, created_at) VALUES (?, 'v', ?, ?, 0, ?, ?, 'x', 1, ?, ?, ?, ?, ?, ?, now())",
            [run, model, case, error, cached, passed, float(passed), latency, tin, tout, cost],
        )
    m1, m2, m3 = queries.run_query(con, "summary", run_id="r").to_pylist()
    assert (m3["model"], m3["n_cases"], m3["pass_rate_hi"]) == ("m3", 11, 1.0)
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
        con, "compare", run_a="A", run_b="B", cluster=None, keys=[], combine=False, scopes=None
    ).to_pylist()
    (run,) = [r for r in rows if r["scope"] == "run"]
    assert run["n"] == n
    half_width = (run["score_hi"] - run["score_lo"]) / 2
    assert half_width == pytest.approx(1.959963984540054 * run["score_se"], rel=1e-4)


# -- survivors of the full SQL mutation run (tests/mutation/sql_mutants.py, 2026-11-30) -------
def _pair_votes(
    con: duckdb.DuckDBPyConnection,
    case: str,
    votes: list[str],
    lang: str,
    comparison: str = "c",
    eligible: bool = True,
) -> None:
    """One pair per repeat of `case` (eligible unless told), the judge's verdict in each."""
    for repeat, verdict in enumerate(votes):
        con.execute(
            "INSERT INTO pairs (run_id, comparison, case_id, repeat, baseline_variant, "
            "baseline_model, candidate_variant, candidate_model, judge, judge_model, verdict, "
            "flipped, eligible, baseline_ok, candidate_ok, metadata, created_at) VALUES "
            "('r', ?, ?, ?, 'v', 'a', 'v', 'b', 'j', 'jm', ?, false, ?, true, true, ?, now())",
            [comparison, case, repeat, verdict, eligible, json.dumps({"lang": lang})],
        )


def _pairwise_label(
    con: duckdb.DuckDBPyConnection, case: str, prefer: str, comparison: str = "c"
) -> None:
    con.execute(
        "INSERT INTO labels (run_id, kind, comparison, case_id, prefer) "
        "VALUES ('r', 'pairwise', ?, ?, ?)",
        [comparison, case, prefer],
    )


def test_the_judge_verdict_of_a_labelled_case_is_the_majority_of_its_repeats(
    tmp_path: Path,
) -> None:
    # bugs: the majority taken with min() instead of max(); a tie called at three top verdicts
    # instead of two; the tie test counting the verdicts *below* the top.
    #   k1: candidate x2, baseline x1           -> candidate (the most frequent, not the least)
    #   k2: candidate x1, baseline x1           -> tie (two verdicts share the top count)
    #   k3: candidate x2, baseline x1, tie x1   -> candidate (two verdicts below the top: no tie)
    # human labels candidate, tie, candidate -> (candidate, candidate) 2, (tie, tie) 1: n 3,
    # agreement 1. The same majority rule in the confusion matrix and in the slices.
    con = _warehouse(tmp_path)
    _pair_votes(con, "k1", ["candidate", "candidate", "baseline"], "en")
    _pair_votes(con, "k2", ["candidate", "baseline"], "en")
    _pair_votes(con, "k3", ["candidate", "baseline", "candidate", "tie"], "en")
    for case, prefer in (("k1", "candidate"), ("k2", "tie"), ("k3", "candidate")):
        _pairwise_label(con, case, prefer)
    rows = queries.run_query(con, "calibration", run_id="r").to_pylist()
    counts = {(r["human"], r["judge"]): r["n"] for r in rows if r["n"]}
    assert counts == {("candidate", "candidate"): 2, ("tie", "tie"): 1}
    sliced = queries.run_query(con, "calibration_slices", run_id="r", key="lang").to_pylist()
    assert [(r["slice"], r["n"], r["agreement"]) for r in sliced] == [("en", 3, 1.0)]


def test_baselines_count_cases_apart_from_answers_and_only_the_pinned_run(
    tmp_path: Path,
) -> None:
    # bugs: the semi join on `<>` (one pinned run then counts nothing of its own), n_cases off
    # by one, an empty run's n_cases 1.
    # run r (pinned): cases c0 (repeats pass, fail), c1 (pass, pass), c2 (fail, fail):
    #   n 6 answers, n_passed 3, n_cases 3, pass rate mean(0.5, 1, 0) = 0.5.
    # run u (not pinned) has cases of its own; run e (pinned alone in a second store) has none.
    con = _warehouse(tmp_path)
    for run in ("r", "u", "e"):
        con.execute(
            "INSERT INTO runs (run_id, label, suite, status, config_hash, dataset_hash, "
            "n_planned, started_at, evalwh_version) "
            "VALUES (?, ?, 's', 'completed', 'h', 'd', 6, now(), 't')",
            [run, f"label-{run}"],
        )
    answers = [("c0", 0, True), ("c0", 1, False), ("c1", 0, True), ("c1", 1, True)]
    answers += [("c2", 0, False), ("c2", 1, False)]
    for run in ("r", "u"):
        for case, repeat, passed in answers if run == "r" else answers[:2]:
            con.execute(
                "INSERT INTO cases (run_id, variant, model, case_id, repeat, cached, "
                "request_hash, attempts, score, passed, created_at) "
                "VALUES (?, 'v', 'm', ?, ?, false, 'x', 1, 0, ?, now())",
                [run, case, repeat, passed],
            )
    con.execute("INSERT INTO baselines VALUES ('prod', 'r', now())")
    (row,) = queries.run_query(con, "baselines").to_pylist()
    assert (row["name"], row["n"], row["n_passed"], row["n_cases"]) == ("prod", 6, 3, 3)
    assert row["pass_rate"] == pytest.approx(0.5)
    con.execute("DELETE FROM baselines")
    con.execute("INSERT INTO baselines VALUES ('empty', 'e', now())")
    (row,) = queries.run_query(con, "baselines").to_pylist()
    assert (row["n"], row["n_passed"], row["n_cases"], row["pass_rate"]) == (0, 0, 0, None)


def test_pointwise_labels_precedence_half_passes_and_the_runs_own_labels(tmp_path: Path) -> None:
    # bugs: a judge passing exactly half of a case's answers counted as a fail (`>` for `>=`,
    # or 0.6 for 0.5); a criterion's own label matched on `<>` (another criterion's label used);
    # labels of other runs or pairwise labels let in (`OR` for `AND`); the case-wide label
    # (comparison NULL) winning over the criterion's own.
    # Criteria j1, j2 (llm judges), run r:
    #   h: j1 answers pass, fail (half)   label for j1 'pass'         -> j1 (pass, pass)
    #   p: j1 pass; j2 fail               label for j1 'pass', case-wide 'fail'
    #                                      -> j1 uses its own 'pass'; j2 uses 'fail' (agree)
    #   q: j1 fail; j2 fail               a 'pass' label in run s only, a pairwise label in r
    #                                      -> unlabelled in r: not counted
    # j1: n 2, agreement 1 (h: pass=pass, p: pass=pass); j2: n 1, agreement 1.
    con = _warehouse(tmp_path)
    scores = [("h", "j1", 0, True), ("h", "j1", 1, False), ("p", "j1", 0, True)]
    scores += [("p", "j2", 0, False), ("q", "j1", 0, False), ("q", "j2", 0, False)]
    for case, criterion, repeat, passed in scores:
        con.execute(
            "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, scorer, "
            "score, passed, weight, required, judge_model) "
            "VALUES ('r', 'v', 'm', ?, ?, ?, 'llm-judge', 0.5, ?, 1, true, 'jm')",
            [case, repeat, criterion, passed],
        )
    labels = [("r", "pointwise", "j1", "h", '"pass"'), ("r", "pointwise", "j1", "p", '"pass"')]
    labels += [("r", "pointwise", None, "p", '"fail"'), ("s", "pointwise", None, "q", '"pass"')]
    labels += [("r", "pairwise", "j1", "q", None)]
    for run, kind, comparison, case, label in labels:
        con.execute(
            "INSERT INTO labels (run_id, kind, comparison, case_id, prefer, label) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [run, kind, comparison, case, "baseline" if label is None else None, label],
        )
    got = {
        r["criterion"]: (r["n_labels"], r["agreement"])
        for r in queries.run_query(
            con, "calibration_pointwise", run_id="r", within=1.0, key=None
        ).to_pylist()
    }
    assert got == {"j1": (2, 1.0), "j2": (1, 1.0)}


def _answer(con: duckdb.DuckDBPyConnection, run: str, case: str, repeat: int, ok: bool) -> None:
    """One answer of cell v x m with one criterion 'k' that passed as ``ok``."""
    con.execute(
        "INSERT INTO cases (run_id, variant, model, case_id, repeat, metadata, cached, "
        "request_hash, attempts, score, passed, created_at) "
        "VALUES (?, 'v', 'm', ?, ?, '{\"t\": \"x\"}', false, 'h', 1, ?, ?, now())",
        [run, case, repeat, float(ok), ok],
    )
    con.execute(
        "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, scorer, "
        "score, passed, weight, required) VALUES (?, 'v', 'm', ?, ?, 'k', 'exact', ?, ?, 1, true)",
        [run, case, repeat, float(ok), ok],
    )


def test_criteria_and_gate_average_repeats_first_and_read_single_answers_as_cases(
    tmp_path: Path,
) -> None:
    # Run r, criterion k: c1 answered twice (pass, fail) -> 0.5; c2 once (pass) -> 1;
    # c3 only at repeat 1 (fail) -> 0. Per case: (0.5 + 1 + 0) / 3 = 0.5 over 3 cases (4
    # rows; 2 passed). Reading every row as a case would give 2/4 over 4, and dropping the
    # repeated cases 1/1 over 1.
    con = _warehouse(tmp_path)
    for case, repeat, ok in (("c1", 0, True), ("c1", 1, False), ("c2", 0, True), ("c3", 1, False)):
        _answer(con, "r", case, repeat, ok)
    (row,) = queries.run_query(con, "criteria", run_id="r").to_pylist()
    assert (row["n"], row["n_cases"], row["n_passed"]) == (4, 3, 2)
    assert row["pass_rate"] == pytest.approx(0.5)
    rule = {"scope": "criterion", "target": "*", "metric": "pass_rate", "op": ">=", "limit": 0.6}
    gate = queries.run_query(
        con, "gate", run_id="r", rules=json.dumps([rule]), tolerance=0.0
    ).to_pylist()
    assert [(g["target"], g["n"], g["passed"]) for g in gate] == [("k", 3, False)]
    assert gate[0]["value"] == pytest.approx(0.5)
    # a gate without criterion rules has no criterion rows (their scores are not read)
    run_rule = {**rule, "scope": "run", "target": "run"}
    gate = queries.run_query(
        con, "gate", run_id="r", rules=json.dumps([run_rule]), tolerance=0.0
    ).to_pylist()
    assert [(g["scope"], g["n"]) for g in gate] == [("run", 3)]


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


def _runs(con: duckdb.DuckDBPyConnection, rows: list[tuple[str, str, str, str | None]]) -> None:
    """runs rows (run_id, suite, started_at, git_commit)."""
    for run_id, suite, started, commit in rows:
        con.execute(
            "INSERT INTO runs (run_id, suite, status, config_hash, dataset_hash, n_planned, "
            "started_at, evalwh_version, git_commit) "
            "VALUES (?, ?, 'completed', 'h', 'd', 1, ?::TIMESTAMPTZ, 't', ?)",
            [run_id, suite, started, commit],
        )


def test_relative_references_break_time_ties_by_run_id(tmp_path: Path) -> None:
    """latest~N: the newest run is the latest start, and of runs started at the same instant
    the greatest run id (run ids sort by time); the same order inside the suite."""
    con = _warehouse(tmp_path)
    t1, t3 = "2026-01-01 00:00:01+00", "2026-01-01 00:00:03+00"
    _runs(con, [("a1", "s", t1, None), ("b2", "o", t3, None), ("c3", "s", t3, None)])
    _runs(con, [("c2", "s", t3, None)])
    order = [
        r["run_id"]
        for n in range(4)
        for r in queries.run_query(con, "resolve_relative", offset=n).to_pylist()
    ]
    assert order == ["c3", "c2", "a1"]  # suite s (c3 beats b2 at t3), newest first


def test_git_references_take_the_nearest_commit_then_the_newest_run(tmp_path: Path) -> None:
    con = _warehouse(tmp_path)
    t1, t2, t3 = (f"2026-01-01 00:00:0{i}+00" for i in (1, 2, 3))
    _runs(con, [("x1", "s", t1, "c1"), ("y1", "s", t2, "c1"), ("y2", "s", t2, "c1")])
    _runs(con, [("z9", "s", t3, "c2"), ("n0", "s", t3, None)])

    def found(commits: list[str]) -> list[Any]:
        rows = queries.run_query(con, "resolve_git", commits=commits).to_pylist()
        return [(r["run_id"], r["distance"]) for r in rows]

    # c1 is nearer than c2 (a later run at c2 does not win); at c1, the newest start, and of
    # two at the same instant the greatest run id
    assert found(["c0", "c1", "c2"]) == [("y2", 2)]
    assert found(["c2", "c1"]) == [("z9", 1)]
    assert found(["c7"]) == []


def test_pointwise_calibration_reads_this_runs_labels_and_a_half_pass_is_a_pass(
    tmp_path: Path,
) -> None:
    """Labels of another run (the same case ids) never count; a case whose judged answers pass
    exactly half the time counts as a pass (the verdict is the majority, ties passing); the
    slice of a case is its metadata in this run."""
    con = _warehouse(tmp_path)
    score = (
        "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, scorer, score, "
        "passed, weight, required, judge_model, raw_score) "
        "VALUES (?, 'v', ?, ?, 0, 'j', 'llm-judge', 0.5, ?, 1, true, 'jm', NULL)"
    )
    label = "INSERT INTO labels (run_id, kind, case_id, label) VALUES (?, 'pointwise', ?, ?)"
    case = (
        "INSERT INTO cases (run_id, variant, model, case_id, repeat, cached, request_hash, "
        "attempts, score, passed, created_at, metadata) "
        "VALUES (?, 'v', ?, ?, 0, false, 'x', 1, 0, true, now(), ?)"
    )
    verdicts = {"a": [True], "b": [True, False], "c": [False]}  # b: one of two answers passes
    for case_id, passes in verdicts.items():
        for model, passed in zip(("m1", "m2"), passes, strict=False):
            con.execute(score, ["r", model, case_id, passed])
            con.execute(case, ["r", model, case_id, json.dumps({"topic": "t"})])
        con.execute(case, ["o", "m1", case_id, json.dumps({"topic": "other"})])
    for case_id, human in (("a", "pass"), ("b", "pass"), ("c", "fail")):
        con.execute(label, ["r", case_id, json.dumps(human)])
        con.execute(label, ["o", case_id, json.dumps("fail" if human == "pass" else "pass")])
    [row] = queries.run_query(
        con, "calibration_pointwise", run_id="r", within=1.0, key=None
    ).to_pylist()
    assert (row["n_labels"], row["agreement"]) == (3, 1.0)
    [sliced] = queries.run_query(
        con, "calibration_pointwise", run_id="r", within=1.0, key="topic"
    ).to_pylist()
    assert (sliced["slice"], sliced["n_labels"], sliced["agreement"]) == ("t", 3, 1.0)


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
    from tests.test_analysis import cluster_se

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


def test_weighted_kappa_at_an_expected_disagreement_of_exactly_one(tmp_path: Path) -> None:
    """Human scores 1 and 3 (population variance 1), the judge 2 both times (variance 0, the
    same mean): the expected squared difference is exactly 1 and the observed one 1, so the
    weighted kappa is 1 - 1/1 = 0, defined; with every score equal it is undefined (None)."""
    con = _warehouse(tmp_path)
    score = (
        "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, scorer, score, "
        "passed, weight, required, judge_model, raw_score) "
        "VALUES ('r', 'v', 'm', ?, 0, ?, 'llm-judge', 0.5, true, 1, true, 'jm', ?)"
    )
    label = (
        "INSERT INTO labels (run_id, kind, comparison, case_id, label) "
        "VALUES ('r', 'pointwise', ?, ?, ?)"
    )
    for criterion, pairs in {"k": [(1, 2), (3, 2)], "flat": [(4, 4), (4, 4)]}.items():
        for i, (human, judge) in enumerate(pairs):
            con.execute(score, [f"c{i}", criterion, float(judge)])
            con.execute(label, [criterion, f"c{i}", json.dumps(human)])
    rows = {
        r["criterion"]: r
        for r in queries.run_query(
            con, "calibration_pointwise", run_id="r", within=1.0, key=None
        ).to_pylist()
    }
    assert rows["k"]["n_numeric"] == 2 and rows["k"]["weighted_kappa"] == 0.0
    assert rows["flat"]["weighted_kappa"] is None  # no spread: agreement by chance is certain


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


def test_case_history_counts_each_runs_answers_of_one_case_newest_runs_first(
    tmp_path: Path,
) -> None:
    # Case k in runs r0 (oldest), r1 and r2 (newest); limit 2 keeps r2 and r1. r1 holds two
    # answers of k in cell v x m: (pass, score 0.5, 100 ms, "o0") and (fail, 1.0, 300 ms,
    # error, "o1") -> n 2, n_passed 1, pass rate 0.5, mean score 0.75, 1 error, 200 ms, the
    # first repeat's output "o0". r2 (no-look) holds two answers of k and one of case j (not
    # counted). r0 is past the limit (the limit counts runs, not answers: r2's two answers
    # must not use it up).
    con = _warehouse(tmp_path)
    _runs(con, [("r0", "s", "2026-01-01 00:00:00+00", None)])
    _runs(con, [("r1", "s", "2026-01-01 00:00:01+00", None)])
    _runs(con, [("r2", "s", "2026-01-01 00:00:02+00", None)])
    con.execute("UPDATE runs SET no_look = (run_id = 'r2')")
    answers = [
        ("r0", "k", 0, True, 1.0, 50, None, "old"),
        ("r1", "k", 1, False, 1.0, 300, "boom", "o1"),
        ("r1", "k", 0, True, 0.5, 100, None, "o0"),
        ("r2", "k", 0, True, 1.0, 80, None, None),
        ("r2", "k", 1, True, 1.0, 80, None, None),
        ("r2", "j", 0, False, 0.0, 999, "x", None),
    ]
    for run, case, repeat, passed, score, latency, error, output in answers:
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, cached, request_hash, "
            "attempts, passed, score, latency_ms, error, output, created_at) "
            "VALUES (?, 'v', 'm', ?, ?, false, 'h', 1, ?, ?, ?, ?, ?, now())",
            [run, case, repeat, passed, score, latency, error, output],
        )
    rows = queries.run_query(con, "case_history", case_id="k", limit=2).to_pylist()
    got = [
        (r["run_id"], r["n"], r["n_passed"], r["n_errors"], r["output"], r["no_look"]) for r in rows
    ]
    assert got == [("r2", 2, 2, 0, None, True), ("r1", 2, 1, 1, "o0", False)]
    r1 = rows[1]
    assert (r1["pass_rate"], r1["mean_score"], r1["latency_ms"]) == (0.5, 0.75, 200.0)
    assert (r1["suite"], r1["variant"], r1["model"]) == ("s", "v", "m")


def _sign_test_p(up: int, down: int) -> float:
    """Exact two-sided sign test: 2 * P(Binomial(up + down, 1/2) <= min(up, down)), capped at 1."""
    n = up + down
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(min(up, down) + 1)) / 2**n)


def test_each_metric_has_its_own_degrees_of_freedom_and_exact_sign_tests(tmp_path: Path) -> None:
    # bugs: an interval read at another metric's t quantile (tq[2] for tq[1], tq[4] for tq[3]:
    # the same when every metric has the same n, as in the test above); McNemar's exact p-value
    # with any term of its binomial sum or its cap changed. Slices of n = 6, 9, 12, 15 and 23
    # cases; case j: A passes when j % 3 == 0, B when j is even; B's score is missing when
    # j % 5 == 4 (fewer score pairs), else 0.5 - 0.1 when j % 3 == 0 and 0.5 + 0.1 otherwise;
    # B's latency is missing when j % 4 == 3 (fewer latency pairs). Expected values from
    # scipy's t and the binomial sums computed here.
    from scipy.stats import t as student_t

    con = _warehouse(tmp_path)
    sizes = [4, 6, 9, 12, 15, 23]  # n 4: one fixed, one broken: 2 * P = 1.5, capped at 1
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
        fixed = sum(1 for j in js if j % 2 == 0 and j % 3 != 0)
        broken = sum(1 for j in js if j % 3 == 0 and j % 2 != 0)
        assert row["pass_rate_p"] == pytest.approx(_sign_test_p(fixed, broken), rel=1e-9), n
        up = sum(1 for j in scored if j % 3 != 0)
        down = sum(1 for j in scored if j % 3 == 0)
        assert row["score_p"] == pytest.approx(_sign_test_p(up, down), rel=1e-9), n
    assert True in differs  # some slices tell each metric's degrees of freedom apart


# One cell per verdict branch of sql/compare.sql, each on the near side of its boundary:
# (variant, model) -> the answers (run, case, repeat, passed, score) are built below.
VERDICT_CELLS = {
    # 6 cases broken, none fixed: sign test 2 / 2^6 = 0.03125 < 0.05, delta -1
    ("a", "worse-pass"): "worse",
    # 5 cases broken: 2 / 2^5 = 0.0625, not below 0.05 (nor is 5 fixed)
    ("a", "noise-down"): "within noise",
    ("a", "noise-up"): "within noise",
    # 7 fixed of 8 (one passes both): 2 / 2^7, delta 7/8: better though below 1
    ("a", "better-pass"): "better",
    # verdicts unchanged, every score -0.4 (6 cases): interval [-0.4, -0.4], sign test 0.03125
    ("a", "worse-score"): "worse",
    ("a", "better-score"): "better",
    # 5 scores moved: 0.0625
    ("a", "noise-score-down"): "within noise",
    ("a", "noise-score-up"): "within noise",
    # 7 scores up (sign test 2 / 2^7) but spread so wide the interval holds 0
    ("a", "noise-score-wide"): "within noise",
    # 11 cases passing both times, no scores
    ("a", "same"): "same",
    # 1 case fixed (+1) and 8 cases answered 8 times, broken once each (-1/8): delta exactly 0,
    # sign test 2 * 9 / 2^9 = 0.035 < 0.05: neither better nor worse
    ("a", "zero-delta"): "same",
    ("b", "no-pairs"): "no pairs",
    ("b", "only-a"): "only in A",
    ("b", "only-b"): "only in B",
    # one pair: fixed, score 0.2 -> 0.6; its sign tests are 2 * 1/2 capped at 1
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

    both("worse-pass", 6, (True, 0.5), (False, 0.5))
    both("noise-down", 5, (True, 0.5), (False, 0.5))
    both("noise-up", 5, (False, 0.5), (True, 0.5))
    both("better-pass", 7, (False, 0.5), (True, 0.5))
    rows += [("A", "a", "better-pass", "c7", 0, True, 0.5)]
    rows += [("B", "a", "better-pass", "c7", 0, True, 0.5)]
    for model, n, score_a, score_b in (
        ("worse-score", 6, 0.9, 0.5),
        ("better-score", 6, 0.5, 0.9),
        ("noise-score-down", 5, 0.9, 0.5),
        ("noise-score-up", 5, 0.5, 0.9),
    ):
        for j in range(n):  # verdicts unchanged: every other case passes
            rows += [("A", "a", model, f"c{j}", 0, j % 2 == 0, score_a)]
            rows += [("B", "a", model, f"c{j}", 0, j % 2 == 0, score_b)]
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


def test_compare_verdicts_wilson_bounds_presence_and_row_order_by_hand(tmp_path: Path) -> None:
    # bugs: any operator or constant of the verdict CASE moved (each cell of VERDICT_CELLS sits
    # next to one boundary: a sign test of 0.03125 or 0.0625, a delta of exactly 0 with a
    # sign test below 0.05, a score interval holding 0, a cell with no pairs or one pair);
    # the per-side Wilson bounds (statsmodels' as the reference, clamped to exactly 0 and 1:
    # at n = 11 the unclamped upper bound of 11/11 is 1 + 2^-52); n_pairs of a cell only one
    # run has; the sign tests of a single pair; the documented row order (run, cells by
    # variant then model, criteria, then slices, each worst first).
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
        con.execute(
            "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, scorer, "
            "score, passed, weight, required) VALUES (?, ?, ?, ?, ?, 'k', 'x', ?, ?, 1, true)",
            [run, variant, model, case, repeat, float(passed) if score is None else score, passed],
        )
    rows = queries.run_query(
        con, "compare", run_a="A", run_b="B", cluster=None, keys=["g"], combine=False, scopes=None
    ).to_pylist()
    cells = {(r["variant"], r["model"]): r for r in rows if r["scope"] == "cell"}
    assert {cell: r["verdict"] for cell, r in cells.items()} == VERDICT_CELLS
    zero = cells[("a", "zero-delta")]
    assert (zero["pass_rate_delta"], zero["n_fixed"], zero["n_broken"]) == (0.0, 1, 8)
    assert zero["pass_rate_p"] == pytest.approx(_sign_test_p(1, 8)) and zero["pass_rate_p"] < 0.05
    assert cells[("a", "worse-pass")]["pass_rate_p"] == pytest.approx(0.03125)
    assert cells[("a", "noise-down")]["pass_rate_p"] == pytest.approx(0.0625)
    wide = cells[("a", "noise-score-wide")]
    assert wide["score_p"] == pytest.approx(2 / 2**7) and wide["score_lo"] < 0 < wide["score_hi"]
    single = cells[("b", "single")]
    assert (single["n"], single["pass_rate_p"], single["score_p"]) == (1, 1.0, 1.0)
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
    # Wilson bounds of each side's pass rate over the n paired cases
    for r in rows:
        if not r["n"]:
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
    assert next(r["pass_rate_delta"] for r in rows if r["scope"] == "slice") == -1.0
    assert rows[-3]["pass_rate_delta"] > -1.0  # the criterion sorts before a worse slice


def test_gate_values_exactly_on_their_limit_pass_and_a_rule_matching_nothing_fails(
    tmp_path: Path,
) -> None:
    # bugs: '>=' as '>' and '<=' as '<' (the gate's own tests go through judge(), whose
    # tolerance is above 0, so a value on its limit passes either way: here the tolerance is
    # 0 and then 0.125); n off by one at each scope; a rule whose target has no rows dropped
    # (inner join), passed, or given n 1. Run r, cell v × m, criterion k: c1, c2, c4 pass,
    # c3 fails; scores mirror the verdicts: pass rate and score 3/4 over 4 cases, no errors.
    con = _warehouse(tmp_path)
    for case, ok in (("c1", True), ("c2", True), ("c3", False), ("c4", True)):
        _answer(con, "r", case, 0, ok)

    def gate(rules: list[tuple[str, str, str, str, float]], tolerance: float) -> list[Any]:
        keys = ("scope", "target", "metric", "op", "limit")
        rows = queries.run_query(
            con,
            "gate",
            run_id="r",
            rules=json.dumps([dict(zip(keys, r, strict=True)) for r in rules]),
            tolerance=tolerance,
        ).to_pylist()
        return [
            (g["scope"], g["target"], g["metric"], g["value"], g["n"], g["passed"]) for g in rows
        ]

    on_limit = [
        ("run", "run", "pass_rate", ">=", 0.75),
        ("run", "run", "error_rate", "<=", 0.0),
        ("cell", "v × m", "score", ">=", 0.75),
        ("criterion", "k", "pass_rate", ">=", 0.75),
        ("cell", "w × x", "pass_rate", ">=", 0.5),  # no such cell
    ]
    assert gate(on_limit, 0.0) == [
        ("cell", "w × x", "pass_rate", None, 0, False),
        ("cell", "v × m", "score", 0.75, 4, True),
        ("criterion", "k", "pass_rate", 0.75, 4, True),
        ("run", "run", "error_rate", 0.0, 4, True),
        ("run", "run", "pass_rate", 0.75, 4, True),
    ]
    # one tolerance past the limit: still on it; a step further: fails
    past = [
        ("run", "run", "pass_rate", ">=", 0.875),
        ("run", "run", "error_rate", "<=", -0.125),
        ("run", "run", "score", ">=", 0.875 + 1 / 64),
    ]
    assert [g[-1] for g in gate(past, 0.125)] == [False, True, True]
    assert [g[2] for g in gate(past, 0.125)] == ["score", "error_rate", "pass_rate"]


def test_flaky_cases_equally_split_come_by_score_spread_widest_first(tmp_path: Path) -> None:
    # bug: the score sd sorted ascending. z1 and a1 both pass 1 of 2 answers; z1's scores
    # (0.9, 0.1) spread wider than a1's (0.6, 0.4): z1 first, before the case_id order.
    con = _warehouse(tmp_path)
    for case, repeat, ok, score in (
        ("a1", 0, True, 0.6), ("a1", 1, False, 0.4), ("z1", 0, True, 0.9), ("z1", 1, False, 0.1),
    ):  # fmt: skip
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, metadata, cached, "
            "request_hash, attempts, score, passed, created_at) "
            "VALUES ('r', 'v', 'm', ?, ?, '{}', false, 'h', 1, ?, ?, now())",
            [case, repeat, score, ok],
        )
    rows = queries.run_query(con, "flaky", run_id="r").to_pylist()
    assert [(r["case_id"], r["pass_rate"]) for r in rows] == [("z1", 0.5), ("a1", 0.5)]
    assert rows[0]["score_sd"] > rows[1]["score_sd"]


# Hand-made rows of sql/compare.sql for sql/gate_regression.sql, one cell per target:
# target: (n, pass delta, pass lo, pass hi, pass p, score n, score delta, lo, hi, score p)
REGRESSION_DELTAS: dict[str, tuple[Any, ...]] = {
    # both drops 0.25, significant (p 0.03125, the score interval below 0)
    "t1": (8, -0.25, -0.5, -0.125, 0.03125, 8, -0.25, -0.5, -0.125, 0.03125),
    # the same drops, sign tests 0.0625: not significant
    "t2": (8, -0.25, -0.5, -0.125, 0.0625, 8, -0.25, -0.5, -0.125, 0.0625),
    # no drop with a sign test below 0.05 (one case +1, eight -1/8); a score interval that
    # holds 0 with a sign test below 0.05
    "t3": (9, 0.0, -0.5, 0.5, 0.03515625, 9, 0.0, -0.5, 0.5, 0.03125),
    # a cell only in the baseline: no pairs
    "t4": (0, None, None, None, None, None, None, None, None, None),
    # one pair
    "t5": (1, -1.0, None, None, 1.0, 1, -0.5, None, None, 1.0),
    # clustered into one cluster: no interval (significance unknown) but sign tests below 0.05
    "t6": (6, -1.0, None, None, 0.03125, 6, -0.5, None, None, 0.03125),
    # a score interval ending exactly at 0: it does not exclude 0
    "t7": (6, 0.0, -0.25, 0.25, 1.0, 6, -0.25, -0.5, 0.0, 0.03125),
}


def test_regression_gate_rules_on_hand_made_deltas(tmp_path: Path) -> None:
    # bugs: the significance tests of sql/gate_regression.sql with a bound or a constant moved
    # (t2: p 0.0625; t3: no drop; t7: an interval ending at 0), the drop interval's signs, a
    # drop exactly on its limit failing, '*' reaching cells without pairs (t4) or missing one
    # pair (t5), a rule naming no target dropped or passed, an unknown significance (t6)
    # read as significant, significant_only defaulting to true.
    import pyarrow as pa

    names = ["n", "pass_rate_delta", "pass_rate_lo", "pass_rate_hi", "pass_rate_p"]
    names += ["score_n", "score_delta", "score_lo", "score_hi", "score_p"]
    columns: dict[str, Any] = {"scope": ["cell"] * len(REGRESSION_DELTAS)}
    columns["target"] = list(REGRESSION_DELTAS)
    for i, name in enumerate(names):
        values = [row[i] for row in REGRESSION_DELTAS.values()]
        columns[name] = pa.array(values, pa.int64() if name.endswith("n") else pa.float64())
    for side in ("a", "b"):
        columns[f"pass_rate_{side}"] = columns[f"score_{side}"] = [0.5] * len(REGRESSION_DELTAS)
    con = duckdb.connect()
    con.register("deltas", pa.table(columns))

    def gate(*rules: tuple[str, str, float, bool | None]) -> dict[tuple[str, str], Any]:
        keys = ("target", "metric", "limit", "significant_only")
        rows = queries.run_query(
            con,
            "gate_regression",
            rules=json.dumps([{"scope": "cell", **dict(zip(keys, r, strict=True))} for r in rules]),
            tolerance=0.0,
        ).to_pylist()
        return {
            (r["metric"], r["target"]): (
                r["value"], r["n"], r["drop_lo"], r["drop_hi"], r["significant"],
                r["significant_only"], r["passed"],
            )
            for r in rows
        }  # fmt: skip

    assert gate(("*", "pass_rate", 0.125, True)) == {
        ("pass_rate_drop", "t1"): (0.25, 8, 0.125, 0.5, True, True, False),
        ("pass_rate_drop", "t2"): (0.25, 8, 0.125, 0.5, False, True, True),
        ("pass_rate_drop", "t3"): (0.0, 9, -0.5, 0.5, False, True, True),
        ("pass_rate_drop", "t5"): (1.0, 1, None, None, False, True, True),
        ("pass_rate_drop", "t6"): (1.0, 6, None, None, True, True, False),
        ("pass_rate_drop", "t7"): (0.0, 6, -0.25, 0.25, False, True, True),
    }
    assert gate(("*", "score", 0.125, True)) == {
        ("score_drop", "t1"): (0.25, 8, 0.125, 0.5, True, True, False),
        ("score_drop", "t2"): (0.25, 8, 0.125, 0.5, False, True, True),
        ("score_drop", "t3"): (0.0, 9, -0.5, 0.5, False, True, True),
        ("score_drop", "t5"): (0.5, 1, None, None, False, True, True),
        ("score_drop", "t6"): (0.5, 6, None, None, False, True, True),
        ("score_drop", "t7"): (0.25, 6, 0.0, 0.5, False, True, True),
    }
    # a drop exactly on its limit passes; significant_only left out is false; no such target
    assert gate(("t1", "score", 0.25, None), ("nope", "pass_rate", 0.5, None)) == {
        ("score_drop", "t1"): (0.25, 8, 0.125, 0.5, True, False, True),
        ("pass_rate_drop", "nope"): (None, 0, None, None, False, False, False),
    }
    assert gate(("t1", "score", 0.25 - 1 / 64, None))[("score_drop", "t1")][-1] is False


def test_metadata_keys_count_distinct_values_and_the_rows_carrying_each(tmp_path: Path) -> None:
    # bugs: a row more per metadata object, values counted per object instead of distinct.
    # Run r: {lang en, doc d1} twice, {lang en, doc d2} once, {lang fr} once; run s must not
    # count. lang: 2 values (en, fr) on 4 rows (3 objects); doc: 2 values on 3 rows.
    con = _warehouse(tmp_path)
    metas = [{"lang": "en", "doc": "d1"}] * 2 + [{"lang": "en", "doc": "d2"}, {"lang": "fr"}]
    for run, i, meta in [*(("r", i, m) for i, m in enumerate(metas)), ("s", 0, {"x": "1"})]:
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, metadata, cached, "
            "request_hash, attempts, passed, created_at) "
            "VALUES (?, 'v', 'm', ?, 0, ?, false, 'h', 1, true, now())",
            [run, f"c{i}", json.dumps(meta)],
        )
    rows = queries.run_query(con, "metadata_keys", run_ids=["r"]).to_pylist()
    assert [(r["key"], r["n_values"], r["n"]) for r in rows] == [("doc", 2, 3), ("lang", 2, 4)]


def test_pair_sides_list_every_answer_with_only_this_runs_passed_criteria(tmp_path: Path) -> None:
    # bugs: criteria read from another run's scores; an answer without score rows (an error)
    # dropped by an inner join. Run r: c1 passed k1, failed k2; c2 errored (no scores). Run s:
    # c1 passed k3.
    con = _warehouse(tmp_path)
    for run, case, error in (("r", "c1", None), ("r", "c2", "boom"), ("s", "c1", None)):
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, metadata, cached, "
            "request_hash, attempts, passed, error, created_at) "
            "VALUES (?, 'v', 'm', ?, 0, '{}', false, 'h', 1, ?, ?, now())",
            [run, case, error is None, error],
        )
    for run, criterion, ok in (("r", "k1", True), ("r", "k2", False), ("s", "k3", True)):
        con.execute(
            "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, scorer, "
            "score, passed, weight, required) VALUES (?, 'v', 'm', 'c1', 0, ?, 'x', 1, ?, 1, true)",
            [run, criterion, ok],
        )
    rows = queries.run_query(con, "pair_sides", run_id="r").to_pylist()
    got = sorted((r["case_id"], r["error"], r["criteria_passed"]) for r in rows)
    assert got == [("c1", None, ["k1"]), ("c2", "boom", [])]


def test_pairwise_counts_wins_and_labels_once_per_case_by_hand(tmp_path: Path) -> None:
    # bugs: the side names listed once per pair (DISTINCT dropped), cases counted per pair, a
    # pair too many, ineligible pairs counted as baseline wins or ties, a judge cost of 1 with
    # no cost, the majority verdict or the base rate taken with min(), a tie at three top
    # verdicts, another run's labels read. Comparison c, eligible pairs: k1 candidate x2,
    # baseline x1 -> candidate; k2 candidate, baseline -> tie; k3 candidate x2, baseline, tie
    # -> candidate; k4 candidate (labelled in run s only). Ineligible: k5 baseline, k5 tie.
    # Labels candidate, tie, candidate: n_labels 3, agreement 1, base rate 2/3. A chance
    # agreement of 1 / n^2 when the two sides share no class, or no row at all.
    con = _warehouse(tmp_path)
    _pair_votes(con, "k1", ["candidate", "candidate", "baseline"], "en")
    _pair_votes(con, "k2", ["candidate", "baseline"], "en")
    _pair_votes(con, "k3", ["candidate", "baseline", "candidate", "tie"], "en")
    _pair_votes(con, "k4", ["candidate"], "en")
    _pair_votes(con, "k5", ["baseline", "tie"], "en", eligible=False)
    for case, prefer in (("k1", "candidate"), ("k2", "tie"), ("k3", "candidate")):
        _pairwise_label(con, case, prefer)
    con.execute(
        "INSERT INTO labels (run_id, kind, comparison, case_id, prefer) "
        "VALUES ('s', 'pairwise', 'c', 'k4', 'baseline')"
    )
    # comparison d: the judge says candidate where the human says baseline (m1, m2): no class
    # in common, so no chance agreement at all: 0, and kappa (0 - 0) / (1 - 0) = 0
    for case in ("m1", "m2"):
        _pair_votes(con, case, ["candidate"], "en", comparison="d")
        _pairwise_label(con, case, "baseline", comparison="d")
    row, other = queries.run_query(
        con, "pairwise", run_id="r", min_kappa=0.4, min_labels=1, max_flip_rate=0.5
    ).to_pylist()
    assert (other["comparison"], other["n_labels"], other["agreement"]) == ("d", 2, 0.0)
    assert (other["chance_agreement"], other["kappa"]) == (0.0, 0.0)
    assert (row["baseline"], row["candidate"]) == ("v × a", "v × b")
    assert (row["n_pairs"], row["n"], row["n_cases"], row["n_excluded"]) == (12, 10, 4, 2)
    assert (row["candidate_wins"], row["baseline_wins"], row["ties"]) == (6, 3, 1)
    assert row["judge_cost_usd"] == 0
    assert (row["baseline_pass_rate"], row["candidate_pass_rate"]) == (1.0, 1.0)
    assert (row["n_labels"], row["agreement"]) == (3, 1.0)
    assert row["base_rate"] == pytest.approx(2 / 3)


def test_compare_a_score_interval_ending_exactly_at_zero_does_not_exclude_zero(
    tmp_path: Path,
) -> None:
    # bugs: 'score_hi < 0' as '<= 0' (and 'score_lo > 0' as '>= 0'). Clustered on doc, each
    # cluster's score differences sum to 0 (+5/8 once, -1/8 five times: exact in binary), so
    # the mean difference and the CR1 standard error are exactly 0: the interval is [0, 0].
    # The sign test on 2 up and 10 down: 2 * (1 + 12 + 66) / 2^12 = 0.0386 < 0.05. Verdicts
    # unchanged: 'same', not worse (nor better).
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
    rows = queries.run_query(
        con, "compare", run_a="A", run_b="B", cluster="doc", keys=[], combine=False,
        scopes=["cell"],
    ).to_pylist()  # fmt: skip
    (cell,) = rows
    assert (cell["score_delta"], cell["score_se"], cell["score_lo"], cell["score_hi"]) == (
        0.0, 0.0, 0.0, 0.0,
    )  # fmt: skip
    assert cell["score_p"] == pytest.approx(2 * (1 + 12 + 66) / 2**12)
    assert cell["verdict"] == "same"


# comparison -> (kappa band, confusion counts human x judge: (cand, cand), (cand, base),
# (base, cand), (base, base)), found by search so that kappa = (agreement - chance) /
# (1 - chance), computed in doubles as the query does, lands exactly on each band's edge or
# inside the next tenth
KAPPA_BANDS = {
    "at-0": ("slight", (0, 0, 1, 1)),  # kappa exactly 0
    "at-0.2": ("slight", (1, 0, 2, 1)),
    "at-0.25": ("fair", (1, 0, 3, 4)),
    "at-0.4": ("fair", (1, 0, 2, 6)),
    "at-0.46": ("moderate", (2, 0, 2, 3)),
    "at-0.6": ("moderate", (1, 0, 1, 6)),
    "at-0.67": ("substantial", (2, 0, 1, 3)),
    "at-0.8": ("substantial", (4, 0, 1, 5)),
    "at-0.82": ("almost perfect", (4, 0, 1, 7)),
    "below-0": ("poor", (0, 1, 1, 0)),
}


def test_pairwise_kappa_bands_on_their_edges_and_comparisons_without_labels(
    tmp_path: Path,
) -> None:
    # bugs: a Landis-Koch band edge moved ('<=' as '<', 0.20 as 0.30, ...; '< 0' as '<= 0');
    # a comparison without labels (n_labels 0, not 1) or without eligible pairs (no win-rate
    # interval) dropped by an inner join or given bounds; the win-rate interval of one case
    # missing, or its upper bound not clamped to 1; calibration and the flip flag with their
    # limits moved ('>=' as '>', '>' as '>=').
    con = _warehouse(tmp_path)
    for comparison, (_, cells) in KAPPA_BANDS.items():
        pairs = [("candidate", "candidate"), ("candidate", "baseline")]
        pairs += [("baseline", "candidate"), ("baseline", "baseline")]
        i = 0
        for (human, judge), count in zip(pairs, cells, strict=True):
            for _ in range(count):
                i += 1
                _pair_votes(con, f"x{i}", [judge], "en", comparison=comparison)
                _pairwise_label(con, f"x{i}", human, comparison=comparison)
    for i in range(11):  # won 11 of 11: the unclamped upper bound is 1 + 2^-52
        _pair_votes(con, f"y{i}", ["candidate"], "en", comparison="unlabelled")
    _pair_votes(con, "y1", ["candidate"], "en", comparison="one-case")
    _pair_votes(con, "y2", ["candidate"], "en", comparison="ineligible", eligible=False)
    # 5 of at-0.8's 10 pairs flipped: a flip rate exactly at the limit of 0.5
    con.execute(
        "UPDATE pairs SET flipped = true WHERE comparison = 'at-0.8' "
        "AND case_id IN ('x1', 'x2', 'x3', 'x4', 'x5')"
    )
    rows = {
        r["comparison"]: r
        for r in queries.run_query(
            con, "pairwise", run_id="r", min_kappa=0.4, min_labels=9, max_flip_rate=0.5
        ).to_pylist()
    }
    # calibrated: kappa and the label count each at least their minimum (at-0.4: exactly
    # 0.4 on exactly 9 labels); at-0.8 flips at exactly the limit: not flagged
    assert {c for c, r in rows.items() if r["calibrated"]} == {"at-0.4", "at-0.8", "at-0.82"}
    assert {c for c, r in rows.items() if r["headline_eligible"]} == {"at-0.4", "at-0.8", "at-0.82"}
    assert (rows["at-0.8"]["flip_rate"], rows["at-0.8"]["flip_flagged"]) == (0.5, False)
    assert rows["ineligible"]["flip_flagged"] is False  # no eligible pair: no flip rate
    assert {c: r["kappa_band"] for c, r in rows.items() if c in KAPPA_BANDS} == {
        c: band for c, (band, _) in KAPPA_BANDS.items()
    }
    for edge in ("0", "0.2", "0.4", "0.6", "0.8"):
        assert rows[f"at-{edge}"]["kappa"] == float(edge), edge
    unlabelled, ineligible = rows["unlabelled"], rows["ineligible"]
    assert (unlabelled["n_labels"], unlabelled["kappa_band"], unlabelled["win_rate"]) == (
        0,
        "undefined",
        1.0,
    )
    assert (unlabelled["n_cases"], unlabelled["win_rate_hi"]) == (11, 1.0)
    z2 = 1.959963984540054**2
    assert unlabelled["win_rate_lo"] == pytest.approx(11 / (11 + z2))  # Wilson at p = 1
    one = rows["one-case"]
    assert (one["n_cases"], one["win_rate_lo"], one["win_rate_hi"]) == (
        1,
        pytest.approx(1 / (1 + z2)),
        1.0,
    )
    assert (ineligible["n_cases"], ineligible["win_rate_lo"], ineligible["win_rate_hi"]) == (
        0,
        None,
        None,
    )


def test_a_run_reference_ranks_an_exact_id_then_baselines_then_labels(tmp_path: Path) -> None:
    # bugs: an exact id ranked with the baseline names (how 1: the newer baseline's run would
    # win), a baseline ranked with labels, a label ranked with id prefixes (how 3: two runs of
    # one label would read as an ambiguous prefix instead of the newest), a baseline joined to
    # the other runs or read under other names, runs started in the same second not newest id
    # first. Runs r-old and r-new labelled nightly, r-mid labelled weekly, t-a and t-b
    # labelled twin and started together; the baseline r-old is pinned to r-new, weekly to
    # r-old.
    from evalwh.warehouse.store import Warehouse

    con = _warehouse(tmp_path)
    for run_id, label, day in (
        ("r-old", "nightly", 1), ("r-new", "nightly", 2), ("r-mid", "weekly", 3),
        ("t-a", "twin", 4), ("t-b", "twin", 4),
    ):  # fmt: skip
        con.execute(
            "INSERT INTO runs (run_id, label, suite, status, config_hash, dataset_hash, "
            "n_planned, started_at, evalwh_version) "
            "VALUES (?, ?, 's', 'completed', 'h', 'd', 1, ?, 't')",
            [run_id, label, f"2026-01-0{day} 00:00:00+00"],
        )
    con.execute(
        "INSERT INTO baselines VALUES ('r-old', 'r-new', now()), ('weekly', 'r-old', now())"
    )

    def found(ref: str) -> list[tuple[str, int]]:
        rows = queries.run_query(con, "resolve_run", ref=ref).to_pylist()
        return [(r["run_id"], r["how"]) for r in rows]

    assert found("r-old") == [("r-old", 0), ("r-new", 1)]
    assert found("weekly") == [("r-old", 1), ("r-mid", 2)]
    assert found("nightly") == [("r-new", 2), ("r-old", 2)]
    assert found("twin") == [("t-b", 2), ("t-a", 2)]
    assert found("r-") == [("r-mid", 3), ("r-new", 3), ("r-old", 3)]
    con.close()
    store = Warehouse(tmp_path / "w.duckdb")
    resolved = [store.resolve(ref) for ref in ("r-old", "weekly", "nightly", "twin")]
    assert resolved == ["r-old", "r-old", "r-new", "t-b"]


def test_run_totals_by_hand_and_an_empty_run(tmp_path: Path) -> None:
    # bugs: another run's cases or pairs counted, the cached cost counted instead of the
    # rest, a sum over no rows given as 1, the pairs' judge cost subtracted, a case too many,
    # the Wilson interval with another z or any operator moved (statsmodels as the
    # reference), an interval for a run without answers. Run r: c1 answered twice (pass,
    # fail) -> 0.5, c2 pass, c3 fail (errored): pass rate (0.5 + 1 + 0) / 3 over 3 cases.
    from statsmodels.stats.proportion import proportion_confint

    con = _warehouse(tmp_path)
    for run, case, repeat, ok, cost, cached, tokens, judge in (
        ("r", "c1", 0, True, 0.25, False, 10, 0.0625),
        ("r", "c1", 1, False, 0.125, True, 20, None),
        ("r", "c2", 0, True, 0.5, False, 30, None),
        ("r", "c3", 0, False, None, False, None, None),
        ("s", "c4", 0, True, 8.0, False, 1000, 1.0),
    ):
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, metadata, cached, "
            "request_hash, attempts, passed, score, cost_usd, input_tokens, output_tokens, "
            "judge_cost_usd, error, created_at) "
            "VALUES (?, 'v', 'm', ?, ?, '{}', ?, 'h', 1, ?, ?, ?, ?, ?, ?, ?, now())",
            [run, case, repeat, cached, ok, float(ok), cost, tokens,
             None if tokens is None else tokens // 10, judge, None if tokens else "boom"],
        )  # fmt: skip
    _pair_votes(con, "p1", ["candidate"], "en")
    _pair_votes(con, "p2", ["candidate"], "en")
    con.execute("UPDATE pairs SET cost_usd = 0.03125")
    con.execute("UPDATE pairs SET run_id = 's', cost_usd = 2.0 WHERE case_id = 'p2'")
    (t,) = queries.run_query(con, "run_totals", run_id="r").to_pylist()
    assert (t["n"], t["n_cases"], t["n_passed"], t["n_errors"], t["n_cached"]) == (4, 3, 2, 1, 1)
    assert (t["pass_rate"], t["error_rate"], t["mean_score"]) == (0.5, 0.25, 0.5)
    lo, hi = proportion_confint(1.5, 3, alpha=0.05, method="wilson")
    assert (t["pass_rate_lo"], t["pass_rate_hi"]) == (pytest.approx(lo), pytest.approx(hi))
    assert (t["cost_usd"], t["cost_uncached_usd"]) == (0.75, 0.875)
    assert (t["input_tokens"], t["output_tokens"]) == (60, 6)
    assert t["judge_cost_usd"] == 0.0625 + 0.03125
    (empty,) = queries.run_query(con, "run_totals", run_id="none").to_pylist()
    assert (empty["n"], empty["n_cases"], empty["pass_rate"]) == (0, 0, None)
    assert (empty["pass_rate_lo"], empty["pass_rate_hi"]) == (None, None)
    sums = ("cost_usd", "cost_uncached_usd", "input_tokens", "output_tokens", "judge_cost_usd")
    assert [empty[k] for k in sums] == [0, 0, 0, 0, 0]
    (other,) = queries.run_query(con, "run_totals", run_id="s").to_pylist()
    assert (other["cost_usd"], other["judge_cost_usd"]) == (8.0, 3.0)
    # one case passed: Wilson [1 / (1 + z^2), 1]; 11 of 11: the upper bound clamped to exactly 1
    z2 = 1.959963984540054**2
    assert (other["n_cases"], other["pass_rate_lo"], other["pass_rate_hi"]) == (
        1,
        pytest.approx(1 / (1 + z2)),
        1.0,
    )
    for i in range(11):
        _answer(con, "all", f"c{i}", 0, True)
    (every,) = queries.run_query(con, "run_totals", run_id="all").to_pylist()
    assert (every["n_cases"], every["pass_rate_hi"]) == (11, 1.0)
    assert every["pass_rate_lo"] == pytest.approx(11 / (11 + z2))


def _costed_answer(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    case: str,
    metadata: dict[str, str],
    ok: bool,
    cost: float,
    cached: bool,
    error: str | None,
) -> None:
    """One answer of cell v x m with its cost, whether it came from the cache, and its error."""
    con.execute(
        "INSERT INTO cases (run_id, variant, model, case_id, repeat, metadata, cached, "
        "request_hash, attempts, passed, cost_usd, error, created_at) "
        "VALUES (?, 'v', 'm', ?, 0, ?, ?, 'h', 1, ?, ?, ?, now())",
        [run_id, case, json.dumps(metadata), cached, ok, cost, error],
    )


def test_runs_filter_on_each_parameter_and_list_newest_ids_first(tmp_path: Path) -> None:
    # bugs: a filter inverted or or-ed with the others, the time window's ends moved (since
    # is in, until is out), the oldest runs listed, a run without answers given 1 answer or
    # dropped, the cached cost counted, an answer too many. Runs (suite, label, status,
    # day): r1 (a, x, completed, 1) answered c1 pass 0.25, c2 errored 0.5 cached, c3 pass
    # 0.125; r2 (a, y, failed, 2) no answers; r3 (b, x, completed, 3) c1 pass 0.125; r4 (a,
    # x, running, 4).
    con = _warehouse(tmp_path)
    for run_id, suite, label, status, day in (
        ("r1", "a", "x", "completed", 1), ("r2", "a", "y", "failed", 2),
        ("r3", "b", "x", "completed", 3), ("r4", "a", "x", "running", 4),
    ):  # fmt: skip
        con.execute(
            "INSERT INTO runs (run_id, label, suite, status, config_hash, dataset_hash, "
            "n_planned, started_at, evalwh_version) VALUES (?, ?, ?, ?, 'h', 'd', 1, ?, 't')",
            [run_id, label, suite, status, f"2026-01-0{day} 00:00:00+00"],
        )
    for run_id, case, ok, cost, cached, error in (
        ("r1", "c1", True, 0.25, False, None), ("r1", "c2", False, 0.5, True, "boom"),
        ("r1", "c3", True, 0.125, False, None), ("r3", "c1", True, 0.125, False, None),
    ):  # fmt: skip
        _costed_answer(con, run_id, case, {}, ok, cost, cached, error)

    def runs(limit: int = 10, **filters: str) -> list[str]:
        params = {k: filters.get(k) for k in ("suite", "label", "status", "since", "until")}
        rows = queries.run_query(con, "runs", limit=limit, **params).to_pylist()
        return [r["run_id"] for r in rows]

    everything = {
        r["run_id"]: (r["n"], r["n_passed"], r["n_errors"], r["pass_rate"], r["cost_usd"])
        for r in queries.run_query(
            con, "runs", limit=10, suite=None, label=None, status=None, since=None, until=None
        ).to_pylist()
    }
    assert list(everything) == ["r4", "r3", "r2", "r1"]
    assert everything["r1"] == (3, 2, 1, pytest.approx(2 / 3), 0.375)
    assert everything["r2"] == (0, 0, 0, None, 0)
    assert runs(limit=2) == ["r4", "r3"]
    assert runs(suite="a") == ["r4", "r2", "r1"]
    assert runs(label="x") == ["r4", "r3", "r1"]
    assert runs(status="completed") == ["r3", "r1"]
    window = {"since": "2026-01-02 00:00:00+00", "until": "2026-01-04 00:00:00+00"}
    assert runs(**window) == ["r3", "r2"]


def test_slices_count_errors_and_only_the_uncached_cost(tmp_path: Path) -> None:
    # bugs: errors counted as the answers without one, the cached cost counted instead of the
    # rest, a slice with no uncached cost given 1, a pass-rate upper bound not clamped to 1.
    # Slice k=a: c1 pass 0.25, c2 errored 0.5 cached, c4 pass 0.125; slice k=b: c3 pass 0.125
    # cached (no uncached cost: 0); slice k=c: 11 passes (unclamped: 1 + 2^-52).
    con = _warehouse(tmp_path)
    for case, k, ok, cost, cached, error in (
        ("c1", "a", True, 0.25, False, None), ("c2", "a", False, 0.5, True, "boom"),
        ("c4", "a", True, 0.125, False, None), ("c3", "b", True, 0.125, True, None),
        *((f"d{i}", "c", True, 0.0, False, None) for i in range(11)),
    ):  # fmt: skip
        _costed_answer(con, "r", case, {"k": k}, ok, cost, cached, error)
    rows = queries.run_query(con, "slice", run_id="r", keys=["k"]).to_pylist()
    got = {(r["slice"], r["variant"]): (r["n"], r["n_errors"], r["cost_usd"]) for r in rows}
    assert got == {
        ("k=a", None): (3, 1, 0.375),
        ("k=a", "v"): (3, 1, 0.375),
        ("k=b", None): (1, 0, 0),
        ("k=b", "v"): (1, 0, 0),
        ("k=c", None): (11, 0, 0),
        ("k=c", "v"): (11, 0, 0),
    }
    assert [r["pass_rate_hi"] for r in rows if r["slice"] == "k=c"] == [1.0, 1.0]
