"""Schema verdicts remembered across processes: a document already found valid skips jsonschema.

Importing jsonschema (and the ``referencing`` and ``attrs`` it pulls) costs a process about
50 ms of CPU, some 10 % of a whole small `evalwh run`, while validating a config takes 3 ms.
So when a document passes, the SHA-256 of (the schema file's bytes, the definition checked,
the document as canonical JSON) is appended to ``valid-documents`` in the user cache folder;
a later process that computes the same digest knows the verdict without importing jsonschema.

Only passes are remembered (an error is always found, and explained, by jsonschema itself).
The digest covers the schema's text, so a changed schema (a new evalwh) never reuses a verdict.
A document is remembered only when it is plain JSON data (string keys; str, int, float, bool,
None, lists, dicts), so values YAML gives other types (dates, bytes, sets) are never folded
into a string that hashes the same. The folder is ``$EVALWH_CACHE_DIR``, else
``$XDG_CACHE_HOME/evalwh``, else ``~/.cache/evalwh``; any failure to read or write it only
means validating again.
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

FILE = "valid-documents"
KEEP = 512  # digests kept when the file is trimmed (it is trimmed past twice that)
_PLAIN = (str, int, float, bool, type(None))


def cache_dir(env: Any = None) -> Path:
    """The user cache folder of evalwh."""
    env = os.environ if env is None else env
    if env.get("EVALWH_CACHE_DIR"):
        return Path(env["EVALWH_CACHE_DIR"])
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "evalwh"


def _plain(value: Any) -> bool:
    kind = type(value)
    if kind is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    if kind is list:
        return all(_plain(v) for v in value)
    return kind in _PLAIN


def digest(schema_text: str, definition: str | None, data: Any) -> str | None:
    """The verdict's key, or None when ``data`` is not plain JSON data (never remembered)."""
    try:
        if not _plain(data):
            return None
        text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (RecursionError, ValueError):
        return None
    h = hashlib.sha256(schema_text.encode())
    h.update(b"\0" + (definition or "").encode() + b"\0")
    h.update(text.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


@lru_cache(maxsize=1)
def _known() -> set[str]:
    try:
        text = (cache_dir() / FILE).read_text(encoding="ascii")
    except (OSError, ValueError):
        return set()
    return {line for line in text.split() if len(line) == 64}


def known_valid(key: str) -> bool:
    return key in _known()


def remember_valid(key: str) -> None:
    """Append ``key`` to the file (trimmed to the newest KEEP when it holds twice as many)."""
    known = _known()
    known.add(key)
    folder = cache_dir()
    path = folder / FILE
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        with path.open("a", encoding="ascii") as out:
            out.write(key + "\n")
        if path.stat().st_size > 2 * KEEP * 65:
            lines = path.read_text(encoding="ascii").split()[-KEEP:]
            temp = path.with_name(f".{FILE}.{os.getpid()}")
            temp.write_text("".join(line + "\n" for line in lines), encoding="ascii")
            os.replace(temp, path)
    except (OSError, ValueError):
        pass
