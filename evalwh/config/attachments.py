"""Attachments: the files a case carries (images, PDFs, audio, video), typed and hashed.

A case names its files under ``files:`` (paths relative to the config's folder), a case
file marks a column as a file with a ``file://`` value (relative to the cases file), and a
directory can be a case source (one case per file)::

    cases:
      - id: dog
        files: {photo: fixtures/dog1.jpg}
      - {dir: images/, glob: "*.jpg", as: photo}

Each file is read once per run (per process: :func:`load` remembers it by path, size and
modification time): its SHA-256 and its media type *from its content* (magic bytes, see
:func:`sniff`; the suffix only when the content says nothing) are kept, never its bytes.
Prompts name a file by template, ``- image: "{{ files.photo }}"``; the template renders to
a reference (``attachment://photo``), never to the file's bytes, and the rendered part
holds the hash, so the request hash (and the response cache) follows the content: renaming
a file keeps its cache, editing it misses. :func:`read` gives the bytes for a request and
refuses a file whose content changed after it was hashed.
"""

from __future__ import annotations

import hashlib
import mimetypes
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from evalwh.boundary import inside, real_path
from evalwh.config.regular import NotRegular, open_regular
from evalwh.errors import ConfigError

KINDS = ("image", "file", "audio", "video")  # the binary part types
REF_PREFIX = "attachment://"
URL_SCHEMES = ("http://", "https://")
FILE_PREFIX = "file://"  # a case-file value that names a file
CHUNK = 1 << 20
MAX_ATTACHMENT_BYTES = 1024 * 1024 * 1024  # refused from its stat, before a byte is read
PDF_PAGE_SCAN_LIMIT = 64 * 1024 * 1024  # pages are counted (for estimates) up to this size
_PDF_PAGE = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")


def is_url(value: str) -> bool:
    """A part's value that names a URL, not a file: an http(s) scheme, in any case (RFC 3986
    makes schemes case-insensitive, so ``HTTPS://`` is one too)."""
    return value.lower().startswith(URL_SCHEMES)


@dataclass(frozen=True)
class Attachment:
    """One file, as a request and the warehouse see it: its content hash, not its bytes."""

    name: str  # the files key (``photo``), or the file name of a prompt's own file
    path: Path  # resolved; only to read the bytes, never part of a request's identity
    sha256: str
    media_type: str
    size: int
    info: dict[str, Any] = field(default_factory=dict, compare=False)  # width/height/seconds/pages

    @property
    def kind(self) -> str:
        """``image``, ``audio``, ``video`` or ``file`` (documents and everything else)."""
        major = self.media_type.split("/", 1)[0]
        return major if major in ("image", "audio", "video") else "file"

    def part(self, kind: str) -> dict[str, Any]:
        """The rendered message part naming this file (what the request hash covers)."""
        return {
            "type": kind,
            "name": self.name,
            "sha256": self.sha256,
            "media_type": self.media_type,
            "bytes": self.size,
        }


SUFFIX = {
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/gif": ".gif",
    "image/webp": ".webp",
    "application/pdf": ".pdf",
    "audio/wav": ".wav",
    "audio/mpeg": ".mp3",
    "audio/ogg": ".ogg",
    "audio/flac": ".flac",
    "video/mp4": ".mp4",
    "video/webm": ".webm",
    "video/quicktime": ".mov",
    "text/plain": ".txt",
}


def filename_for(name: str, media_type: str) -> str:
    """A file name for APIs that want one: the name plus the media type's suffix."""
    suffix = SUFFIX.get(media_type) or mimetypes.guess_extension(media_type) or ""
    return name if name.endswith(suffix) else f"{name}{suffix}"


# ---- media types from content ---------------------------------------------------------------


def sniff(head: bytes) -> str | None:
    """The media type the first bytes of a file announce, or None when they say nothing.

    PNG, JPEG, GIF, WebP, PDF, WAV, MP3, OGG, FLAC, MP4/QuickTime/M4A and WebM/Matroska.
    """
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "audio/wav"
    if head.startswith(b"%PDF-"):
        return "application/pdf"
    if head.startswith(b"ID3") or _mp3_frame(head):
        return "audio/mpeg"
    if head.startswith(b"OggS"):
        return "audio/ogg"
    if head.startswith(b"fLaC"):
        return "audio/flac"
    if head[4:8] == b"ftyp":
        brand = head[8:12]
        if brand.startswith(b"M4A"):
            return "audio/mp4"
        return "video/quicktime" if brand == b"qt  " else "video/mp4"
    if head.startswith(b"\x1a\x45\xdf\xa3"):
        return "video/webm" if b"webm" in head[:64] else "video/x-matroska"
    return None


