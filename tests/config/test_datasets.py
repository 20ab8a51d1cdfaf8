"""Case files and datasource pages read into cases (evalwh/config/datasets.py): CSV, JSONL and
Parquet readers (each malformed CSV refused with its line and fix, a byte-order mark, line
breaks inside quotes, UTF-8 whatever the locale), each column mapping option, inline cases,
case folders, the rows of a datasource's pages (their checks parsed, a bad row named by page
and row), and every refusal with its place and fix: a key-shaped value, a lone surrogate,
bytes that are not UTF-8, a row without an id, a missing mapped column, a value quoted unless
the run is no-look."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import evalwh
from evalwh.config import datasets
from evalwh.config.datasets import (
    READERS,
    _read_csv,
    columns_case,
    datasource_cases,
    inline_case,
    load_file_source,
    open_datasource,
    source_spec,
)
from evalwh.config.loader import load_config
from evalwh.config.model import SourceSpec
from evalwh.errors import ConfigError
from tests.builders import BASE, DATASOURCE_HEAD, expect_error
from tests.conftest import write

# shaped like an OpenAI key (evalwh.config.secrets.KEY_PATTERNS), built so no scanner flags it
KEY = "sk-" + "A1b2C3d4E5" * 3  # pragma: allowlist secret


REPO = Path(__file__).resolve().parents[2]


def jsonl(path: Path, *rows: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows),
        encoding="utf-8",
    )
    return path


def load(tmp_path: Path, spec: dict[str, Any], **kw: Any) -> list[Any]:
    return load_file_source(spec, tmp_path, "cases[0]", "eval.yaml", **kw)


def refusal(call: Any) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        call()
    return info.value


def place(error: ConfigError) -> tuple[Any, ...]:
    return (error.message, error.file, error.line, error.where, error.fix)


def test_blank_lines_are_skipped_and_the_rows_after_them_read(tmp_path: Path) -> None:
    jsonl(tmp_path / "c.jsonl", {"id": "a", "q": 1}, "", "   ", {"id": "b", "q": 2})
    assert [c.id for c in load(tmp_path, {"file": "c.jsonl"})] == ["a", "b"]


def test_a_case_file_is_utf8_whatever_the_locale(tmp_path: Path) -> None:
    # the locale's encoding (Windows' cp1252; a C locale without Python's UTF-8 mode: ASCII)
    # would misread or refuse a UTF-8 file
    (tmp_path / "c.jsonl").write_text('{"id": "a", "q": "café ☕"}\n', encoding="utf-8")
    script = (
        "import sys; from pathlib import Path\n"
        "from evalwh.config.datasets import load_file_source\n"
        "cases = load_file_source({'file': 'c.jsonl'}, Path(sys.argv[1]), 'cases[0]', 'e.yaml')\n"
        "print(ascii(cases[0].vars['q']))\n"
    )
    env = {**os.environ, "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0",
           "PYTHONPATH": str(REPO)}  # fmt: skip
    # cwd: in mutmut's stats pass the child records its calls too, which reads mutmut's
    # config from the working folder (the tests run in a temporary one)
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=60, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "'caf\\xe9 \\u2615'\n"), done.stderr


def test_a_key_shaped_value_in_a_jsonl_row_is_refused_at_its_line(tmp_path: Path) -> None:
    jsonl(tmp_path / "c.jsonl", {"id": "a", "vars": {"q": "fine"}}, {"id": "b", "vars": {"q": KEY}})
    error = refusal(lambda: load(tmp_path, {"file": "c.jsonl"}))
    assert place(error) == (
        "column 'vars.q' holds a string that looks like an API key (openai); keys never belong"
        " in case files",
        str(tmp_path / "c.jsonl"),
        2,
        None,
        "remove it (rotate the key if the file was shared); if the column holds such strings on"
        " purpose, add `allow_secret_like: [vars]` to cases[0] in the config"
        " (docs/configuration.md)",
    )
    allowed = load(tmp_path, {"file": "c.jsonl", "allow_secret_like": ["vars"]})
    assert allowed[1].vars == {"q": KEY}


def test_a_key_shaped_value_in_a_parquet_row_is_refused_at_its_row(tmp_path: Path) -> None:
    pq.write_table(pa.table({"id": ["a"], "tags": [["x", KEY]]}), tmp_path / "c.parquet")
    error = refusal(lambda: load(tmp_path, {"file": "c.parquet"}))
    assert (error.line, error.where) == (None, "row 1")
    assert error.message.startswith("column 'tags[1]' holds a string that looks like an API key")
    assert "add `allow_secret_like: [tags]` to cases[0]" in (error.fix or "")


def test_a_lone_surrogate_is_refused_at_its_line_and_field(tmp_path: Path) -> None:
    jsonl(tmp_path / "c.jsonl", {"id": "a", "q": "ok"}, '{"id": "b", "m": {"q": "\\ud800"}}')
    error = refusal(lambda: load(tmp_path, {"file": "c.jsonl"}))
    assert place(error) == (
        "a value holds a lone surrogate (an escape such as \\ud800), which is not text",
        str(tmp_path / "c.jsonl"),
        2,
        "m.q",
        "remove the escape or write the character it should stand for",
    )


def test_a_plain_jsonl_line_is_not_scanned_value_by_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a line with no backslash and no key shape anywhere on it is read without the per-value
    # scans (one regular expression over the line tells both); the others get them
    from evalwh.config import secrets, yamlpos

    scanned: list[str] = []
    for module, name in ((secrets, "find_key_shaped"), (yamlpos, "find_surrogate")):
        real = getattr(module, name)

        def spy(value: Any, *args: Any, _real: Any = real, _name: str = name) -> Any:
            if not args:  # the top call of a (recursive) scan
                scanned.append(_name)
            return _real(value, *args)

        monkeypatch.setattr(module, name, spy)
    jsonl(
        tmp_path / "c.jsonl",
        {"id": "a", "q": "plain", "n": [1, {"x": "y"}]},
        {"id": "b", "q": "caf\u00e9 \u2615"},  # written as escapes by json.dumps
        {"id": "c", "q": KEY},  # a key shape on the line: scanned (and allowed here)
    )
    cases = load(tmp_path, {"file": "c.jsonl", "allow_secret_like": ["q"]})
    assert [c.vars["q"] for c in cases] == ["plain", "caf\u00e9 \u2615", KEY]
    assert scanned == ["find_surrogate", "find_key_shaped"] * 2  # rows b and c, not a


@pytest.mark.parametrize(
    ("line", "refused"),
    [
        # attack: a key written with an escape so the line itself holds no key shape
        ('{"id": "a", "q": "sk\\u002d' + KEY[3:] + '"}', "looks like an API key (openai)"),
        ('{"id": "a", "q": "\\u0073' + KEY[1:] + '"}', "looks like an API key (openai)"),
        # attack: a lone surrogate hidden among plain values, escaped in upper case
        ('{"id": "a", "q": "ok", "m": ["x", "\\uDFFF"]}', "lone surrogate"),
    ],
)
def test_an_escaped_key_or_surrogate_in_a_jsonl_line_is_still_refused(
    tmp_path: Path, line: str, refused: str
) -> None:
    (tmp_path / "c.jsonl").write_text(line + "\n", encoding="utf-8")
    assert refused in refusal(lambda: load(tmp_path, {"file": "c.jsonl"})).message


def test_bytes_that_are_not_utf8_name_their_line_and_how_to_convert(tmp_path: Path) -> None:
    (tmp_path / "c.csv").write_bytes(b"id,q\na,ok\nb,caf\xe9\n")
    error = refusal(lambda: load(tmp_path, {"file": "c.csv"}))
    assert (error.line, error.fix) == (
        3,
        "save the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8 in.csv > out.csv`)",
    )
    assert error.message.startswith("not UTF-8 text (")


def test_an_inline_row_without_an_id_is_refused(tmp_path: Path) -> None:
    jsonl(tmp_path / "c.jsonl", {"id": "a", "vars": {}}, {"vars": {"q": 1}})
    assert place(refusal(lambda: load(tmp_path, {"file": "c.jsonl"}))) == (
        "a case has no 'id'",
        str(tmp_path / "c.jsonl"),
        2,
        None,
        'add "id": ...',
    )


def test_a_rows_files_resolve_next_to_the_case_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "doc.txt").write_text("hello")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    jsonl(tmp_path / "cases" / "c.jsonl", {"id": "a", "vars": {}, "files": {"doc": "doc.txt"}})
    (case,) = load(tmp_path, {"file": "cases/c.jsonl"})
    assert case.files["doc"].path == tmp_path / "cases" / "doc.txt"


def test_a_file_column_names_its_line_in_jsonl_and_its_column_only_in_parquet(
    tmp_path: Path,
) -> None:
    jsonl(tmp_path / "c.jsonl", {"id": "a", "doc": "file://missing.txt"})
    assert refusal(lambda: load(tmp_path, {"file": "c.jsonl"})).where == "line 1, column doc"
    pq.write_table(pa.table({"id": ["a"], "doc": ["file://missing.txt"]}), tmp_path / "c.parquet")
    assert refusal(lambda: load(tmp_path, {"file": "c.parquet"})).where == "column doc"


def test_the_format_option_reads_a_file_whatever_its_suffix(tmp_path: Path) -> None:
    jsonl(tmp_path / "c.txt", {"id": "a", "q": 1})
    assert [c.id for c in load(tmp_path, {"file": "c.txt", "format": "jsonl"})] == ["a"]
    error = refusal(lambda: load(tmp_path, {"file": "c.txt"}))
    assert (error.message, error.where, error.fix) == (
        "cannot tell the format of 'c.txt'",
        "cases[0].file",
        "use a .csv, .jsonl, .ndjson, .parquet, .pq file or set format: csv|jsonl|parquet",
    )


def test_a_missing_or_empty_file_says_what_to_do(tmp_path: Path) -> None:
    missing = refusal(lambda: load(tmp_path, {"file": "nope.jsonl"}))
    assert (missing.file, missing.where, missing.fix) == (
        "eval.yaml",
        "cases[0].file",
        "check the path; it is relative to the config file's folder",
    )
    (tmp_path / "empty.csv").write_text("id,q\n")
    empty = refusal(lambda: load(tmp_path, {"file": "empty.csv"}))
    assert (empty.message, empty.fix) == (
        "the file holds no cases (a header only, or empty)",
        "add rows to the file, or remove it from cases[0] in eval.yaml",
    )


@pytest.mark.parametrize(
    ("option", "label"),
    [("id", "id: qid"), ("expected", "expected: want"), ("human_label", "human_label: gold")],
)
def test_a_mapped_column_the_file_lacks_is_named_with_its_option(
    tmp_path: Path, option: str, label: str
) -> None:
    (tmp_path / "c.csv").write_text("qid,want,gold,q\n1,2,3,4\n")
    column = label.split(": ")[1]
    assert len(load(tmp_path, {"file": "c.csv", option: column})) == 1
    (tmp_path / "c.csv").write_text("other,q\n1,2\n")
    error = refusal(lambda: load(tmp_path, {"file": "c.csv", option: column}))
    assert error.message == f"missing column '{column}' (asked for by '{label}')"


def test_the_vars_option_picks_the_columns_and_a_missing_one_is_named(tmp_path: Path) -> None:
    (tmp_path / "c.csv").write_text("id,q,extra\na,1,2\n")
    (case,) = load(tmp_path, {"file": "c.csv", "vars": ["q"]})
    assert case.vars == {"q": "1"}
    error = refusal(lambda: load(tmp_path, {"file": "c.csv", "vars": ["q", "gone"]}))
    assert error.message == "missing column 'gone' (asked for by 'vars: gone')"


def test_only_the_first_row_is_checked_for_the_mapped_columns(tmp_path: Path) -> None:
    # JSONL rows may leave out a key: a later row without a metadata column is a None value
    jsonl(tmp_path / "c.jsonl", {"id": "a", "lang": "en"}, {"id": "b"})
    cases = load(tmp_path, {"file": "c.jsonl", "metadata": ["lang"]})
    assert [c.metadata for c in cases] == [{"lang": "en"}, {"lang": None}]


def test_a_bad_row_quotes_its_value_unless_the_run_is_no_look(tmp_path: Path) -> None:
    jsonl(tmp_path / "c.jsonl", {"id": "a", "vars": "the private answer"})
    shown = refusal(lambda: load(tmp_path, {"file": "c.jsonl"}))
    assert shown.message == (
        "'vars' must be a mapping of names to values, got str 'the private answer'"
    )
    hidden = refusal(lambda: load(tmp_path, {"file": "c.jsonl"}, quiet=True))
    assert hidden.message == "'vars' must be a mapping of names to values, got str"


def test_an_inline_case_keeps_expected_metadata_and_label() -> None:
    case = inline_case(
        {"id": 7, "vars": {"q": 1}, "expected": "x", "metadata": {"k": "v"}, "human_label": 0.5},
        "eval.yaml cases[0]",
    )
    assert (case.id, case.vars, case.expected, case.metadata, case.human_label) == (
        "7",
        {"q": 1},
        "x",
        {"k": "v"},
        0.5,
    )


def test_an_inline_cases_errors_are_placed_in_the_config_or_at_a_files_line() -> None:
    long = "v" * 60
    in_config = refusal(lambda: inline_case({"id": "a", "metadata": long}, "cases[2]"))
    assert place(in_config) == (
        f"'metadata' must be a mapping of names to values, got str {long[:40]!r}",
        None,
        None,
        "cases[2]",
        'write "metadata": {"name": value, ...}',
    )
    quiet = refusal(lambda: inline_case({"id": "a", "vars": [1]}, "cases[2]", quiet=True))
    assert quiet.message == "'vars' must be a mapping of names to values, got list"
    at_line = refusal(
        lambda: inline_case({"id": "a", "vars": 3}, "c.jsonl:4", file="c.jsonl", line=4)
    )
    assert (at_line.file, at_line.line, at_line.where) == ("c.jsonl", 4, None)
    for source, file, line, where in (("cases[1]", None, None, "cases[1]"),
                                      ("c.jsonl:4", "c.jsonl", 4, None)):  # fmt: skip
        bad_id = refusal(
            lambda s=source, f=file, n=line: inline_case({"id": {"x": 1}}, s, file=f, line=n)
        )
        assert place(bad_id) == (
            "'id' must be a string or a number",
            file,
            line,
            where,
            'write "id": "a-unique-name"',
        )


def test_an_inline_cases_files_are_placed_by_origin_or_by_line(tmp_path: Path) -> None:
    raw = {"id": "a", "files": {"doc": "missing.txt"}}
    placed = refusal(
        lambda: inline_case(
            raw, "cases[0]", folder=tmp_path, origin=("eval.yaml", "cases[0].files")
        )
    )
    assert (placed.file, placed.where) == ("eval.yaml", "cases[0].files.doc")
    by_line = refusal(
        lambda: inline_case(raw, "c.jsonl:3", file="c.jsonl", line=3, folder=tmp_path)
    )
    assert (by_line.file, by_line.where) == ("c.jsonl", "line 3 files.doc")


@pytest.mark.parametrize("raw", [["a.txt"], {"doc": 3}])
def test_an_inline_cases_files_must_map_names_to_paths(tmp_path: Path, raw: Any) -> None:
    error = refusal(
        lambda: inline_case(
            {"id": "a", "files": raw},
            "cases[0]",
            folder=tmp_path,
            origin=("eval.yaml", "cases[0].files"),
        )
    )
    assert place(error) == (
        "'files' must map names to file paths",
        "eval.yaml",
        None,
        "cases[0].files",
        "write files: {photo: images/dog1.jpg}",
    )


def test_a_row_of_columns_maps_each_option() -> None:
    row = {"id": "", "q": 1, "human_label": "pass", "gold": "fail", "qid": "Q9", "x": 2}
    case = columns_case(row, {}, "src", "file-3")
    assert (case.id, case.human_label) == ("file-3", "pass")  # an empty id: the row's own
    assert case.vars == {"q": 1, "gold": "fail", "qid": "Q9", "x": 2}
    mapped = columns_case(row, {"id": "qid", "human_label": "gold", "vars": ["q"]}, "src", "f-3")
    assert (mapped.id, mapped.human_label, mapped.vars) == ("Q9", "fail", {"q": 1})


SPEC = SourceSpec("mine", {}, {}, "cases[1]")


LABEL = "datasource mine (cases[1])"


def page(rows: list[Any], *, mapping: dict[str, Any] | None = None, **kw: Any) -> list[Any]:
    spec = SourceSpec("mine", {}, mapping or {}, "cases[1]")
    return datasource_cases(spec, rows, 2, checked=kw.pop("checked", False), **kw)


def test_a_pages_rows_map_like_a_case_files() -> None:
    rows = [{"id": "a", "q": 1, "x": 2}, {"id": "b", "vars": {"q": 3}}, {"id": "c", "q": 4}]
    cases = page(rows, mapping={"vars": ["q"]})
    assert [(c.id, c.vars) for c in cases] == [("a", {"q": 1}), ("b", {"q": 3}), ("c", {"q": 4})]
    assert cases[0].source == f"{LABEL} page 2 row 1"
    assert [c.id for c in page([{"id": "x", "q": 1}, {"q": 2}])] == ["x", "p2-2"]


@pytest.mark.parametrize(
    ("mapping", "label"),
    [({"id": "qid"}, "id: qid"), ({"expected": "want"}, "expected: want"),
     ({"human_label": "gold"}, "human_label: gold"), ({"vars": ["gone"]}, "vars: gone")],
)  # fmt: skip
def test_a_mapped_column_a_page_lacks_is_named_at_the_datasource(
    mapping: dict[str, Any], label: str
) -> None:
    error = refusal(lambda: page([{"id": "a", "q": 1}], mapping=mapping))
    column = label.split(": ")[1]
    assert (error.message, error.where, error.line, error.file) == (
        f"missing column '{column}' (asked for by '{label}')",
        LABEL,
        None,
        None,
    )
    # a page after one that was checked is not checked again
    assert len(page([{"id": "a", "q": 1}], mapping=mapping, checked=True)) == 1


def test_only_a_pages_first_row_is_checked() -> None:
    cases = page([{"id": "a", "lang": "en"}, {"id": "b"}], mapping={"metadata": ["lang"]})
    assert [c.metadata for c in cases] == [{"lang": "en"}, {"lang": None}]


def test_a_page_row_that_is_not_a_mapping_says_what_pages_returns() -> None:
    error = refusal(lambda: page([{"id": "a"}, ["b"]]))
    assert (error.message, error.where, error.fix) == (
        "a row is a list, not a mapping",
        f"{LABEL}, page 2 row 2",
        "pages(cursor) returns (list of dicts, next cursor)",
    )


def test_an_inline_page_row_without_an_id_is_refused_at_its_row() -> None:
    error = refusal(lambda: page([{"id": "a", "vars": {}}, {"vars": {"q": 1}}]))
    assert (error.message, error.where, error.fix) == (
        "a case has no 'id'",
        f"{LABEL}, page 2 row 2",
        'add "id": ...',
    )
    shown = refusal(lambda: page([{"id": "a", "vars": {}, "metadata": "secret words"}]))
    assert shown.message.endswith("got str 'secret words'")
    quiet = refusal(lambda: page([{"id": "a", "vars": {}, "metadata": "secret words"}], quiet=True))
    assert quiet.message.endswith("got str")


def test_a_key_shaped_value_in_a_page_is_refused_at_its_row_unless_allowed() -> None:
    error = refusal(lambda: page([{"id": "a", "q": "x"}, {"id": "b", "q": KEY}]))
    assert (error.line, error.where) == (None, "row 2")
    assert "add `allow_secret_like: [q]` to cases[1]" in (error.fix or "")
    assert page([{"id": "b", "q": KEY}], mapping={"allow_secret_like": ["q"]})[0].vars == {"q": KEY}


def test_a_datasource_entry_keeps_its_mapping_apart_from_source_and_params() -> None:
    raw = {"source": "duckdb", "params": {"query": "SELECT 1"}, "id": "qid", "vars": ["q"]}
    spec = source_spec(raw, "cases[1]", "eval.yaml")
    assert (spec.name, spec.params, spec.mapping) == (
        "duckdb",
        {"query": "SELECT 1"},
        {"id": "qid", "vars": ["q"]},
    )


def test_a_datasources_own_error_is_placed_under_its_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalwh import datasources

    class Picky:
        def __init__(self, params: dict[str, Any], root: Path) -> None:
            raise ConfigError("no table given" if params else "nothing given", fix="add one")

    monkeypatch.setattr(datasources, "source_class", lambda *a, **k: Picky)
    error = refusal(lambda: open_datasource(SPEC, tmp_path, "eval.yaml"))
    assert (error.file, error.where) == ("eval.yaml", "cases[1]")
    assert "cases[1]" in str(error)


QUOTE_FIX = (
    'quote a value that holds commas, quotes or newlines ("..."), doubling any quote inside it ("")'
)


def csv_rows(path: Path, data: bytes) -> list[tuple[int, dict[str, str]]]:
    path.write_bytes(data)
    return list(_read_csv(path))


def csv_refusal(path: Path, data: bytes) -> ConfigError:
    with pytest.raises(ConfigError) as refused:
        csv_rows(path, data)
    assert refused.value.file == str(path)
    return refused.value


@pytest.mark.parametrize(
    ("data", "message", "line", "fix"),
    [
        (b"", "the CSV file is empty", None, "add a header row"),
        (
            b"id,q,q,a,a\n1,x,y,z,w\n",
            "duplicate column(s) a, q",
            1,
            "give every column a unique name",
        ),
        (
            b"id,q\n1,x\n2,a,b\n",
            "row has more fields than the header (2 columns)",
            3,
            "quote values that contain commas, or add the missing header",
        ),
        (b'id,q\n1,"x\n2,y\n', "malformed CSV: unexpected end of data", 2, QUOTE_FIX),
        (b'id,q\n1,"a"b\n', "malformed CSV: ',' expected after '\"'", 2, QUOTE_FIX),
    ],
    ids=["empty", "duplicate-columns", "extra-field", "open-quote", "stray-quote"],
)
def test_each_malformed_csv_is_refused_with_its_line_and_fix(
    tmp_path: Path, data: bytes, message: str, line: int | None, fix: str
) -> None:
    error = csv_refusal(tmp_path / "cases.csv", data)
    assert (error.message, error.line, error.fix) == (message, line, fix)


def test_a_byte_order_mark_is_not_part_of_the_first_column(tmp_path: Path) -> None:
    # Excel's "CSV UTF-8" starts the file with one
    got = csv_rows(tmp_path / "cases.csv", "\ufeffid,q\nc1,café\n".encode())
    assert got == [(2, {"id": "c1", "q": "café"})]


def test_line_breaks_inside_a_quoted_value_are_kept_as_written(tmp_path: Path) -> None:
    got = csv_rows(tmp_path / "cases.csv", b'id,q\r\nc1,"one\r\ntwo"\r\nc2,"a\nb"\r\n')
    assert got == [(3, {"id": "c1", "q": "one\r\ntwo"}), (5, {"id": "c2", "q": "a\nb"})]


def test_a_missing_mapped_column_says_what_the_file_or_the_rows_have(tmp_path: Path) -> None:
    from evalwh.config.datasets import _check_columns

    declared = {"id": "id", "expected": "answer"}
    row = {"id": "c1", "q": "x"}
    with pytest.raises(ConfigError) as in_file:
        _check_columns(row, declared, [], None, file="cases.csv")
    with pytest.raises(ConfigError) as in_rows:  # a datasource's rows: no file
        _check_columns(row, declared, [], None, file=None, where="datasource d (cases[0])")
    assert in_file.value.message == "missing column 'answer' (asked for by 'expected: answer')"
    assert in_file.value.fix == "add the column or change the mapping; the file has: id, q"
    assert in_rows.value.fix == "add the column or change the mapping; the rows have: id, q"


def test_a_case_files_expected_comes_from_the_mapped_column(tmp_path: Path) -> None:

    (tmp_path / "cases.csv").write_text("id,q,answer,expected\nc1,one,1,not this\n")
    (tmp_path / "eval.yaml").write_text(
        "models:\n  - {id: m, provider: mock}\n"
        "variants:\n  - {id: v, messages: [{role: user, content: '{{ q }}'}]}\n"
        "cases:\n  - {file: cases.csv, expected: answer}\n"
        "scorecard:\n  - {name: e, type: exact}\n"
    )
    (case,) = load_config(tmp_path / "eval.yaml").cases
    assert (case.id, case.expected) == ("c1", "1")


def test_case_folder_file_limit_is_inclusive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder may hold exactly MAX_FOLDER_FILES case files; one more is refused at the
    source's file: key of the config, with the fix."""
    monkeypatch.setattr(datasets, "MAX_FOLDER_FILES", 3)
    folder = tmp_path / "shards"
    for n in range(3):
        write(folder / f"part{n}.csv", f"id,q\nc{n},x\n")
    cases = load_file_source({"file": "shards"}, tmp_path, "cases[2]", "eval.yaml")
    assert [c.id for c in cases] == ["c0", "c1", "c2"]
    write(folder / "part3.csv", "id,q\nc3,x\n")
    with pytest.raises(ConfigError) as caught:
        load_file_source({"file": "shards"}, tmp_path, "cases[2]", "eval.yaml")
    error = caught.value
    assert error.message == f"the folder {folder} holds 4 case files, over 3"
    assert (error.file, error.where) == ("eval.yaml", "cases[2].file")
    assert error.fix == "merge the shards into fewer files"


