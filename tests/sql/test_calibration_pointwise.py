"""sql/calibration_pointwise.sql: how a pointwise judge agrees with human labels (agreement,
base rate, Cohen's kappa; exact and within-n agreement of numeric labels), against hand
computations.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import duckdb
import pytest

from evalwh.warehouse import connect, queries
from evalwh.warehouse.connect import write_connection
from tests.builders import fill_run_keys, rows_of, warehouse_with
from tests.sql.conftest import _warehouse


# -- sql/calibration_pointwise.sql: the pointwise kappa against a hand computation -----------
def test_pointwise_kappa_matches_a_hand_computed_fixture(tmp_path: Path) -> None:
    # bug: half of the chance-agreement term dropped (only the pairwise kappa was checked)
    # 10 labelled cases of criterion 'j', (human, judge): pass-pass 6, pass-fail 1,
    # fail-pass 2, fail-fail 1. n = 10, agreement po = 7/10, human yes 7, judge yes 8,
    # chance pe = (7*8 + 3*2) / 100 = 0.62, kappa = (0.70 - 0.62) / (1 - 0.62) = 0.2105...,
    # base rate = max(7, 3) / 10 = 0.7. Criterion 'n' has numeric labels (1..5 scale):
    # (raw, human) (3, 3) (4, 3) (4, 2) (2.6, 3) (2, 2), and (None, 4) without a raw score:
    # n_numeric 5, exact 3/5 (round(2.6) = 3), within 1 4/5.
    path = tmp_path / "w.duckdb"
    with connect.write_connection(path):
        pass
    con = duckdb.connect(str(path))
    pairs = [(True, True)] * 6 + [(True, False)] + [(False, True)] * 2 + [(False, False)]
    numeric = [(3.0, 3), (4.0, 3), (4.0, 2), (2.6, 3), (2.0, 2), (None, 4)]
    insert_score = (
        "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, scorer, score, "
        "passed, weight, required, judge_model, raw_score) "
        "VALUES ('r', 'v', 'm', ?, 0, ?, 'llm-judge', 0.5, ?, 1, true, 'jm', ?)"
    )
    for i, (human, judge) in enumerate(pairs):
        con.execute(insert_score, [f"b{i}", "j", judge, None])
        fill_run_keys(con)
        label = json.dumps("pass" if human else "fail")
        con.execute(
            "INSERT INTO labels (run_id, kind, comparison, case_id, prefer, label, note) "
            "VALUES ('r', 'pointwise', NULL, ?, NULL, ?, NULL)",
            [f"b{i}", label],
        )
    for i, (raw, human) in enumerate(numeric):
        con.execute(insert_score, [f"n{i}", "n", raw is not None and raw >= 3, raw])
        fill_run_keys(con)
        con.execute(
            "INSERT INTO labels (run_id, kind, comparison, case_id, prefer, label, note) "
            "VALUES ('r', 'pointwise', NULL, ?, NULL, ?, NULL)",
            [f"n{i}", json.dumps(human)],
        )
    # criterion 'u': every label and verdict 'pass', so chance agreement is 1: kappa undefined
    for i in range(2):
        con.execute(insert_score, [f"u{i}", "u", True, None])
        fill_run_keys(con)
        con.execute(
            "INSERT INTO labels (run_id, kind, comparison, case_id, prefer, label, note) "
            "VALUES ('r', 'pointwise', NULL, ?, NULL, '\"pass\"', NULL)",
            [f"u{i}"],
        )
    # an unlabelled case and a scorer error are left out
    con.execute(insert_score, ["u", "j", True, None])
    fill_run_keys(con)
    con.execute(insert_score, ["e", "j", False, None])
    fill_run_keys(con)
    con.execute("UPDATE scores SET error = 'judge failed' WHERE case_id = 'e'")
    con.execute(
        "INSERT INTO labels (run_id, kind, comparison, case_id, prefer, label, note) "
        "VALUES ('r', 'pointwise', NULL, 'e', NULL, '\"pass\"', NULL)"
    )
    rows = {
        r["criterion"]: r
        for r in queries.run_query(
            con, "calibration_pointwise", run_id="r", within=1.0, key=None, weights="quadratic"
        ).to_pylist()
    }
    j = rows["j"]
    assert j["n_labels"] == 10
    assert j["agreement"] == pytest.approx(0.7)
    assert j["base_rate"] == pytest.approx(0.7)
    assert j["kappa"] == pytest.approx((0.70 - 0.62) / (1 - 0.62))
    assert pytest.approx(0.2105263, abs=1e-7) == (0.70 - 0.62) / (1 - 0.62)
    u = rows["u"]
    assert (u["n_labels"], u["agreement"], u["kappa"]) == (2, 1.0, None)  # not NaN
    n = rows["n"]
    assert n["n_labels"] == 0 and n["kappa"] is None  # numbers are not pass/fail labels
    assert n["n_numeric"] == 5
    assert n["exact_agreement"] == pytest.approx(0.6)
    assert n["within_1_agreement"] == pytest.approx(0.8)


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
        _judged(con, case, "m", passed, None, criterion=criterion, repeat=repeat)
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
            con, "calibration_pointwise", run_id="r", within=1.0, key=None, weights="quadratic"
        ).to_pylist()
    }
    assert got == {"j1": (2, 1.0), "j2": (1, 1.0)}


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
            fill_run_keys(con)
            con.execute(case, ["r", model, case_id, json.dumps({"topic": "t"})])
            fill_run_keys(con)
        con.execute(case, ["o", "m1", case_id, json.dumps({"topic": "other"})])
        fill_run_keys(con)
    for case_id, human in (("a", "pass"), ("b", "pass"), ("c", "fail")):
        con.execute(label, ["r", case_id, json.dumps(human)])
        con.execute(label, ["o", case_id, json.dumps("fail" if human == "pass" else "pass")])
    [row] = queries.run_query(
        con, "calibration_pointwise", run_id="r", within=1.0, key=None, weights="quadratic"
    ).to_pylist()
    assert (row["n_labels"], row["agreement"]) == (3, 1.0)
    # with a key: the same overall row first, then one per slice, from one pass
    overall, sliced = queries.run_query(
        con, "calibration_pointwise", run_id="r", within=1.0, key="topic", weights="quadratic"
    ).to_pylist()
    assert overall == row
    assert (sliced["slice"], sliced["n_labels"], sliced["agreement"]) == ("t", 3, 1.0)


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
            fill_run_keys(con)
            con.execute(label, [criterion, f"c{i}", json.dumps(human)])
    rows = {
        r["criterion"]: r
        for r in queries.run_query(
            con, "calibration_pointwise", run_id="r", within=1.0, key=None, weights="quadratic"
        ).to_pylist()
    }
    assert rows["k"]["n_numeric"] == 2 and rows["k"]["weighted_kappa"] == 0.0
    assert rows["flat"]["weighted_kappa"] is None  # no spread: agreement by chance is certain


def test_pointwise_labels_count_once_per_case_and_criterion(tmp_path):
    from sklearn.metrics import cohen_kappa_score

    rng = random.Random(9)
    store = warehouse_with(tmp_path, {"J": rows_of({"x": [1]})})
    labels = {f"q{i}": rng.random() < 0.5 for i in range(24)}
    judged: dict[str, list[bool]] = {}
    with write_connection(store.path) as con:
        for case, label in labels.items():
            con.execute(
                "INSERT INTO labels (run_id, kind, case_id, label) VALUES ('J', 'pointwise', ?, ?)",
                [case, json.dumps("pass" if label else "fail")],
            )
            for model in ("m1", "m2"):
                passed = rng.random() < 0.7
                judged.setdefault(case, []).append(passed)
                con.execute(
                    "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, "
                    "scorer, score, passed, weight, required, judge_model, raw_score) "
                    "VALUES ('J', 'v', ?, ?, 0, 'judged', 'llm-judge', ?, ?, 1, true, 'jm', ?)",
                    [model, case, float(passed), passed, 5.0 if passed else 1.0],
                )
                fill_run_keys(con)
    (row,) = store.query(
        "calibration_pointwise", run_id="J", within=1.0, key=None, weights="quadratic"
    ).to_pylist()
    assert row["n_labels"] == 24  # not 48 (24 labels x 2 models)
    verdict = [sum(judged[c]) / 2 >= 0.5 for c in labels]
    assert row["kappa"] == pytest.approx(
        cohen_kappa_score(list(labels.values()), verdict), abs=1e-12
    )


def test_a_criterions_own_label_beats_the_cases_human_label(tmp_path):
    """Pointwise labels per criterion (`labels:` with `label:`, or `evalwh labels import`)
    grade that criterion only and take precedence over the case's human_label, which grades
    every llm-judge criterion; kappa by hand:
    c1: human P F F P (q0, q1 overridden) vs judge P F F F: agreement 3/4, chance
        (2*1 + 2*3)/16 = 1/2, kappa (3/4 - 1/2)/(1/2) = 1/2 (-1/2 if human_label won);
    c2: human F P F P (human_label only) vs judge P F F P: agreement 1/2, chance 1/2, kappa 0."""
    store = warehouse_with(tmp_path, {"J": rows_of({"x": [1]})})
    human = {"q0": "fail", "q1": "pass", "q2": "fail", "q3": "pass"}
    own = {"q0": "pass", "q1": "fail"}  # criterion c1's own labels
    judge = {"c1": [True, False, False, False], "c2": [True, False, False, True]}
    with write_connection(store.path) as con:
        for case, label in human.items():
            con.execute(
                "INSERT INTO labels (run_id, kind, case_id, label) VALUES ('J', 'pointwise', ?, ?)",
                [case, json.dumps(label)],
            )
        for case, label in own.items():
            con.execute(
                "INSERT INTO labels (run_id, kind, comparison, case_id, label) "
                "VALUES ('J', 'pointwise', 'c1', ?, ?)",
                [case, json.dumps(label)],
            )
        for criterion, verdicts in judge.items():
            for case, passed in zip(human, verdicts, strict=True):
                con.execute(
                    "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, "
                    "scorer, score, passed, weight, required, judge_model, raw_score) "
                    "VALUES ('J', 'v', 'm', ?, 0, ?, 'llm-judge', ?, ?, 1, true, 'jm', ?)",
                    [case, criterion, float(passed), passed, float(passed)],
                )
                fill_run_keys(con)
    rows = {
        r["criterion"]: r
        for r in store.query(
            "calibration_pointwise", run_id="J", within=1.0, key=None, weights="quadratic"
        ).to_pylist()
    }
    assert (rows["c1"]["n_labels"], rows["c2"]["n_labels"]) == (4, 4)  # once per case x criterion
    assert rows["c1"]["agreement"] == pytest.approx(0.75)
    assert rows["c1"]["kappa"] == pytest.approx(0.5)
    assert rows["c2"]["agreement"] == pytest.approx(0.5)
    assert rows["c2"]["kappa"] == pytest.approx(0.0)


def _verdicts(
    con: duckdb.DuckDBPyConnection, rows: list[tuple[str, str, bool, float | None]]
) -> None:
    """Judged answers of criterion 'j' in run 'r': (case, model, passed, raw score)."""
    for case_id, model, passed, raw in rows:
        _judged(con, case_id, model, passed, raw)


def _judged(
    con: duckdb.DuckDBPyConnection,
    case_id: str,
    model: str,
    passed: bool,
    raw: float | None,
    *,
    criterion: str = "j",
    repeat: int = 0,
) -> None:
    """One llm-judge verdict of run 'r', variant 'v', judged by 'jm'."""
    con.execute(
        "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, scorer, "
        "score, passed, weight, required, judge_model, raw_score) "
        "VALUES ('r', 'v', ?, ?, ?, ?, 'llm-judge', 0.5, ?, 1, true, 'jm', ?)",
        [model, case_id, repeat, criterion, passed, raw],
    )
    fill_run_keys(con)


def _label(con: duckdb.DuckDBPyConnection, case_id: str, label: object, model: str | None) -> None:
    """A label of criterion 'j' in run 'r': of answer (v, model, repeat 0), or of the case."""
    con.execute(
        "INSERT INTO labels (run_id, kind, comparison, case_id, label, variant, model, repeat) "
        "VALUES ('r', 'pointwise', 'j', ?, ?, ?, ?, ?)",
        [case_id, json.dumps(label), "v" if model else None, model, 0 if model else None],
    )


def test_a_label_of_one_answer_meets_the_verdict_on_that_answer_a_case_label_the_majority(
    tmp_path: Path,
) -> None:
    # judged answers (m1, m2): a pass/fail, b pass/fail, c pass/pass.
    # a: labels of both answers, pass and fail -> two items, both agree with the judge;
    # b: a label of the case, fail -> one item against the majority of 2 answers (half pass:
    #    pass) -> disagrees;
    # c: a label of the case, pass, and a label of answer m1, fail -> the answer's label
    #    counts (the case's is not counted twice): one item, fail against pass.
    # items (human, judge): (P, P) (F, F) (F, P) (F, P): n 4, agreement 2/4, human yes 1,
    # judge yes 3, chance (1*3 + 3*1) / 16 = 0.375, kappa (0.5 - 0.375) / 0.625 = 0.2.
    con = _warehouse(tmp_path)
    _verdicts(con, [("a", "m1", True, None), ("a", "m2", False, None), ("b", "m1", True, None)])
    _verdicts(con, [("b", "m2", False, None), ("c", "m1", True, None), ("c", "m2", True, None)])
    _label(con, "a", "pass", "m1")
    _label(con, "a", "fail", "m2")
    _label(con, "b", "fail", None)
    _label(con, "c", "pass", None)
    _label(con, "c", "fail", "m1")
    (row,) = queries.run_query(
        con, "calibration_pointwise", run_id="r", within=1.0, key=None, weights="quadratic"
    ).to_pylist()
    assert (row["n_labels"], row["agreement"]) == (4, 0.5)
    assert row["kappa"] == pytest.approx(0.2)
    assert (row["n_answer_labels"], row["n_case_labels"]) == (3, 1)
    assert (row["case_label_answers_min"], row["case_label_answers_max"]) == (2, 2)


@pytest.mark.parametrize(("weights", "expected"), [("linear", 8 / 13), ("quadratic", 14 / 19)])
def test_the_weighted_kappa_takes_linear_or_quadratic_weights(
    tmp_path: Path, weights: str, expected: float
) -> None:
    # (human, judge) 1-1, 2-3, 3-3, 4-2, 5-5. Linear: observed mean |h - j| 3/5, expected
    # over every (h, j) of the marginals 39/25 -> 1 - 0.6/1.56 = 8/13. Quadratic: observed
    # 5/5, expected 95/25 -> 1 - 1/3.8 = 14/19 (Cohen 1968; Fleiss & Cohen 1973).
    from sklearn.metrics import cohen_kappa_score

    pairs = [(1, 1), (2, 3), (3, 3), (4, 2), (5, 5)]
    con = _warehouse(tmp_path)
    for i, (human, judge) in enumerate(pairs):
        _verdicts(con, [(f"c{i}", "m", judge >= 3, float(judge))])
        _label(con, f"c{i}", human, "m")
    (row,) = queries.run_query(
        con, "calibration_pointwise", run_id="r", within=1.0, key=None, weights=weights
    ).to_pylist()
    assert row["weights"] == weights and row["n_numeric"] == 5
    assert row["weighted_kappa"] == pytest.approx(expected)
    reference = cohen_kappa_score([h for h, _ in pairs], [j for _, j in pairs], weights=weights)
    assert row["weighted_kappa"] == pytest.approx(reference)
