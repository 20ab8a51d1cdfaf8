"""File-system failures as clear errors: the path, the cause and what to do, never a traceback.

A full disk, a permission problem, a read-only file system or a folder where the warehouse
file should be all surface from DuckDB or the OS deep inside a flush or an export. ``io_guard``
turns them into a :class:`StorageError` (exit code 2) that names the path and the cause, e.g.::

    cannot write the warehouse .evalwh/warehouse.duckdb: No space left on device
      fix: free space on that file system (rows flushed so far are kept; resume the run)
"""

from __future__ import annotations

import errno
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from evalwh.errors import WarehouseError

CAUSES = {
    "No space left on device": "free space on that file system",
    "Disk quota exceeded": "free space or raise the quota",
    "File too large": "the file hit a size limit (ulimit -f); raise it",
    "Permission denied": "fix the permissions, or point -o/--output-dir at a folder you can write",
    "Read-only file system": "point -o/--output-dir at a writable folder",
    "Is a directory": "a folder sits where the file should be: move it, or point "
    "-o/--output-dir elsewhere",
    "Not a directory": "a file sits where a folder should be: move it, or point "
    "-o/--output-dir elsewhere",
    "Operation not permitted": "fix the permissions, or point -o/--output-dir elsewhere",
}
_CAUSE = re.compile("|".join(re.escape(c) for c in CAUSES), re.IGNORECASE)
_IO_ERRNOS = {
    errno.ENOSPC,
    errno.EDQUOT,
    errno.EFBIG,
    errno.EACCES,
    errno.EPERM,
    errno.EROFS,
    errno.EISDIR,
    errno.ENOTDIR,
    errno.EEXIST,
    errno.EIO,
}


class StorageError(WarehouseError):
    """A file or folder could not be read or written (exit code 2)."""


def cause_of(exc: BaseException) -> str | None:
    """The operating system's reason in an OSError or a DuckDB I/O error, if there is one."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    match = _CAUSE.search(str(exc))
    return match.group(0) if match else None


def is_io_error(exc: BaseException) -> bool:
    import duckdb

    if isinstance(exc, OSError):
        return exc.errno in _IO_ERRNOS or exc.errno is None
    if isinstance(exc, (duckdb.IOException, duckdb.FatalException, duckdb.PermissionException)):
        return True
    return isinstance(exc, duckdb.Error) and cause_of(exc) is not None


def storage_error(path: Path | str, exc: BaseException, action: str) -> StorageError:
    cause = cause_of(exc)
    where = getattr(exc, "filename", None) or path
    fix = CAUSES.get(cause or "", "check the path and the file system")
    for known, text in CAUSES.items():  # DuckDB's wording may differ in case
        if cause and known.lower() == cause.lower():
            fix = text
    detail = cause or str(exc).splitlines()[0]
    return StorageError(
        f"cannot {action} {where}: {detail}\n  fix: {fix} (rows flushed so far are kept; "
        "`evalwh run CONFIG --resume RUN` continues a run)"
    )


@contextmanager
def io_guard(path: Path | str, action: str) -> Iterator[None]:
    """Re-raise OS and DuckDB I/O failures inside the block as a StorageError."""
    try:
        yield
    except WarehouseError:
        raise
    except Exception as exc:
        if is_io_error(exc):
            raise storage_error(path, exc, action) from None
        raise
