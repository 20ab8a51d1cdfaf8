"""The files a case attached, shown beside its question on a page.

A case's files travel in its rendered messages as parts that name them (``{"type": "image",
"name": "photo", "sha256": ..., "media_type": "image/png", "bytes": 79}``); their bytes are in
the artifact store beside the warehouse (evalwh.warehouse.artifacts). A page shows each file
by name, media type, size and SHA-256, and an image inline, as a ``data:`` URI the page's
Content-Security-Policy allows (``img-src data:``), so the file report stays one file:

- only raster images (PNG, JPEG, GIF, WebP; never SVG, which can carry script) of at most
  INLINE_BYTES (256 KiB) each, and at most INLINE_BUDGET (16 MiB) of them per page;
- only bytes whose SHA-256 is the one the case stored: a file missing from the store, or
  changed in it, is shown by name and hash only.

    inline = Inliner(artifact_folder(store))
    files = inline.files(messages)  # [{"name", "type", "bytes", "sha256"}, ...]
    uris = inline.inlined()  # {sha256: "data:image/png;base64,..."} of the images that fit
"""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalwh.reports.fmt import json_value

if TYPE_CHECKING:
    from evalwh.warehouse.store import Warehouse

INLINE_BYTES = 256 * 1024  # an image bigger than this is shown by name, size and hash
INLINE_BUDGET = 16 * 1024 * 1024  # bytes of images one page embeds at most
INLINE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
SHA256 = re.compile(r"[0-9a-f]{64}")  # a stored hash names a file only in this form


def artifact_folder(store: Warehouse) -> Path | None:
    """The folder beside a warehouse file that holds its artifact store's ``artifacts/``
    (None for a DuckLake target: its files are on the machine that ran, not in a folder
    this page can name)."""
    path = store.path
    return path.parent if isinstance(path, Path) else None


def message_files(messages: Any) -> list[dict[str, Any]]:
    """The files that rendered ``messages`` attached, in order, each once (by name and hash)."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for message in json_value(messages) or []:
        content = message.get("content") if isinstance(message, dict) else None
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict) and part.get("sha256"):
                key = (str(part.get("name") or ""), str(part["sha256"]))
                found.setdefault(
                    key,
                    {
                        "name": key[0] or part.get("type", "file"),
                        "type": str(part.get("media_type") or "application/octet-stream"),
                        "bytes": part.get("bytes"),
                        "sha256": key[1],
                    },
                )
    return list(found.values())


class Inliner:
    """Turns a page's files into what it shows, reading each stored image once."""

    def __init__(self, folder: Path | None, *, budget: int = INLINE_BUDGET) -> None:
        self.folder = folder
        self.left = budget
        self.uris: dict[str, str | None] = {}

    def files(self, messages: Any) -> list[dict[str, Any]]:
        """:func:`message_files` of ``messages``; each image that fits is read now, and the
        page finds it in :meth:`inlined` by its hash."""
        shown = message_files(messages)
        for f in shown:
            self.uri(f["sha256"], f["type"])
        return shown

    def inlined(self) -> dict[str, str]:
        """sha256 -> ``data:`` URI of every image read so far that fits (one copy a page)."""
        return {sha: uri for sha, uri in self.uris.items() if uri}

    def uri(self, sha256: str, media_type: str) -> str | None:
        if sha256 not in self.uris:
            self.uris[sha256] = self._read(sha256, media_type)
        return self.uris[sha256]

    def _read(self, sha256: str, media_type: str) -> str | None:
        if self.folder is None or media_type not in INLINE_TYPES or not SHA256.fullmatch(sha256):
            return None
        path = self.folder / "artifacts" / sha256[:2] / sha256[2:]
        try:
            if not path.is_file() or path.stat().st_size > min(INLINE_BYTES, self.left):
                return None
            data = path.read_bytes()
        except OSError:
            return None
        if hashlib.sha256(data).hexdigest() != sha256 or len(data) > INLINE_BYTES:
            return None  # not the bytes the case stored (or grown since the size was read)
        self.left -= len(data)
        return f"data:{media_type};base64,{base64.b64encode(data).decode('ascii')}"
