"""The engine's row sink (evalwh.engine.records.RowSink), called directly with a recording
writer: a case row's stored case fields (and none of them in no-look), its timestamp, the
counts the sink keeps, and the memo of serialised cases at its bound.

Written from mutants that survived the mutation run (docs/testing.md). The warehouse rows of
whole runs are in test_engine.py and test_no_look.py.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from evalwh.config.attachments import Attachment
from evalwh.config.model import Case, ModelSpec
from evalwh.engine.records import RowSink
from evalwh.engine.runner import CellResult, CheckOutcome
from evalwh.scoring.scorecard import CaseScore, CriterionScore

MODEL = ModelSpec(id="m", provider="mock", model="small")
PHOTO = Attachment("photo", Path("/x/dog.jpg"), "ab" * 32, "image/jpeg", 1234)
# the case row's columns, in RowSink's order, up to the stored case fields
VARS, EXPECTED, METADATA, HUMAN_LABEL, CREATED_AT = 5, 6, 7, 8, 22
MESSAGES, OUTPUT = 9, 10
CHECK = slice(24, 28)  # passed, exit code, output, error
ATTACHMENTS = -1


def result(case: Case, *, passed: bool = True, error: str | None = None) -> CellResult:
    crit = CriterionScore(
        "same", "exact", 1.0 if passed else 0.0, passed, 1.0, True, None, None, None
    )
    return CellResult(
        variant="v", model=MODEL, case=case, repeat=0,
        messages=[{"role": "user", "content": [{"type": "text", "text": "hi"}]}],  # type: ignore[arg-type]
        request_hash="h", output="out", error=error, error_kind=None, latency_ms=1.0,
        input_tokens=1, output_tokens=1, cost_usd=None, cached=False, attempts=1,
        scored=CaseScore([crit], 1.0 if passed else 0.0, passed),
    )  # fmt: skip


def sink(scores: list[list[Any]] | None = None, **kw: Any) -> tuple[RowSink, list[list[Any]]]:
    cases: list[list[Any]] = []
    add_score = scores.append if scores is not None else (lambda row: None)
    writer = SimpleNamespace(add_case=cases.append, add_score=add_score)
    return RowSink(writer, "r-1", **kw), cases  # type: ignore[arg-type]


CASE = Case(
    id="c1",
    vars={"q": "2+2"},
    expected="4",
    metadata={"lang": "en"},
    human_label="pass",
    files={"photo": PHOTO},
)


def test_a_case_row_stores_the_cases_fields_as_json() -> None:
    rows_sink, rows = sink()
    rows_sink(result(CASE))
    row = rows[0]
    assert [json.loads(row[i]) for i in (VARS, EXPECTED, METADATA, HUMAN_LABEL)] == [
        {"q": "2+2"},
        "4",
        {"lang": "en"},
        "pass",
    ]
    assert json.loads(row[ATTACHMENTS]) == {
        "photo": {"sha256": "ab" * 32, "media_type": "image/jpeg", "bytes": 1234}
    }
    # the messages as sent (what `evalwh show` prints for a cell) and the answer
    assert json.loads(row[MESSAGES]) == [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    ]
    assert row[OUTPUT] == "out"
    rows_sink(result(Case(id="c2")))  # no files: no attachments
    assert rows[1][ATTACHMENTS] is None


def test_a_no_look_row_keeps_only_the_metadata_of_the_case() -> None:
    rows_sink, rows = sink(no_look=True)
    rows_sink(result(CASE))
    row = rows[0]
    assert (row[VARS], row[EXPECTED], row[HUMAN_LABEL], row[ATTACHMENTS]) == (None,) * 4
    assert (row[MESSAGES], row[OUTPUT]) == (None, None)
    assert json.loads(row[METADATA]) == {"lang": "en"}


def test_a_row_is_stamped_in_microseconds_and_the_sink_counts_what_it_saw() -> None:
    rows_sink, rows = sink()
    before = time.time_ns() // 1000
    rows_sink(result(CASE))
    rows_sink(result(Case(id="c2"), passed=False, error="timeout"))
    rows_sink(result(Case(id="c3")))
    after = time.time_ns() // 1000
    assert all(type(r[CREATED_AT]) is int and before <= r[CREATED_AT] <= after for r in rows)
    assert (rows_sink.seen, rows_sink.passed, rows_sink.errors) == (3, 2, 1)


def test_the_memo_of_serialised_cases_keeps_the_newest_up_to_its_bound() -> None:
    rows_sink, rows = sink()
    rows_sink.CASE_MEMO = 2
    for case_id in ("a", "b", "c"):
        rows_sink(result(Case(id=case_id, vars={"id": case_id})))
    assert list(rows_sink._case_json) == ["b", "c"]  # a held 2: the oldest made room
    # a case seen again is served from the memo: the same fields, the same row
    rows_sink(result(Case(id="c", vars={"id": "changed"})))
    assert json.loads(rows[-1][VARS]) == {"id": "c"}


# a score row's details, rationale and error
DETAILS, RATIONALE, ERROR = 11, 12, 13


def judged(case: Case, **kw: Any) -> CellResult:
    cell = result(case, **kw)
    cell.scored = CaseScore(
        [
            CriterionScore("judged", "llm-judge", 0.5, False, 1.0, True, {"raw": 3}, "vague", None),
            CriterionScore("plain", "exact", 1.0, True, 1.0, True, None, None, None),
            CriterionScore("broken", "python", 0.0, False, 1.0, True, None, None, "boom"),
        ],
        0.5,
        False,
    )
    cell.check = CheckOutcome(False, 3, "test output", "check failed")
    return cell


def test_score_rows_keep_details_rationale_and_error_and_no_look_only_that_one_failed() -> None:
    scores: list[list[Any]] = []
    rows_sink, rows = sink(scores)
    rows_sink(judged(CASE))
    assert [(r[DETAILS], r[RATIONALE], r[ERROR]) for r in scores] == [
        ('{"raw": 3}', "vague", None),
        (None, None, None),
        (None, None, "boom"),
    ]
    assert rows[0][CHECK] == [False, 3, "test output", "check failed"]
    hidden: list[list[Any]] = []
    no_look, rows = sink(hidden, no_look=True)
    no_look(judged(CASE))
    assert [(r[DETAILS], r[RATIONALE], r[ERROR]) for r in hidden] == [
        (None, None, None),
        (None, None, None),
        (None, None, "error"),
    ]
    assert rows[0][CHECK] == [False, 3, None, None]  # pass/fail and the exit status only
