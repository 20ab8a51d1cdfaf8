"""Who may write a run: leases (host, pid, token, heartbeat) and a run's liveness.

A run is written by one process at a time. The writer holds the run's lease: ``host``, ``pid``
and a random ``lease_token`` in its ``runs`` row, written when the run is created or claimed,
and renewed by a heartbeat at every flush and at least every ``stale_after_s / 4`` seconds: a
row appended to ``run_beats`` (migration 0015; a writer never updates a row while its run
runs, see :mod:`evalwh.warehouse.writer`), read as the newest beat per run (``sql/run_row.sql``). ``claim`` reopens a run for a resume and takes
the lease in one transaction on the file's write lock, so of two concurrent resumes one wins
and the other is told who holds the run. The rules:

- a run marked ``running`` (or ``exporting``) whose heartbeat is older than ``stale_after_s``,
  or whose pid is gone on this host, is ``interrupted``: anyone may resume it;
- a live run on this host (its pid exists, its heartbeat is fresh) is never taken over;
- a fresh run on another host cannot be verified from here: ``force=True`` (``--force``)
  takes it over; the old owner's next flush finds a foreign token and stops.
"""

from __future__ import annotations

import os
import secrets
import socket
from datetime import datetime, timezone
from typing import Any

from evalwh.errors import UsageError
from evalwh.warehouse.lake import Location

HOST = socket.gethostname()
DEFAULT_STALE_AFTER_S = 120.0
LIVE_STATES = ("running", "exporting")


class RunHeldError(UsageError):
    """Another process holds the run's lease (exit code 2)."""


def new_token() -> str:
    return secrets.token_hex(8)


def pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def heartbeat_age_s(row: dict[str, Any], now: datetime | None = None) -> float | None:
    beat = row.get("heartbeat_at")
    if not isinstance(beat, datetime):
        return None
    if beat.tzinfo is None:
        beat = beat.replace(tzinfo=timezone.utc)
    return ((now or datetime.now(timezone.utc)) - beat).total_seconds()


def liveness(row: dict[str, Any], stale_after_s: float = DEFAULT_STALE_AFTER_S) -> str:
    """``dead`` (interrupted), ``alive`` (verified on this host) or ``unverified`` (another
    host, fresh heartbeat) for a run marked running; ``done`` for any other status."""
    if row.get("status") not in LIVE_STATES:
        return "done"
    age = heartbeat_age_s(row)
    if age is None or age > stale_after_s:
        return "dead"
    if row.get("host") == HOST:
        return "alive" if pid_alive(row.get("pid")) else "dead"
    return "unverified"


def effective_status(row: dict[str, Any], stale_after_s: float = DEFAULT_STALE_AFTER_S) -> str:
    """A run still marked running whose writer is gone (or silent too long) is interrupted."""
    if liveness(row, stale_after_s) == "dead":
        return "interrupted"
    return str(row.get("status"))


def holder(row: dict[str, Any]) -> str:
    age = heartbeat_age_s(row)
    beat = f", heartbeat {age:.0f} s ago" if age is not None else ""
    return f"pid {row.get('pid')} on {row.get('host')}{beat}"


def claim(
    path: Location,
    run_id: str,
    *,
    force: bool = False,
    stale_after_s: float = DEFAULT_STALE_AFTER_S,
) -> tuple[str, str]:
    """Reopen ``run_id`` as running, owned by this process. Returns (token, previous status).

    Raises RunHeldError naming the holder when another live process owns the run.
    """
    from evalwh.warehouse.connect import write_transaction
    from evalwh.warehouse.queries import run_query

    token = new_token()

    def body(con: Any) -> dict[str, Any]:
        # Arrow: a TIMESTAMPTZ needs no pytz this way
        found = run_query(con, "run_row", run_id=run_id).to_pylist()
        if not found:
            raise UsageError(f"no run {run_id}")
        row = found[0]
        state = liveness(row, stale_after_s)
        if state == "alive" or (state == "unverified" and not force):
            hint = (
                "wait for it to finish, or stop that process"
                if state == "alive"
                else "if that process is gone (a killed container), take the run over with "
                f"`evalwh run CONFIG --resume {run_id} --force`, or wait {stale_after_s:.0f} s "
                "after its last heartbeat"
            )
            raise RunHeldError(f"run {run_id} is held by {holder(row)}: {hint}")
        con.execute(
            "UPDATE runs SET status = 'running', finished_at = NULL, heartbeat_at = now(), "
            "host = ?, pid = ?, lease_token = ? WHERE run_id = ?",
            [HOST, os.getpid(), token, run_id],
        )
        return dict(row)

    row = write_transaction(path, body, what=f"claim run {run_id}")
    return token, str(row["status"])


def release(path: Location, run_id: str, token: str, status: str) -> None:
    """Give a claimed run back with ``status`` (a resume that stopped before any request)."""
    from evalwh.warehouse.connect import write_transaction

    write_transaction(
        path,
        lambda con: con.execute(
            "UPDATE runs SET status = ?, lease_token = NULL WHERE run_id = ? AND lease_token = ?",
            [status, run_id, token],
        ),
        what=f"release run {run_id}",
    )
