"""The ``--help`` text of every command, as docs/cli.md shows it: one source for the page.

Regenerate the page's help blocks after changing a command:

    uv run python -m tests.docs.cli_help docs/cli.md

tests/docs/test_pages.py checks that each ``## evalwh <command>`` section's first ``Usage:`` block is
exactly what the command prints, so the reference cannot drift from the code.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import typer.main
from click.testing import CliRunner

from evalwh.cli.main import app

WIDTH = 80
BLOCK = re.compile(r"(^## (evalwh[^\n]*)\n.*?^```\n)(Usage: .*?)(^```[ \t]*$)", re.M | re.S)


def help_text(path: str) -> str:
    """What ``<path> --help`` prints at 80 columns (``path`` is e.g. 'evalwh cache info')."""
    command = typer.main.get_command(app)
    args = path.split()[1:]
    result = CliRunner().invoke(
        command,
        [*args, "--help"],
        prog_name="evalwh",
        env={"COLUMNS": str(WIDTH)},
        terminal_width=WIDTH,
    )
    assert result.exit_code == 0, result.output
    return "\n".join(line.rstrip() for line in result.output.strip("\n").splitlines()) + "\n"


def blocks(text: str) -> list[tuple[str, str]]:
    """(command path, help block) of every section whose first fenced block is a Usage."""
    return [(m.group(2).strip(), m.group(3)) for m in BLOCK.finditer(text)]


def regenerate(text: str) -> str:
    return BLOCK.sub(lambda m: m.group(1) + help_text(m.group(2).strip()) + m.group(4), text)


if __name__ == "__main__":
    page = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/cli.md")
    page.write_text(regenerate(page.read_text(encoding="utf-8")), encoding="utf-8")
