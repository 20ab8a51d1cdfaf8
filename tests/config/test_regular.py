"""Opening a file a config names (evalwh/config/regular.py): a regular file only, its size
from the open descriptor's stat before a byte is read."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from evalwh.config.regular import NotRegular, open_regular


@pytest.mark.timeout(30)
def test_dev_zero_is_refused_as_a_device() -> None:
    with pytest.raises(NotRegular, match=r"^it is a device, not a regular file$"):
        open_regular(Path("/dev/zero"))


@pytest.mark.timeout(30)
def test_fifo_with_no_writer_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(NotRegular, match=r"^it is a FIFO \(named pipe\), not a regular file$"):
        open_regular(tmp_path / "pipe")


def test_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(NotRegular, match=r"^it is a folder, not a regular file$"):
        open_regular(tmp_path)


def test_socket_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as server:
        try:
            server.bind(str(path))
        except OSError:  # a tmp path too long for a socket address
            pytest.skip("cannot bind a unix socket here")
        with pytest.raises(OSError):  # opening a socket fails (ENXIO) or is refused
            open_regular(path)


def test_sparse_file_over_the_limit_is_refused_by_its_size(tmp_path: Path) -> None:
    path = tmp_path / "big"
    with path.open("wb") as fh:
        fh.truncate(10 * 1024**3)  # 10 GB that take no disk
    with pytest.raises(NotRegular, match=r"^it is 10,737,418,240 bytes, over the limit of 1,024$"):
        open_regular(path, limit=1024)


def test_regular_file_at_the_limit_is_opened_blocking(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"abcd")
    fh, st = open_regular(path, limit=4)
    with fh:
        assert (fh.read(), st.st_size) == (b"abcd", 4)
        assert os.get_blocking(fh.fileno())


def test_symlink_to_a_device_is_judged_by_its_target(tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to("/dev/zero")
    with pytest.raises(NotRegular, match="a device"):
        open_regular(tmp_path / "link")
