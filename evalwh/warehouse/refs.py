"""Run references beyond ids, labels and baseline names: ``previous``, ``latest~N`` and
``git:REF``.

- ``latest~N``: the run N places before the newest run, among the runs of the newest run's
  suite (``latest~0`` is ``latest``); ``previous`` is ``latest~1``.
- ``git:REF``: the newest run whose recorded ``git_commit`` is REF's commit or, failing that,
  its nearest ancestor (``git rev-list REF``, run in the config's folder, else the current
  one). REF is a branch, tag or commit; it may not start with ``-`` (it is never an option
  of git), and git runs with a time bound.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from evalwh.errors import RunNotFoundError, UsageError

RELATIVE = re.compile(r"^latest~(\d{1,6})$")
GIT_PREFIX = "git:"
MAX_ANCESTORS = 5000  # how far back in history git:REF looks for a run
GIT_TIMEOUT_S = 10.0
SAFE_REF = re.compile(r"^[A-Za-z0-9._/@{}^~+-]+$")


def relative_offset(ref: str) -> int | None:
    """The offset a relative reference names (``previous``: 1), or None."""
    if ref == "previous":
        return 1
    match = RELATIVE.match(ref)
    return int(match.group(1)) if match else None


def git_ancestors(ref: str, folder: Path) -> list[str]:
    """REF's commit and its ancestors, nearest first (at most :data:`MAX_ANCESTORS`)."""
    if not ref or ref.startswith("-") or not SAFE_REF.match(ref):
        raise UsageError(
            f"git:{ref}: not a git ref (use a branch, tag or commit, e.g. git:main, git:v1.2)"
        )
    try:
        done = subprocess.run(
            ["git", "rev-list", f"--max-count={MAX_ANCESTORS}", "--end-of-options", ref, "--"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise UsageError(f"git:{ref}: could not run git in {folder} ({exc})") from None
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["unknown revision"])[-1]
        raise RunNotFoundError(
            f"git:{ref}: git cannot resolve it in {folder} ({reason}); run from the "
            "repository of the eval (or give -c CONFIG inside it)"
        )
    return done.stdout.split()
