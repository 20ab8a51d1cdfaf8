"""Reading inspect_ai's .eval archives (evalwh/importers/evalzip.py): the size bounds refuse a
zip bomb before decompressing; zstd members are read with pyarrow's codec."""

from __future__ import annotations

import io
import json
import zipfile
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
    # rewrite the member as zstd: method 93 and the true size, in both headers
    for sig, method_at, size_at in ((b"PK\x03\x04", 8, 22), (b"PK\x01\x02", 10, 24)):
        at = raw.index(sig)
        raw[at + method_at : at + method_at + 2] = (93).to_bytes(2, "little")
        raw[at + size_at : at + size_at + 4] = len(body).to_bytes(4, "little")
    path = tmp_path / "z.eval"
    path.write_bytes(bytes(raw))
    with evalzip.EvalZip(path) as z:
        assert z.json("header.json")["eval"]["task"] == "t1"
    path.write_bytes(bytes(raw).replace(packed[8:20], b"\x00" * 12))
    with pytest.raises(ConfigError, match=r"not valid zstd|not JSON"), evalzip.EvalZip(path) as z:
        z.json("header.json")
