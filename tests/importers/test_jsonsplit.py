"""Splitting one array out of a JSON document (evalwh/importers/jsonsplit.py): the elements'
spans, the document without the array, and the documents it leaves to the whole parse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalwh.importers import jsonsplit
from evalwh.importers.jsonsplit import mapped, split_array


def elements(data: bytes, keys: tuple[str, ...]) -> list[object]:
    split = split_array(data, keys)
    assert split.found
    return [json.loads(data[start:end]) for start, end in split.spans]


def test_the_array_under_its_keys_is_found_past_values_that_look_like_it() -> None:
    data = (
        b'{"eval": {"samples": [1]}, "note": "a \\"samples\\": [2] in a string",\n'
        b' "list": [{"samples": [3]}], "samples": [{"id": "a", "t": "] , ["}, 7 ,\n'
        b' "x", [1, {"b": 2}], null], "after": {"k": 1}}'
    )
    split = split_array(data, ("samples",))
    assert [json.loads(data[s:e]) for s, e in split.spans] == [
        {"id": "a", "t": "] , ["},
        7,
        "x",
        [1, {"b": 2}],
        None,
    ]
    head = json.loads(split.head)
    assert head == {
        "eval": {"samples": [1]},
        "note": 'a "samples": [2] in a string',
        "list": [{"samples": [3]}],
        "samples": [],
        "after": {"k": 1},
    }
    assert split.head.count(b"\n") == data.count(b"\n")  # later lines keep their numbers


def test_a_nested_array_and_an_escaped_key() -> None:
    data = b'{"results": {"stats": {"n": 2}, "results": [{"a": 1}, {"a": 2}]}, "r\\u0065s": 0}'
    assert elements(data, ("results", "results")) == [{"a": 1}, {"a": 2}]
    assert elements(b'{"results": []}', ("results",)) == []


def test_an_element_larger_than_the_first_window_is_read_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(jsonsplit, "_WINDOW", 16)
    big = {"text": "é" * 500, "more": list(range(50))}  # multi-byte characters across windows
    data = json.dumps({"samples": [big, big]}, ensure_ascii=False).encode()
    assert elements(data, ("samples",)) == [big, big]


@pytest.mark.parametrize(
    "data",
    [
        b'{"other": [1, 2]}',  # no such array
        b'{"samples": [{"a": 1}, {"a": ',  # cut short
        b'{"samples": [1, 2,]}',  # a trailing comma
        b'{"samples": [1 2]}',  # no comma
        b'{"samples": [{"a": NaN}, "\xff"]}',  # not UTF-8
        b'{"samples": [' + b"[" * 5000 + b"]" * 5000 + b"]}",  # too deep for the parser
        b'{"samples": [' + b"1" * 5000 + b"]}",  # an integer Python will not convert
    ],
)
def test_a_document_the_split_cannot_follow_is_left_whole(data: bytes) -> None:
    # the whole parse then refuses it with its place, as it did before the split
    split = split_array(data, ("samples",))
    assert (split.found, split.head, split.spans) == (False, data, [])


def test_a_file_is_mapped_not_read_and_an_empty_one_is_empty(tmp_path: Path) -> None:
    (tmp_path / "e.json").write_bytes(b"")
    (tmp_path / "s.json").write_bytes(b'{"samples": [1, 2]}')
    with mapped(tmp_path / "e.json") as empty:
        assert empty == b""
    with mapped(tmp_path / "s.json") as data:
        assert not isinstance(data, bytes)
        assert [data[s:e] for s, e in split_array(data, ("samples",)).spans] == [b"1", b"2"]
