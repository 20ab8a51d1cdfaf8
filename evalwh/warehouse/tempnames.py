"""Temporary names of files written in full and then renamed into place (exports,
artifacts): ``.<final name>.tmp-<pid>-<6 hex>``, hidden from a reader's glob; an artifact's
beside its final file, an export's in the exports' ``.tmp/`` folder (exportfiles.py). The
writer's pid in the name tells a killed writer's leftover from a live one's file."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from evalwh.warehouse.lease import pid_alive


def temp_name(final: Path) -> Path:
    """A name to write ``final`` under before renaming it into place."""
    return final.with_name(f".{final.name}.tmp-{os.getpid()}-{secrets.token_hex(3)}")


def writer_ended(temp: Path) -> bool:
    """Whether the process that named ``temp`` (with :func:`temp_name`) has ended on this
    host; a name without a pid counts as ended."""
    pid = temp.name.rpartition(".tmp-")[2].partition("-")[0]
    return not pid_alive(int(pid) if pid.isdigit() else None)