def _mp3_frame(head: bytes) -> bool:
    """An MPEG audio layer III frame header: 11 sync bits, a valid version, layer III, a
    bitrate and a sample rate that are not the reserved values (so a UTF-16 BOM is not one)."""
    if len(head) < 3 or head[0] != 0xFF or head[1] & 0xE0 != 0xE0:
        return False
    version, layer = (head[1] >> 3) & 3, (head[1] >> 1) & 3
    bitrate, rate = head[2] >> 4, (head[2] >> 2) & 3
    return version != 1 and layer == 1 and bitrate not in (0, 15) and rate != 3


def media_type_of(path: Path, head: bytes) -> str:
    """From the content first; then the suffix; UTF-8 text is text/plain; else octet-stream."""
    found = sniff(head)
    if found:
        return found
    guessed = mimetypes.guess_type(path.name)[0]
    if guessed and guessed != "application/octet-stream":
        return guessed
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return "application/octet-stream"
    return "text/plain"


def _image_size(media_type: str, head: bytes) -> tuple[int, int] | None:
    """(width, height) of an image from its header, when the header holds it."""
    try:
        if media_type == "image/png" and head[12:16] == b"IHDR":
            w, h = struct.unpack(">II", head[16:24])
            return int(w), int(h)
        if media_type == "image/gif":
            w, h = struct.unpack("<HH", head[6:10])
            return int(w), int(h)
        if media_type == "image/webp":
            chunk = head[12:16]
            if chunk == b"VP8X":
                w = int.from_bytes(head[24:27], "little") + 1
                h = int.from_bytes(head[27:30], "little") + 1
                return w, h
            if chunk == b"VP8 ":
                w, h = struct.unpack("<HH", head[26:30])
                return int(w) & 0x3FFF, int(h) & 0x3FFF
            if chunk == b"VP8L":
                bits = int.from_bytes(head[21:25], "little")
                return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
        if media_type == "image/jpeg":
            return _jpeg_size(head)
    except struct.error:
        return None
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        length = int.from_bytes(data[i + 2 : i + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            h, w = struct.unpack(">HH", data[i + 5 : i + 9])
            return int(w), int(h)
        i += 2 + length
    return None


def _wav_seconds(head: bytes, size: int) -> float | None:
    """Duration of a PCM WAV from its fmt chunk's byte rate and its data chunk."""
    i = 12
    rate = None
    while i + 8 <= len(head):
        chunk, length = head[i : i + 4], int.from_bytes(head[i + 4 : i + 8], "little")
        if chunk == b"fmt " and i + 16 <= len(head):
            rate = int.from_bytes(head[i + 16 : i + 20], "little")
        if chunk == b"data":
            data_bytes = min(length, size - i - 8)
            return data_bytes / rate if rate else None
        i += 8 + length + (length & 1)
    return None


def _describe(media_type: str, head: bytes, size: int, pages: int | None) -> dict[str, Any]:
    info: dict[str, Any] = {}
    dims = _image_size(media_type, head) if media_type.startswith("image/") else None
    if dims:
        info["width"], info["height"] = dims
    if media_type == "audio/wav":
        seconds = _wav_seconds(head, size)
        if seconds is not None:
            info["seconds"] = round(seconds, 3)
    if pages:
        info["pages"] = pages
    return info


# ---- loading and hashing (once per run) -----------------------------------------------------

_BY_STAT: dict[tuple[str, int, int], Attachment] = {}
_BY_HASH: dict[str, list[Path]] = {}  # sha256 -> where its bytes may be read, best first
_INFO: dict[str, dict[str, Any]] = {}  # sha256 -> width/height/seconds/pages, for estimates
HEAD_BYTES = 64 * 1024  # enough for every header the sniffer and the size readers look at


def load(path: Path, name: str, *, file: str | None = None, where: str | None = None) -> Attachment:
    """The attachment at ``path`` under ``name``: hashed and typed on first use, then
    remembered (same path, size and modification time) for the rest of the process. Only a
    regular file of at most :data:`MAX_ATTACHMENT_BYTES` is read (:mod:`.regular`)."""
    from evalwh.boundary import readable

    path = readable(path, where or name)
    try:
        fh, stat = open_regular(path, limit=MAX_ATTACHMENT_BYTES)
        with fh:
            key = (str(path), stat.st_size, stat.st_mtime_ns)
            known = _BY_STAT.get(key)
            if known is None:
                known = _hash_file(path, fh, stat.st_size)
                _BY_STAT[key] = known
    except NotRegular as exc:
        raise _unreadable(path, str(exc), file, where) from None
    except OSError as exc:
        raise _unreadable(path, exc.strerror or str(exc), file, where) from None
    places = _BY_HASH.setdefault(known.sha256, [])
    if path not in places:
        places.append(path)
    _INFO[known.sha256] = known.info
    return Attachment(name, path, known.sha256, known.media_type, known.size, known.info)


def _hash_file(path: Path, fh: BinaryIO, size: int) -> Attachment:
    digest = hashlib.sha256()
    head = b""
    while chunk := fh.read(CHUNK):
        if len(head) < HEAD_BYTES:
            head += chunk[: HEAD_BYTES - len(head)]
        digest.update(chunk)
    media_type = media_type_of(path, head)
    pages = None
    if media_type == "application/pdf" and size <= PDF_PAGE_SCAN_LIMIT:
        fh.seek(0)
        pages = len(_PDF_PAGE.findall(fh.read()))  # a page object per page
    info = _describe(media_type, head, size, pages)
    return Attachment(path.name, path, digest.hexdigest(), media_type, size, info)


def _unreadable(path: Path, why: str, file: str | None, where: str | None) -> ConfigError:
    return ConfigError(
        f"cannot read the attached file {path}: {why}",
        file=file,
        where=where,
        fix="check the path; it is relative to the config's folder (a file:// value in a "
        "cases file: to that file's folder)",
    )


class AttachmentChanged(Exception):
    """A file's content is not the content hashed when the run was planned."""


def info(sha256: str) -> dict[str, Any]:
    """What the header of the file with this hash told (image size, WAV length, PDF pages)."""
    return _INFO.get(sha256, {})


def path_of(sha256: str) -> Path | None:
    """Where the bytes of the file with this hash are read from first (None: not loaded)."""
    places = _BY_HASH.get(sha256)
    return places[0] if places else None


def places_of(sha256: str) -> list[Path]:
    """Every place the bytes of this hash were seen, best first (each is checked on read)."""
    return list(_BY_HASH.get(sha256) or ())


def remember(sha256: str, path: Path) -> None:
    """Read ``sha256``'s bytes from ``path`` first from now on (its artifact-store copy)."""
    places = _BY_HASH.setdefault(sha256, [])
    if path in places:
        places.remove(path)
    places.insert(0, path)


def read(sha256: str) -> bytes:
    """The bytes of the attachment with this hash, from the first place that still holds
    them (the artifact store, then the file itself); AttachmentChanged if none does."""
    places = _BY_HASH.get(sha256)
    if not places:
        raise AttachmentChanged(f"no file with SHA-256 {sha256[:12]}... was loaded in this run")
    why = ""
    for path in places:
        try:
            fh, _ = open_regular(path, limit=MAX_ATTACHMENT_BYTES)
            with fh:
                data = fh.read()
        except OSError as exc:
            why = why or f"cannot read {path}: {exc.strerror or exc}"
            continue
        if hashlib.sha256(data).hexdigest() == sha256:
            return data
        why = why or (
            f"{path} changed after the run was planned (its SHA-256 is no longer "
            f"{sha256[:12]}...); run again to use the new content"
        )
    raise AttachmentChanged(why)


# ---- case sources ---------------------------------------------------------------------------


def _confined(path: Path, within: Path | None, file: str | None, where: str, written: str) -> Path:
    """``path``, or a ConfigError when a cases file names a file outside the config's folder
    (a downloaded dataset must not send ``file:///home/me/.ssh/id_rsa`` to a model)."""
    if within is not None and not inside(path, within):
        raise ConfigError(
            f"'{written}' resolves to {path}, outside the config's folder {within}",
            file=file,
            where=where,
            fix="a cases file may only name files under the folder of eval.yaml: copy or "
            "move the file there (eval.yaml's own files: may name any path)",
        )
    return path


def case_files(
    raw: Any, folder: Path, *, file: str | None, where: str, within: Path | None = None
) -> dict[str, Attachment]:
    """``files: {name: path}`` of a case, each path relative to ``folder``; with ``within``
    (a case from a cases file), every path must resolve inside that folder."""
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        raise ConfigError(
            "'files' must map names to file paths",
            file=file,
            where=where,
            fix="write files: {photo: images/dog1.jpg}",
        )
    out = {}
    for name, value in raw.items():
        place = f"{where}.{name}"
        path = _confined(real_path(folder / value), within, file, place, value)
        out[str(name)] = load(path, str(name), file=file, where=place)
    return out


def split_file_columns(
    row: dict[str, Any], folder: Path, *, file: str, line: int | None, within: Path
) -> tuple[dict[str, Any], dict[str, Attachment]]:
    """A case-file row's vars without its ``file://`` values, and those values as files
    (each resolved next to the cases file, and refused outside ``within``)."""
    files: dict[str, Attachment] = {}
    rest: dict[str, Any] = {}
    for column, value in row.items():
        if isinstance(value, str) and value.startswith(FILE_PREFIX):
            target = value[len(FILE_PREFIX) :]
            place = f"line {line}, column {column}" if line is not None else f"column {column}"
            path = _confined(real_path(folder / target), within, file, place, value)
            files[column] = load(path, column, file=file, where=place)
        else:
            rest[column] = value
    return rest, files
