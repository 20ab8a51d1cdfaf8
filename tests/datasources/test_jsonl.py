"""The jsonl-glob datasource (evalwh/datasources/jsonl.py): shards read in order across pages,
blank lines skipped, the digest of what was read, and errors naming the file and line."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from evalwh.datasources import iter_pages
from evalwh.datasources.jsonl import JsonlGlobSource
from evalwh.errors import ConfigError
from tests.conftest import write


def test_jsonl_glob_reads_shards_in_order_across_pages(tmp_path: Path) -> None:
    texts = []
    for shard in range(3):
        lines = [json.dumps({"id": f"s{shard}-{i}", "q": i}) for i in range(4)]
        texts.append("\n".join(lines[:2]) + "\n\n" + "\n".join(lines[2:]) + "\n")
        write(tmp_path / "shards" / f"{shard}.jsonl", texts[-1])
    source = JsonlGlobSource({"pattern": "shards/*.jsonl", "page_size": 5}, tmp_path)
    pages = list(iter_pages(source))
    assert [len(p) for p in pages] == [5, 5, 2]  # blank lines skipped, pages span shards
    assert [r["id"] for p in pages for r in p] == [f"s{s}-{i}" for s in range(3) for i in range(4)]
    expected = hashlib.sha256("".join(texts).encode()).hexdigest()
    assert source.digest() == f"sha256:{expected}"


def test_jsonl_glob_errors_name_the_file_and_line(tmp_path: Path) -> None:
    write(tmp_path / "a.jsonl", '{"id": 1}\n[1]\n')
    with pytest.raises(ConfigError, match=r"a\.jsonl:2.*not a JSON object"):
        list(iter_pages(JsonlGlobSource({"pattern": "*.jsonl"}, tmp_path)))
    with pytest.raises(ConfigError, match="no file matches"):
        JsonlGlobSource({"pattern": "none/*.jsonl"}, tmp_path)


def test_jsonl_glob_matches_must_resolve_inside_the_folder_the_pattern_starts_from(
    tmp_path: Path,
) -> None:
    """A link between shards of the folder is read; a link out of it is refused naming the
    file, for a relative pattern with `**` and for an absolute one."""
    outside = write(tmp_path / "private.jsonl", '{"id": "p"}\n')
    write(tmp_path / "data" / "sub" / "0.jsonl", '{"id": "a"}\n')
    (tmp_path / "data" / "1.jsonl").symlink_to(tmp_path / "data" / "sub" / "0.jsonl")
    source = JsonlGlobSource({"pattern": "data/**/*.jsonl"}, tmp_path)
    assert [f.name for f in source.files] == ["0.jsonl", "0.jsonl"]
    (tmp_path / "data" / "sub" / "2.jsonl").symlink_to(outside)
    for pattern in ("data/**/*.jsonl", str(tmp_path / "data" / "sub" / "*.jsonl")):
        with pytest.raises(ConfigError) as caught:
            JsonlGlobSource({"pattern": pattern}, tmp_path)
        assert caught.value.where == "params.pattern"
        assert caught.value.message.startswith("2.jsonl in ")
        assert f"resolves to {outside}, outside that folder" in caught.value.message
