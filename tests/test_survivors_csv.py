"""The CSV case reader (evalwh.config.datasets ``_read_csv``): each refusal with its exact
message, line and fix, a byte-order mark, and line breaks inside a quoted value.

Written from mutants that survived the mutation run (docs/testing.md): these refusals were
checked by end-to-end tests too slow for the mutation budget, and by fragments only.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evalwh.config.datasets import _read_csv
from evalwh.errors import ConfigError

QUOTE_FIX = (
    'quote a value that holds commas, quotes or newlines ("..."), doubling any quote inside it ("")'
)


def rows(path: Path, data: bytes) -> list[tuple[int, dict[str, str]]]:
    path.write_bytes(data)
    return list(_read_csv(path))


def refusal(path: Path, data: bytes) -> ConfigError:
    with pytest.raises(ConfigError) as refused:
        rows(path, data)
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
    error = refusal(tmp_path / "cases.csv", data)
    assert (error.message, error.line, error.fix) == (message, line, fix)


def test_a_byte_order_mark_is_not_part_of_the_first_column(tmp_path: Path) -> None:
    # Excel's "CSV UTF-8" starts the file with one
    got = rows(tmp_path / "cases.csv", "\ufeffid,q\nc1,café\n".encode())
    assert got == [(2, {"id": "c1", "q": "café"})]


def test_line_breaks_inside_a_quoted_value_are_kept_as_written(tmp_path: Path) -> None:
    got = rows(tmp_path / "cases.csv", b'id,q\r\nc1,"one\r\ntwo"\r\nc2,"a\nb"\r\n')
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
    from evalwh.config.loader import load_config

    (tmp_path / "cases.csv").write_text("id,q,answer,expected\nc1,one,1,not this\n")
    (tmp_path / "eval.yaml").write_text(
        "models:\n  - {id: m, provider: mock}\n"
        "variants:\n  - {id: v, messages: [{role: user, content: '{{ q }}'}]}\n"
        "cases:\n  - {file: cases.csv, expected: answer}\n"
        "scorecard:\n  - {name: e, type: exact}\n"
    )
    (case,) = load_config(tmp_path / "eval.yaml").cases
    assert (case.id, case.expected) == ("c1", "1")