def test_no_look_folder_source_quotes_no_value(tmp_path: Path) -> None:
    """quiet (a no-look config) reaches every file of a case folder: the bad value is not
    quoted in the error."""
    write(tmp_path / "rows" / "a.jsonl", '{"id": "c1", "vars": "TOP-SECRET-VALUE"}\n')
    with pytest.raises(ConfigError) as caught:
        load_file_source({"file": "rows"}, tmp_path, "cases[0]", "eval.yaml", quiet=True)
    assert "'vars' must be a mapping" in str(caught.value)
    assert "TOP-SECRET" not in str(caught.value)


def test_parquet_rows_are_numbered_from_one(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"q": ["a", "b"]}), tmp_path / "set.parquet")
    cases = load_file_source({"file": "set.parquet"}, tmp_path, "cases[0]", "eval.yaml")
    assert [(c.id, c.source) for c in cases] == [
        ("set-1", "set.parquet row 1"),
        ("set-2", "set.parquet row 2"),
    ]


def test_unreadable_parquet_names_the_file_and_the_fix(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.parquet", "not parquet at all")
    with pytest.raises(ConfigError) as caught:
        load_file_source({"file": "bad.parquet"}, tmp_path, "cases[0]", "eval.yaml")
    error = caught.value
    assert error.message.startswith("cannot read Parquet: ")
    assert error.file == str(path.resolve())
    assert error.fix == "write a real Parquet file (e.g. polars' write_parquet), or use CSV/JSONL"


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("cases.jsonl", '{"id": "c1", "q": "Café – naïve 東京"}\n'),
        ("cases.csv", "id,q\nc1,Café – naïve 東京\n"),
    ],
)
def test_a_utf8_case_file_is_read_the_same_under_a_non_utf8_locale(
    tmp_path: Path, ascii_locale: None, name: str, data: str
) -> None:
    if sys.flags.utf8_mode:
        pytest.skip("in UTF-8 mode every file is read as UTF-8: the locale cannot matter")
    path = tmp_path / name
    path.write_bytes(data.encode("utf-8"))
    assert [row for _, row in READERS[path.suffix[1:]](path)] == [
        {"id": "c1", "q": "Café – naïve 東京"}
    ]


