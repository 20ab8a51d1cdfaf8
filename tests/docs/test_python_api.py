"""docs/python-api.md is checked against the code: every public name, its signature and its
docstring's first paragraph are on the page, and the page's python blocks run.

- every name in ``evalwh.__all__`` and ``evalwh.api.__all__``, and every public method of
  ``WarehouseView``, has a docstring and a ``### `name` `` heading (methods as
  ``### `wh.name` ``), and ``evalwh.frames.runs/cases/scores``; the call signature, rendered from the code (``name(a, *, b=None)``),
  is written on the page as code, and the first paragraph of the docstring is quoted there;
- the ```python blocks run in page order, in one namespace, in a copy of examples/tutorial/.
"""

from __future__ import annotations

import inspect
import re
import shutil
from pathlib import Path

import pytest

import evalwh
from evalwh import api
from tests.conftest import ROOT

PAGE = ROOT / "docs" / "python-api.md"
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)


def public_names() -> list[tuple[str, object]]:
    names = [(n, getattr(api, n)) for n in sorted(set(evalwh.__all__) | set(api.__all__))]
    methods = [
        (f"wh.{n}", member)
        for n, member in vars(api.WarehouseView).items()
        if not n.startswith("_") and callable(member)
    ]
    frames = [(f"evalwh.frames.{n}", getattr(api.frames, n)) for n in ("runs", "cases", "scores")]
    return names + methods + frames


def signature(label: str, obj: object) -> str:
    """``name(a, b='x', *, c=None)``: the call as the code defines it, without annotations."""
    parts: list[str] = []
    star = False
    for p in inspect.signature(obj).parameters.values():  # type: ignore[arg-type]
        if p.name == "self":
            continue
        if p.kind is p.VAR_POSITIONAL:
            parts.append(f"*{p.name}")
            star = True
        elif p.kind is p.VAR_KEYWORD:
            parts.append(f"**{p.name}")
        else:
            if p.kind is p.KEYWORD_ONLY and not star:
                parts.append("*")
                star = True
            parts.append(p.name if p.default is p.empty else f"{p.name}={p.default!r}")
    return f"{label}({', '.join(parts)})"


def plain(text: str) -> str:
    """Docstring or page text with RST literals made Markdown ones and whitespace collapsed."""
    return " ".join(text.replace("``", "`").split())


def test_every_public_name_has_a_docstring() -> None:
    missing = [label for label, obj in public_names() if not inspect.getdoc(obj)]
    assert not missing, f"public names without a docstring: {missing}"


@pytest.mark.parametrize(("label", "obj"), public_names(), ids=[n for n, _ in public_names()])
def test_page_documents(label: str, obj: object) -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert re.search(rf"^### `{re.escape(label)}`[ \t]*$", text, re.M), f"no '### `{label}`'"
    if not isinstance(obj, type) or obj is api.WarehouseView:  # dataclasses: fields instead
        shown = signature(label, obj)
        assert f"`{shown}`" in text, f"the page does not show the signature {shown}"
    first = (inspect.getdoc(obj) or "").split("\n\n")[0]
    assert plain(first) in plain(text), f"the page does not quote the docstring of {label}"


@pytest.mark.slow  # a long end-to-end proof; CI runs it (`pytest -m slow`)
def test_python_blocks_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "tutorial"
    shutil.copytree(
        ROOT / "examples" / "tutorial",
        work,
        ignore=shutil.ignore_patterns(".evalwh", "__pycache__"),
    )
    monkeypatch.chdir(work)
    text = PAGE.read_text(encoding="utf-8")
    codes = [
        "\n" * text.count("\n", 0, m.start(2)) + m.group(2)  # errors name the page's line
        for m in FENCE.finditer(text)
        if m.group(1) == "python"
    ]
    assert len(codes) >= 6
    namespace: dict[str, object] = {}
    for code in codes:
        exec(compile(code, str(PAGE), "exec"), namespace)
    assert (work / ".evalwh" / "warehouse.duckdb").exists()
