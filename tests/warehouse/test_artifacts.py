"""A run's attached files (evalwh/warehouse/artifacts.py): one file per content, named by
its SHA-256, never copied twice; a file edited or deleted after the run was planned is
named; a file where the store's folder should be is a clear storage error; a big file is
copied in chunks; and what the store counts as stored (not partial files or folders)."""

from __future__ import annotations

import hashlib
import os
import tracemalloc
from pathlib import Path

import pytest

from evalwh.warehouse import artifacts
from evalwh.warehouse.artifacts import ArtifactChanged, ArtifactStore
from evalwh.warehouse.ioerrors import StorageError
from tests.conftest import write
from tests.warehouse.test_ioerrors import TAIL


def test_the_artifact_store_counts_stored_files_not_partial_ones_or_folders(
    tmp_path: Path,
) -> None:
    from evalwh.warehouse.artifacts import ArtifactStore

    store = ArtifactStore(tmp_path)
    write(store.folder / "ab" / "cdef", "abc")
    write(store.folder / "ab" / ".partial-1", "12345")
    (store.folder / "ab" / "sub").mkdir()
    assert store.count() == (1, 3)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_stored_attachment_is_one_file_named_by_its_hash_and_not_copied_twice(
    tmp_path: Path,
) -> None:
    data = b"an image's bytes"
    source = tmp_path / "a.png"
    source.write_bytes(data)
    store = ArtifactStore(tmp_path / "wh")
    digest = sha(data)
    stored = store.put(digest, [source])
    assert stored == tmp_path / "wh" / "artifacts" / digest[:2] / digest[2:]
    assert stored.read_bytes() == data
    assert store.put(digest, [source]) == stored
    assert sorted(p.name for p in stored.parent.iterdir()) == [digest[2:]]
    assert store.count() == (1, len(data))


def test_two_attachments_whose_hashes_share_a_prefix_are_both_stored(tmp_path: Path) -> None:
    first = b"file 0"
    prefix = sha(first)[:2]
    second = next(
        b for b in (f"file {i}".encode() for i in range(1, 100_000)) if sha(b)[:2] == prefix
    )
    store = ArtifactStore(tmp_path)
    for i, data in enumerate((first, second)):
        source = tmp_path / f"{i}.bin"
        source.write_bytes(data)
        assert store.put(sha(data), [source]).read_bytes() == data
    assert store.count() == (2, len(first) + len(second))


def test_no_source_at_all_says_which_hash_has_no_file(tmp_path: Path) -> None:
    digest = sha(b"x")
    with pytest.raises(ArtifactChanged) as info:
        ArtifactStore(tmp_path).put(digest, [])
    assert str(info.value) == f"no file holds SHA-256 {digest[:12]}..."


def test_an_edited_attachment_names_the_first_changed_file_and_its_new_hash(
    tmp_path: Path,
) -> None:
    one, two = tmp_path / "one.txt", tmp_path / "two.txt"
    one.write_bytes(b"edited")
    two.write_bytes(b"edited too")
    store = ArtifactStore(tmp_path / "wh")
    with pytest.raises(ArtifactChanged) as info:
        store.put(sha(b"planned"), [one, two])
    assert str(info.value) == f"{one} changed after the run was planned ({sha(b'edited')})"
    assert store.count() == (0, 0)


def test_a_deleted_attachment_is_reported_as_gone(tmp_path: Path) -> None:
    gone = tmp_path / "gone.txt"
    with pytest.raises(ArtifactChanged) as info:
        ArtifactStore(tmp_path / "wh").put(sha(b"planned"), [gone])
    assert str(info.value) == f"{gone} changed after the run was planned (it is gone)"


def test_a_file_where_the_store_folder_should_be_is_a_clear_storage_error(
    tmp_path: Path,
) -> None:
    source = tmp_path / "a.txt"
    source.write_bytes(b"abc")
    store = ArtifactStore(tmp_path)
    store.folder.write_text("not a folder")
    digest = sha(b"abc")
    with pytest.raises(StorageError) as info:
        store.put(digest, [source])
    assert str(info.value) == (
        f"cannot store an attachment {store.folder / digest[:2]}: Not a directory\n"
        "  fix: a file sits where a folder should be: move it, or point "
        f"-o/--output-dir elsewhere{TAIL}"
    )


def test_a_big_attachment_is_copied_in_chunks_not_read_whole_into_memory(
    tmp_path: Path,
) -> None:
    data = os.urandom(8 * artifacts.CHUNK) + b"tail"
    source = tmp_path / "big.bin"
    source.write_bytes(data)
    store = ArtifactStore(tmp_path / "wh")
    tracemalloc.start()
    try:
        stored = store.put(sha(data), [source])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * artifacts.CHUNK
    assert stored.read_bytes() == data