def test_missing_cases_file(tmp_path: Path) -> None:
    text = BASE.replace(
        '  - id: c1\n    vars: {question: "hi"}\n    expected: "hi"\n',
        "  - file: data/missing.csv\n",
    )
    cfg = write(tmp_path / "eval.yaml", text)
    expect_error(cfg, "cases[0].file", "cases file not found", "missing.csv")


def test_csv_missing_a_declared_column(tmp_path: Path) -> None:
    write(tmp_path / "cases.csv", "id,question,expected\nc1,hi,hi\n")
    text = BASE.replace(
        '  - id: c1\n    vars: {question: "hi"}\n    expected: "hi"\n',
        "  - file: cases.csv\n    metadata: [lang]\n",
    )
    message = expect_error(
        write(tmp_path / "eval.yaml", text), "cases.csv", "missing column 'lang'"
    )
    assert "the file has: id, question, expected" in message


def test_csv_without_the_template_variable(tmp_path: Path) -> None:
    write(tmp_path / "cases.csv", "id,prompt,expected\nc1,hi,hi\n")
    text = BASE.replace(
        '  - id: c1\n    vars: {question: "hi"}\n    expected: "hi"\n', "  - file: cases.csv\n"
    )
    expect_error(write(tmp_path / "eval.yaml", text), "question", "cases.csv:2")


