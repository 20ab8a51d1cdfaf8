"""JSON shaping for agents: plain data (dates as text, NaN as null), long texts cut with a
marker that gives their full length, secrets redacted in nested answers, and the bounds of
every page and limit an MCP client may ask for.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import date, datetime, time
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from evalwh.errors import UsageError

if TYPE_CHECKING:
    pass

DETAILS = ("summary", "failures", "full")
PAGE_SIZE = 10
MAX_PAGE_SIZE = 50
MAX_CHARS = 2000  # one cell's texts (get_case_result, render_prompt)
PREVIEW_CHARS = 300  # an output in a `full` page
NOTE_CHARS = 300  # an error message in a summary or a page
QUERY_ROWS = 50
MAX_QUERY_ROWS = 500
QUERY_CELL_CHARS = 500
LIST_RUNS = 10
MAX_LIST_RUNS = 100
MOVERS = 10
SLICES = 10
MARKER = "…[truncated: {shown} of {total} chars]"


# -- plain JSON ---------------------------------------------------------------------------


def plain_dict(value: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`plain` of a mapping, typed as the dict it is."""
    return cast("dict[str, Any]", plain(value))


def plain(value: Any) -> Any:
    """``value`` as JSON-ready data: dates as ISO text, decimals as floats, NaN as null."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(plain(v) for v in value)
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, Decimal):
        value = float(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<{len(bytes(value))} bytes>"
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def num(value: Any, digits: int = 4) -> Any:
    """A number cut to ``digits`` significant digits (ints and None unchanged)."""
    if isinstance(value, Decimal):
        value = int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, float):
        return float(f"{value:.{digits}g}") if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return value
    return value


def parsed(value: Any) -> Any:
    """A JSON column (stored as text) as data; other values unchanged."""
    if isinstance(value, str) and value[:1] in ("{", "[", '"'):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


# -- truncation -----------------------------------------------------------------------------


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters plus a marker with its full length."""
    if len(text) <= limit:
        return text
    return text[:limit] + MARKER.format(shown=limit, total=len(text))


def clip_tree(value: Any, limit: int, path: str = "", cut: dict[str, int] | None = None) -> Any:
    """Every string in ``value`` cut to ``limit``; ``cut`` collects path -> full length."""
    if isinstance(value, str):
        if len(value) > limit and cut is not None:
            cut[path or "$"] = len(value)
        return clip(value, limit)
    if isinstance(value, Mapping):
        return {
            k: clip_tree(v, limit, f"{path}.{k}" if path else str(k), cut) for k, v in value.items()
        }
    if isinstance(value, list):
        return [clip_tree(v, limit, f"{path}[{i}]", cut) for i, v in enumerate(value)]
    return value


def bounded(value: int | None, default: int, top: int, name: str) -> int:
    if value is None:
        return default
    if value < 1:
        raise UsageError(f"{name} must be at least 1, got {value}")
    return min(value, top)


# -- the root and the warehouse -------------------------------------------------------------
