"""Find the top-level ``sql/`` and ``migrations/`` folders, installed or from a checkout.

In a wheel they ship as ``evalwh/_resources/<name>`` (hatch ``force-include``); in a source
checkout or an editable install they are the folders beside the package. One function answers
for both, so every caller finds them the same way.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]


@cache
def resource_dir(name: str) -> Path:
    for candidate in (PACKAGE_DIR / "_resources" / name, PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        f"evalwh cannot find its '{name}' folder (looked in {PACKAGE_DIR / '_resources'} "
        f"and {PACKAGE_DIR.parent}); the installation is broken, reinstall evalwh"
    )
