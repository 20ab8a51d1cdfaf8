"""Reading the JSON members of an inspect_ai ``.eval`` log: a zip archive whose members are
stored, deflated or zstd-compressed (method 93, what inspect_ai 0.3.x writes).

Python's ``zipfile`` (before 3.14) cannot decompress zstd, so a zstd member's bytes are read
from its local header and decompressed with pyarrow's zstd codec (pyarrow is already a
dependency). Untrusted archives are bounded twice: the number of members and each member's
declared size and the total are checked before anything is decompressed, and the bytes are
counted while decompressing (1 MB at a time), so a member that inflates past the size its
header declares (a lying header) or past the limits is refused as soon as it does, never held
whole.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalwh.errors import ConfigError
from evalwh.importers.common import load_json

ZSTD = 93
MAX_MEMBERS = 100_000
MAX_MEMBER_BYTES = 64 * 1024 * 1024
MAX_TOTAL_BYTES = 512 * 1024 * 1024
CHUNK = 1024 * 1024
LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")


class EvalZip:
    """An open ``.eval`` archive; :meth:`json` returns one member parsed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.inflated = 0  # bytes decompressed so far, every member counted
        try:
            self.zip = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as exc:
            raise self._error(f"not a readable .eval archive ({exc})") from None
        infos = self.zip.infolist()
        if len(infos) > MAX_MEMBERS:
            raise self._error(f"{len(infos):,} members, over the limit of {MAX_MEMBERS:,}")
        declared = sum(i.file_size for i in infos)
        if declared > MAX_TOTAL_BYTES:
            raise self._error(
                f"declares {declared:,} bytes uncompressed, over the limit of {MAX_TOTAL_BYTES:,}"
            )
        self.names = [i.filename for i in infos]

    def _error(self, message: str, member: str | None = None) -> ConfigError:
        return ConfigError(
            message,
            file=str(self.path),
            where=f"member {member}" if member else None,
            fix="pass an .eval log written by inspect_ai",
        )

    def close(self) -> None:
        self.zip.close()

    def __enter__(self) -> EvalZip:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def read(self, name: str) -> bytes:
        """A member's bytes, counted while decompressing against its declared size and the
        limits (per member and for the whole archive), and checked against its CRC."""
        info = self.zip.getinfo(name)
        if info.file_size > MAX_MEMBER_BYTES:
            raise self._error(
                f"declares {info.file_size:,} bytes, over the limit of {MAX_MEMBER_BYTES:,}", name
            )
        if info.flag_bits & 0x1:
            raise self._error("is encrypted", name)
        out = bytearray()
        crc = 0
        for chunk in self._chunks(info):
            out += chunk
            crc = zlib.crc32(chunk, crc)
            self.inflated += len(chunk)
            if len(out) > info.file_size:
                raise self._error(
                    f"inflates past the {info.file_size:,} bytes its header declares "
                    "(a lying header); refused",
                    name,
                )
            if self.inflated > MAX_TOTAL_BYTES:
                raise self._error(
                    f"the archive inflates past the limit of {MAX_TOTAL_BYTES:,} bytes", name
                )
        if len(out) != info.file_size or crc != info.CRC:
            raise self._error(
                f"holds {len(out):,} bytes, its header declares {info.file_size:,}"
                if len(out) != info.file_size
                else "fails its CRC check (a corrupt archive)",
                name,
            )
        return bytes(out)

    def _chunks(self, info: zipfile.ZipInfo) -> Iterator[bytes]:
        """The member decompressed, at most :data:`CHUNK` bytes at a time."""
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, ZSTD):
            yield from self._zipfile_chunks(info)  # bzip2, lzma: zipfile stops at the declared size
            return
        raw = self._raw(info)
        name = info.filename
        try:
            if info.compress_type == zipfile.ZIP_STORED:
                for at in range(0, len(raw), CHUNK):
                    yield raw[at : at + CHUNK]
            elif info.compress_type == zipfile.ZIP_DEFLATED:
                inflate = zlib.decompressobj(-15)
                for at in range(0, len(raw), CHUNK):
                    data = raw[at : at + CHUNK]
                    while data:
                        yield inflate.decompress(data, CHUNK)
                        data = inflate.unconsumed_tail
                yield inflate.flush()
            else:
                yield from self._zstd_chunks(raw, name)
        except zlib.error as exc:
            raise self._error(f"is not valid deflate data ({exc})", name) from None

    def _zipfile_chunks(self, info: zipfile.ZipInfo) -> Iterator[bytes]:
        try:
            with self.zip.open(info) as fh:
                while chunk := fh.read(CHUNK):
                    yield chunk
        except (zipfile.BadZipFile, NotImplementedError, OSError, EOFError) as exc:
            raise self._error(f"cannot be read ({exc})", info.filename) from None

    def _raw(self, info: zipfile.ZipInfo) -> bytes:
        with self.path.open("rb") as fh:
            fh.seek(info.header_offset)
            header = fh.read(LOCAL_HEADER.size)
            if len(header) != LOCAL_HEADER.size or header[:4] != b"PK\x03\x04":
                raise self._error("has no local header", info.filename)
            fields = LOCAL_HEADER.unpack(header)
            fh.seek(info.header_offset + LOCAL_HEADER.size + fields[9] + fields[10])
            return fh.read(info.compress_size)

    def _zstd_chunks(self, raw: bytes, name: str) -> Iterator[bytes]:
        import pyarrow as pa

        stream = pa.CompressedInputStream(pa.BufferReader(raw), "zstd")
        while True:
            try:
                chunk = stream.read(CHUNK)
            except (pa.ArrowException, OSError, ValueError) as exc:
                raise self._error(f"is not valid zstd ({exc})", name) from None
            if not chunk:
                return
            yield bytes(chunk)

    def json(self, name: str) -> Any:
        """A member parsed, every bad shape naming the file, the member and the place."""
        return load_json(self.read(name), self.path, f"member {name}")
