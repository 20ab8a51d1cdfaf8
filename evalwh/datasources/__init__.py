"""Datasources: cases that come page by page from where the data lives, not from a file.

A datasource is a class that evalwh builds with ``Source(params, root)`` (``params`` the
mapping under ``params:`` in eval.yaml, ``root`` the config's folder) and then asks for pages::

    class Tickets:
        def __init__(self, params, root):
            self.since = params.get("since", "24h")

        def pages(self, cursor):
            rows = fetch_tickets(self.since, after=cursor, limit=500)  # your API, your query
            next_cursor = rows[-1]["id"] if len(rows) == 500 else None
            return rows, next_cursor                                   # None: no more pages

``pages(None)`` returns the first page; evalwh calls ``pages(next_cursor)`` until the cursor
is ``None``. A row is a mapping: either a case (``{"id": ..., "vars": {...}, "expected": ...,
"metadata": {...}}``) or flat columns mapped as a case file's are (``id:``, ``vars:``,
``metadata:`` ... in the config entry). An optional ``digest()`` returns a content digest of
what was read (recorded with the run); without one evalwh hashes the rows it received.

Registration: built-ins in :data:`BUILTIN`, third-party ones by an ``evalwh.datasources``
entry point, or any class by ``module:Class`` (an importable module) or ``file.py:Class`` (a
file relative to the config's folder) in the config::

    cases:
      - source: mypkg.sources:Tickets
        params: {since: 24h}

This package sits below ``config`` (which maps rows onto cases): it only knows rows.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from functools import lru_cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from evalwh.errors import ConfigError

Row = Mapping[str, Any]

BUILTIN: dict[str, str] = {
    "duckdb": "evalwh.datasources.sql:DuckDBSource",
    "sql": "evalwh.datasources.sql:DuckDBSource",
    "jsonl-glob": "evalwh.datasources.jsonl:JsonlGlobSource",
}


@runtime_checkable
class DataSource(Protocol):
    """What evalwh needs of a datasource: pages of rows and the cursor of the next page."""

    def pages(self, cursor: Any | None) -> tuple[list[Row], Any | None]: ...


@lru_cache(maxsize=1)
def available() -> dict[str, str]:
    """Datasource name -> "module:Class", built-ins first, then entry points."""
    found = dict(BUILTIN)
    for ep in entry_points(group="evalwh.datasources"):
        found.setdefault(ep.name, ep.value)
    return found


def source_class(name: str, *, where: str = "", file: str | None = None) -> type[Any]:
    """The class a config's ``source:`` names: a registered name or ``module:Class``."""
    place = f"{where}.source" if where else None
    target = available().get(name) or (name if ":" in name else None)
    if target is None:
        raise ConfigError(
            f"unknown datasource '{name}'",
            file=file,
            where=place,
            fix=f"use one of: {', '.join(sorted(available()))}, or `module:Class` of your own",
        )
    module_name, _, attr = target.rpartition(":")
    try:
        if module_name.endswith(".py"):  # a file beside the config: `sources.py:Tickets`
            cls = getattr(_load_file(module_name, file), attr)
        else:
            cls = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError, OSError) as exc:
        raise ConfigError(
            f"cannot import datasource '{target}': {type(exc).__name__}: {exc}",
            file=file,
            where=place,
            fix="check the module path and class name; the module must be importable "
            "(installed, or on PYTHONPATH)",
        ) from None
    if not callable(getattr(cls, "pages", None)):
        raise ConfigError(
            f"datasource '{target}' has no pages(cursor) method",
            file=file,
            where=place,
            fix="give the class `def pages(self, cursor) -> (rows, next_cursor)` "
            "(docs/datasources.md)",
        )
    return cls  # type: ignore[no-any-return]


def _load_file(name: str, config_file: str | None) -> Any:
    """A datasource module given as a file path, relative to the config's folder."""
    import importlib.util

    folder = Path(config_file).parent if config_file else Path.cwd()
    path = (folder / name).resolve()
    if not path.is_file():
        raise ImportError(f"no file {path}")
    spec = importlib.util.spec_from_file_location(f"evalwh_datasource_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def open_source(
    name: str, params: Mapping[str, Any], root: Path, *, where: str = "", file: str | None = None
) -> Any:
    """Build the datasource a config entry names; its own checks raise ConfigError."""
    return source_class(name, where=where, file=file)(dict(params), root)


def iter_pages(source: Any) -> Iterator[list[Row]]:
    """Every page of ``source`` in order (empty pages are skipped), until its cursor is None."""
    cursor: Any = None
    while True:
        rows, cursor = source.pages(cursor)
        if rows:
            yield list(rows)
        if cursor is None:
            return


def source_digest(source: Any) -> str | None:
    """The datasource's own content digest of what it read, when it offers one."""
    digest = getattr(source, "digest", None)
    return str(digest()) if callable(digest) else None
