"""Carry rows of ``equivalent_core.md`` over an edit of the code they name.

mutmut numbers the mutants of a function in order, so an edit of the function renumbers them:
a row written for ``x_f__mutmut_7`` may name another mutation afterwards (or none), and
``core_rate.py`` prints it as stale. This maps such rows from the commit they were written at
to the code in the work tree, by what each mutant does — its function, the source line it
mutates, the text before and after, and which of several identical mutations of that line it
is — and rewrites their names in the table::

    uv run python tests/mutation/core_rate.py          # ... prints the stale rows
    uv run python tests/mutation/renumber.py 6f531bb NAME...          # rewrite those rows
    uv run python tests/mutation/renumber.py 6f531bb NAME... --check  # print only

Give only rows written at that commit: the table does not say when each row was written, and
a row already in the new numbering would be mapped as if it were old. A row whose mutation is
gone (its line was edited or removed) is printed and left as it is: whether its reason still
holds for the new code is for a person to decide.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider
from mutmut.mutation.file_mutation import create_mutations, group_by_top_level_node

ROOT = Path(__file__).resolve().parents[2]  # the checkout: its git history and its code
HERE = ROOT  # where mutmut's configuration is read (pyproject.toml)
TABLE = Path(__file__).with_name("equivalent_core.md")
Signature = tuple[str, str, str, str, int]


def signatures(module_name: str, code: str) -> dict[str, Signature]:
    """Each mutant mutmut makes of ``code`` (named as mutmut names it) and what it does:
    (function, the mutated source line, original text, mutated text, occurrence)."""
    lines = code.splitlines()
    here = os.getcwd()
    os.chdir(HERE)  # mutmut reads its configuration (pyproject.toml) from the current folder
    try:
        module, mutations, _, _ = create_mutations(f"{module_name}.py", code)
    finally:
        os.chdir(here)
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    owners: dict[cst.CSTNode, str] = {}
    for node in module.body:
        if isinstance(node, cst.FunctionDef):
            owners[node] = f"x_{node.name.value}"
        elif isinstance(node, cst.ClassDef) and isinstance(node.body, cst.IndentedBlock):
            for method in node.body.body:
                if isinstance(method, cst.FunctionDef):
                    owners[method] = f"x\u01c1{node.name.value}\u01c1{method.name.value}"
    named: dict[str, Signature] = {}
    for function, found in group_by_top_level_node(mutations).items():
        prefix = owners.get(function)
        if prefix is None:
            continue
        seen: dict[tuple[str, str, str, str], int] = defaultdict(int)
        for number, mutation in enumerate(found, start=1):
            line = lines[positions[mutation.original_node].start.line - 1].strip()
            what = (
                prefix,
                line,
                module.code_for_node(mutation.original_node),
                module.code_for_node(mutation.mutated_node),
            )
            seen[what] += 1
            named[f"{module_name}.{prefix}__mutmut_{number}"] = (*what, seen[what])
    return named


def renames(module_name: str, old: str, new: str, names: list[str]) -> dict[str, str | None]:
    """``names`` (mutants of ``old``) mapped to the mutant of ``new`` that makes the same
    mutation, or None when ``new`` makes none (a name ``old`` does not make maps to None too)."""
    before, after = signatures(module_name, old), signatures(module_name, new)
    by_signature = {signature: name for name, signature in after.items()}
    return {n: by_signature.get(before[n]) if n in before else None for n in names}


def _source(module_name: str) -> Path:
    path = ROOT / Path(*module_name.split("."))
    package = path / "__init__.py"
    return package if package.exists() else path.with_suffix(".py")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("commit", help="the commit the rows were written at")
    parser.add_argument("names", nargs="+", help="the rows' mutant names (core_rate's stale)")
    parser.add_argument("--check", action="store_true", help="print the changes, write none")
    parser.add_argument("--table", type=Path, default=TABLE)
    args = parser.parse_args(argv)
    by_module: dict[str, list[str]] = defaultdict(list)
    for name in args.names:
        by_module[name.split("__mutmut_")[0].rsplit(".", 1)[0]].append(name)
    mapping: dict[str, str | None] = {}
    for module_name, names in sorted(by_module.items()):
        path = _source(module_name)
        shown = subprocess.run(
            ["git", "show", f"{args.commit}:{path.relative_to(ROOT).as_posix()}"],
            cwd=ROOT, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if shown.returncode != 0:
            print(f"{module_name}: not in {args.commit}: {shown.stderr.strip()}", file=sys.stderr)
            return 2
        mapping.update(renames(module_name, shown.stdout, path.read_text(encoding="utf-8"), names))
    moved = {old: new for old, new in mapping.items() if new is not None and new != old}
    gone = sorted(old for old, new in mapping.items() if new is None)
    for old, new in sorted(moved.items()):
        print(f"renamed  {old} -> {new}")
    for old in gone:
        print(f"gone     {old} (its mutation is no longer made: review the row)")
    if moved and not args.check:
        text = args.table.read_text(encoding="utf-8")
        lines = [_renamed(line, moved) for line in text.splitlines(keepends=True)]
        args.table.write_text("".join(lines), encoding="utf-8")
    return 1 if args.check and (moved or gone) else 0


def _renamed(line: str, moved: dict[str, str]) -> str:
    for old, new in moved.items():
        if line.startswith(f"| `{old}` |"):
            return line.replace(f"`{old}`", f"`{new}`", 1)
    return line


if __name__ == "__main__":
    sys.exit(main())
