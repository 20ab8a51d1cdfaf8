"""sql/compare_cases.sql: the movers between two runs, worst first, with the criteria that moved,
against hand-computed fixtures: each warehouse is built by hand, row by row, and the expected
numbers are worked out in the comments.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalwh.warehouse import queries
from tests.builders import fill_run_keys
from tests.sql.conftest import _warehouse


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
            fill_run_keys(con)
            verdicts = criteria.get(case, ((passed,) * 3, (passed,) * 3))[side]
            for run_id, ks in ((run, verdicts), ("C", (not verdicts[0], False, False))):
                for k, ok in zip(("k1", "k2", "k3"), ks, strict=True):
                    con.execute(
                        "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, "
                        "scorer, score, passed, weight, required) "
                        "VALUES (?, 'v', 'm', ?, 0, ?, 'x', 0, ?, 1, true)",
                        [run_id, case, k, ok],
                    )
                    fill_run_keys(con)

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
