"""Importing inspect_ai logs (evalwh/importers/inspectlog.py): the real fixture logs (.eval and
.json, tests/fixtures/peers) import with the expected counts; hand-made logs pin each branch of
the mapping: score values, clamping, statuses, a log without a header."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from evalwh import api
from evalwh.errors import ConfigError
from evalwh.importers.inspectlog import to_float
from tests.builders import inspect_log, rows


def sample(sid: Any, value: Any, **more: Any) -> dict[str, Any]:
    return {
        "id": sid,
        "epoch": more.pop("epoch", 1),
        "input": f"question {sid}",
        "target": "t",
        "output": {"completion": f"answer {sid}", "usage": {"input_tokens": 3, "output_tokens": 4}},
        "scores": {"judge": {"value": value, "explanation": "why"}},
        **more,
    }


def header(status: str = "success") -> dict[str, Any]:
    return {
        "version": 2,
        "status": status,
        "eval": {
            "task": "t1",
            "model": "m1",
            "created": "2026-01-02T03:04:05+00:00",
            "packages": {"inspect_ai": "0.3.999"},
            "future_field": {"kept": True},
        },
        "stats": {"started_at": "2026-01-02T03:04:05+00:00"},
    }


def write_eval(path: Path, head: dict[str, Any] | None, samples: list[dict[str, Any]]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        if head is not None:
            z.writestr("header.json", json.dumps(head))
        else:
            z.writestr("_journal/start.json", json.dumps({k: header()[k] for k in ("eval",)}))
        for s in samples:
            z.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
    return path


@pytest.mark.parametrize("kind", ["eval", "json"])
def test_inspect_fixture_logs_import_with_expected_counts(tmp_path: Path, kind: str) -> None:
    wh = tmp_path / "w.duckdb"
    [done] = api.import_results("inspect", [inspect_log(kind)], warehouse=wh)
    assert (done["n_cases"], done["n_scores"], done["version"]) == (6, 12, "0.3.285")
    assert rows(wh, "SELECT suite, status, source_tool FROM runs") == [
        ("fixture", "completed", "inspect")
    ]
    got = rows(
        wh,
        "SELECT case_id, passed, score, output_tokens, metadata ->> 'topic', expected "
        "FROM cases ORDER BY case_id",
    )
    assert [g[0] for g in got] == ["s0", "s1", "s2", "s3", "s4", "s5"]
    assert [g[1] for g in got] == [False, True, True, True, False, True]  # 4 of 6, as inspect
    assert got[0][3:] == (11, "geography", '"absent-word"')
    assert rows(wh, "SELECT DISTINCT criterion, scorer FROM scores ORDER BY 1") == [
        ("includes", "inspect:includes"),
        ("match", "inspect:match"),
    ]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("C", 1.0), ("P", 0.5), ("I", 0.0), ("N", 0.0), ("yes", 1.0), ("False", 0.0),
        (True, 1.0), (False, 0.0), (0.25, 0.25), ("0.75", 0.75), (7, 7.0), ("maybe", None),
        ([1], None),
    ],
)  # fmt: skip
def test_inspect_values_convert_as_inspect_does(value: Any, expected: float | None) -> None:
    assert to_float(value) == expected


def test_inspect_scores_clamp_keep_raw_and_pass_only_at_full_marks(tmp_path: Path) -> None:
    log = tmp_path / "log.json"
    log.write_text(
        json.dumps(
            {
                **header(),
                "samples": [
                    sample("a", 1.0),
                    sample("b", 0.999),
                    sample("c", 7),  # a 0-10 scale: clamped to 1, the 7 kept
                    sample("d", {"acc": "C", "style": "I"}),
                    sample("e", "C", error={"message": "boom", "traceback": "..."}),
                    sample("f", "C", epoch=2),
                ],
            }
        )
    )
    wh = tmp_path / "w.duckdb"
    api.import_results("inspect", [log], warehouse=wh)
    got = dict(
        (r[0], r[1:])
        for r in rows(wh, "SELECT case_id || '/' || repeat, passed, score, error FROM cases")
    )
    assert got["a/0"] == (True, 1.0, None)
    assert got["b/0"] == (False, 0.999, None)
    assert got["c/0"] == (True, 1.0, None)
    assert got["d/0"] == (False, 0.5, None)  # mean of the two keys; one failed
    assert got["e/0"] == (False, 1.0, "boom")  # an error never passes
    assert got["f/1"] == (True, 1.0, None)  # epoch 2 is repeat 1
    assert rows(wh, "SELECT raw_score FROM scores WHERE case_id = 'c'") == [(7.0,)]
    assert rows(wh, "SELECT criterion FROM scores WHERE case_id = 'd' ORDER BY 1") == [
        ("judge.acc",),
        ("judge.style",),
    ]
    [(source,)] = rows(wh, "SELECT source_extra FROM runs")
    assert json.loads(source)["eval"]["future_field"] == {"kept": True}


@pytest.mark.parametrize(
    ("status", "stored"),
    [("success", "completed"), ("error", "failed"), ("cancelled", "interrupted")],
)
def test_inspect_status_maps_to_run_status(tmp_path: Path, status: str, stored: str) -> None:
    log = write_eval(tmp_path / "x.eval", header(status), [sample("a", "C")])
    wh = tmp_path / "w.duckdb"
    api.import_results("inspect", [log], warehouse=wh)
    assert rows(wh, "SELECT status FROM runs") == [(stored,)]


def test_an_eval_log_without_a_header_is_an_unfinished_run(tmp_path: Path) -> None:
    log = write_eval(tmp_path / "x.eval", None, [sample("a", "C"), sample("b", "I")])
    wh = tmp_path / "w.duckdb"
    [done] = api.import_results("inspect", [log], warehouse=wh)
    assert done["n_cases"] == 2
    assert rows(wh, "SELECT status FROM runs") == [("interrupted",)]


@pytest.mark.parametrize("field", ["output.time", "total_time"])
def test_a_negative_duration_is_refused_with_its_place(tmp_path: Path, field: str) -> None:
    """The attack: a sample whose time is below zero; refused naming the member."""
    one = sample("a", "C", total_time=-3.5)
    if field == "output.time":
        one["output"]["time"] = -2.0
    log = write_eval(tmp_path / "x.eval", header(), [one])
    with pytest.raises(ConfigError, match=f"member samples/a_epoch_1.json, \\$.{field}"):
        api.import_results("inspect", [log], warehouse=tmp_path / "w.duckdb")


def big_log(path: Path, n: int) -> Path:
    """A .json log of ``n`` samples, each carrying a transcript (``events``) of ~300 KB, as
    real logs do; the cases keep none of it."""
    events = [{"event": "model", "text": "x" * 250, "n": i} for i in range(1000)]
    samples = [sample(f"s{i}", "C", events=events) for i in range(n)]
    path.write_text(json.dumps({**header(), "samples": samples}))
    return path


def test_a_large_json_log_is_read_one_sample_at_a_time(tmp_path: Path) -> None:
    """The attack: a 200 MB log parsed whole peaked at 1 GB before its first case was built.
    The samples are parsed one at a time and dropped once they are cases, so the memory an
    import takes (Python's allocations, counted by tracemalloc) stays far below the file's
    size, which a whole parse would hold several times over."""
    import tracemalloc

    from evalwh.importers.inspectlog import read_inspect

    log = big_log(tmp_path / "big.json", 90)
    size = log.stat().st_size
    tracemalloc.start()
    try:
        [run] = read_inspect(log)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert size > 25_000_000 and len(run.cases) == 90
    assert peak < size / 4, (peak, size)  # parsed whole: 4 times the size (35 MB for 9 MB)
    assert [c.tool_id for c in run.cases] == [f"s{i}" for i in range(90)]
    assert "events" not in run.cases[0].extra
