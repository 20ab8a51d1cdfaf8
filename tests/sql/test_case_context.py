"""sql/case_context.sql: what each case of a run asked (messages, vars, expected, attachments),
one row per variant and case from its first answer, against a warehouse built row by row."""

from __future__ import annotations

import json
from pathlib import Path

from evalwh.warehouse import queries
from tests.builders import fill_run_keys
from tests.sql.conftest import _warehouse


def test_case_context_gives_each_variant_and_case_its_first_answers_question(
    tmp_path: Path,
) -> None:
    # Run r: case c1 answered by models m2 then m1 (repeats 1 and 0 of m1), variant v and w;
    # case c2 by m1 in v. Run s has c1 too. The first answer of (v, c1) is m1's repeat 0,
    # whose messages say "m1-0"; (w, c1) has m2 only; $case_ids ['c1'] drops c2.
    con = _warehouse(tmp_path)
    photo = {"photo": {"sha256": "ab" * 32, "media_type": "image/png", "bytes": 79}}
    for run, variant, model, case, repeat in (
        ("r", "v", "m2", "c1", 0),
        ("r", "v", "m1", "c1", 1),
        ("r", "v", "m1", "c1", 0),
        ("r", "w", "m2", "c1", 0),
        ("r", "v", "m1", "c2", 0),
        ("s", "v", "m1", "c1", 0),
    ):
        said = f"{run}:{variant}:{model}-{repeat}"
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, messages, vars, "
            "expected, attachments, cached, request_hash, attempts, score, passed, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, false, 'h', 1, 1, true, now())",
            [
                run,
                variant,
                model,
                case,
                repeat,
                json.dumps([{"role": "user", "content": said}]),
                json.dumps({"q": said}),
                json.dumps(f"exp {said}"),
                json.dumps(photo) if case == "c1" else None,
            ],
        )
        fill_run_keys(con)
    every = queries.run_query(con, "case_context", run_id="r", case_ids=None).to_pylist()
    assert [(r["variant"], r["case_id"], json.loads(r["vars"])["q"]) for r in every] == [
        ("v", "c1", "r:v:m1-0"),
        ("w", "c1", "r:w:m2-0"),
        ("v", "c2", "r:v:m1-0"),
    ]
    first = every[0]
    assert json.loads(first["messages"]) == [{"role": "user", "content": "r:v:m1-0"}]
    assert json.loads(first["expected"]) == "exp r:v:m1-0"
    assert json.loads(first["attachments"]) == photo
    assert every[2]["attachments"] is None
    some = queries.run_query(con, "case_context", run_id="r", case_ids=["c1"]).to_pylist()
    assert [(r["variant"], r["case_id"]) for r in some] == [("v", "c1"), ("w", "c1")]
    assert queries.run_query(con, "case_context", run_id="r", case_ids=[]).num_rows == 0
