"""A folder of files as a case source: one case per file, the file attached to it.

::

    cases:
      - {dir: images/, glob: "**/*.jpg", as: photo}

Image, audio and document sets usually live this way. Each file becomes a case whose id is
its path inside the folder, with the file under ``files.<as>`` (default ``file``), the var
``file_name`` (that path) and the metadata ``folder`` (its subfolder, a natural slicing key).
Hidden files are skipped; the files are sorted, so the case order is stable. A file that
resolves outside the folder (a symlink to ``~/.ssh/id_rsa`` in a downloaded image set) is
refused before it is read: the folder is what the config named, its content may come from
anyone (:func:`evalwh.config.confinement.in_folder`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalwh.boundary import in_folder, readable
from evalwh.config.attachments import load
from evalwh.config.model import Case
from evalwh.errors import ConfigError


def directory_cases(spec: dict[str, Any], root: Path, where: str, config_file: str) -> list[Case]:
    """The cases of a ``{dir: ..., glob: ..., as: ..., limit: ...}`` source (see above)."""
    folder = readable(root / spec["dir"], f"{where}.dir")
    if not folder.is_dir():
        raise ConfigError(
            f"case folder not found: {folder}",
            file=config_file,
            where=f"{where}.dir",
            fix="check the path; it is relative to the config file's folder",
        )
    pattern = spec.get("glob") or "*"
    name = spec.get("as") or "file"
    paths = sorted(p for p in folder.glob(pattern) if p.is_file() and not p.name.startswith("."))
    if spec.get("limit"):
        paths = paths[: spec["limit"]]
    if not paths:
        raise ConfigError(
            f"no file in {folder} matches {pattern!r}",
            file=config_file,
            where=f"{where}.glob",
            fix="check the folder and the pattern (e.g. glob: '*.jpg', or '**/*.png' for "
            "subfolders)",
        )
    cases = []
    for path in paths:
        real = in_folder(path, folder, file=config_file, where=f"{where}.dir")
        rel = path.relative_to(folder).as_posix()
        cases.append(
            Case(
                id=rel,
                vars={"file_name": rel},
                metadata={"folder": path.parent.relative_to(folder).as_posix()},
                source=f"{spec['dir'].rstrip('/')}/{rel}",
                files={name: load(real, name, file=config_file, where=f"{where}.dir")},
            )
        )
    return cases
