"""Case files and prompt attachments (evalwh/config/attachments.py): the media type read from
a file's first bytes (an MP3 from its frame header, not its name), width and height from
image headers (PNG, GIF, JPEG, WebP, sizes read unsigned), a WAV's duration, the file name a
media type gives, a missing attachment's place and fix, and reading a loaded file back by its
hash (an edited or vanished file is named)."""

from __future__ import annotations

import hashlib
import mimetypes
import os
import struct
import wave
from pathlib import Path
from typing import Any

import pytest

from evalwh.config import attachments
from evalwh.config.attachments import (
    AttachmentChanged,
    _jpeg_size,
    _wav_seconds,
    case_files,
    filename_for,
    load,
    read,
    remember,
    sniff,
    split_file_columns,
)
from evalwh.errors import ConfigError
from tests.builders import BASE, expect_error
from tests.conftest import write
from tests.fakes import media


def info_of(tmp_path: Path, name: str, data: bytes) -> dict[str, Any]:
    path = tmp_path / name
    path.write_bytes(data)
    return dict(load(path, name).info)


def write_bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def png(width: int, height: int) -> bytes:
    ihdr = struct.pack(">II", width, height) + bytes([8, 6, 0, 0, 0])
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr + b"\0" * 4 + b"\0" * 32


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00\x00\x00" + b"\x2c" + b"\0" * 40


def jpeg_with_ihdr_in_app1(width: int, height: int) -> bytes:
    """A JPEG whose APP1 segment happens to hold the bytes ``IHDR`` at offset 12 (where a PNG
    has its IHDR chunk), then its SOF0 frame header with the real size."""
    app1 = b"\xff\xe1" + struct.pack(">H", 16) + b"Exif\0\0" + b"IHDR" + b"\x7f\x00\x00\x01"
    sof0 = b"\xff\xc0" + struct.pack(">HBHHB", 17, 8, height, width, 3) + b"\x01\x22\x00" * 3
    return b"\xff\xd8" + app1 + sof0 + b"\0" * 32 + b"\xff\xd9"


def riff_webp(chunk: bytes, payload: bytes) -> bytes:
    body = b"WEBP" + chunk + struct.pack("<I", len(payload)) + payload
    return b"RIFF" + struct.pack("<I", len(body)) + body


def webp_vp8x(width: int, height: int) -> bytes:
    """An extended WebP: its VP8X chunk, then (as always) the chunk of the image itself."""
    vp8x = b"\x10\0\0\0" + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    image = b"VP8L" + struct.pack("<I", 5) + b"\x2f" + b"\0" * 4 + b"\0"
    body = b"WEBP" + b"VP8X" + struct.pack("<I", 10) + vp8x + image
    return b"RIFF" + struct.pack("<I", len(body)) + body


def webp_vp8(width: int, height: int) -> bytes:
    frame = b"\x50\x01\x00" + b"\x9d\x01\x2a" + struct.pack("<HH", width, height) + b"\0" * 20
    return riff_webp(b"VP8 ", frame)


def test_a_png_reports_its_width_and_height(tmp_path: Path) -> None:
    assert info_of(tmp_path, "a.png", png(640, 480)) == {"width": 640, "height": 480}


def test_a_png_header_is_read_unsigned_never_as_a_negative_size(tmp_path: Path) -> None:
    # a header with the top bit set (a broken or hostile file) is 2**31 wide, not -2**31
    info = info_of(tmp_path, "big.png", png(2**31, 2**31 + 5))
    assert info == {"width": 2**31, "height": 2**31 + 5}


def test_a_gif_wider_than_32767_pixels_keeps_its_size(tmp_path: Path) -> None:
    # GIF sizes are unsigned 16-bit: 40000 x 50000 is a valid GIF
    assert info_of(tmp_path, "wide.gif", gif(40000, 50000)) == {"width": 40000, "height": 50000}


def test_a_jpeg_is_sized_from_its_frame_header_even_with_ihdr_bytes_in_it(tmp_path: Path) -> None:
    data = jpeg_with_ihdr_in_app1(800, 600)
    assert load(write_bytes(tmp_path / "photo.jpg", data), "photo").media_type == "image/jpeg"
    assert info_of(tmp_path, "photo2.jpg", data) == {"width": 800, "height": 600}


