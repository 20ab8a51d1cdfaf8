"""Reading inspect_ai's .eval archives (evalwh/importers/evalzip.py): the size bounds refuse a
zip bomb before decompressing, a member inflating past its declared size (a lying header) is
refused while inflating, after at most one chunk more; zstd members are read with pyarrow's
codec."""

from __future__ import annotations

import io
import json
import zipfile
import zlib
from pathlib import Path

import pytest

from evalwh import api
from evalwh.errors import ConfigError
from evalwh.importers import evalzip
from tests.importers.test_inspectlog import header


def test_a_zip_bomb_is_refused_before_decompressing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attack: a small .eval whose members inflate to more than the import allows."""
    log = tmp_path / "bomb.eval"
    with zipfile.ZipFile(log, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("header.json", json.dumps(header()))
        z.writestr("samples/a_epoch_1.json", b"0" * 5000)
    monkeypatch.setattr(evalzip, "MAX_TOTAL_BYTES", 4999)
    with pytest.raises(ConfigError, match="uncompressed"):
        api.import_results("inspect", [log], warehouse=tmp_path / "w.duckdb")
    monkeypatch.setattr(evalzip, "MAX_TOTAL_BYTES", 10**9)
    monkeypatch.setattr(evalzip, "MAX_MEMBER_BYTES", 4999)
    with pytest.raises(ConfigError, match="over the limit"):
        api.import_results("inspect", [log], warehouse=tmp_path / "w.duckdb")


def test_zstd_members_are_read_with_the_pyarrow_codec(tmp_path: Path) -> None:
    """inspect_ai writes zstd members (method 93), which Python's zipfile cannot read."""
    import pyarrow as pa

    body = json.dumps(header()).encode()
    packed = pa.Codec("zstd").compress(body, asbytes=True)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as z:
        z.writestr("header.json", packed)
    raw = bytearray(buf.getvalue())
    path = tmp_path / "z.eval"
    path.write_bytes(as_zstd(raw, len(body), zlib.crc32(body)))
    with evalzip.EvalZip(path) as z:
        assert z.json("header.json")["eval"]["task"] == "t1"
    path.write_bytes(as_zstd(raw, len(body), zlib.crc32(body)).replace(packed[8:20], b"\x00" * 12))
    with pytest.raises(ConfigError, match=r"not valid zstd|not JSON"), evalzip.EvalZip(path) as z:
        z.json("header.json")


def as_zstd(zipped: bytes | bytearray, size: int, crc: int) -> bytes:
    """A one-member stored zip rewritten as zstd (method 93) of ``size`` bytes with ``crc``,
    in both headers (the local one and the central directory's)."""
    raw = bytearray(zipped)
    for sig, method_at, crc_at, size_at in (
        (b"PK\x03\x04", 8, 14, 22),
        (b"PK\x01\x02", 10, 16, 24),
    ):
        at = raw.index(sig)
        raw[at + method_at : at + method_at + 2] = (93).to_bytes(2, "little")
        raw[at + crc_at : at + crc_at + 4] = crc.to_bytes(4, "little")
        raw[at + size_at : at + size_at + 4] = size.to_bytes(4, "little")
    return bytes(raw)


def declare_size(zipped: bytes, size: int) -> bytes:
    """Every member of ``zipped`` declared ``size`` bytes uncompressed, in both headers."""
    raw = bytearray(zipped)
    for sig, size_at in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = raw.find(sig)
        while at != -1:
            raw[at + size_at : at + size_at + 4] = size.to_bytes(4, "little")
            at = raw.find(sig, at + 4)
    return bytes(raw)


def test_an_eval_declaring_four_250mb_members_is_refused_unread(tmp_path: Path) -> None:
    """The reported attack: a small .eval whose four members expand to 250 MB of JSON each
    (3.7 GB of memory and a traceback before). The default total limit refuses it from the
    declared sizes, before one byte is inflated."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("header.json", json.dumps(header()))
        for n in range(4):
            z.writestr(f"samples/{n}_epoch_1.json", b"[" + b"0," * 1000 + b"0]")
    log = tmp_path / "bomb.eval"
    log.write_bytes(declare_size(buf.getvalue(), 250 * 1024 * 1024))
    with pytest.raises(ConfigError, match="over the limit of") as info:
        api.import_results("inspect", [log], warehouse=tmp_path / "w.duckdb")
    assert str(log) in str(info.value)


@pytest.mark.parametrize("method", ["stored", "deflate", "zstd"])
def test_a_lying_zip_header_is_refused_while_inflating(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    """The attack: a member whose headers declare 1,000 bytes but which inflates to 8 MB.
    It is refused naming the file and the member after at most one chunk past the declared
    size, not inflated whole."""
    import pyarrow as pa

    monkeypatch.setattr(evalzip, "CHUNK", 64 * 1024)
    body = b"[" + b"0," * (4 * 1024 * 1024) + b"0]"
    buf = io.BytesIO()
    if method == "zstd":
        packed = pa.Codec("zstd").compress(body, asbytes=True)
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as z:
            z.writestr("samples/a_epoch_1.json", packed)
        zipped = as_zstd(buf.getvalue(), len(body), zlib.crc32(body))
    else:
        kind = zipfile.ZIP_STORED if method == "stored" else zipfile.ZIP_DEFLATED
        with zipfile.ZipFile(buf, "w", compression=kind) as z:
            z.writestr("samples/a_epoch_1.json", body)
        zipped = buf.getvalue()
    log = tmp_path / "liar.eval"
    log.write_bytes(declare_size(zipped, 1000))
    with evalzip.EvalZip(log) as z:
        with pytest.raises(ConfigError, match="lying header") as info:
            z.read("samples/a_epoch_1.json")
        assert z.inflated <= 1000 + evalzip.CHUNK
    assert str(log) in str(info.value) and "member samples/a_epoch_1.json" in str(info.value)


def test_an_archive_inflating_past_the_total_is_refused_while_inflating(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bytes are counted across members as they inflate, not only as declared."""
    log = tmp_path / "two.eval"
    with zipfile.ZipFile(log, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("a.json", b"0" * 3000)
        z.writestr("b.json", b"0" * 3000)
    with evalzip.EvalZip(log) as z:
        monkeypatch.setattr(evalzip, "MAX_TOTAL_BYTES", 5000)
        z.read("a.json")
        with pytest.raises(ConfigError, match=r"member b\.json: the archive inflates past"):
            z.read("b.json")


def test_a_corrupt_member_is_refused_by_its_crc(tmp_path: Path) -> None:
    log = tmp_path / "crc.eval"
    with zipfile.ZipFile(log, "w", compression=zipfile.ZIP_STORED) as z:
        z.writestr("a.json", b"[1, 2, 3]")
    log.write_bytes(log.read_bytes().replace(b"[1, 2, 3]", b"[1, 2, 4]"))
    with (
        evalzip.EvalZip(log) as z,
        pytest.raises(ConfigError, match=r"member a\.json: fails its CRC"),
    ):
        z.read("a.json")
