"""What every import shares (evalwh/importers/common.py): a file imported twice adds nothing,
case-id templates and renames, usage errors, and imported runs read like any run (compare
across tools, the gate, slices, exports)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from evalwh import api
from evalwh.errors import ConfigError, UsageError
from tests.builders import PROMPTFOO, inspect_log, rows
from tests.conftest import run_cli
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


# -- hostile JSON: every bad shape is a ConfigError (exit 2) naming the file and the place ------


def nest(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [5_000, 100_000])
def test_deep_json_is_refused_with_its_line_and_column(tmp_path: Path, depth: int) -> None:
    """The attack: a results file nested 5,000-100,000 deep (a RecursionError traceback
    before). The place is the bracket that opens level 201."""
    log = tmp_path / "deep.json"
    log.write_text('{"samples":\n' + nest(depth) + "}")
    with pytest.raises(ConfigError, match="nested deeper than 200 levels") as info:
        api.import_results("promptfoo", [log], warehouse=tmp_path / "w.duckdb")
    assert f"{log}: line 2 column 200" in str(info.value)


@pytest.mark.parametrize("kind", ["eval", "json"])
def test_deep_json_the_parser_accepts_is_refused_with_its_path(tmp_path: Path, kind: str) -> None:
    """Nesting the parser survives (500 deep) would still break what walks it later: refused
    with its JSON path, in an .eval member too."""
    deep = sample("a", "C", metadata={"k": json.loads(nest(500))})
    log = write_log(tmp_path, kind, deep)
    with pytest.raises(ConfigError, match="nested deeper than 200 levels") as info:
        api.import_results("inspect", [log], warehouse=tmp_path / "w.duckdb")
    place = (
        "member samples/a_epoch_1.json, $.metadata.k[0][0]"
        if kind == "eval"
        else ("$.samples[0].metadata.k[0][0]")
    )
    assert place in str(info.value) and "[0][0] (200 deep): JSON nested" in str(info.value)


def write_log(tmp_path: Path, kind: str, one: dict[str, Any] | str) -> Path:
    """An inspect log (.eval or .json) with one sample; a str sample is written as it is."""
    text = one if isinstance(one, str) else json.dumps(one)
    if kind == "eval":
        log = tmp_path / "log.eval"
        with zipfile.ZipFile(log, "w") as z:
            z.writestr("header.json", json.dumps(header()))
            z.writestr("samples/a_epoch_1.json", text)
        return log
    log = tmp_path / "log.json"
    log.write_text(json.dumps({**header(), "samples": ["SAMPLE"]}).replace('"SAMPLE"', text))
    return log


@pytest.mark.parametrize("kind", ["eval", "json"])
@pytest.mark.parametrize(
    ("literal", "problem"),
    [
        ("1" * 5000, "an integer of 5,000 digits"),  # Python's int-from-string limit
        ("-" + "9" * 25, "an integer of 25 digits"),
        (str(2**63), "an integer over 64 bits"),
        ("1e400", r"a number out of range \(inf\)"),
        ("NaN", r"a number out of range \(nan\)"),
    ],
)
def test_a_huge_integer_is_refused_with_its_place(
    tmp_path: Path, kind: str, literal: str, problem: str
) -> None:
    """The attack: a token count of 5,000 digits (a ValueError traceback before), or one
    that overflows the warehouse's 64-bit column, or a float out of range."""
    text = json.dumps(sample("a", "C")).replace('"input_tokens": 3', f'"input_tokens": {literal}')
    log = write_log(tmp_path, kind, text)
    with pytest.raises(ConfigError, match=problem) as info:
        api.import_results("inspect", [log], warehouse=tmp_path / "w.duckdb")
    assert str(log) in str(info.value) and "output.usage.input_tokens" in str(info.value)


