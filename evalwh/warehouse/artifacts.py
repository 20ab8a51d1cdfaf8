"""The artifact store: every attached file's bytes, once, by content, beside the warehouse.

``<warehouse folder>/artifacts/ab/cdef...`` holds the file whose SHA-256 is ``abcdef...``.
A run copies its attachments in before its first request (a file already there is not
copied again, so two runs of the same images hold one copy), checking each copy against
its hash; requests then read the stored copy, which nothing edits. Case rows name their
files by hash (``cases.attachments``), so the warehouse, the Parquet export and this folder
together keep what every run was asked, and ``evalwh cache info`` counts the files here.
Files in a folder, not a table of blobs: a DuckDB BLOB column would copy each image into
every checkpoint and WAL, and a file here can be opened by any tool.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from evalwh.warehouse.ioerrors import io_guard
from evalwh.warehouse.tempnames import temp_name

FOLDER = "artifacts"
CHUNK = 1 << 20


class ArtifactChanged(Exception):
    """A file's bytes are not those hashed when the run was planned."""


class ArtifactStore:
    def __init__(self, beside: Path) -> None:
        """The store in ``beside`` (the warehouse file's folder; for a DuckLake warehouse,
        the output folder on this machine: settings.local_dir)."""
        self.folder = Path(beside) / FOLDER

    def path(self, sha256: str) -> Path:
        return self.folder / sha256[:2] / sha256[2:]

    def put(self, sha256: str, sources: Sequence[Path]) -> Path:
        """Copy the first of ``sources`` that still holds these bytes in under their hash
        (unless the store has them); the stored path. ArtifactChanged when none does."""
        target = self.path(sha256)
        if target.is_file():
            return target
        why = f"no file holds SHA-256 {sha256[:12]}..."
        with io_guard(target.parent, "store an attachment"):
            target.parent.mkdir(parents=True, exist_ok=True)
            for source in sources:
                found = self._copy(source, target)
                if found == sha256:
                    return target
                if why.startswith("no file"):
                    why = f"{source} changed after the run was planned ({found})"
        raise ArtifactChanged(why)

    def _copy(self, source: Path, target: Path) -> str:
        """Copy ``source`` to ``target`` (atomically) and return its SHA-256; ``target`` is
        kept only when the caller's hash matches, so it is written under a temporary name."""
        temp = temp_name(target)
        digest = hashlib.sha256()
        try:
            try:
                with source.open("rb") as src, temp.open("wb") as dst:
                    while chunk := src.read(CHUNK):
                        digest.update(chunk)
                        dst.write(chunk)
            except FileNotFoundError:
                return "it is gone"
            if target.name == digest.hexdigest()[2:]:
                os.replace(temp, target)
            return digest.hexdigest()
        finally:
            temp.unlink(missing_ok=True)

    def put_all(self, files: Mapping[str, Sequence[Path]]) -> dict[str, Path]:
        """Store every (sha256 -> candidate sources) file; sha256 -> its stored path."""
        return {sha: self.put(sha, sources) for sha, sources in files.items()}

    def count(self) -> tuple[int, int]:
        """(files, bytes) in the store."""
        files = size = 0
        if self.folder.is_dir():
            for path in self.folder.glob("??/*"):
                if path.is_file() and not path.name.startswith("."):
                    files += 1
                    size += path.stat().st_size
        return files, size
