"""What every import shares (evalwh/importers/common.py): a file imported twice adds nothing,
case-id templates and renames, usage errors, and imported runs read like any run (compare
across tools, the gate, slices, exports)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalwh import api
from evalwh.errors import ConfigError, UsageError
from tests.builders import PROMPTFOO, inspect_log, rows
from tests.importers.test_inspectlog import header, sample


def test_importing_the_same_file_twice_adds_nothing(tmp_path: Path) -> None:
    wh = tmp_path / "w.duckdb"
    first = api.import_results("promptfoo", [PROMPTFOO], warehouse=wh)[0]
    again = api.import_results("promptfoo", [PROMPTFOO], warehouse=wh, label="other")[0]
    assert again["added"] is False and again["run_id"] == first["run_id"]
    assert rows(wh, "SELECT count(*) FROM runs") == [(1,)]
    assert rows(wh, "SELECT count(*) FROM cases") == [(24,)]
    # a copy with the same bytes elsewhere is the same content: still nothing
    copy = tmp_path / "copy.json"
    copy.write_bytes(PROMPTFOO.read_bytes())
    assert api.import_results("promptfoo", [copy], warehouse=wh)[0]["added"] is False
    # one changed byte is another file
    copy.write_bytes(PROMPTFOO.read_bytes() + b"\n")
    assert api.import_results("promptfoo", [copy], warehouse=wh)[0]["added"] is True


def test_compare_works_across_an_imported_promptfoo_run_and_an_inspect_run(
    tmp_path: Path,
) -> None:
    wh = tmp_path / "w.duckdb"
    api.import_results(
        "promptfoo",
        [PROMPTFOO],
        warehouse=wh,
        label="pf",
        case_id="s{index}",
        variants=["Answer briefly: {{question}}=brief"],
        models=["openai:chat:fake-model=fake-model"],
    )
    api.import_results(
        "inspect", [inspect_log("eval")], warehouse=wh, label="ins",
        variants=["brief"], models=["fake-model"],
    )  # fmt: skip
    view = api.open_warehouse(wh)
    result = view.compare("pf", "ins").to_dict()
    overall = result["overall"]
    # 6 paired cases: promptfoo 3/6 (s2 is its API error) against inspect 4/6
    assert (overall["n"], overall["n_a"], overall["n_b"]) == (6, 24, 6)
    assert (overall["pass_rate_a"], round(overall["pass_rate_b"], 4)) == (0.5, 0.6667)
    moved = {m["case_id"]: m["movement"] for m in result["movers"]}
    assert moved == {"s2": "fixed", "s0": "score down", "s4": "score down"}


def test_case_id_template_errors_name_the_field(tmp_path: Path) -> None:
    log = tmp_path / "log.json"
    log.write_text(json.dumps({**header(), "samples": [sample("a", "C", metadata={"k": "v"})]}))
    wh = tmp_path / "w.duckdb"
    with pytest.raises(UsageError, match=r"unknown field \{nope\}"):
        api.import_results("inspect", [log], warehouse=wh, case_id="{nope}")
    with pytest.raises(UsageError, match=r"has no metadata\.other"):
        api.import_results("inspect", [log], warehouse=wh, case_id="{metadata.other}")
    api.import_results("inspect", [log], warehouse=wh, case_id="{metadata.k}-{index}")
    assert rows(wh, "SELECT case_id FROM cases") == [("v-0",)]


def test_a_rename_that_merges_two_cells_is_refused(tmp_path: Path) -> None:
    log = tmp_path / "log.json"
    log.write_text(json.dumps({**header(), "samples": [sample("a", "C"), sample("b", "C")]}))
    with pytest.raises(UsageError, match="same cell"):
        api.import_results("inspect", [log], warehouse=tmp_path / "w.duckdb", case_id="same")
    assert not (tmp_path / "w.duckdb").exists() or rows(
        tmp_path / "w.duckdb", "SELECT count(*) FROM runs"
    ) == [(0,)]


def test_unknown_tool_and_bad_suffix_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="evalwh imports promptfoo and inspect"):
        api.import_results("langsmith", [tmp_path / "x"], warehouse=tmp_path / "w.duckdb")
    other = tmp_path / "log.txt"
    other.write_text("{}")
    with pytest.raises(ConfigError, match=r"\.eval or \.json"):
        api.import_results("inspect", [other], warehouse=tmp_path / "w.duckdb")


def test_gate_slices_and_exports_work_on_imported_runs(tmp_path: Path) -> None:
    wh = tmp_path / "w.duckdb"
    api.import_results("promptfoo", [PROMPTFOO], warehouse=wh, label="pf")
    api.import_results("inspect", [inspect_log("json")], warehouse=wh, label="ins")
    view = api.open_warehouse(wh)
    # slices by the metadata both tools carry
    by_topic = {r["slice"]: r for r in view.slice("ins", "topic").to_dicts() if r.get("slice")}
    assert set(by_topic) >= {"topic=geography", "topic=math", "topic=history"}
    # the gate judges an imported run (no thresholds: nothing fails) against another
    gate = view.gate("ins", baseline="pf")
    assert gate.passed and gate.baseline_id == view.resolve("pf")
    # exports read it like any run
    done = view.export("pf", "junit", out=tmp_path / "pf.xml")
    text = (tmp_path / "pf.xml").read_text()
    assert (
        done is not None and text.count("<testcase") == 24 and "500 Internal Server Error" in text
    )
