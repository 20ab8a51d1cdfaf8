"""A case's attachments as the viewer shows them: images served from the artifact store
(evalwh.warehouse.artifacts) by their SHA-256, every other file named with its hash.

The route takes a hash, never a path: a name that is not 64 lowercase hex digits is refused
before any file is looked at, the store's own layout (``ab/cdef...``) builds the path, and
the file it resolves to (symlinks followed) must still lie inside the store and be a regular
file whose first bytes announce an image of a type a browser shows without running anything
(PNG, JPEG, GIF, WebP: no SVG). Whatever else is asked for is "not found", with nothing
said about why, so the route cannot be used to read or probe other files.
"""

from __future__ import annotations

import re
from typing import Any

from evalwh.config.attachments import sniff
from evalwh.warehouse.artifacts import ArtifactStore

SHA256 = re.compile(r"[0-9a-f]{64}")
IMAGES = ("image/png", "image/jpeg", "image/gif", "image/webp")  # served; others named only
MAX_IMAGE_BYTES = 20 * 1024 * 1024  # a bigger image is named with its hash, not served


def image(store: ArtifactStore, sha256: str) -> tuple[bytes, str] | None:
    """The bytes and media type of the stored image with this hash, or None (no such hash,
    not a file inside the store, not an image the viewer serves, too big)."""
    if not SHA256.fullmatch(sha256):
        return None
    root = store.folder.resolve()
    try:
        path = store.path(sha256).resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if not path.is_relative_to(root) or not path.is_file():
        return None
    if path.stat().st_size > MAX_IMAGE_BYTES:
        return None
    data = path.read_bytes()
    media = sniff(data[:64])
    return (data, media) if media in IMAGES else None


def listed(attachments: dict[str, Any] | None, url: str) -> list[dict[str, Any]]:
    """A case's stored attachments (name -> sha256, media type, bytes) as the page lists
    them, each image with the URL that serves it (``url`` + hash)."""
    out = []
    for name, f in (attachments or {}).items():
        media = f.get("media_type") or ""
        shown = media in IMAGES and (f.get("bytes") or 0) <= MAX_IMAGE_BYTES
        out.append(
            {
                "name": name,
                "sha256": f.get("sha256"),
                "media_type": media,
                "bytes": f.get("bytes"),
                "src": url + f["sha256"] if shown and SHA256.fullmatch(f["sha256"] or "") else None,
            }
        )
    return out