def test_a_row_that_is_not_a_mapping_is_an_error(tmp_path: Path) -> None:
    from evalwh.config.datasets import datasource_cases
    from evalwh.config.model import SourceSpec

    with pytest.raises(ConfigError, match="page 1 row 2"):
        datasource_cases(SourceSpec("x", where="cases[0]"), [{"id": 1}, [1]], 1, checked=False)
    with pytest.raises(ConfigError, match="missing column 'lang'"):
        spec = SourceSpec("x", mapping={"metadata": ["lang"]}, where="cases[0]")
        datasource_cases(spec, [{"id": 1}], 1, checked=False)
    spec = SourceSpec("x", mapping={"metadata": ["lang"]}, where="cases[0]")
    assert datasource_cases(spec, [{"id": 1}], 2, checked=True)[0].metadata == {"lang": None}


@pytest.mark.skipif(os.name == "nt", reason="exec checks need a POSIX shell")
def test_a_streamed_rows_exec_checks_are_parsed_and_run(tmp_path: Path, sources: Any) -> None:
    cfg = write(
        tmp_path / "eval.yaml", DATASOURCE_HEAD + 'cases: [{source: "mysources:Checked"}]\n'
    )
    evalwh.run_eval(cfg, output_dir=tmp_path / "o")
    with duckdb.connect(str(tmp_path / "o" / "warehouse.duckdb"), read_only=True) as con:
        rows = con.execute(
            "SELECT case_id, check_passed, check_exit_code, error FROM cases ORDER BY case_id"
        ).fetchall()
    assert rows == [("no", False, 3, None), ("ok", True, 0, None)]


