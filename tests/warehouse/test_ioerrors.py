"""Storage failures (evalwh/warehouse/ioerrors.py): which errors count as I/O failures, and
the message a user sees for one: the path the OS failed on, its cause in the OS's own words,
the fix for that cause, and that the rows flushed so far are kept."""

from __future__ import annotations

import errno
from pathlib import Path

import duckdb
import pytest

from evalwh.warehouse.ioerrors import StorageError, io_guard, is_io_error, storage_error

TAIL = " (rows flushed so far are kept; `evalwh run CONFIG --resume RUN` continues a run)"


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


@pytest.mark.parametrize(
    "error",
    [
        duckdb.IOException("IO Error: could not read block 7 of the file"),
        duckdb.FatalException("FATAL Error: the database was invalidated"),
        duckdb.PermissionException("Permission Error: the file is not ours"),
    ],
)
def test_duckdb_io_fatal_and_permission_errors_are_io_errors_whatever_they_say(
    error: Exception,
) -> None:
    assert is_io_error(error) is True


def test_another_error_is_an_io_error_only_from_duckdb_and_naming_an_os_cause() -> None:
    disk = "No space left on device"
    assert is_io_error(duckdb.InvalidInputException(f"Invalid Input Error: {disk}")) is True
    assert is_io_error(duckdb.BinderException("Binder Error: no column q")) is False
    assert is_io_error(ValueError(disk)) is False


@pytest.mark.parametrize(
    "code", [errno.ENOSPC, errno.EACCES, errno.EROFS, errno.EISDIR, errno.EIO, errno.EEXIST]
)
def test_an_os_error_of_the_file_system_is_an_io_error(code: int) -> None:
    assert is_io_error(OSError(code, "cause")) is True


def test_an_os_error_without_an_errno_is_an_io_error() -> None:
    assert is_io_error(OSError("no errno")) is True


@pytest.mark.parametrize("code", [errno.ENOENT, errno.EINTR, errno.ECONNREFUSED])
def test_other_os_errors_are_not_io_errors(code: int) -> None:
    assert is_io_error(OSError(code, "cause")) is False


def test_a_full_disk_becomes_a_storage_error_and_a_missing_file_does_not(tmp_path: Path) -> None:
    with (
        pytest.raises(StorageError, match="No space left on device"),
        io_guard(tmp_path / "w.duckdb", "write the warehouse"),
    ):
        raise OSError(errno.ENOSPC, "No space left on device")
    with pytest.raises(FileNotFoundError), io_guard(tmp_path / "w.duckdb", "write the warehouse"):
        raise FileNotFoundError(errno.ENOENT, "No such file or directory")
