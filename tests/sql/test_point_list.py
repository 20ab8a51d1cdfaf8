"""sql/point_list.sql: the pointwise-judged items to label, with each first repeat's judged answers
and the criterion's own label, against hand-computed fixtures: each warehouse is built by hand, row
by row, and the expected numbers are worked out in the comments.
"""

from __future__ import annotations

import json
from pathlib import Path

from evalwh.warehouse import queries
from tests.builders import fill_run_keys
from tests.sql.conftest import _warehouse


def test_point_list_takes_first_repeats_judged_answers_and_the_criterions_own_label(
    tmp_path: Path,
) -> None:
    # Run r, answers '<variant>/<model>/<case>/<repeat>' (messages '<variant>/<model>'):
    #   k1: v1 x m repeats 0 and 1, v1 x m2, v2 x m, v2 x m2; k2, k3: v1 x m.
    # llm-judge scores (passed, raw, error):
    #   q/k1: v1 x m r0 (T, 1.0), r1 (F, 0.0); v1 x m2 (T, 1.0); v2 x m (F, 0.5);
    #         v2 x m2 (F, 0.0, judge failed). Judged answers without error: 2 of 4 passed ->
    #         0.5, exactly half: a pass; raw mean (1 + 0 + 1 + 0.5) / 4 = 0.625.
    #   p/k1: v1 x m (F, 0.0).  q/k2: v1 x m (F, 0.25).  q/k3: v1 x m (F, 0.0, judge failed):
    #         no judged answer, so no verdict.
    #   An 'exact' criterion x on k1 (no judge) is not an item.
    # Run s: the same q/k1 answers of v1 x m and v2 x m, both failed, and a label.
    # Labels of r, pointwise: k1 criterion q 'good', k1 any criterion 'bad', k2 any criterion
    # 'fine', k2 criterion zz 'zz'; pairwise k2 (ignored). Run s: k2 criterion q 'other'.
    con = _warehouse(tmp_path)

    def answer(run: str, variant: str, model: str, case: str, repeat: int = 0) -> None:
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, messages, expected, "
            "output, cached, request_hash, attempts, score, passed, created_at) VALUES "
            "(?, ?, ?, ?, ?, ?, ?, ?, false, 'h', 1, 0, false, now())",
            [
                run,
                variant,
                model,
                case,
                repeat,
                json.dumps(f"{variant}/{model}"),
                json.dumps(f"e-{case}"),
                f"{variant}/{model}/{case}/{repeat}",
            ],
        )
        fill_run_keys(con)

    def judged(
        run: str,
        criterion: str,
        variant: str,
        model: str,
        case: str,
        ok: bool,
        raw: float,
        *,
        repeat: int = 0,
        error: str | None = None,
        scorer: str = "llm-judge",
    ) -> None:
        con.execute(
            "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, scorer, "
            "score, passed, weight, required, error, judge_model, raw_score, rationale) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1, true, ?, ?, ?, 'why')",
            [
                run,
                variant,
                model,
                case,
                repeat,
                criterion,
                scorer,
                float(ok),
                ok,
                error,
                None if scorer != "llm-judge" else "jm",
                raw,
            ],
        )
        fill_run_keys(con)

    for run in ("r", "s"):
        for variant, model in (("v1", "m"), ("v1", "m2"), ("v2", "m"), ("v2", "m2")):
            answer(run, variant, model, "k1")
    answer("r", "v1", "m", "k1", repeat=1)
    answer("r", "v1", "m", "k2")
    answer("r", "v1", "m", "k3")
    judged("r", "q", "v1", "m", "k1", False, 0.0, repeat=1)
    judged("r", "q", "v1", "m", "k1", True, 1.0)
    judged("r", "q", "v1", "m2", "k1", True, 1.0)
    judged("r", "q", "v2", "m", "k1", False, 0.5)
    judged("r", "q", "v2", "m2", "k1", False, 0.0, error="judge failed")
    judged("r", "p", "v1", "m", "k1", False, 0.0)
    judged("r", "x", "v1", "m", "k1", True, 1.0, scorer="exact")
    judged("r", "q", "v1", "m", "k2", False, 0.25)
    judged("r", "q", "v1", "m", "k3", False, 0.0, error="judge failed")
    judged("s", "q", "v1", "m", "k1", False, 0.0)
    judged("s", "q", "v2", "m", "k1", False, 0.0)
    for run, kind, comparison, case, label in (
        ("r", "pointwise", "q", "k1", "good"),
        ("r", "pointwise", None, "k1", "bad"),
        ("r", "pointwise", None, "k2", "fine"),
        ("r", "pointwise", "zz", "k2", "zz"),
        ("r", "pairwise", "q", "k2", "pairwise"),
        ("s", "pointwise", "q", "k2", "other"),
    ):
        con.execute(
            "INSERT INTO labels (run_id, kind, comparison, case_id, label) VALUES (?, ?, ?, ?, ?)",
            [run, kind, comparison, case, json.dumps(label)],
        )
    got = queries.run_query(con, "point_list", run_id="r").to_pylist()

    def human(value: str | None) -> str | None:
        return None if value is None else json.loads(value)

    assert [
        (r["criterion"], r["case_id"], r["judge_passed"], r["judge_raw_score"], human(r["human"]))
        for r in got
    ] == [
        ("p", "k1", False, 0.0, "bad"),
        ("q", "k1", True, 0.625, "good"),
        ("q", "k2", False, 0.25, "fine"),
        ("q", "k3", None, None, None),
    ]
    fields = ("variant", "model", "output", "passed", "raw_score", "judge_error")
    assert [tuple(a[f] for f in fields) for a in got[1]["answers"]] == [
        ("v1", "m", "v1/m/k1/0", True, 1.0, None),
        ("v1", "m2", "v1/m2/k1/0", True, 1.0, None),
        ("v2", "m", "v2/m/k1/0", False, 0.5, None),
        ("v2", "m2", "v2/m2/k1/0", False, 0.0, "judge failed"),
    ]
    assert [[a["output"] for a in r["answers"]] for r in (got[0], got[2], got[3])] == [
        ["v1/m/k1/0"],
        ["v1/m/k2/0"],
        ["v1/m/k3/0"],
    ]
    assert [(json.loads(r["messages"]), json.loads(r["expected"])) for r in got] == [
        ("v1/m", "e-k1"),
        ("v1/m", "e-k1"),
        ("v1/m", "e-k2"),
        ("v1/m", "e-k3"),
    ]