@pytest.mark.parametrize("kind", ["eval", "json"])
def test_a_lone_surrogate_is_refused_with_its_place(tmp_path: Path, kind: str) -> None:
    """The attack: ``"\\ud800"`` in an answer (it parses, then fails to encode on insert)."""
    text = json.dumps(sample("a", "C")).replace("answer a", "answer \\ud800 a")
    log = write_log(tmp_path, kind, text)
    with pytest.raises(ConfigError, match="unpaired surrogate") as info:
        api.import_results("inspect", [log], warehouse=tmp_path / "w.duckdb")
    assert "output.completion" in str(info.value)
    str(info.value).encode("utf-8")  # the message itself prints
    # a surrogate pair is one character, not refused
    paired = json.dumps(sample("a", "C")).replace("answer a", "answer \\ud83d\\ude00 a")
    api.import_results("inspect", [write_log(tmp_path, kind, paired)], warehouse=tmp_path / "w")
    assert rows(tmp_path / "w", "SELECT output FROM cases") == [("answer \U0001f600 a",)]


# -- keys in imported files: redacted on import, counted in the summary ------------------------

OPENAI_KEY = "sk-proj-" + "Q7" * 15
AWS_KEY = "AKIA" + "Z3" * 8
TEXT_COLUMNS = "case_id, variant, model, vars, expected, metadata, messages, output, error, extra"


def test_a_key_in_an_imported_output_is_redacted_and_counted(tmp_path: Path) -> None:
    """The attack: a log whose answer echoes a key, with keys in its input, metadata, target,
    a score's explanation and answer. Case files refuse them; an import stores them as ***
    and says how many values it redacted."""
    one = sample(
        "a",
        "C",
        input=f"my key is {OPENAI_KEY}",  # vars.input and the user message
        target=AWS_KEY,
        metadata={"note": f"aws {AWS_KEY}"},
        scores={"judge": {"value": "C", "explanation": f"saw {OPENAI_KEY}", "answer": AWS_KEY}},
    )
    one["output"]["completion"] = f"echo: {OPENAI_KEY}"
    log = tmp_path / "log.json"
    log.write_text(json.dumps({**header(), "samples": [one]}))
    wh = tmp_path / "w.duckdb"
    [done] = api.import_results("inspect", [log], warehouse=wh)
    assert done["n_redacted"] == 7  # vars, messages, output, expected, metadata, rationale, details
    stored = str(rows(wh, f"SELECT {TEXT_COLUMNS} FROM cases")) + str(
        rows(wh, "SELECT criterion, details, rationale FROM scores")
    )
    assert "sk-proj-" not in stored and "AKIA" not in stored
    assert rows(wh, "SELECT output, expected FROM cases") == [("echo: ***", '"***"')]
    assert rows(wh, "SELECT rationale FROM scores") == [("saw ***",)]


def test_cli_import_summary_says_how_many_values_were_redacted(tmp_path: Path) -> None:
    data = json.loads(PROMPTFOO.read_text())
    data["results"]["results"][0]["response"]["output"] = f"here: {OPENAI_KEY}"
    data["results"]["results"][1]["vars"]["leak"] = AWS_KEY
    pf = tmp_path / "results.json"
    pf.write_text(json.dumps(data))
    done = run_cli("import", "promptfoo", str(pf), "-o", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # the two planted here and the two apiKey values of the fixture's kept config
    assert "; 4 value(s) held a key or secret, stored as ***" in " ".join(done.stdout.split())
    stored = str(rows(tmp_path / "warehouse.duckdb", f"SELECT {TEXT_COLUMNS} FROM cases"))
    assert OPENAI_KEY not in stored and AWS_KEY not in stored


def test_a_small_archive_of_huge_fields_is_stored_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attack within the archive limits: members of tens of MB held in an unknown field
    or an answer (two 60 MB members took 5.8 GB and ended in DuckDB's out-of-memory error).
    Each stored value is bounded as its case is built: a text is cut and says so, a JSON
    value over the bound becomes a note of its size."""
    from evalwh.importers import common

    monkeypatch.setattr(common, "MAX_CELL_CHARS", 1000)
    one = sample("a", "C", junk=[0] * 2000)
    one["output"]["completion"] = "x" * 3000
    log = write_log(tmp_path, "eval", one)
    wh = tmp_path / "w.duckdb"
    api.import_results("inspect", [log], warehouse=wh)
    [(output, extra)] = rows(wh, "SELECT output, extra FROM cases")
    assert output == "x" * 1000 + "... [cut by evalwh import: 3,000 characters]"
    assert json.loads(extra) == {"_cut_by_evalwh_import": "6,010 characters of JSON, over 1,000"}
