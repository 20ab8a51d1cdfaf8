"""Sharded runs: many processes write one logical run, and exactly one of them concludes it.

``evalwh run eval.yaml --shard 3/8 --run-id RUN`` on eight machines writes one run: each shard
runs the cases whose id hashes to it (:func:`evalwh.engine.plan.shard_of`) and appends its rows
under the same ``run_id``. The rules, for a DuckDB file and for a DuckLake warehouse alike:

- :func:`join` creates the run on first sight, or joins it when the config and the shard
  count match (anything else is refused, naming what differs). On a lake two first shards may
  both insert the row (appends never conflict there); the loser's row is deleted at once
  (the row with the smallest ``lease_token`` stays), so the run has one row.
- A shard leaves the run's status alone; its heartbeat shows it is alive. Re-running a shard
  skips the cells already stored, so a killed shard resumes by running it again.
- :func:`claim_conclusion` moves the run from ``running`` to ``exporting`` in one
  transaction, only once every planned cell is stored (or when ``partial``). Of two processes
  that try at once, one wins (the file lock, or DuckLake's conflict on the ``runs`` row) and
  the other is told the run is already concluded, so the gate is judged once.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from evalwh.errors import UsageError
from evalwh.warehouse.connect import write_transaction
from evalwh.warehouse.lake import LakeTarget, Location
from evalwh.warehouse.lease import HOST, new_token

RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")


def check_run_id(run_id: str) -> str:
    """A run id given on the command line: it names a folder of the exports, so it is kept to
    letters, digits and ``._:-`` (no slash, no ``..``)."""
    if not RUN_ID.match(run_id) or ".." in run_id:
        raise UsageError(
            f"--run-id {run_id!r} is not a usable run id: use 1-128 letters, digits, '.', '_', "
            "':' or '-', starting with a letter or digit (e.g. nightly-2026-11-30-${CI_PIPELINE_ID})"
        )
    return run_id


def parse_shard(text: str) -> tuple[int, int]:
    """``K/N`` (1 <= K <= N) as (K, N)."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if match:
        k, n = int(match.group(1)), int(match.group(2))
        if 1 <= k <= n <= 10_000:
            return k, n
    raise UsageError(
        f"--shard {text!r} is not K/N with 1 <= K <= N <= 10000 (e.g. --shard 3/8: the third of "
        "eight shards)"
    )


def _rows(con: Any, run_id: str) -> list[dict[str, Any]]:
    return list(
        con.execute(
            "SELECT run_id, status, config_hash, dataset_hash, filters, n_planned, lease_token, "
            "no_look "
            "FROM runs WHERE run_id = ? ORDER BY lease_token",
            [run_id],
        )
        .to_arrow_table()
        .to_pylist()
    )


def _check_join(found: dict[str, Any], row: dict[str, Any], shards: int) -> None:
    run_id = row["run_id"]
    stored = json.loads(found["filters"]) if found.get("filters") else {}
    if stored.get("shards") != shards:
        raise UsageError(
            f"run {run_id} exists and is not a run of {shards} shards "
            f"(it has {stored.get('shards') or 'no'} shards): give every shard the same N, or "
            "another --run-id"
        )
    for name in ("config_hash", "dataset_hash"):
        if found[name] != row[name]:
            raise UsageError(
                f"run {run_id} was started from another {name.split('_')[0]} "
                f"({name} differs): every shard must run the same eval.yaml and cases"
            )
    if bool(found.get("no_look")) != bool(row.get("no_look")):
        raise UsageError(
            f"run {run_id} was {'' if found.get('no_look') else 'not '}started as a no-look run "
            f"and this shard {'is not' if found.get('no_look') else 'is'}: give every shard the "
            "same privacy.no_look (and --no-look)"
        )
    if found["status"] not in ("running", "interrupted"):
        raise UsageError(
            f"run {run_id} is already {found['status']}: a finished run takes no more shards "
            "(start a new run with another --run-id)"
        )


def join(path: Location, row: dict[str, Any], shards: int) -> bool:
    """Create the sharded run ``row`` or join it; True when this call created it."""
    run_id = row["run_id"]
    token = new_token()
    values = {**row, "host": HOST, "pid": os.getpid(), "lease_token": token}

    def body(con: Any) -> bool:
        found = _rows(con, run_id)
        if found:
            _check_join(found[0], row, shards)
            return False
        columns = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        con.execute(f"INSERT INTO runs ({columns}) VALUES ({marks})", list(values.values()))
        return True

    created = write_transaction(path, body, what=f"join run {run_id}")
    if created and isinstance(path, LakeTarget):
        created = _keep_one(path, run_id, token)
    return created


def _keep_one(path: Location, run_id: str, token: str) -> bool:
    """After a lake insert: if another shard inserted the run at the same moment, the row with
    the smallest token stays. True when ours did."""

    def body(con: Any) -> bool:
        found = _rows(con, run_id)
        if len(found) > 1:
            con.execute(
                "DELETE FROM runs WHERE run_id = ? AND lease_token <> ?",
                [run_id, found[0]["lease_token"]],
            )
        return bool(found) and found[0]["lease_token"] == token

    return write_transaction(path, body, what=f"join run {run_id}")


def claim_conclusion(path: Location, run_id: str, *, partial: bool = False) -> str | None:
    """Move a sharded run to ``exporting`` when every planned cell is stored; return the lease
    token to conclude it with, or None when another process already concluded it (or is).

    Raises UsageError naming the missing cells when some shard has not finished (unless
    ``partial``)."""
    token = new_token()

    def body(con: Any) -> str | None:
        found = _rows(con, run_id)
        if not found:
            raise UsageError(f"no run {run_id}")
        if found[0]["status"] not in ("running", "interrupted"):
            return None
        count = con.execute("SELECT count(*) FROM cases WHERE run_id = ?", [run_id]).fetchone()
        stored, planned = int(count[0]) if count else 0, int(found[0]["n_planned"])
        if stored < planned and not partial:
            raise ShardsMissing(
                f"run {run_id} has {stored} of its {planned} cells: a shard has not finished "
                "(re-run the missing `--shard K/N` commands; each resumes where it stopped), "
                "or conclude it as it is with `evalwh finish RUN --partial`"
            )
        con.execute(
            "UPDATE runs SET status = 'exporting', heartbeat_at = now(), host = ?, pid = ?, "
            "lease_token = ? WHERE run_id = ?",
            [HOST, os.getpid(), token, run_id],
        )
        return token

    return write_transaction(path, body, what=f"conclude run {run_id}")


class ShardsMissing(UsageError):
    """A sharded run cannot be concluded: some planned cells are not stored yet."""