def test_a_streamed_rows_bad_check_is_refused_naming_the_row_and_the_config(
    tmp_path: Path, sources: Any
) -> None:
    cases = 'cases: [{source: "mysources:Checked", params: {bad: true}}]\n'
    cfg = write(tmp_path / "eval.yaml", DATASOURCE_HEAD + cases)
    with pytest.raises(ConfigError) as info:
        evalwh.run_eval(cfg, output_dir=tmp_path / "o")
    assert (info.value.file, info.value.where) == (
        str(cfg),
        "datasource mysources:Checked (cases[0]) page 1 row 1 check.nope",
    )
    assert info.value.message == "unknown key(s) in check: nope"


# a suite of two mock models and no cases: each test adds its own case source
TWO_MOCKS = """\
name: s
models:
  - {id: a, provider: mock, params: {max_tokens: 64}}
  - {id: b, provider: mock, timeout_s: 5, params: {temperature: 0.7}}
variants:
  - id: v
    messages: [{role: user, content: "{{ q }}"}]
scorecard:
  - {name: echo, type: contains}
"""


def test_a_folder_of_case_files_is_one_source(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.conftest import write

    shards = tmp_path / "shards"
    write(shards / "a.jsonl", '{"id": "j1", "q": "one", "expected": "one"}\n')
    write(shards / "b.csv", "id,q,expected\nc1,two,two\nc2,three,three\n")
    pq.write_table(
        pa.table({"id": ["p1"], "q": ["four"], "expected": ["four"]}), shards / "c.parquet"
    )
    write(shards / "notes.txt", "not a case file")
    cfg = write(tmp_path / "eval.yaml", TWO_MOCKS + "cases:\n  - {file: shards}\n")
    assert [c.id for c in evalwh.load_config(cfg).cases] == ["j1", "c1", "c2", "p1"]
    only_csv = write(tmp_path / "csv.yaml", TWO_MOCKS + "cases:\n  - {file: shards, format: csv}\n")
    assert [c.id for c in evalwh.load_config(only_csv).cases] == ["c1", "c2"]
    limited = write(tmp_path / "lim.yaml", TWO_MOCKS + "cases:\n  - {file: shards, limit: 2}\n")
    assert [c.id for c in evalwh.load_config(limited).cases] == ["j1", "c1"]
    empty = tmp_path / "empty"
    empty.mkdir()
    none = write(tmp_path / "none.yaml", TWO_MOCKS + "cases:\n  - {file: empty}\n")
    with pytest.raises(ConfigError, match="holds no case files"):
        evalwh.load_config(none)


def test_a_case_folder_may_not_link_outside_itself(tmp_path: Path) -> None:
    """The attack: a shard folder with a symlink to a file elsewhere (a key store, say)."""
    from tests.conftest import write

    outside = write(tmp_path / "private" / "keys.csv", "id,q\nk1,secret\n")
    shards = tmp_path / "shards"
    write(shards / "a.csv", "id,q\nc1,x\n")
    (shards / "b.csv").symlink_to(outside)
    cfg = write(tmp_path / "eval.yaml", TWO_MOCKS + "cases:\n  - {file: shards}\n")
    with pytest.raises(ConfigError, match="outside"):
        evalwh.load_config(cfg)


def test_a_folder_source_directly_format_limit_order_and_errors(tmp_path: Path) -> None:
    """datasets.load_file_source on a folder: only case files (of ``format`` when given), in
    name order, ``limit`` over the whole folder, and each refusal with its place and fix."""
    import os

    from evalwh.config.datasets import load_file_source
    from evalwh.errors import ConfigError
    from tests.conftest import write

    shards = tmp_path / "shards"
    shards.mkdir()
    write(shards / "b.jsonl", '{"id": "b1"}\n{"id": "b2"}\n')
    write(shards / "a.CSV", "id\na1\na2\n")
    write(shards / "c.ndjson", '{"id": "c1"}\n')
    write(shards / "notes.txt", "not cases\n")
    (shards / "sub.jsonl").mkdir()  # a folder with a case file's name is no case file

    def ids(**spec: Any) -> list[str]:
        cases = load_file_source({"file": "shards", **spec}, tmp_path, "cases[0]", "e.yaml")
        return [c.id for c in cases]

    assert ids() == ["a1", "a2", "b1", "b2", "c1"]
    assert ids(format="jsonl") == ["b1", "b2", "c1"]
    assert ids(limit=3) == ["a1", "a2", "b1"]
    assert ids(limit=2) == ["a1", "a2"]  # the next file is not read
    assert ids(format="jsonl", limit=1) == ["b1"]

    def refusal(**spec: Any) -> tuple[str, str | None, str | None, str | None]:
        with pytest.raises(ConfigError) as info:
            load_file_source({"file": "shards", **spec}, tmp_path, "cases[0]", "e.yaml")
        return info.value.message, info.value.file, info.value.where, info.value.fix

    folder = shards.resolve()
    fix = "point file: at a folder of .csv, .jsonl or .parquet files, or at one file"
    assert refusal(format="parquet") == (
        f"the folder {folder} holds no case files (parquet)",
        "e.yaml",
        "cases[0].file",
        fix,
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError) as info:
        load_file_source({"file": "empty"}, tmp_path, "cases[0]", "e.yaml")
    assert info.value.message == (
        f"the folder {empty.resolve()} holds no case files (.csv, .jsonl, .ndjson, .parquet, .pq)"
    )
    outside = write(tmp_path / "outside.jsonl", '{"id": "x"}\n')
    os.symlink(outside, shards / "d.jsonl")
    assert refusal() == (
        f"d.jsonl in {folder} resolves to {outside.resolve()}, outside that folder",
        "e.yaml",
        "cases[0].file",
        "copy the file into the folder instead of linking it, or point the config at the "
        "folder the link leads to",
    )


# ---- bounds: a cases file is a regular file (issue 46) ----


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("source", "name", "what"),
    [
        ("file: cases.jsonl", "cases.jsonl", "FIFO"),
        ("{file: /dev/zero, format: csv}", "/dev/zero", "device"),
    ],
    ids=["fifo", "dev-zero"],
)
def test_fifo_or_device_as_a_cases_file_is_refused_naming_it(
    tmp_path: Path, source: str, name: str, what: str
) -> None:
    """The message names the file and what it is (a terminal may wrap the line anywhere)."""
    os.mkfifo(tmp_path / "cases.jsonl")  # nobody writes: reading it would wait forever
    text = BASE.replace(
        '  - id: c1\n    vars: {question: "hi"}\n    expected: "hi"\n',
        f"  - {source}\n",
    )
    cfg = write(tmp_path / "eval.yaml", text)
    expect_error(cfg, "cases[0].file", name, what, "regular file")


@pytest.mark.timeout(30)
def test_cases_file_swapped_for_a_fifo_after_the_check_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "cases.csv")
    with pytest.raises(ConfigError) as info:
        list(datasets._rows("csv", tmp_path / "cases.csv"))
    assert info.value.message == (
        "cannot read the cases file: it is a FIFO (named pipe), not a regular file"
    )
    assert info.value.file == str(tmp_path / "cases.csv")
