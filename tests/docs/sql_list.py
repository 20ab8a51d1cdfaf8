"""The list of named queries in docs/storage.md, generated from the headers of ``sql/*.sql``.

Regenerate after adding or changing a query:

    uv run python -m tests.docs.sql_list docs/storage.md

tests/docs/test_pages.py checks that the page's list is exactly this.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEADER = re.compile(r"^--\s*(title|description|params):\s*(.*)$")
ITEM = re.compile(r"^- `[a-z0-9_]+\.sql`: \*\*.*$", re.M)


def query_lines() -> list[str]:
    lines = []
    for path in sorted((ROOT / "sql").glob("*.sql")):
        meta: dict[str, str] = {}
        for line in path.read_text(encoding="utf-8").splitlines():
            match = HEADER.match(line.strip())
            if match:
                meta[match.group(1)] = f"{meta.get(match.group(1), '')} {match.group(2)}".strip()
            elif line.strip() and not line.strip().startswith("--"):
                break
        params = [p.strip() for p in meta.get("params", "").split(",") if p.strip()]
        shown = ", ".join(f"`{p}`" for p in params) if params else "(none)"
        lines.append(
            f"- `{path.name}`: **{meta['title']}**. {meta['description']} Parameters: {shown}."
        )
    return lines


def listed(text: str) -> list[str]:
    return ITEM.findall(text)


def regenerate(text: str) -> str:
    items = list(ITEM.finditer(text))
    if not items:
        raise SystemExit("no query list found")
    return text[: items[0].start()] + "\n".join(query_lines()) + text[items[-1].end() :]


if __name__ == "__main__":
    page = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "docs" / "storage.md")
    page.write_text(regenerate(page.read_text(encoding="utf-8")), encoding="utf-8")
