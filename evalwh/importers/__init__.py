"""Runs from other tools, imported into the warehouse as ordinary runs.

``promptfoo.py`` reads promptfoo's ``eval -o results.json``; ``inspectlog.py`` reads inspect_ai
logs (``.eval`` zips through ``evalzip.py``, and ``.json``); ``common.py`` holds the shape both
produce (:class:`ImportedRun`), the options that line cells up with other runs (case id
template, variant and model renames) and the one transaction that stores a run, idempotent by
the file's content hash. This layer writes into the warehouse as the engine does, so it sits
beside ``engine`` and below ``api``.

    from evalwh.importers import import_files
    result = import_files("promptfoo", [Path("results.json")], Path(".evalwh/warehouse.duckdb"))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from evalwh.errors import UsageError
from evalwh.importers.common import (
    ImportedRun,
    ImportOptions,
    ImportResult,
    sha256_of,
    store_run,
)
from evalwh.warehouse.lake import Location

TOOLS = ("promptfoo", "inspect")

__all__ = ["TOOLS", "ImportOptions", "ImportResult", "import_files"]


def import_files(
    tool: str,
    paths: Sequence[Path],
    warehouse: Location,
    options: ImportOptions | None = None,
) -> list[ImportResult]:
    """Import each file (a promptfoo results file, or inspect logs) as one run per file."""
    options = options or ImportOptions()
    reader = _reader(tool)
    results = []
    for path in paths:
        for run in reader(path):
            results.append(store_run(warehouse, path, sha256_of(path), run, options))
    return results


def _reader(tool: str) -> Callable[[Path], list[ImportedRun]]:
    if tool == "promptfoo":
        from evalwh.importers.promptfoo import read_promptfoo

        return read_promptfoo
    if tool == "inspect":
        from evalwh.importers.inspectlog import read_inspect

        return read_inspect
    raise UsageError(f"unknown tool {tool!r}: evalwh imports promptfoo and inspect")
