"""docs/tutorial.md runs as written, from top to bottom, on a copy of examples/tutorial/.

Conventions of the page (so that this test can read it):

- a fenced block with ``file=NAME`` is a file of examples/tutorial/, shown whole and verbatim;
  every file of that folder is shown once;
- a ```diff block with ``file=NAME`` is an edit the reader makes at that point: its ``-`` and
  context lines must be in the file as they stand, and become the context and ``+`` lines;
- every other ```sh block holds commands, run in page order in the copy: ``evalwh ...`` in
  this process, ``sh SCRIPT`` as a real shell (with ``evalwh`` on PATH); ``cd`` lines and the
  ``cp -r examples/tutorial ...`` that makes the copy are skipped (the test made its own).
  A trailing ``# exit N`` comment is the exit code the page promises (default 0);
- a ```text block right after a ```sh block is what its last command prints: every line
  without table borders must be printed, with any run id standing for any run id (a line
  ``...`` marks lines left out);
- ```python blocks run in page order, in one namespace, in the copy.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.inprocess import evalwh_inprocess

PAGE = ROOT / "docs" / "tutorial.md"
EXAMPLE = ROOT / "examples" / "tutorial"
FENCE = re.compile(r"^```([\w+-]*)([^\n]*)\n(.*?)^```[ \t]*$", re.M | re.S)
RUN_ID = re.compile(r"\d{4}-\d\d-\d\dT\d{6}\.\d{3}-[0-9a-f]{4}")
TABLE = re.compile(r"[┃│┏┡└━]")
EXIT = re.compile(r"#\s*exit\s+(\d+)\s*$")


def page_blocks() -> list[tuple[str, dict[str, str], str]]:
    found = []
    for match in FENCE.finditer(PAGE.read_text(encoding="utf-8")):
        lang, info, body = match.groups()
        found.append((lang, dict(re.findall(r"(\w+)=(\S+)", info)), body))
    return found


def shipped_files() -> set[str]:
    return {
        str(p.relative_to(EXAMPLE))
        for p in EXAMPLE.rglob("*")
        if p.is_file() and ".evalwh" not in p.parts and "__pycache__" not in p.parts
    }


def apply_diff(path: Path, diff: str) -> None:
    """Apply a unified-diff-like edit given as context, ``-`` and ``+`` lines."""
    old, new = [], []
    for line in diff.splitlines(keepends=True):
        if line.startswith(("---", "+++", "@@")):
            continue
        mark, text = line[:1], line[1:]
        if mark in (" ", "-"):
            old.append(text)
        if mark in (" ", "+"):
            new.append(text)
    before = path.read_text(encoding="utf-8")
    assert "".join(old) in before, f"the diff for {path.name} does not apply"
    path.write_text(before.replace("".join(old), "".join(new), 1), encoding="utf-8")


def check_output(expected: str, printed: str, command: str) -> None:
    lines = {line.rstrip() for line in printed.splitlines()}
    for want in expected.splitlines():
        if not want.strip() or want.strip() == "..." or TABLE.search(want):
            continue
        pattern = RUN_ID.pattern.join(map(re.escape, RUN_ID.split(want.rstrip())))
        assert any(re.fullmatch(pattern, line) for line in lines), (
            f"`{command}` did not print the line the page shows:\n{want}\n--- printed:\n{printed}"
        )


def test_the_page_shows_every_example_file_verbatim() -> None:
    shown = {a["file"]: body for lang, a, body in page_blocks() if "file" in a and lang != "diff"}
    assert set(shown) == shipped_files(), "the page and examples/tutorial/ hold other files"
    for name, body in shown.items():
        assert body == (EXAMPLE / name).read_text(encoding="utf-8"), f"{name} differs"


@pytest.mark.slow  # a long end-to-end proof; CI runs it (`pytest -m slow`)
def test_the_tutorial_runs_top_to_bottom(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "tutorial"
    shutil.copytree(EXAMPLE, work, ignore=shutil.ignore_patterns(".evalwh", "__pycache__"))
    monkeypatch.chdir(work)
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("GITHUB_SHA", raising=False)
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    namespace: dict[str, object] = {}
    ran: list[tuple[str, int]] = []
    last = ("", "")  # the last command and what it printed
    previous_lang = ""
    for lang, attrs, body in page_blocks():
        if lang == "diff" and "file" in attrs:
            apply_diff(work / attrs["file"], body)
        elif lang == "sh" and "file" not in attrs:
            for line in filter(str.strip, body.splitlines()):
                words = shlex.split(line, comments=True)
                if words[0] == "cd" or words[:3] == ["cp", "-r", "examples/tutorial"]:
                    continue
                promised = EXIT.search(line)
                want = int(promised.group(1)) if promised else 0
                if words[0] == "evalwh":
                    code, out, err = evalwh_inprocess(capsys, *words[1:])
                else:
                    assert words[0] == "sh", f"teach this test to run: {line}"
                    done = subprocess.run(
                        words, cwd=work, env=env, capture_output=True, text=True, check=False
                    )
                    code, out, err = done.returncode, done.stdout, done.stderr
                assert code == want, f"`{line}` exited {code}, the page says {want}\n{out}\n{err}"
                ran.append((words[0] if words[0] != "evalwh" else " ".join(words[:2]), code))
                last = (line, out)
        elif lang == "text" and previous_lang == "sh":
            check_output(body, last[1], last[0])
        elif lang == "python" and "file" not in attrs:
            exec(compile(body, str(PAGE), "exec"), namespace)
        previous_lang = lang
    steps = {name for name, _ in ran}
    assert {
        "evalwh validate",
        "evalwh run",
        "evalwh show",
        "evalwh baseline",
        "evalwh compare",
        "evalwh gate",
        "sh",
    } <= steps
    # the story: the gate fails on the regression, and passes once it is undone
    assert ("evalwh gate", 1) in ran
    assert [code for name, code in ran if name == "sh"] == [1, 0]