def test_an_extended_webp_reports_its_size_not_the_next_chunks_bytes(tmp_path: Path) -> None:
    info = info_of(tmp_path, "x.webp", webp_vp8x(1024, 768))
    assert info == {"width": 1024, "height": 768}


def test_a_lossy_webp_reports_its_size(tmp_path: Path) -> None:
    assert info_of(tmp_path, "lossy.webp", webp_vp8(320, 200)) == {"width": 320, "height": 200}


# Bitrate (kbps) and sample rate (Hz) tables of MPEG audio layer III, by version bits
# (3: MPEG-1, 2: MPEG-2, 0: MPEG-2.5; 1 is reserved).
BITRATES = {
    3: (0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320),
    2: (0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),
    0: (0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),
}


RATES = {3: (44100, 48000, 32000), 2: (22050, 24000, 16000), 0: (11025, 12000, 8000)}


def header(version: int, bitrate: int, rate: int, *, padding: int = 0, layer: int = 1) -> bytes:
    """The 4 bytes of an MPEG audio frame header, bit by bit (layer bits 1 = layer III;
    protection bit 1 = no CRC; channel mode 0 = stereo)."""
    b1 = 0xE0 | (version << 3) | (layer << 1) | 1
    b2 = (bitrate << 4) | (rate << 2) | (padding << 1)
    return bytes([0xFF, b1, b2, 0x00])


def frame(version: int, bitrate: int, rate: int, *, padding: int = 0) -> bytes:
    """One whole layer III frame: its header and a silent body of the length it announces."""
    kbps, hz = BITRATES[version][bitrate], RATES[version][rate]
    per_frame = 144 if version == 3 else 72  # samples per frame / 8
    length = per_frame * kbps * 1000 // hz + padding
    return header(version, bitrate, rate, padding=padding) + b"\x00" * (length - 4)


def typed(tmp_path: Path, data: bytes) -> str:
    """The media type a case file with these bytes gets (no suffix: the content decides)."""
    path = tmp_path / f"clip{len(list(tmp_path.iterdir()))}"
    path.write_bytes(data)
    return load(path, "clip").media_type


@pytest.mark.parametrize(
    ("version", "bitrate", "rate", "padding"),
    [
        (3, 9, 0, 0),  # MPEG-1, 128 kbps, 44.1 kHz: the common MP3
        (3, 9, 0, 1),  # the same with the padding bit set
        (3, 9, 2, 0),  # MPEG-1, 128 kbps, 32 kHz
        (3, 8, 1, 1),  # MPEG-1, 112 kbps, 48 kHz, padded
        (3, 1, 0, 0),  # MPEG-1 at the lowest bitrate (32 kbps)
        (3, 14, 1, 0),  # MPEG-1 at the highest bitrate (320 kbps)
        (2, 8, 0, 0),  # MPEG-2, 64 kbps, 22.05 kHz
        (2, 1, 2, 1),  # MPEG-2, 8 kbps, 16 kHz, padded
        (0, 4, 1, 0),  # MPEG-2.5, 32 kbps, 12 kHz
        (0, 2, 2, 1),  # MPEG-2.5, 16 kbps, 8 kHz, padded
    ],
)
def test_an_mp3_without_a_suffix_is_typed_audio_mpeg_from_its_frames(
    tmp_path: Path, version: int, bitrate: int, rate: int, padding: int
) -> None:
    """A file of layer III frames (MPEG-1, 2 or 2.5, any real bitrate and sample rate, padded
    or not) is sent as audio/mpeg, an audio part named ``.mp3``, whatever its name says."""
    data = frame(version, bitrate, rate, padding=padding) * 3
    path = tmp_path / "recording"
    path.write_bytes(data)
    attachment = load(path, "recording")
    assert attachment.media_type == "audio/mpeg"
    assert attachment.kind == "audio"
    assert attachment.size == len(data)
    assert filename_for("recording", attachment.media_type) == "recording.mp3"


