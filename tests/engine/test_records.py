"""The rows a run stores for its cells (evalwh/engine/records.py).

The row sink (RowSink), called directly with a recording writer: a case row's stored case
fields (and none of them in no-look), its timestamp, the counts the sink keeps, the memo of
serialised cases at its bound, and a score row's details, rationale and error. Then one cheap
whole run through the public API, read back from its warehouse: what a cell's row holds (the
answer, its latency, tokens and cost) and the output mode a json-schema score records."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import duckdb

import evalwh
from evalwh.config.attachments import Attachment
from evalwh.config.model import Case, ModelSpec
from evalwh.engine.answers import CachedAnswer
from evalwh.engine.records import RowSink
from evalwh.engine.runner import CellResult, CheckOutcome
from evalwh.scoring.scorecard import CaseScore, CriterionScore
from evalwh.warehouse.writer import CASE_COLUMNS
from tests.builders import cell_result

PHOTO = Attachment("photo", Path("/x/dog.jpg"), "ab" * 32, "image/jpeg", 1234)


# the case row's columns, in RowSink's order, up to the stored case fields
VARS, EXPECTED, METADATA, HUMAN_LABEL, CREATED_AT = 5, 6, 7, 8, 22


MESSAGES, OUTPUT = 9, 10


CHECK = slice(24, 28)  # passed, exit code, output, error


COLUMNS = [name for name, _ in CASE_COLUMNS]
ATTACHMENTS, QUEUED = COLUMNS.index("attachments"), COLUMNS.index("queued_ms")


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
    rows_sink(cell_result(CASE))
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
    rows_sink(cell_result(Case(id="c2")))  # no files: no attachments
    assert rows[1][ATTACHMENTS] is None


def test_a_case_row_keeps_the_time_its_request_waited_apart_from_its_latency() -> None:
    rows_sink, rows = sink()
    rows_sink(replace(cell_result(CASE), latency_ms=12.5, queued_ms=1000.25))
    rows_sink(replace(cell_result(Case(id="c2")), cached=True))  # no request: nothing waited
    assert len(rows[0]) == len(CASE_COLUMNS)
    assert (rows[0][COLUMNS.index("latency_ms")], rows[0][QUEUED]) == (12.5, 1000.25)
    assert rows[1][QUEUED] is None


def test_a_no_look_row_keeps_only_the_metadata_of_the_case() -> None:
    rows_sink, rows = sink(no_look=True)
    rows_sink(cell_result(CASE))
    row = rows[0]
    assert (row[VARS], row[EXPECTED], row[HUMAN_LABEL], row[ATTACHMENTS]) == (None,) * 4
    assert (row[MESSAGES], row[OUTPUT]) == (None, None)
    assert json.loads(row[METADATA]) == {"lang": "en"}


def test_a_row_is_stamped_in_microseconds_and_the_sink_counts_what_it_saw() -> None:
    rows_sink, rows = sink()
    before = time.time_ns() // 1000
    rows_sink(cell_result(CASE))
    rows_sink(cell_result(Case(id="c2"), passed=False, error="timeout"))
    rows_sink(cell_result(Case(id="c3")))
    after = time.time_ns() // 1000
    assert all(type(r[CREATED_AT]) is int and before <= r[CREATED_AT] <= after for r in rows)
    assert (rows_sink.seen, rows_sink.passed, rows_sink.errors) == (3, 2, 1)


def test_the_memo_of_serialised_cases_keeps_the_newest_up_to_its_bound() -> None:
    rows_sink, rows = sink()
    rows_sink.CASE_MEMO = 2
    for case_id in ("a", "b", "c"):
        rows_sink(cell_result(Case(id=case_id, vars={"id": case_id})))
    assert list(rows_sink._case_json) == ["b", "c"]  # a held 2: the oldest made room
    # a case seen again is served from the memo: the same fields, the same row
    rows_sink(cell_result(Case(id="c", vars={"id": "changed"})))
    assert json.loads(rows[-1][VARS]) == {"id": "c"}


# a score row's details, rationale and error
DETAILS, RATIONALE, ERROR = 11, 12, 13


def judged(case: Case, **kw: Any) -> CellResult:
    cell = cell_result(case, **kw)
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


SCHEMA = {"type": "object", "required": ["city"], "properties": {"city": {"type": "string"}}}


CELL_CONFIG = f"""\
name: cells
models:
  - id: m
    provider: mock
    price: {{input_per_mtok: 1000000, output_per_mtok: 2000000}}
    mock: {{default: '{{"city": "Paris"}}'}}
variants:
  - id: v
    messages: [{{role: user, content: "Where is {{{{ q }}}}?"}}]
    output_schema: {{schema: {json.dumps(SCHEMA)}, name: place}}
