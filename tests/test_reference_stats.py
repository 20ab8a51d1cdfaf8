"""The project's statistics and similarity scores checked against reference implementations.

Every number here comes out of evalwh's own SQL (the named queries in sql/, through the
analysis API) over real DuckDB warehouses filled with generated rows, and is compared with
what the standard library of the field computes on the same data:

- Wilson intervals: statsmodels ``proportion_confint(method="wilson")``;
- McNemar's exact test: statsmodels ``mcnemar(exact=True)``;
- t-intervals: ``scipy.stats.t`` (a statsmodels dependency);
- the cluster-robust (CR1) standard error: statsmodels OLS with ``cov_type="cluster"``;
- Cohen's kappa and the confusion matrix: scikit-learn;
- BLEU: ``sacrebleu.sentence_bleu``; ROUGE-L: ``rouge_score.rouge_scorer``.

The data include repeats, ties, 0/n and n/n and tiny n. Repeats are the point of several
tests: a case sampled three times identically must give the interval it gives once.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import t as student_t
from statsmodels.regression.linear_model import OLS
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint

from evalwh.analysis.compare import deltas
from evalwh.analysis.gate import judge
from evalwh.warehouse.connect import write_connection
from evalwh.warehouse.store import Warehouse
from tests.test_analysis import NOW, add_run

CLASSES = ["baseline", "candidate", "tie"]


def warehouse(tmp_path: Path, runs: dict[str, list[dict[str, Any]]]) -> Warehouse:
    path = tmp_path / "w.duckdb"
    with write_connection(path) as con:
        for run_id, rows in runs.items():
            add_run(con, run_id, rows)
    return Warehouse(path)


def wilson(count: float, n: int) -> tuple[float, float]:
    lo, hi = proportion_confint(count, n, alpha=0.05, method="wilson")
    return max(0.0, float(lo)), min(1.0, float(hi))


def rows_of(passes: dict[str, list[int]], **extra: Any) -> list[dict[str, Any]]:
    """Case rows: ``passes[case]`` is the pass (1) / fail (0) of each repeat."""
    return [
        {"case_id": case, "repeat": r, "passed": bool(p), "score": float(p), **extra}
        for case, ps in passes.items()
        for r, p in enumerate(ps)
    ]


# --- Wilson, clamping, the case as the unit ----------------------------------------------


@pytest.mark.parametrize(("k", "n"), [(0, 1), (1, 1), (0, 7), (7, 7), (3, 12), (1, 2), (19, 40)])
def test_wilson_intervals_match_statsmodels_and_stay_in_0_1(tmp_path, k, n):
    store = warehouse(tmp_path, {"R": rows_of({f"c{i}": [int(i < k)] for i in range(n)})})
    lo, hi = wilson(k, n)
    for name in ("summary", "run_totals"):
        (row,) = store.query(name, run_id="R").to_pylist()
        assert row["pass_rate_lo"] == pytest.approx(lo, abs=1e-12)
        assert row["pass_rate_hi"] == pytest.approx(hi, abs=1e-12)
        assert 0.0 <= row["pass_rate_lo"] <= row["pass_rate_hi"] <= 1.0  # no -5e-17 at 0/n
    k1 = next(r for r in store.query("criteria", run_id="R").to_pylist() if r["criterion"] == "k1")
    assert (k1["pass_rate_lo"], k1["pass_rate_hi"]) == pytest.approx((lo, hi), abs=1e-12)
    assert k1["pass_rate_lo"] >= 0.0 and k1["pass_rate_hi"] <= 1.0
    overall = store.query("slice", run_id="R", keys=[]).to_pylist()[0]
    assert (overall["pass_rate_lo"], overall["pass_rate_hi"]) == pytest.approx((lo, hi), abs=1e-12)


def test_identical_repeats_give_the_interval_of_one_sample(tmp_path):
    rng = random.Random(7)
    once = {f"c{i}": [rng.random() < 0.6] for i in range(20)}
    thrice = {case: ps * 3 for case, ps in once.items()}
    store = warehouse(tmp_path, {"ONE": rows_of(once), "THREE": rows_of(thrice)})
    for name in ("summary", "run_totals", "criteria"):
        a, b = store.query(name, run_id="ONE").to_pylist(), store.query(name, run_id="THREE")
        for x, y in zip(a, b.to_pylist(), strict=True):
            assert y["n"] == 3 * x["n"] and y["n_cases"] == x["n_cases"] == 20
            for key in ("pass_rate", "pass_rate_lo", "pass_rate_hi"):
                assert y[key] == pytest.approx(x[key], abs=1e-15), (name, key)
    gate_one = store.query("gate", run_id="ONE", rules=_rules("pass_rate", ">=", 0.5), tolerance=0)
    gate_three = store.query(
        "gate", run_id="THREE", rules=_rules("pass_rate", ">=", 0.5), tolerance=0
    )
    assert gate_one.to_pylist()[0]["n"] == gate_three.to_pylist()[0]["n"] == 20


def test_unequal_repeats_average_each_case_first(tmp_path):
    # case means 0, 1/3, 1, 0.5, 1: the rate is their mean, the interval Wilson on 5 cases
    passes = {"a": [0, 0, 0], "b": [1, 0, 0], "c": [1, 1, 1], "d": [1, 0], "e": [1]}
    store = warehouse(tmp_path, {"R": rows_of(passes)})
    (row,) = store.query("summary", run_id="R").to_pylist()
    means = [sum(p) / len(p) for p in passes.values()]
    p = sum(means) / len(means)
    assert row["n"] == 12 and row["n_cases"] == 5 and row["pass_rate"] == pytest.approx(p)
    assert (row["pass_rate_lo"], row["pass_rate_hi"]) == pytest.approx(wilson(p * 5, 5))


def _rules(metric: str, op: str, limit: float) -> str:
    return json.dumps(
        [{"scope": "run", "target": "run", "metric": metric, "op": op, "limit": limit}]
    )


def test_three_answers_of_exactly_the_minimum_score_pass_the_gate(tmp_path):
    rows = [{"case_id": f"c{i}", "passed": True, "score": 0.7} for i in range(3)]
    store = warehouse(tmp_path, {"R": rows})
    result = judge(store, "R", {"thresholds": {"min_score": 0.7}})
    (rule,) = [r for r in result.rules if r["metric"] == "score"]
    assert rule["value"] != 0.7  # 0.6999999999999998 in binary floating point
    assert rule["passed"] and result.passed
    # and without the shared tolerance the same comparison fails: the test can fail
    raw = store.query("gate", run_id="R", rules=_rules("score", ">=", 0.7), tolerance=0.0)
    assert raw.to_pylist()[0]["passed"] is False


# --- paired deltas: McNemar, t-intervals, clustered SE ------------------------------------


def paired_runs(tmp_path: Path, a: dict[str, list[int]], b: dict[str, list[int]], **kw: Any):
    return warehouse(tmp_path, {"A": rows_of(a, **kw), "B": rows_of(b, **kw)})


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


def test_three_broken_of_three_is_not_significant_and_passes_significant_only(tmp_path):
    store = paired_runs(
        tmp_path, {f"c{i}": [1] for i in range(3)}, {f"c{i}": [0] for i in range(3)}
    )
    run = next(r for r in deltas(store, "A", "B").to_pylist() if r["scope"] == "run")
    assert run["pass_rate_p"] == pytest.approx(0.25)
    assert run["pass_rate_lo"] == run["pass_rate_hi"] == -1  # a 0-wide interval ...
    assert run["verdict"] == "within noise"  # ... that decides nothing
    config = {
        "thresholds": {
            "regression": {
                "max_drop_pass_rate": 0.1,
                "max_drop_score": 0.1,
                "significant_only": True,
            }
        }
    }
    result = judge(store, "B", config, baseline="A")
    drops = [r for r in result.rules if r["kind"] == "regression"]
    assert drops and all(r["passed"] and not r["significant"] for r in drops)
    assert all(r["p_value"] == pytest.approx(0.25) for r in drops)


@pytest.mark.parametrize("n", [2, 3, 5, 12, 30, 31, 45, 200])
def test_mean_deltas_get_a_t_interval(tmp_path, n):
    rng = random.Random(n)
    a = [{"case_id": f"c{i}", "passed": True, "score": rng.random()} for i in range(n)]
    b = [{**r, "score": min(1.0, max(0.0, r["score"] + rng.gauss(0.05, 0.2)))} for r in a]
    store = warehouse(tmp_path, {"A": a, "B": b})
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
    store = warehouse(tmp_path, {"A": a, "B": b})
    run = next(r for r in deltas(store, "A", "B", cluster="doc").to_pylist() if r["scope"] == "run")
    d = np.array([y["score"] - x["score"] for x, y in zip(a, b, strict=True)])
    fit = OLS(d, np.ones(len(d))).fit(cov_type="cluster", cov_kwds={"groups": np.array(groups)})
    assert run["n_clusters"] == 7
    assert run["score_se"] == pytest.approx(fit.bse[0], rel=1e-9)
    q = student_t.ppf(0.975, 7 - 1)  # clusters - 1 degrees of freedom
    assert run["score_lo"] == pytest.approx(d.mean() - q * fit.bse[0], rel=1e-9)


# --- labels: kappa and the confusion matrix, a label counting once ------------------------


def add_pairs(store: Warehouse, verdicts: dict[str, list[str]], labels: dict[str, str]) -> None:
    with write_connection(store.path) as con:
        for case, vs in verdicts.items():
            for r, v in enumerate(vs):
                con.execute(
                    "INSERT INTO pairs (run_id, comparison, case_id, repeat, baseline_variant, "
                    "baseline_model, candidate_variant, candidate_model, judge, judge_model, "
                    "verdict, flipped, eligible, baseline_ok, candidate_ok, metadata, created_at) "
                    "VALUES ('P', 'cmp', ?, ?, 'v', 'small', 'v', 'large', 'j', 'jm', ?, false, "
                    "true, true, true, ?, ?)",
                    [case, r, v, json.dumps({"topic": case[-1]}), NOW],
                )
        for case, prefer in labels.items():
            con.execute(
                "INSERT INTO labels (run_id, kind, comparison, case_id, prefer) "
                "VALUES ('P', 'pairwise', 'cmp', ?, ?)",
                [case, prefer],
            )


def majority(vs: list[str]) -> str:
    counts = {v: vs.count(v) for v in set(vs)}
    top = max(counts.values())
    winners = [v for v, c in counts.items() if c == top]
    return winners[0] if len(winners) == 1 else "tie"


def test_kappa_and_confusion_count_each_label_once(tmp_path):
    from sklearn.metrics import cohen_kappa_score, confusion_matrix

    rng = random.Random(5)
    store = warehouse(tmp_path, {"P": rows_of({"x": [1]})})
    verdicts = {f"q{i}": [rng.choice(CLASSES) for _ in range(3)] for i in range(30)}
    labels = {c: rng.choice(CLASSES) for c in list(verdicts)[:17]}
    add_pairs(store, verdicts, labels)
    (row,) = store.query(
        "pairwise", run_id="P", min_kappa=0.0, min_labels=20, max_flip_rate=1.0
    ).to_pylist()
    human = [labels[c] for c in labels]
    judged = [majority(verdicts[c]) for c in labels]
    assert row["n_labels"] == 17  # not 51 (17 labels x 3 repeats)
    assert row["calibrated"] is False  # 17 < min_labels 20, whatever the repeats
    assert row["kappa"] == pytest.approx(cohen_kappa_score(human, judged), abs=1e-12)
    matrix = confusion_matrix(human, judged, labels=CLASSES)
    cells = {
        (r["human"], r["judge"]): r["n"] for r in store.query("calibration", run_id="P").to_pylist()
    }
    assert [[cells[(h, j)] for j in CLASSES] for h in CLASSES] == matrix.tolist()
    slices = store.query("calibration_slices", run_id="P", key="topic").to_pylist()
    assert sum(s["n"] for s in slices) == 17


def test_win_rate_takes_the_case_as_the_unit(tmp_path):
    # 14 wins of 36 cases: [24.8%, 55.1%] once, and the same when every pair is repeated 3x
    store = warehouse(tmp_path, {"P": rows_of({"x": [1]})})
    verdicts = {f"q{i}": ["candidate" if i < 14 else "baseline"] * 3 for i in range(36)}
    add_pairs(store, verdicts, {})
    (row,) = store.query(
        "pairwise", run_id="P", min_kappa=0.6, min_labels=20, max_flip_rate=0.3
    ).to_pylist()
    assert (row["n"], row["n_cases"]) == (108, 36)
    lo, hi = wilson(14, 36)
    assert (row["win_rate_lo"], row["win_rate_hi"]) == pytest.approx((lo, hi), abs=1e-12)
    assert row["win_rate_lo"] == pytest.approx(0.248, abs=5e-4)


def test_pointwise_labels_count_once_per_case_and_criterion(tmp_path):
    from sklearn.metrics import cohen_kappa_score

    rng = random.Random(9)
    store = warehouse(tmp_path, {"J": rows_of({"x": [1]})})
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
    (row,) = store.query("calibration_pointwise", run_id="J").to_pylist()
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
    store = warehouse(tmp_path, {"J": rows_of({"x": [1]})})
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
    rows = {r["criterion"]: r for r in store.query("calibration_pointwise", run_id="J").to_pylist()}
    assert (rows["c1"]["n_labels"], rows["c2"]["n_labels"]) == (4, 4)  # once per case x criterion
    assert rows["c1"]["agreement"] == pytest.approx(0.75)
    assert rows["c1"]["kappa"] == pytest.approx(0.5)
    assert rows["c2"]["agreement"] == pytest.approx(0.5)
    assert rows["c2"]["kappa"] == pytest.approx(0.0)


# --- BLEU and ROUGE-L ---------------------------------------------------------------------

WORDS = [
    "the",
    "cat",
    "sat",
    "on",
    "mat",
    "Paris",
    "3.5",
    "don't",
    "e-mail",
    "snake_case",
    "x,y",
    "(a)",
    "U.S.",
    "10-4",
    "naïve",
    "καλημέρα",
    "日本語",
    "&amp;",
    "end.",
    "Hello,",
]


def sentences(rng: random.Random, n: int, low: int = 1, high: int = 12) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high))) for _ in range(n)]


def test_bleu_matches_sacrebleu_sentence_bleu():
    import sacrebleu

    from tests.test_similarity import crit, expect, run

    rng = random.Random(13)
    for hyp in sentences(rng, 150):
        refs = sentences(rng, rng.randint(1, 3), 1, 10)
        ours = run(crit("bleu"), hyp, expect(refs)).score
        theirs = sacrebleu.sentence_bleu(hyp, refs).score / 100
        assert ours == pytest.approx(theirs, abs=1e-12), (hyp, refs)
    for smoothing in ("floor", "add-k", "none"):
        for hyp in sentences(rng, 40, 1, 5):
            refs = sentences(rng, 1, 1, 6)
            ours = run(crit("bleu", smoothing=smoothing), hyp, expect(refs)).score
            theirs = sacrebleu.sentence_bleu(hyp, refs, smooth_method=smoothing).score / 100
            assert ours == pytest.approx(theirs, abs=1e-12), (smoothing, hyp, refs)


def test_rouge_l_matches_rouge_score():
    from rouge_score import rouge_scorer

    from tests.test_similarity import crit, expect, run

    scorer = rouge_scorer.RougeScorer(["rougeL"])
    rng = random.Random(17)
    pairs = [(a, b) for a, b in zip(sentences(rng, 150), sentences(rng, 150), strict=True)]
    pairs += [("snake_case variable name", "snake case variable name"), ("καλημέρα κόσμε",) * 2]
    for prediction, target in pairs:
        ours = run(crit("rouge-l"), prediction, expect(target)).score
        theirs = scorer.score(target, prediction)["rougeL"].fmeasure
        assert ours == pytest.approx(theirs, abs=1e-12), (prediction, target)
    assert (
        run(crit("rouge-l"), "snake_case variable name", expect("snake case variable name")).score
        == 1.0
    )
    greek = run(crit("rouge-l", tokenizer="unicode"), "καλημέρα κόσμε", expect("καλημέρα κόσμε"))
    assert greek.score == 1.0


def test_intervals_stay_in_their_ranges_at_tiny_n(tmp_path):
    # n = 2 with a t quantile of 12.7: the raw bounds of a pass-rate delta run past +-1
    store = paired_runs(tmp_path, {"a": [0], "b": [0]}, {"a": [1], "b": [0]})
    run = next(r for r in deltas(store, "A", "B").to_pylist() if r["scope"] == "run")
    assert run["pass_rate_lo"] == -1 and run["pass_rate_hi"] == 1
    (tmp_path / "e").mkdir()
    empty = warehouse(tmp_path / "e", {"E": []})  # a run without answers
    (totals,) = empty.query("run_totals", run_id="E").to_pylist()
    assert totals["n"] == 0 and totals["pass_rate_lo"] is None and totals["pass_rate_hi"] is None