def test_a_file_cut_right_after_an_mp3_frame_header_is_still_an_mp3(tmp_path: Path) -> None:
    """Three bytes hold the sync, version, layer, bitrate and sample rate: enough to type it."""
    assert typed(tmp_path, header(3, 9, 0)[:3]) == "audio/mpeg"
    assert typed(tmp_path, header(2, 8, 0)[:3]) == "audio/mpeg"


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(header(1, 9, 0) + b"\x00" * 400, id="reserved version (01)"),
        pytest.param(header(1, 8, 1) + b"\x00" * 400, id="reserved version, 48 kHz"),
        pytest.param(header(3, 9, 3) + b"\x00" * 400, id="reserved sample rate, odd bitrate"),
        pytest.param(header(3, 8, 3) + b"\x00" * 400, id="reserved sample rate, even bitrate"),
        pytest.param(header(2, 4, 3) + b"\x00" * 400, id="MPEG-2 reserved sample rate"),
        pytest.param(header(3, 0, 0) + b"\x00" * 400, id="free-format bitrate (0)"),
        pytest.param(header(3, 15, 0) + b"\x00" * 400, id="bad bitrate (15)"),
        pytest.param(header(3, 9, 0, layer=2) + b"\x00" * 400, id="layer II"),
        pytest.param(header(3, 9, 0, layer=3) + b"\x00" * 400, id="layer I"),
        pytest.param(b"\x00" + header(3, 9, 0)[1:] + b"\x00" * 400, id="first sync byte 00"),
        pytest.param(b"\xff\x1b\x90\x00" + b"\x00" * 400, id="sync bits of byte 2 clear"),
        pytest.param(b"\xff\xfeh\x00i\x00", id="UTF-16 BOM"),
    ],
)
def test_bytes_that_are_not_an_mp3_frame_header_are_not_typed_audio_mpeg(
    tmp_path: Path, data: bytes
) -> None:
    """Reserved versions, sample rates and bitrates, other layers and a broken sync word are
    not MP3: such a file (no suffix, not UTF-8) is sent as application/octet-stream."""
    assert typed(tmp_path, data) == "application/octet-stream"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", "text/plain"),  # an empty file decodes as (empty) UTF-8 text
        (b"\xff", "application/octet-stream"),
        (b"\xff\xfb", "application/octet-stream"),  # the first two bytes of an MP3 frame
    ],
)
def test_a_file_shorter_than_a_frame_header_is_typed_not_crashed_on(
    tmp_path: Path, data: bytes, expected: str
) -> None:
    """A file of fewer than 3 bytes cannot hold an MP3 frame header: it is typed, no crash."""
    assert typed(tmp_path, data) == expected


def _segment(marker: int, body: bytes) -> bytes:
    return bytes([0xFF, marker]) + (len(body) + 2).to_bytes(2, "big") + body


def _sof(marker: int, width: int, height: int) -> bytes:
    return _segment(marker, b"\x08" + struct.pack(">HH", height, width) + b"\x03\x01\x22\x00")


def test_jpeg_size_skips_long_segments_and_tables_then_reads_the_frame() -> None:
    """A 300-byte APP1 (EXIF) segment, the huffman/arithmetic tables (C4, C8, CC) and a
    restart marker (D0) are skipped; the frame header gives width and height."""
    head = (
        b"\xff\xd8"
        + _segment(0xE1, b"E" * 298)
        + _segment(0xC4, b"\x08\x00\x05\x00\x07\x00")
        + _segment(0xC8, b"\x08\x00\x05\x00\x07\x00")
        + _segment(0xCC, b"\x08\x00\x05\x00\x07\x00")
        + _segment(0xD0, b"\x08\x00\x05\x00\x07\x00")
        + _sof(0xC0, 640, 480)
    )
    assert _jpeg_size(head) == (640, 480)


@pytest.mark.parametrize("marker", [0xC1, 0xC5, 0xC9, 0xCD, 0xCF])
def test_every_jpeg_frame_type_gives_the_size(marker: int) -> None:
    assert _jpeg_size(b"\xff\xd8" + _sof(marker, 33, 44)) == (33, 44)


def test_jpeg_width_above_32767_is_not_negative() -> None:
    assert _jpeg_size(b"\xff\xd8" + _sof(0xC0, 40000, 50000)) == (40000, 50000)