cases:
  - {{id: c1, vars: {{q: the Louvre}}}}
scorecard:
  - {{name: shape, type: json-schema, schema: {json.dumps(SCHEMA)}}}
"""


def test_a_cells_row_holds_the_answer_its_latency_tokens_and_cost(tmp_path: Path) -> None:
    (tmp_path / "eval.yaml").write_text(CELL_CONFIG, encoding="utf-8")
    evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out")
    con = duckdb.connect(str(tmp_path / "out" / "warehouse.duckdb"), read_only=True)
    try:
        output, latency, tokens_in, tokens_out, cost, error = (
            con.execute(
                "SELECT output, latency_ms, input_tokens, output_tokens, cost_usd, error FROM cases"
            ).fetchone()
            or (None,) * 6
        )
        mode = con.execute("SELECT details ->> 'mode' FROM scores").fetchone()
    finally:
        con.close()
    assert (output, error) == ('{"city": "Paris"}', None)
    assert latency is not None and latency >= 0
    assert tokens_in > 0 and tokens_out > 0
    assert cost == tokens_in * 1.0 + tokens_out * 2.0  # $1 and $2 per token
    assert mode == ("native",)  # the mock takes a schema natively


def test_an_answer_is_cached_with_the_time_it_was_stored_in_microseconds() -> None:
    added: list[list[Any]] = []
    sink = RowSink(SimpleNamespace(add_cache=added.append), "r-1")  # type: ignore[arg-type]
    model = ModelSpec(id="m", provider="mock", model="small")
    before = time.time_ns() // 1000
    sink.remember("h1", model, CachedAnswer("out", 3, 4, 5.5))
    after = time.time_ns() // 1000
    (row,) = added
    assert row[:7] == ["h1", "mock", "small", "out", 3, 4, 5.5] and row[8] == "r-1"
    assert type(row[7]) is int and before <= row[7] <= after


ECHOED = "sk-proj-" + "E" * 40  # a key shape an answer echoes


def test_an_answer_echoing_a_key_is_stored_redacted_in_every_model_output_column() -> None:
    scores: list[list[Any]] = []
    s, cases = sink(scores)
    wire = {
        "finish_reason": "tool_use",
        "refusal": "no: " + ECHOED,
        "tool_calls": [{"name": "call", "arguments": {"key": ECHOED}}],
        "reasoning": "I saw " + ECHOED,
        "extra": {"raw": ECHOED},
    }
    crit = CriterionScore("judged", "llm-judge", 1.0, True, 1.0, True, None, "says " + ECHOED, None)
    result = replace(
        cell_result(CASE),
        output="the key is " + ECHOED,
        wire=wire,
        scored=CaseScore([crit], 1.0, True),
    )
    s(result)
    row = cases[0]
    stored = [row[OUTPUT], *(row[COLUMNS.index(c)] for c in ("refusal", "tool_calls", "reasoning"))]
    stored += [row[COLUMNS.index("extra")], scores[0][12]]
    assert not [text for text in stored if ECHOED[:12] in text], stored
    assert row[OUTPUT] == "the key is ***"
    assert json.loads(row[COLUMNS.index("tool_calls")]) == [
        {"name": "call", "arguments": {"key": "***"}}
    ]
    # redact_outputs: false stores what the model wrote
    s, cases = sink(scores, redact_outputs=False)
    s(result)
    assert cases[0][OUTPUT] == "the key is " + ECHOED
    assert ECHOED in cases[0][COLUMNS.index("reasoning")]


def test_the_known_secrets_are_read_once_per_window_not_once_per_row(monkeypatch: Any) -> None:
    """Reading the known secrets scans the environment; once per row it was half the CPU of a
    cached rerun. Rows within KNOWN_EVERY_S share one reading; a secret that appears later (a
    secret-named variable set mid-run, which an answer then echoes) is redacted once the window
    has passed."""
    from evalwh.engine import records

    clock = [100.0]
    readings: list[int] = []
    real = records.known_secret_values

    def counted() -> list[str]:
        readings.append(1)
        return real()

    monkeypatch.setattr(records.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(records, "known_secret_values", counted)
    late = "late-secret-value-" + "x" * 20
    s, cases = sink()
    for _ in range(1000):
        s(replace(cell_result(CASE), output="said " + late))
    assert len(readings) == 1
    monkeypatch.setenv("LATE_API_TOKEN", late)
    clock[0] += 2 * records.KNOWN_EVERY_S
    s(replace(cell_result(CASE), output="said " + late))
    assert len(readings) == 2 and cases[-1][OUTPUT] == "said ***"
