"""What every reader shows of a no-look run (docs/no-look.md): ids, metadata, verdicts, scores,
tokens, cost, latency and error classes — and a notice instead of outputs, never blanks.

A no-look run stores no case data (``runs.no_look``), so its ``output``/``vars``/... columns
are NULL; ``show``, ``compare``, the exports and the MCP tools drop those keys altogether and
say why with :data:`NOTICE`, the same words everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

NOTICE = (
    "no-look run: it never stored case data, outputs, rationales or error messages "
    "(docs/no-look.md), so only ids, metadata, scores and error classes are shown"
)
# what a no-look run never holds: readers drop these keys rather than show them blank
HIDDEN = frozenset(
    {
        "output",
        "expected",
        "vars",
        "messages",
        "human_label",
        "output_a",
        "output_b",
        "details",
        "rationale",
        "check_output",
        "check_error",
        "attachments",  # a file's hash, type and size: not stored either
    }
)


def is_no_look(run: Mapping[str, Any]) -> bool:
    """Whether a stored run row (``runs``) is a no-look run."""
    return bool(run.get("no_look"))


def minimal(row: Mapping[str, Any]) -> dict[str, Any]:
    """A case (or mover) row without what a no-look run never holds; its criteria too."""
    out = {k: v for k, v in row.items() if k not in HIDDEN}
    if isinstance(out.get("criteria"), list):
        out["criteria"] = [
            {k: v for k, v in c.items() if k not in HIDDEN} if isinstance(c, Mapping) else c
            for c in out["criteria"]
        ]
    return out


def minimal_table(table: pa.Table) -> pa.Table:
    """An Arrow table without the columns a no-look run never holds."""
    return table.drop_columns([c for c in table.column_names if c in HIDDEN])
