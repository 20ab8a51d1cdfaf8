"""Reading the JSON members of an inspect_ai ``.eval`` log: a zip archive whose members are
stored, deflated or zstd-compressed (method 93, what inspect_ai 0.3.x writes).

Python's ``zipfile`` (before 3.14) cannot decompress zstd, so a zstd member's bytes are read
from its local header and decompressed with pyarrow's zstd codec (pyarrow is already a
dependency). Untrusted archives are bounded: the number of members, each member's declared
size and the total, checked before anything is decompressed.
"""

from __future__ import annotations

import json
import struct
import zipfile
from pathlib import Path
from typing import Any

from evalwh.errors import ConfigError

ZSTD = 93
MAX_MEMBERS = 100_000
MAX_MEMBER_BYTES = 256 * 1024 * 1024
MAX_TOTAL_BYTES = 2 * 1024 * 1024 * 1024
LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")


class EvalZip:
    """An open ``.eval`` archive; :meth:`json` returns one member parsed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.zip = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as exc:
            raise self._error(f"not a readable .eval archive ({exc})") from None
        infos = self.zip.infolist()
        if len(infos) > MAX_MEMBERS:
            raise self._error(f"{len(infos):,} members, over the limit of {MAX_MEMBERS:,}")
        if sum(i.file_size for i in infos) > MAX_TOTAL_BYTES:
            raise self._error(f"declares over {MAX_TOTAL_BYTES:,} bytes uncompressed")
        self.names = [i.filename for i in infos]

    def _error(self, message: str) -> ConfigError:
        return ConfigError(
            message, file=str(self.path), fix="pass an .eval log written by inspect_ai"
        )

    def close(self) -> None:
        self.zip.close()

    def __enter__(self) -> EvalZip:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def read(self, name: str) -> bytes:
        info = self.zip.getinfo(name)
        if info.file_size > MAX_MEMBER_BYTES:
            raise self._error(f"member {name} declares {info.file_size:,} bytes, over the limit")
        if info.compress_type != ZSTD:
            try:
                with self.zip.open(info) as fh:
                    data = fh.read(MAX_MEMBER_BYTES + 1)
            except (zipfile.BadZipFile, NotImplementedError, OSError) as exc:
                raise self._error(f"member {name} cannot be read ({exc})") from None
            return data
        return self._zstd(info)

    def _zstd(self, info: zipfile.ZipInfo) -> bytes:
        import pyarrow as pa

        with self.path.open("rb") as fh:
            fh.seek(info.header_offset)
            header = fh.read(LOCAL_HEADER.size)
            if len(header) != LOCAL_HEADER.size or header[:4] != b"PK\x03\x04":
                raise self._error(f"member {info.filename} has no local header")
            fields = LOCAL_HEADER.unpack(header)
            fh.seek(info.header_offset + LOCAL_HEADER.size + fields[9] + fields[10])
            raw = fh.read(info.compress_size)
        try:
            out = pa.Codec("zstd").decompress(raw, decompressed_size=info.file_size)
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise self._error(f"member {info.filename} is not valid zstd ({exc})") from None
        return bytes(out.to_pybytes())

    def json(self, name: str) -> Any:
        try:
            return json.loads(self.read(name))
        except ValueError as exc:
            raise self._error(f"member {name} is not JSON ({exc})") from None
