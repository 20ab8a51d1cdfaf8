"""sql/calibration.sql: the human x judge confusion matrix of labelled pairwise verdicts (the judge's
verdict the majority of its repeats), against hand-computed fixtures: each warehouse is built by
hand, row by row, and the expected numbers are worked out in the comments.
"""

from __future__ import annotations

from pathlib import Path

from evalwh.warehouse import queries
from tests.sql.conftest import _pair_votes, _pairwise_label, _warehouse


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
