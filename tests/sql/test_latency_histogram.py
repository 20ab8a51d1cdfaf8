"""sql/latency_histogram.sql: the latency bins of a run's answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from evalwh.warehouse import queries
from tests.builders import fill_run_keys
from tests.sql.conftest import _warehouse


def test_the_latency_histogram_counts_every_answer_once(hostile: dict[str, Any]) -> None:
    view, run_id = hostile["view"], hostile["run_id"]
    rows = view.query("latency_histogram", run_id=run_id, bins=20).to_pylist()
    assert rows and all(0 <= r["bin"] < 20 and r["lo_ms"] < r["hi_ms"] for r in rows)
    for cell in view.query("summary", run_id=run_id).to_pylist():
        key = (cell["variant"], cell["model"])
        counted = sum(r["n"] for r in rows if (r["variant"], r["model"]) == key)
        assert counted == cell["n"] - cell["n_errors"]


def _latency(
    con: duckdb.DuckDBPyConnection,
    run: str,
    variant: str,
    ms: float | None,
    i: int,
    error: str | None = None,
) -> None:
    con.execute(
        "INSERT INTO cases (run_id, variant, model, case_id, repeat, error, latency_ms, cached, "
        "request_hash, attempts, score, passed, created_at) "
        "VALUES (?, ?, 'm', ?, 0, ?, ?, false, 'h', 1, 0, false, now())",
        [run, variant, f"c{i}", error, ms],
    )
    fill_run_keys(con)


def test_latency_histogram_bins_up_to_the_runs_99th_percentile(tmp_path: Path) -> None:
    # Run r, answers v: 10, 20, 20, 45, 80 ms; w: 5, 80 ms. Sorted 5 10 20 20 45 80 80 (n 7):
    # the 99th percentile sits at position 6 * 0.99 = 5.94, between 80 and 80 -> 80 ms. With 4
    # bins of 20 ms, bin = floor(ms / 20), the 80 ms answers (at the top) in the last bin 3:
    #   v: bin 0 {10}, bin 1 {20, 20}, bin 2 {45}, bin 3 {80};  w: bin 0 {5}, bin 3 {80}.
    # Left out: a failed request of r (500 ms), an answer of r without a latency, and run s
    # (1000 ms).
    con = _warehouse(tmp_path)
    for i, (variant, ms) in enumerate(
        [("v", 10), ("v", 20), ("v", 20), ("v", 45), ("v", 80), ("w", 5), ("w", 80)]
    ):
        _latency(con, "r", variant, ms, i)
    _latency(con, "r", "v", 500, 10, error="boom")
    _latency(con, "r", "v", None, 11)
    _latency(con, "s", "v", 1000, 0)
    got = queries.run_query(con, "latency_histogram", run_id="r", bins=4).to_pylist()
    assert [(r["variant"], r["model"], r["bin"], r["lo_ms"], r["hi_ms"], r["n"]) for r in got] == [
        ("v", "m", 0, 0.0, 20.0, 1),
        ("v", "m", 1, 20.0, 40.0, 2),
        ("v", "m", 2, 40.0, 60.0, 1),
        ("v", "m", 3, 60.0, 80.0, 1),
        ("w", "m", 0, 0.0, 20.0, 1),
        ("w", "m", 3, 60.0, 80.0, 1),
    ]


def test_latency_histogram_of_instant_answers_has_one_bin_a_millionth_ms_wide(
    tmp_path: Path,
) -> None:
    # Every latency 0: the 99th percentile is 0, raised to the 1e-6 ms floor (no division by
    # zero); both answers in bin 0 of 4, which spans 0 to 1e-6 / 4 ms.
    con = _warehouse(tmp_path)
    _latency(con, "t", "v", 0, 0)
    _latency(con, "t", "v", 0, 1)
    got = queries.run_query(con, "latency_histogram", run_id="t", bins=4).to_pylist()
    assert [(r["bin"], r["lo_ms"], r["hi_ms"], r["n"]) for r in got] == [(0, 0.0, 1e-6 / 4, 2)]