def test_jpeg_frame_header_exactly_at_the_end_of_what_was_read() -> None:
    """The frame's size is read when its ten bytes are there, and not when only nine are."""
    sof = _sof(0xC2, 120, 90)
    assert _jpeg_size(b"\xff\xd8" + sof[:10]) == (120, 90)
    assert _jpeg_size(b"\xff\xd8" + sof[:9]) is None


def test_jpeg_with_no_frame_header_has_no_size() -> None:
    assert _jpeg_size(b"\xff\xd8" + _segment(0xE0, b"JFIF\0" + b"\0" * 9)) is None


def _wav(path: Path, frames: int, rate: int = 8000) -> Path:
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(b"\0\0" * frames)
    return path


def _chunk(name: bytes, body: bytes, length: int | None = None) -> bytes:
    size = len(body) if length is None else length
    return name + size.to_bytes(4, "little") + body + (b"\0" if len(body) % 2 else b"")


def _fmt(byte_rate: int) -> bytes:
    return _chunk(b"fmt ", struct.pack("<HHIIHH", 1, 1, byte_rate, byte_rate, 1, 8))


def _riff(*chunks: bytes) -> bytes:
    body = b"WAVE" + b"".join(chunks)
    return b"RIFF" + len(body).to_bytes(4, "little") + body


def test_wav_duration_of_real_files(tmp_path: Path) -> None:
    """A one-second WAV lasts 1.0 s; an empty one (the header only) lasts 0.0 s."""
    one = load(_wav(tmp_path / "one.wav", 8000), "one")
    assert (one.media_type, one.info) == ("audio/wav", {"seconds": 1.0})
    empty = load(_wav(tmp_path / "empty.wav", 0), "empty")
    assert (empty.media_type, empty.info) == ("audio/wav", {"seconds": 0.0})


def test_wav_duration_of_a_truncated_file_counts_the_bytes_present() -> None:
    """A data chunk that claims more bytes than the file holds: the bytes present count."""
    head = _riff(_fmt(100), _chunk(b"data", b"", length=16000))
    assert _wav_seconds(head, len(head) + 150) == 1.5


def test_wav_duration_skips_an_odd_sized_chunk_and_its_pad_byte() -> None:
    head = _riff(_fmt(100), _chunk(b"LIST", b"abc"), _chunk(b"data", b"\0" * 50))
    assert _wav_seconds(head, len(head)) == 0.5


def test_wav_header_cut_inside_the_data_chunk_header_gives_no_duration() -> None:
    head = _riff(_fmt(100)) + b"data\x10\x00"
    assert _wav_seconds(head, len(head)) is None


def test_wav_fmt_chunk_without_a_byte_rate_gives_no_duration() -> None:
    """A later fmt chunk whose byte rate lies at the very end of the header (length 0, then
    an empty data chunk) resets the rate: no duration is claimed."""
    head = _riff(_fmt(100), _chunk(b"fmt ", b""), _chunk(b"data", b""))
    assert _wav_seconds(head, len(head)) is None


def test_missing_attachment_says_where_it_is_relative_to(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path / "nope.png", "photo", file="eval.yaml", where="cases[0].files.photo")
    error = caught.value
    assert error.file == "eval.yaml"
    assert error.where == "cases[0].files.photo"
    assert error.fix == (
        "check the path; it is relative to the config's folder (a file:// value in a "
        "cases file: to that file's folder)"
    )


def test_filename_for_adds_the_media_types_suffix_once() -> None:
    assert filename_for("photo.jpg", "image/jpeg") == "photo.jpg"
    assert filename_for("photo", "image/jpeg") == "photo.jpg"
    assert filename_for("data", "application/json") == "data.json"  # from mimetypes
    assert filename_for("blob", "application/x-evalwh-unknown") == "blob"


def _loaded(tmp_path: Path, name: str, content: bytes) -> tuple[Path, str]:
    path = tmp_path / name
    path.write_bytes(content)
    load(path, name)
    return path, hashlib.sha256(content).hexdigest()


def test_read_of_a_hash_never_loaded_says_so() -> None:
    sha = hashlib.sha256(b"never loaded in this test run").hexdigest()
    with pytest.raises(AttachmentChanged) as caught:
        read(sha)
    assert str(caught.value) == f"no file with SHA-256 {sha[:12]}... was loaded in this run"