def test_point_list_shows_the_prompt_of_the_first_answer_even_when_a_name_extends_another(
    tmp_path: Path,
) -> None:
    # Variants 'v' and 'v\x01x' (names are not restricted to printable characters), model 'z':
    # the answers list 'v' first (a prefix sorts first), and the prompt shown is v's. The
    # (variant, model) sort key must separate the two with a character below any in a name.
    con = _warehouse(tmp_path)
    for variant in ("v", "v\x01x"):
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, messages, output, "
            "cached, request_hash, attempts, score, passed, created_at) VALUES "
            "('r', ?, 'z', 'k', 0, ?, 'o', false, 'h', 1, 0, false, now())",
            [variant, json.dumps(variant)],
        )
        fill_run_keys(con)
        con.execute(
            "INSERT INTO scores (run_id, variant, model, case_id, repeat, criterion, scorer, "
            "score, passed, weight, required, judge_model, raw_score) "
            "VALUES ('r', ?, 'z', 'k', 0, 'q', 'llm-judge', 1, true, 1, true, 'jm', 1)",
            [variant],
        )
        fill_run_keys(con)
    (row,) = queries.run_query(con, "point_list", run_id="r").to_pylist()
    assert [a["variant"] for a in row["answers"]] == ["v", "v\x01x"]
    assert json.loads(row["messages"]) == "v"
