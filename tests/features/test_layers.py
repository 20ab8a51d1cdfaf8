"""The layers stay apart: the core never imports the CLI's, the MCP server's or the shell's
libraries (typer, rich, mcp), so everything the CLI does is reachable as a plain Python call."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

SHELL_ONLY = {"typer", "rich", "mcp", "click"}
OUTER = ("evalwh/cli/", "evalwh/mcp/")


def imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
            if node.module.startswith(("evalwh.cli", "evalwh.mcp")):
                names.add(node.module)
    return names


def test_core_modules_do_not_import_the_shell() -> None:
    offenders = {}
    for path in sorted((ROOT / "evalwh").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(OUTER):
            continue
        bad = {
            n
            for n in imported_roots(path)
            if n in SHELL_ONLY or n.startswith(("evalwh.cli", "evalwh.mcp"))
        }
        if bad:
            offenders[rel] = sorted(bad)
    assert not offenders, offenders


def test_cli_commands_stay_short() -> None:
    # one call into evalwh.api per command, rendering aside: no god-file
    for path in sorted((ROOT / "evalwh" / "cli").glob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        assert lines < 500, f"{path.name} has {lines} lines: move logic into the core"


TOP_LEVEL = {
    "__init__.py",  # the lazy facade over evalwh.api
    "errors.py",  # exceptions every layer raises
    "capture.py",  # a bounded read of a child's stream: command providers and exec checks
    "boundary.py",  # where a file read for a config may be: config and datasources read through it
    "api",
    "cli",
    "mcp",
    "viewer",  # the web viewer shell (`evalwh serve`)
    "engine",
    "importers",  # other tools' results as runs (beside engine: both write runs)
    "reports",
    "analysis",
    "scoring",
    "providers",
    "config",
    "datasources",
    "warehouse",
}


def test_the_folder_listing_is_the_architecture() -> None:
    # one package per layer (docs/architecture.md); a new module goes inside the package it
    # serves, not beside them
    found = {
        p.name
        for p in (ROOT / "evalwh").iterdir()
        if p.name != "__pycache__" and not p.name.startswith(".")
    }
    assert found == TOP_LEVEL, (
        f"unexpected: {sorted(found - TOP_LEVEL)}, missing: {sorted(TOP_LEVEL - found)}"
    )
    for name in {n for n in TOP_LEVEL if not n.endswith(".py")}:
        init = ROOT / "evalwh" / name / "__init__.py"
        assert init.is_file(), f"evalwh/{name} has no __init__.py"
        assert ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))), (
            f"evalwh/{name}/__init__.py opens with no docstring saying what the package holds"
        )
