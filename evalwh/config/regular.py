"""Opening a file evalwh reads on a config's word: a regular file only, its size known first.

A path in ``files:``, a prompt part, a ``file://`` column or a cases file may name
``/dev/zero``, a FIFO nobody writes to, or a 10 GB sparse file: reading any of them hangs or
takes minutes before a later limit refuses it. :func:`open_regular` opens without blocking
(``O_NONBLOCK``: opening a FIFO returns at once), asks the open descriptor what it is
(``fstat``, so a file swapped after a check is still the one judged) and refuses everything
but a regular file, and a regular file over ``limit`` bytes, before one byte is read::

    try:
        fh, st = open_regular(path, limit=MAX_ATTACHMENT_BYTES)
    except NotRegular as exc:
        raise ConfigError(f"cannot read {path}: {exc}", file=..., where=...)
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO


class NotRegular(OSError):
    """The path is not a regular file, or is over the size limit; ``str()`` says which."""


def what_it_is(mode: int) -> str:
    """What a file that is not a regular file is, in words (for the error)."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def open_regular(path: Path, *, limit: int | None = None) -> tuple[BinaryIO, os.stat_result]:
    """``path`` opened for binary reading and its stat, or NotRegular (a device, a FIFO, a
    socket, a folder, or more than ``limit`` bytes); other OSErrors pass through."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(f"it is {what_it_is(st.st_mode)}, not a regular file")
        if limit is not None and st.st_size > limit:
            raise NotRegular(f"it is {st.st_size:,} bytes, over the limit of {limit:,}")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb"), st
    except BaseException:
        os.close(fd)
        raise
