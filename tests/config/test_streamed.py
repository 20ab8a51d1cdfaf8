"""Case files too large to hold (evalwh/config/streamed.py), with the bound lowered to a few
rows: the switch (a file of STREAM_AT rows or more is streamed, a smaller one, a folder or a
small ``limit`` is loaded whole as before), the loader's first pass (the count, the file's
digest, an invalid row refused with its line, duplicate ids within the file and against the
config's other cases), the batches read again, a file changed between the two reads, and the
refusal of what needs every case up front (pairwise)."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalwh.config import streamed
from evalwh.config.loader import load_config
from evalwh.errors import ConfigError
from tests.builders import DATASOURCE_HEAD
from tests.conftest import write


@pytest.fixture(autouse=True)
def _small_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(streamed, "STREAM_AT", 5)


def rows(n: int, start: int = 0) -> list[dict[str, str]]:
    return [{"id": f"c{i}", "q": f"x{i}", "expected": f"x{i}"} for i in range(start, start + n)]


def jsonl(path: Path, items: list[dict[str, str]]) -> Path:
    return write(path, "".join(json.dumps(r) + "\n" for r in items))


def config(tmp_path: Path, cases: str) -> Path:
    return write(tmp_path / "eval.yaml", DATASOURCE_HEAD + cases)


def test_a_file_of_stream_at_rows_is_streamed_and_a_smaller_one_loaded(tmp_path: Path) -> None:
    jsonl(tmp_path / "big.jsonl", rows(5))
    jsonl(tmp_path / "small.jsonl", rows(4, start=10))
    cfg = load_config(config(tmp_path, "cases: [{file: big.jsonl}, {file: small.jsonl}]\n"))
    assert [c.id for c in cfg.cases] == ["c10", "c11", "c12", "c13"]  # loaded whole, as before
    (spec,) = cfg.sources
    assert spec.case_file and spec.name == "file" and spec.where == "cases[0]"
    digest = "sha256:" + hashlib.sha256((tmp_path / "big.jsonl").read_bytes()).hexdigest()
    assert spec.params == {"file": "big.jsonl", "cases": 5, "sha256": digest}


def test_a_limit_under_the_bound_loads_the_file_whole(tmp_path: Path) -> None:
    jsonl(tmp_path / "big.jsonl", rows(20))
    cfg = load_config(config(tmp_path, "cases: [{file: big.jsonl, limit: 3}]\n"))
    assert [c.id for c in cfg.cases] == ["c0", "c1", "c2"] and cfg.sources == []


def test_the_dataset_hash_follows_the_streamed_files_bytes(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "big.jsonl", rows(6))
    eval_yaml = config(tmp_path, "cases: [{file: big.jsonl}]\n")
    before = load_config(eval_yaml).dataset_hash
    jsonl(path, [*rows(5), {"id": "c5", "q": "changed", "expected": "x5"}])
    assert load_config(eval_yaml).dataset_hash != before


def test_the_first_pass_refuses_an_invalid_row_with_its_line(tmp_path: Path) -> None:
    write(
        tmp_path / "big.jsonl",
        "".join(json.dumps(r) + "\n" for r in rows(7)) + '{"id": "c7", "q": \n',
    )
    with pytest.raises(ConfigError) as info:
        load_config(config(tmp_path, "cases: [{file: big.jsonl}]\n"))
    assert (info.value.file, info.value.line) == (str(tmp_path / "big.jsonl"), 8)
    assert "invalid JSON" in info.value.message


def test_a_duplicate_id_within_a_streamed_file_names_both_lines(tmp_path: Path) -> None:
    jsonl(tmp_path / "big.jsonl", [*rows(6), {"id": "c2", "q": "again"}])
    with pytest.raises(
        ConfigError, match=r"duplicate case id 'c2' \(big.jsonl:7 and big.jsonl:3\)"
    ):
        load_config(config(tmp_path, "cases: [{file: big.jsonl}]\n"))


def test_a_streamed_id_repeated_by_an_inline_case_is_refused(tmp_path: Path) -> None:
    jsonl(tmp_path / "big.jsonl", rows(6))
    text = "cases:\n  - {file: big.jsonl}\n  - {id: c4, vars: {q: a}}\n"
    with pytest.raises(ConfigError, match=r"duplicate case id 'c4' \(big.jsonl:5 and eval.yaml"):
        load_config(config(tmp_path, text))


def test_csv_and_parquet_files_are_streamed_in_batches(tmp_path: Path) -> None:
    with (tmp_path / "big.csv").open("w", newline="", encoding="utf-8") as fh:
        out = csv.DictWriter(fh, ["id", "q", "expected"])
        out.writeheader()
        out.writerows(rows(7))
    pq.write_table(pa.Table.from_pylist(rows(6, start=100)), tmp_path / "big.parquet")
    cfg = load_config(config(tmp_path, "cases: [{file: big.csv}, {file: big.parquet}]\n"))
    assert cfg.cases == [] and [s.params["cases"] for s in cfg.sources] == [7, 6]
    batches = [
        [c.id for c in batch]
        for spec in cfg.sources
        for batch in streamed.file_batches(spec, tmp_path, "eval.yaml", 3)
    ]
    assert batches == [
        ["c0", "c1", "c2"],
        ["c3", "c4", "c5"],
        ["c6"],
        ["c100", "c101", "c102"],
        ["c103", "c104", "c105"],
    ]
    assert cfg.sources[0].mapping["file"] == "big.csv"


def test_a_file_changed_after_the_first_pass_ends_its_read_with_an_error(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "big.jsonl", rows(6))
    (spec,) = load_config(config(tmp_path, "cases: [{file: big.jsonl}]\n")).sources
    jsonl(path, rows(9))
    with pytest.raises(ConfigError, match=r"changed during the run: 9 cases read, 6 when"):
        list(streamed.file_batches(spec, tmp_path, "eval.yaml", 4))


def test_pairwise_is_refused_for_a_streamed_file_naming_it(tmp_path: Path) -> None:
    jsonl(tmp_path / "big.jsonl", rows(6))
    text = (
        "models: [{id: a, provider: mock}, {id: b, provider: mock}]\n"
        "variants: [{id: v, messages: [{role: user, content: '{{ q }}'}]}]\n"
        "scorecard: [{name: exact, type: exact}]\n"
        "judges: [{id: j, model: {id: jm, provider: mock}}]\n"
        "pairwise: [{name: by-model, judge: j, baseline: {model: a}, candidate: {model: b}}]\n"
        "cases: [{file: big.jsonl}]\n"
    )
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path / "eval.yaml", text))
    assert "pairwise does not go with a case file streamed" in info.value.message
    assert "big.jsonl (6 cases)" in info.value.message
