"""Tiny real media files for tests, generated (no binary fixtures in the repository).

PNG (zlib + struct, decodable), GIF, a baseline-JPEG header (SOI, JFIF, SOF0, EOI: what a
sniffer and a size reader look at), a WAV (the ``wave`` module), a one-page PDF written by
hand (valid xref offsets), an MP4 (``ftyp`` + ``mdat`` boxes) and a WebM (EBML header with
DocType ``webm``).
"""

from __future__ import annotations

import io
import struct
import wave
import zlib


def png(width: int = 4, height: int = 3, color: tuple[int, int, int] = (255, 0, 0)) -> bytes:
    raw = b"".join(b"\x00" + bytes(color) * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data)
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def jpeg(width: int = 640, height: int = 480) -> bytes:
    app0 = b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof0 = struct.pack(">BHHB", 8, height, width, 3) + b"\x01\x11\x00\x02\x11\x01\x03\x11\x01"
    return (
        b"\xff\xd8"
        + b"\xff\xe0"
        + struct.pack(">H", len(app0) + 2)
        + app0
        + b"\xff\xc0"
        + struct.pack(">H", len(sof0) + 2)
        + sof0
        + b"\xff\xd9"
    )


def gif(width: int = 2, height: int = 2) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00\x00\x00;"


def wav(seconds: float = 1.0, rate: int = 8000) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"\x00\x00" * int(rate * seconds))
    return out.getvalue()


def pdf(text: str = "Hello") -> bytes:
    stream = f"BT /F1 24 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = b"%PDF-1.4\n"
    offsets = []
    for n, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{n} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    )
    return out


def mp4() -> bytes:
    ftyp = b"isom\x00\x00\x02\x00isomiso2mp41"
    mdat = b"\x00" * 16
    return (
        struct.pack(">I", 8 + len(ftyp))
        + b"ftyp"
        + ftyp
        + struct.pack(">I", 8 + len(mdat))
        + b"mdat"
        + mdat
    )


def webm() -> bytes:
    doctype = b"\x42\x82\x84webm"  # DocType, size 4, "webm"
    return b"\x1a\x45\xdf\xa3" + bytes([0x80 | len(doctype)]) + doctype + b"\x18\x53\x80\x67\x80"