def test_read_of_an_edited_file_says_it_changed(tmp_path: Path) -> None:
    path, sha = _loaded(tmp_path, "edited.txt", b"edited file, first version")
    path.write_bytes(b"second version")
    with pytest.raises(AttachmentChanged) as caught:
        read(sha)
    assert str(caught.value) == (
        f"{path} changed after the run was planned (its SHA-256 is no longer "
        f"{sha[:12]}...); run again to use the new content"
    )


def test_read_skips_a_place_that_is_gone_and_reports_it_when_none_is_left(
    tmp_path: Path,
) -> None:
    path, sha = _loaded(tmp_path, "kept.txt", b"kept file: read from its second place")
    gone = tmp_path / "store" / "gone.bin"
    remember(sha, gone)  # the artifact store's copy first, but it is missing
    assert read(sha) == b"kept file: read from its second place"
    path.unlink()
    with pytest.raises(AttachmentChanged) as caught:
        read(sha)
    assert str(caught.value) == f"cannot read {gone}: No such file or directory"


def test_missing_attachment_is_a_validation_error(tmp_path: Path) -> None:
    write(
        tmp_path / "p.yaml",
        "messages:\n  - role: user\n    content:\n      - {type: image, path: gone.png}\n",
    )
    cfg = write(
        tmp_path / "eval.yaml",
        BASE.replace(
            '    messages:\n      - role: user\n        content: "{{ question }}"\n',
            "    prompt: p.yaml\n",
        ),
    )
    expect_error(cfg, "p.yaml", "cannot read the attached file", "gone.png")


CONFINED_FIX = (
    "a cases file may only name files under the folder of eval.yaml: copy or "
    "move the file there (eval.yaml's own files: may name any path)"
)


UNREADABLE_FIX = (
    "check the path; it is relative to the config's folder (a file:// value in a "
    "cases file: to that file's folder)"
)


