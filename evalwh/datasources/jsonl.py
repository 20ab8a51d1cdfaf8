"""The ``jsonl-glob`` datasource: sharded JSON Lines files read page by page.

::

    cases:
      - source: jsonl-glob
        params:
          pattern: shards/*.jsonl   # relative to the config's folder; ** matches subfolders
          page_size: 1000

Files are read in sorted path order, one line at a time (a shard is never loaded whole); the
cursor is (file, byte offset, line number), so memory holds one page. Each line is one JSON
object: a case (``{"id": ..., "vars": {...}}``) or flat columns mapped by the config entry's
``id:``/``vars:``/``metadata:``. The digest recorded with the run is the SHA-256 of every
byte read, in order. Every matched file must resolve (symlinks followed) inside the folder
the pattern starts from (``shards/`` above): a symlinked shard cannot carry a file from
elsewhere into the run, nor out of an MCP server's root.

For a folder of files read once, up front, as an ordinary case source, see
docs/configuration.md; this datasource is for sources too big to hold.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from evalwh.boundary import in_folder, readable
from evalwh.datasources.sql import _page_size
from evalwh.errors import ConfigError


class JsonlGlobSource:
    """JSON Lines shards matched by a glob, in sorted order."""

    def __init__(self, params: dict[str, Any], root: Path) -> None:
        pattern = params.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            raise ConfigError(
                "the jsonl-glob datasource needs a pattern",
                where="params.pattern",
                fix="e.g. pattern: shards/*.jsonl",
            )
        unknown = set(params) - {"pattern", "page_size"}
        if unknown:
            raise ConfigError(
                f"unknown jsonl-glob parameter(s): {', '.join(sorted(unknown))}",
                where="params",
                fix="use pattern and page_size",
            )
        if Path(pattern).is_absolute():
            files = sorted(Path(pattern).parent.glob(Path(pattern).name))
        else:
            files = sorted(root.glob(pattern))
        base = _base(pattern, root)
        found = [f for f in files if f.is_file()]
        self.files = [in_folder(f, base, file=None, where="params.pattern") for f in found]
        if not self.files:
            raise ConfigError(
                f"no file matches '{pattern}' (under {root})",
                where="params.pattern",
                fix="check the pattern; it is relative to the config file's folder",
            )
        self.page_size = _page_size(params, "params")
        self._hash = hashlib.sha256()

    def pages(self, cursor: Any | None) -> tuple[list[dict[str, Any]], Any | None]:
        index, offset, line_no = cursor or (0, 0, 0)
        rows: list[dict[str, Any]] = []
        while index < len(self.files) and len(rows) < self.page_size:
            path = self.files[index]
            with path.open("rb") as fh:
                fh.seek(offset)
                while len(rows) < self.page_size:
                    raw = fh.readline()
                    if not raw:
                        break
                    line_no += 1
                    self._hash.update(raw)
                    if raw.strip():
                        rows.append(_parse(raw, path, line_no))
                offset = fh.tell()
                at_end = not fh.read(1)
            if at_end:
                index, offset, line_no = index + 1, 0, 0
        return rows, ((index, offset, line_no) if index < len(self.files) else None)

    def digest(self) -> str:
        return "sha256:" + self._hash.hexdigest()


def _base(pattern: str, root: Path) -> Path:
    """The folder a pattern starts from: its parts before the first wildcard, resolved."""
    fixed = []
    for part in Path(pattern).parts[:-1]:
        if any(c in part for c in "*?["):
            break
        fixed.append(part)
    return readable(root.joinpath(*fixed), "params.pattern")


class DuplicateKeyError(ValueError):
    """A JSON object names the same key twice (``json.loads`` would keep the last)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKeyError(key)
        out[key] = value
    return out


def parse_line(line: str, path: Path, n: int) -> dict[str, Any]:
    """One JSON Lines line as an object; anything else is a ConfigError at ``path:n``."""
    try:
        row = json.loads(line, object_pairs_hook=_unique_keys)
    except DuplicateKeyError as exc:
        raise ConfigError(
            f"duplicate key '{exc.key}' in a JSON object",
            file=str(path),
            line=n,
            fix="remove one of the two keys: JSON readers keep only one",
        ) from None
    except RecursionError:
        raise ConfigError(
            "JSON nested too deeply",
            file=str(path),
            line=n,
            fix="flatten the line's data to at most 200 levels",
        ) from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"invalid JSON: {exc.msg}",
            file=str(path),
            line=n,
            column=exc.colno,
            fix="each line must be one JSON object",
        ) from None
    if not isinstance(row, dict):
        raise ConfigError(
            "a line is not a JSON object",
            file=str(path),
            line=n,
            fix='write one object per line: {"id": ..., "vars": {...}}',
        )
    return row


def _parse(raw: bytes, path: Path, line: int) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(
            "not UTF-8 text", file=str(path), line=line, fix="save the file as UTF-8"
        ) from None
    return parse_line(text, path, line)
