"""sql/finish_reasons.sql: per cell of a run, how many answers were truncated, refused,
blocked, ended by a provider error or called tools, with the cell's n; cells whose answers all
stopped are left out. A hand-built warehouse, the counts worked out in the comments."""

from __future__ import annotations

from pathlib import Path

from evalwh.warehouse import queries
from tests.builders import fill_run_keys
from tests.sql.conftest import _warehouse


def test_finish_reasons_count_each_ending_per_cell_with_its_n(tmp_path: Path) -> None:
    # run r, cell v × a: 5 answers, 2 cut at the token limit, 1 refused, 1 tool call, 1 stop;
    # cell v × b: 3 answers, 1 blocked, 1 provider error, 1 with no finish reason (mock);
    # cell v × c: 2 answers that stopped (left out); run s: a truncation that does not count.
    con = _warehouse(tmp_path)
    rows = [("r", "a", f) for f in ("length", "length", "refusal", "tool_calls", "stop")]
    rows += [("r", "b", f) for f in ("content_filter", "error", None)]
    rows += [("r", "c", "stop"), ("r", "c", "stop"), ("s", "a", "length")]
    for i, (run, model, finish) in enumerate(rows):
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, finish_reason, "
            "cached, request_hash, attempts, passed, score, created_at) "
            "VALUES (?, 'v', ?, ?, 0, ?, false, 'x', 1, false, 0, now())",
            [run, model, f"c{i}", finish],
        )
        fill_run_keys(con)
    got = queries.run_query(con, "finish_reasons", run_id="r").to_pylist()
    assert got == [
        {
            "variant": "v",
            "model": "a",
            "n": 5,
            "n_truncated": 2,
            "n_refused": 1,
            "n_blocked": 0,
            "n_finish_error": 0,
            "n_tool_calls": 1,
        },
        {
            "variant": "v",
            "model": "b",
            "n": 3,
            "n_truncated": 0,
            "n_refused": 0,
            "n_blocked": 1,
            "n_finish_error": 1,
            "n_tool_calls": 0,
        },
    ]