def typed_named(tmp_path: Path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return load(path, name).media_type


def test_an_ogg_file_is_typed_audio_ogg_from_its_capture_pattern(tmp_path: Path) -> None:
    ogg = b"OggS\x00\x02" + b"\x00" * 20 + b"\x01\x1evorbis"
    assert sniff(ogg) == "audio/ogg"
    assert typed_named(tmp_path, "clip", ogg) == "audio/ogg"  # no suffix: the content decides
    assert sniff(b"oggs\x00\x02" + b"\x00" * 20) is None  # the pattern is case-sensitive
    assert sniff(b"OGGS\x00\x02" + b"\x00" * 20) is None


def test_a_flac_file_is_typed_audio_flac_from_its_marker(tmp_path: Path) -> None:
    flac = b"fLaC\x00\x00\x00\x22" + b"\x10\x00" * 17
    assert sniff(flac) == "audio/flac"
    assert typed_named(tmp_path, "song", flac) == "audio/flac"
    for almost in (b"flac", b"FLAC"):
        assert sniff(almost + b"\x00\x00\x00\x22") is None


def test_a_quicktime_movie_is_typed_video_quicktime_from_its_brand(tmp_path: Path) -> None:
    # ftyp box: size, "ftyp", major brand "qt  ", minor version, compatible brands
    mov = struct.pack(">I", 20) + b"ftypqt  \x00\x00\x02\x00qt  " + b"\x00\x00\x00\x08wide"
    assert sniff(mov) == "video/quicktime"
    assert typed_named(tmp_path, "movie", mov) == "video/quicktime"
    # other brands are MP4 video; an upper-case "QT  " is not QuickTime's brand
    assert sniff(media.mp4()) == "video/mp4"
    assert sniff(struct.pack(">I", 20) + b"ftypQT  \x00\x00\x02\x00QT  ") == "video/mp4"


def test_webm_is_told_from_matroska_by_a_doctype_within_the_first_64_bytes() -> None:
    ebml = b"\x1a\x45\xdf\xa3"
    assert sniff(media.webm()) == "video/webm"
    # "webm" ending at byte 64 is in the header the sniffer reads; one byte later is not
    ends_at_64 = ebml + b"\x00" * (60 - len(ebml)) + b"webm"
    assert len(ends_at_64) == 64
    assert sniff(ends_at_64) == "video/webm"
    assert sniff(ebml + b"\x00" * (61 - len(ebml)) + b"webm") == "video/x-matroska"


def test_a_riff_file_is_a_wav_only_with_the_wave_form_type(tmp_path: Path) -> None:
    assert sniff(media.wav(0.01)) == "audio/wav"
    avi = b"RIFF\xf4\x01\x00\x00AVI LIST" + b"\x00" * 24  # size 500: \xf4 is not UTF-8
    assert sniff(avi) is None  # an AVI is RIFF, not WAVE
    # then the suffix decides, not the RIFF prefix
    assert typed_named(tmp_path, "movie.avi", avi) == mimetypes.guess_type("movie.avi")[0]
    assert typed_named(tmp_path, "movie", avi) == "application/octet-stream"
    rifx = b"RIFX\x24\x00\x00\x00WAVEfmt " + b"\x00" * 24
    assert sniff(rifx) is None  # WAVE without RIFF (big-endian RIFX) is not typed a WAV


def test_a_wav_length_is_recorded_to_the_millisecond(tmp_path: Path) -> None:
    path = tmp_path / "voice.wav"
    path.write_bytes(media.wav(12345 / 8000, rate=8000))  # 1.543125 s
    found = load(path, "voice")
    assert found.info == {"seconds": 1.543}
    assert attachments.info(found.sha256) == {"seconds": 1.543}


def test_pages_are_counted_only_in_pdfs(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("a note about PDFs: << /Type /Page >> and /Type /Page again\n")
    found = load(path, "notes")
    assert found.media_type == "text/plain"
    assert found.info == {}  # no "pages": a text file is not a document of pages


def test_a_pdf_exactly_at_the_page_scan_limit_still_gets_its_pages_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = media.pdf()
    at_limit, over = tmp_path / "at.pdf", tmp_path / "over.pdf"
    at_limit.write_bytes(data)
    over.write_bytes(data + b"\n")
    monkeypatch.setattr(attachments, "PDF_PAGE_SCAN_LIMIT", len(data))
    assert load(at_limit, "doc").info == {"pages": 1}
    assert load(over, "doc").info == {}  # one byte over the limit: pages are not scanned


def test_two_files_of_the_same_size_and_time_keep_their_own_hashes(tmp_path: Path) -> None:
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_bytes(b"cat\n")
    second.write_bytes(b"dog\n")
    when = 1_700_000_000_000_000_000
    os.utime(first, ns=(when, when))
    os.utime(second, ns=(when, when))
    a, b = load(first, "a"), load(second, "b")
    assert a.sha256 == hashlib.sha256(b"cat\n").hexdigest()
    assert b.sha256 == hashlib.sha256(b"dog\n").hexdigest()
    assert (a.size, b.size) == (4, 4)
    assert attachments.path_of(b.sha256) == second


def test_a_folder_named_as_a_file_is_refused_with_its_place(tmp_path: Path) -> None:
    folder = tmp_path / "images"
    folder.mkdir()
    with pytest.raises(ConfigError) as info:
        load(folder, "photo", file="eval.yaml", where="cases[0].files.photo")
    err = info.value
    assert (
        err.message == f"cannot read the attached file {folder}: it is a folder, not a regular file"
    )
    assert (err.file, err.where) == ("eval.yaml", "cases[0].files.photo")
    assert err.fix == UNREADABLE_FIX


def test_an_os_error_without_a_description_is_shown_by_its_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "photo.png"
    path.write_bytes(media.png())

    def fail(path: Path, fh: Any, size: int) -> Any:
        raise OSError("the network drive went away")

    monkeypatch.setattr(attachments, "_hash_file", fail)
    with pytest.raises(ConfigError) as info:
        load(path, "photo", file="eval.yaml", where="cases[0].files.photo")
    assert info.value.message == (
        f"cannot read the attached file {path}: the network drive went away"
    )


def test_a_cases_file_naming_a_file_through_dotdot_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "eval"
    root.mkdir()
    secret = tmp_path / "secret.png"
    secret.write_bytes(media.png())
    with pytest.raises(ConfigError) as info:
        case_files(
            {"photo": "../secret.png"},
            root,
            file="cases.yaml",
            where="cases[0].files",
            within=root,
        )
    err = info.value
    assert err.message == (
        f"'../secret.png' resolves to {secret}, outside the config's folder {root}"
    )
    assert (err.file, err.where) == ("cases.yaml", "cases[0].files.photo")
    assert err.fix == CONFINED_FIX


def test_a_cases_file_naming_a_file_through_a_symlink_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "eval"
    root.mkdir()
    secret = tmp_path / "outside" / "id_rsa"
    secret.parent.mkdir()
    secret.write_text("private\n")
    (root / "key").symlink_to(secret)
    row = {"question": "what is it?", "doc": "file://key"}
    with pytest.raises(ConfigError) as info:
        split_file_columns(row, root, file="cases.csv", line=2, within=root)
    err = info.value
    assert err.message == f"'file://key' resolves to {secret}, outside the config's folder {root}"
    assert (err.file, err.where) == ("cases.csv", "line 2, column doc")
    assert err.fix == CONFINED_FIX
    assert str(err) == (f"cases.csv: line 2, column doc: {err.message}\n  fix: {CONFINED_FIX}")


# ---- bounds: a regular file only, its size from stat before a byte is read (issue 46) ----


@pytest.mark.timeout(30)
def test_dev_zero_attached_in_files_is_refused_without_reading(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        case_files({"photo": "/dev/zero"}, tmp_path, file="eval.yaml", where="cases[0].files")
    err = info.value
    assert err.message == (
        "cannot read the attached file /dev/zero: it is a device, not a regular file"
    )
    assert (err.file, err.where) == ("eval.yaml", "cases[0].files.photo")


@pytest.mark.timeout(30)
def test_fifo_attached_in_files_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "photo.png")  # nobody writes to it: an open or a read would block
    with pytest.raises(ConfigError) as info:
        case_files({"photo": "photo.png"}, tmp_path, file="eval.yaml", where="cases[0].files")
    err = info.value
    assert err.message.endswith("photo.png: it is a FIFO (named pipe), not a regular file")
    assert err.where == "cases[0].files.photo"


@pytest.mark.timeout(30)
def test_fifo_named_by_a_file_column_of_a_cases_file_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "photo.png")
    with pytest.raises(ConfigError) as info:
        split_file_columns(
            {"q": "hi", "photo": "file://photo.png"},
            tmp_path,
            file="cases.csv",
            line=2,
            within=tmp_path,
        )
    err = info.value
    assert "it is a FIFO (named pipe), not a regular file" in err.message
    assert (err.file, err.where) == ("cases.csv", "line 2, column photo")


def test_sparse_file_over_the_limit_is_refused_from_its_stat_before_a_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "huge.png"
    with path.open("wb") as fh:
        fh.truncate(attachments.MAX_ATTACHMENT_BYTES + 1)  # sparse: takes no disk
    hashed: list[Path] = []
    monkeypatch.setattr(attachments, "_hash_file", lambda p, f, s: hashed.append(p))
    with pytest.raises(ConfigError) as info:
        load(path, "photo", file="eval.yaml", where="cases[0].files.photo")
    assert info.value.message == (
        f"cannot read the attached file {path}: it is "
        f"{attachments.MAX_ATTACHMENT_BYTES + 1:,} bytes, over the limit of "
        f"{attachments.MAX_ATTACHMENT_BYTES:,}"
    )
    assert hashed == []  # not one byte was read


def test_a_file_at_the_limit_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "note.txt"
    path.write_bytes(b"hello")
    monkeypatch.setattr(attachments, "MAX_ATTACHMENT_BYTES", 5)
    assert load(path, "note").size == 5


@pytest.mark.timeout(30)
def test_attachment_swapped_for_a_fifo_after_planning_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "note.txt"
    path.write_text(f"only here: {tmp_path}")  # no other test loaded these bytes
    sha = load(path, "note").sha256
    path.unlink()
    os.mkfifo(path)
    with pytest.raises(attachments.AttachmentChanged, match="not a regular file"):
        attachments.read(sha)
