"""One array of a large JSON document, parsed an element at a time.

An inspect ``.json`` log holds every sample in its ``samples`` array and a promptfoo results
file every answer in ``results.results``; parsed whole, a 200 MB log becomes a tree of several
times that size before its first case is built. :func:`split_array` finds the array by
following the document's keys and brackets (any other value, and each element, is passed
over by the standard parser, built and dropped) and returns the document without it
(:attr:`Split.head`, parsed as usual) and each element's byte span, so the caller parses one
element, turns it into a case and drops it before the next: memory stays bounded by one
element (plus the file's pages, read through ``mmap``).

Every element is parsed by the same :func:`~evalwh.importers.common.load_json` as a whole
file, with the element's JSON path, so a bad value anywhere is refused with its place exactly
as before. The split passes over each element with the standard parser (a window of the file
at a time, the value built and dropped): a document it cannot follow (truncated, not UTF-8,
bad JSON, too deep, an integer Python will not convert, or without the array) is parsed
whole instead, and the parser names what is wrong and where, as it always did.

ijson was tried first (3.6.0): its C backend reads ``"\\ud800"`` as ``?`` and refuses ``NaN``,
``1e400`` and a 5,000-digit integer as a lexical error without their place, and its Python
backend took 27 times as long as the standard parser over a 20 MB log (13.8 s against
0.5 s), so the standard parser stays the one parser and this module only finds where the
array's elements are.
"""

from __future__ import annotations

import codecs
import json
import mmap
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: a string (with a ``:`` after it when it is a key), or a bracket
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"(\s*:)?|[\[\]{}]')
_BLANK = re.compile(rb"[ \t\r\n]*")
_OPEN = frozenset(b"[{")
_WINDOW = 1 << 20  # the first window an element is parsed in; four times larger on each miss
_DECODER = json.JSONDecoder()
_CHUNK = 1 << 22


@dataclass
class Split:
    """A document with one array taken out: ``head`` is the document with the array
    replaced by ``[]`` (its newlines kept, so lines after it keep their numbers), ``spans``
    each element's ``(start, end)`` in the document. ``found`` is False when the array was
    not found (``head`` is then the whole document)."""

    head: bytes
    spans: list[tuple[int, int]]
    found: bool


def split_array(data: Any, keys: tuple[str, ...]) -> Split:
    """``data`` (bytes or an mmap) split at the array under ``keys`` (``("samples",)``:
    the top-level object's ``samples``). Outside the array the scan follows the tokens; each
    element is passed over by the standard parser (:func:`_element_end`), a window of the
    file at a time, so the scan costs about one parse and holds one element."""
    target = len(keys)  # the depth of the object that holds the array
    path: list[str | None] = []  # the current key of each open object, down to the array
    spans: list[tuple[int, int]] = []
    at, size = 0, len(data)
    while at < size:
        match = _TOKEN.search(data, at)
        if match is None:
            break
        at, token = match.end(), match.group()
        first = token[0]
        if first in _OPEN:
            if first == 0x5B and len(path) == target and path == list(keys):
                start = at
                close = _elements(data, at, spans)
                if close < 0:
                    break  # the parser stops inside it: parsed whole, the error has its place
                lines = b"\n" * newlines(data, start, close)
                return Split(
                    bytes(data[: start - 1]) + b"[" + lines + bytes(data[close:]), spans, True
                )
            if len(path) >= target:  # a value no deeper than the array, that is not it
                end = _element_end(data, match.start())
                if end is None:
                    break
                at = end
                continue
            path.append(None)
        elif first in b"]}":
            if path:
                path.pop()
        elif match.group(1) is not None and path:
            path[-1] = _key(token[: token.rindex(b'"') + 1])
    return Split(bytes(data), [], False)


def _elements(data: Any, at: int, spans: list[tuple[int, int]]) -> int:
    """Each element's span from just after ``[`` on, added to ``spans``; where the closing
    ``]`` is, or -1 when the array does not read as one (the whole parse names why)."""
    at = _blank(data, at)
    if data[at : at + 1] == b"]":
        return at
    while True:
        end = _element_end(data, at)
        if end is None:
            return -1
        spans.append((at, end))
        at = _blank(data, end)
        after = data[at : at + 1]
        if after == b"]":
            return at
        if after != b",":
            return -1
        at = _blank(data, at + 1)


def _blank(data: Any, at: int) -> int:
    found = _BLANK.match(data, at)
    return found.end() if found is not None else at


def _element_end(data: Any, at: int) -> int | None:
    """Where the JSON value starting at byte ``at`` ends, found by the standard parser on a
    window of the file that grows until the value fits; None when it never parses (bad
    UTF-8, bad JSON, too deep: the whole parse then names the problem)."""
    width = _WINDOW
    while True:
        chunk = data[at : at + width]
        try:
            text, used = codecs.utf_8_decode(chunk, "strict", False)
            _value, end = _DECODER.raw_decode(text)
        except (ValueError, RecursionError):
            if at + width >= len(data):
                return None
            width *= 4
            continue
        return at + (end if used == len(text) else len(text[:end].encode("utf-8")))


def _key(token: bytes) -> str | None:
    try:
        key = json.loads(token)
    except ValueError:
        return None
    return key if isinstance(key, str) else None


def newlines(data: Any, start: int, end: int) -> int:
    """How many newlines ``data[start:end]`` holds, read a chunk at a time (an mmap has no
    ``count``, and a copy of a long span would cost what the split saves)."""
    return sum(data[at : min(at + _CHUNK, end)].count(b"\n") for at in range(start, end, _CHUNK))


@contextmanager
def mapped(path: Path) -> Iterator[Any]:
    """The file's bytes without reading them into memory (an empty file: ``b""``)."""
    with path.open("rb") as fh:
        if path.stat().st_size == 0:
            yield b""
            return
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            yield data
