"""sql/pair_list.sql: the pairs of a pairwise comparison, one per case."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalwh.warehouse import queries
from tests.builders import fill_run_keys
from tests.report_runs import SCRIPT
from tests.sql.conftest import _warehouse


def test_pair_list_has_one_pair_per_case_with_both_answers_and_the_label(
    hostile: dict[str, Any],
) -> None:
    view, run_id = hostile["view"], hostile["run_id"]
    pairs = view.query("pair_list", run_id=run_id).to_pylist()
    summary = view.judging(run_id)["comparisons"][0]
    assert len(pairs) == summary["n_pairs"] == len({p["case_id"] for p in pairs})
    q03 = next(p for p in pairs if p["case_id"] == "q03")
    assert SCRIPT in q03["baseline_output"] and q03["candidate_output"] == "Canberra"
    assert q03["human"] in ("baseline", "candidate", "tie")
    assert sum(p["human"] is not None for p in pairs) == summary["n_labels"]


def test_pair_list_gives_each_cases_first_repeat_with_its_own_answers_and_label(
    tmp_path: Path,
) -> None:
    # Cells of run r: v1 x m, v2 x m, v1 x m2, v2 x m2, each answering k1 (repeats 0 and 1) and
    # k2, with output '<variant>/<model>/<case>/<repeat>'; k3 answered only by v2 x m2 and k4
    # only by v1 x m2. Run s has the same answers, output prefixed 's:'.
    # Comparison c judges v1 x m (baseline) against v2 x m: k1 (repeats 1 and 0), k2.
    # Comparison d judges v1 x m2 against v2 x m2: k1, k3 (no baseline answer), k4 (no
    # candidate answer). Run s has a pair c/k1 of its own.
    # Labels of r: c/k1 candidate (note 'n1'), c/k2 tie; of run s: d/k1 baseline.
    con = _warehouse(tmp_path)
    cells = [("v1", "m"), ("v2", "m"), ("v1", "m2"), ("v2", "m2")]
    answers = [("k1", 0), ("k1", 1), ("k2", 0)]
    for run, prefix in (("r", ""), ("s", "s:")):
        for variant, model in cells:
            for case, repeat in answers:
                con.execute(
                    "INSERT INTO cases (run_id, variant, model, case_id, repeat, output, "
                    "cached, request_hash, attempts, score, passed, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, false, 'h', 1, 0, false, now())",
                    [
                        run,
                        variant,
                        model,
                        case,
                        repeat,
                        f"{prefix}{variant}/{model}/{case}/{repeat}",
                    ],
                )
                fill_run_keys(con)
    for variant, case in (("v2", "k3"), ("v1", "k4")):
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, output, cached, "
            "request_hash, attempts, score, passed, created_at) "
            "VALUES ('r', ?, 'm2', ?, 0, ?, false, 'h', 1, 0, false, now())",
            [variant, case, f"{variant}/m2/{case}/0"],
        )
        fill_run_keys(con)

    def pair(run: str, comparison: str, case: str, repeat: int) -> None:
        model = "m" if comparison == "c" else "m2"
        con.execute(
            "INSERT INTO pairs (run_id, comparison, case_id, repeat, baseline_variant, "
            "baseline_model, candidate_variant, candidate_model, judge, judge_model, verdict, "
            "flipped, eligible, baseline_ok, candidate_ok, created_at) VALUES "
            "(?, ?, ?, ?, 'v1', ?, 'v2', ?, 'j', 'jm', 'tie', false, true, true, true, now())",
            [run, comparison, case, repeat, model, model],
        )

    pair("r", "c", "k1", 1)
    pair("r", "c", "k1", 0)
    pair("r", "c", "k2", 0)
    pair("r", "d", "k1", 0)
    pair("r", "d", "k3", 0)
    pair("r", "d", "k4", 0)
    pair("s", "c", "k1", 0)
    for run, comparison, case, prefer, note in (
        ("r", "c", "k1", "candidate", "n1"),
        ("r", "c", "k2", "tie", None),
        ("s", "d", "k1", "baseline", None),
    ):
        con.execute(
            "INSERT INTO labels (run_id, kind, comparison, case_id, prefer, note) "
            "VALUES (?, 'pairwise', ?, ?, ?, ?)",
            [run, comparison, case, prefer, note],
        )
    got = queries.run_query(con, "pair_list", run_id="r").to_pylist()
    keys = ("comparison", "case_id", "repeat", "baseline_output", "candidate_output", "human")
    assert [tuple(r[k] for k in keys) for r in got] == [
        ("c", "k1", 0, "v1/m/k1/0", "v2/m/k1/0", "candidate"),
        ("c", "k2", 0, "v1/m/k2/0", "v2/m/k2/0", "tie"),
        ("d", "k1", 0, "v1/m2/k1/0", "v2/m2/k1/0", None),
        ("d", "k3", 0, None, "v2/m2/k3/0", None),
        ("d", "k4", 0, "v1/m2/k4/0", None, None),
    ]
    assert [r["note"] for r in got] == ["n1", None, None, None, None]
