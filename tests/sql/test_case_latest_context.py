"""sql/case_latest_context.sql: what a case asked, from its newest run's first answer, against a
hand-built warehouse (the expected rows are worked out in the comments)."""

from __future__ import annotations

import json
from pathlib import Path

from evalwh.warehouse import queries
from tests.sql.conftest import _row, _warehouse


def test_case_latest_context_is_the_newest_runs_first_answer(tmp_path: Path) -> None:
    # q1 in run r1 (old vars) and in r2, cells (v, m2) and (v, m1) repeats 1 and 0: the
    # newest run r2, then the first cell by variant, model (m1) and its repeat 0. q2 only in r1.
    con = _warehouse(tmp_path)
    files = {"photo": {"sha256": "ab" * 32, "media_type": "image/png", "bytes": 68}}
    for run, model, repeat, question in (
        ("r1", "m1", 0, "old"),
        ("r2", "m2", 0, "new, m2"),
        ("r2", "m1", 1, "new, repeat 1"),
        ("r2", "m1", 0, "new"),
    ):
        _row(
            con,
            run,
            case_id="q1",
            model=model,
            repeat=repeat,
            vars=json.dumps({"question": question}),
            expected=json.dumps("Paris"),
            attachments=json.dumps(files),
            messages=json.dumps([{"role": "user", "content": question}]),
        )
    _row(con, "r1", case_id="q2", vars=None, expected=None, attachments=None, messages=None)

    def context(case: str, limit: int = 10) -> list[dict]:
        return queries.run_query(con, "case_latest_context", case_id=case, limit=limit).to_pylist()

    [row] = context("q1")
    assert (row["run_id"], row["model"], row["repeat"]) == ("r2", "m1", 0)
    assert json.loads(row["vars"]) == {"question": "new"}
    assert json.loads(row["expected"]) == "Paris"
    assert json.loads(row["attachments"]) == files
    assert json.loads(row["messages"]) == [{"role": "user", "content": "new"}]
    [bare] = context("q2")  # a no-look run's row: nothing stored to show
    assert bare["vars"] is None and bare["attachments"] is None
    assert context("q3") == []
