"""Copying whole runs between a warehouse file and a DuckLake, and DuckLake's maintenance.

Both directions run on the lake's connection with the local file attached beside it as
``evalwh_local``, in one transaction per copy: a run arrives with all its rows or not at all.
Runs are keyed by ``run_id``; one already on the receiving side is skipped (idempotent).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalwh.warehouse import lake
from evalwh.warehouse.connect import ROW_GROUP_SIZE, transaction, write_connection
from evalwh.warehouse.lake import ALIAS, LakeTarget, quote

LOCAL = "evalwh_local"
RUN_TABLES = ("runs", "cases", "scores", "pairs", "labels", "turns")


def copy_runs(
    target: LakeTarget, local: Path, run_ids: list[str], *, direction: str
) -> tuple[list[str], list[str], dict[str, int]]:
    """Copy ``run_ids`` lake -> file (``pull``) or file -> lake (``push``).

    Returns (copied, already present, rows per table)."""
    push = direction == "push"
    src, dst = (LOCAL, ALIAS) if push else (ALIAS, LOCAL)
    counts = dict.fromkeys(RUN_TABLES, 0)
    if not run_ids:
        return [], [], counts
    with write_connection(target, wait_s=None) as con:
        # a pull writes the file in evalwh's row groups (connect.ROW_GROUP_SIZE)
        mode = " (READ_ONLY)" if push else f" (ROW_GROUP_SIZE {ROW_GROUP_SIZE})"
        con.execute(f"ATTACH {quote(local.as_posix())} AS {LOCAL}{mode}")
        try:

            def attempt() -> tuple[list[str], list[str]]:
                with transaction(con):
                    stored = {
                        r[0]
                        for r in con.execute(
                            f"SELECT DISTINCT run_id FROM {dst}.runs "
                            "WHERE list_contains(?, run_id)",
                            [run_ids],
                        ).fetchall()
                    }
                    present = [r for r in run_ids if r in stored]  # in the order asked for
                    todo = [r for r in run_ids if r not in present]
                    for table in RUN_TABLES:
                        found = con.execute(
                            f"SELECT count(*) FROM {src}.{table} WHERE list_contains(?, run_id)",
                            [todo],
                        ).fetchone()
                        counts[table] = int(found[0]) if found else 0
                        con.execute(
                            f"INSERT INTO {dst}.{table} BY NAME SELECT * FROM {src}.{table} "
                            "WHERE list_contains(?, run_id)",
                            [todo],
                        )
                    if push and todo:  # answers the lake lacks, so other machines reuse them
                        con.execute(
                            f"INSERT INTO {dst}.response_cache BY NAME SELECT * FROM "
                            f"{src}.response_cache s WHERE list_contains(?, s.run_id) AND NOT "
                            f"EXISTS (SELECT 1 FROM {dst}.response_cache r "
                            "WHERE r.request_hash = s.request_hash)",
                            [todo],
                        )
                    return todo, present

            copied, present = lake.retry_conflicts(attempt, what=f"{direction} runs")
        finally:
            con.execute(f"DETACH {LOCAL}")
    return copied, present, counts


# DuckLake's own maintenance, in order: inlined rows to Parquet, small files merged, old
# snapshots expired, then the files only those snapshots used deleted, then files no snapshot
# ever committed.
MAINTENANCE = (
    ("flush_inlined_data", "CALL ducklake_flush_inlined_data('{lake}')"),
    ("merge_adjacent_files", "CALL ducklake_merge_adjacent_files('{lake}')"),
    (
        "expire_snapshots",
        "CALL ducklake_expire_snapshots('{lake}', older_than => now() - INTERVAL {s} SECOND)",
    ),
    (
        "cleanup_old_files",
        "CALL ducklake_cleanup_old_files('{lake}', older_than => now() - INTERVAL {s} SECOND)",
    ),
    (  # left by a writer killed before its commit; the age keeps in-flight files safe
        "delete_orphaned_files",
        "CALL ducklake_delete_orphaned_files('{lake}', older_than => now() - INTERVAL {s} SECOND)",
    ),
)


def maintain_lake(target: LakeTarget, *, expire_days: float) -> list[dict[str, Any]]:
    """Run each maintenance step (retried when a writer's commit races it); one row per step
    with the number of rows DuckLake reported (tables flushed, files merged, snapshots
    expired, files deleted)."""
    seconds = int(expire_days * 86400)
    out: list[dict[str, Any]] = []
    with write_connection(target, wait_s=None) as con:
        for step, template in MAINTENANCE:
            sql = template.format(lake=ALIAS, s=seconds)

            def call(sql: str = sql) -> int:
                return int(con.execute(sql).to_arrow_table().num_rows)

            out.append({"step": step, "rows": lake.retry_conflicts(call, what=f"lake {step}")})
    return out
