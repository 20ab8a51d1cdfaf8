"""Tests that kill mutants mutmut found alive in the warehouse's storage errors, artifacts and cache files (issue 21); each test names the user-visible behaviour it pins."""

from __future__ import annotations

import errno
import hashlib
import os
import re
import tracemalloc
from pathlib import Path

import duckdb
import pytest

from evalwh.analysis.readonly import QueryTimeoutError
from evalwh.errors import UsageError
from evalwh.warehouse import artifacts
from evalwh.warehouse.artifacts import ArtifactChanged, ArtifactStore
from evalwh.warehouse.ioerrors import StorageError, io_guard, storage_error

TAIL = " (rows flushed so far are kept; `evalwh run CONFIG --resume RUN` continues a run)"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- warehouse/ioerrors.py: storage_error -------------------------------------------------------

CAUSES = {  # the OS's own words (Linux strerror), as the OSError carries them
    errno.ENOSPC: "No space left on device",
    errno.EDQUOT: "Disk quota exceeded",
    errno.EFBIG: "File too large",
    errno.EACCES: "Permission denied",
    errno.EROFS: "Read-only file system",
    errno.EISDIR: "Is a directory",
    errno.ENOTDIR: "Not a directory",
    errno.EPERM: "Operation not permitted",
}
FIXES = {
    errno.ENOSPC: "free space on that file system",
    errno.EDQUOT: "free space or raise the quota",
    errno.EFBIG: "the file hit a size limit (ulimit -f); raise it",
    errno.EACCES: "fix the permissions, or point -o/--output-dir at a folder you can write",
    errno.EROFS: "point -o/--output-dir at a writable folder",
    errno.EISDIR: "a folder sits where the file should be: move it, or point "
    "-o/--output-dir elsewhere",
    errno.ENOTDIR: "a file sits where a folder should be: move it, or point "
    "-o/--output-dir elsewhere",
    errno.EPERM: "fix the permissions, or point -o/--output-dir elsewhere",
}


@pytest.mark.parametrize("code", sorted(FIXES), ids=errno.errorcode.get)
def test_each_os_storage_failure_names_the_path_its_cause_and_its_own_fix(code: int) -> None:
    cause = CAUSES[code]
    with pytest.raises(StorageError) as info, io_guard("/data/w.duckdb", "write the warehouse"):
        raise OSError(code, cause)
    assert str(info.value) == (
        f"cannot write the warehouse /data/w.duckdb: {cause}\n  fix: {FIXES[code]}{TAIL}"
    )
    assert info.value.exit_code == 2


def test_a_storage_error_names_the_file_the_os_failed_on_not_the_folder_guarded() -> None:
    exc = OSError(errno.ENOSPC, "No space left on device", "/data/w.duckdb.wal")
    assert str(storage_error("/data", exc, "write the warehouse")) == (
        "cannot write the warehouse /data/w.duckdb.wal: No space left on device\n"
        f"  fix: free space on that file system{TAIL}"
    )


def test_a_duckdb_error_in_other_case_still_gets_the_causes_own_fix() -> None:
    exc = duckdb.IOException('IO Error: could not write "w.duckdb": no space left on device')
    assert str(storage_error("w.duckdb", exc, "flush run r1 to")) == (
        "cannot flush run r1 to w.duckdb: no space left on device\n"
        f"  fix: free space on that file system{TAIL}"
    )


def test_an_unknown_storage_failure_shows_the_errors_first_line_and_a_generic_fix() -> None:
    exc = duckdb.IOException("IO Error: Could not read block 7\nsecond line of detail")
    error = storage_error("w.duckdb", exc, "read the warehouse")
    assert str(error) == (
        "cannot read the warehouse w.duckdb: IO Error: Could not read block 7\n"
        f"  fix: check the path and the file system{TAIL}"
    )
    assert error.exit_code == 2


def test_an_os_error_without_a_known_cause_gets_the_generic_fix() -> None:
    exc = OSError(errno.EIO, "Input/output error")
    assert str(storage_error("w.duckdb", exc, "write the warehouse")) == (
        "cannot write the warehouse w.duckdb: Input/output error\n"
        f"  fix: check the path and the file system{TAIL}"
    )


# -- analysis/readonly.py: QueryTimeoutError ----------------------------------------------------


def test_a_query_timeout_names_its_limit_and_how_to_narrow_or_raise_it() -> None:
    error = QueryTimeoutError(2.5)
    assert str(error) == (
        "the query ran longer than 2.5 s and was stopped\n"
        "  fix: narrow it (WHERE, LIMIT, aggregate first), or raise the bound with "
        "--timeout / the setting query_timeout_s (MCP: mcp_query_timeout_s)"
    )
    assert isinstance(error, UsageError)
    assert error.exit_code == 2
    assert error.timeout_s == 2.5


# -- warehouse/artifacts.py: ArtifactStore.put and _copy ----------------------------------------


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


def test_a_copy_in_progress_is_a_hidden_temp_file_named_for_its_target_and_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a run killed mid-copy leaves behind: ``.<name>.tmp-<pid>-<6 hex>``, which
    ``count`` skips."""
    seen: list[str] = []
    real = os.replace

    def spy(src: Path, dst: Path) -> None:
        seen.append(Path(src).name)
        real(src, dst)

    monkeypatch.setattr(artifacts.os, "replace", spy)
    source = tmp_path / "a.txt"
    source.write_bytes(b"abc")
    digest = sha(b"abc")
    ArtifactStore(tmp_path / "wh").put(digest, [source])
    assert len(seen) == 1
    assert re.fullmatch(rf"\.{digest[2:]}\.tmp-{os.getpid()}-[0-9a-f]{{6}}", seen[0])
