"""Rows into the tables that carry a run key (migration 0016, sql/macros/run_key.sql).

``cases`` and ``scores`` hold ``run_key``, an integer read from each row's ``run_id``, so that a
query on one run lets DuckDB's zone maps skip the row groups of the others. Every insert of
new rows into them goes through :func:`insert_rows`, which derives the key in SQL with the
same macro the queries filter by: a row can never hold a key its run's queries would not ask
for. (Copies between warehouses, ``lake push`` / ``pull``, carry the stored key with the row.)
"""

from __future__ import annotations

from typing import Any

from evalwh.warehouse.queries import macros

KEYED_TABLES = frozenset({"cases", "scores"})


def insert_rows(con: Any, table: str, source: str) -> None:
    """``INSERT INTO table BY NAME SELECT * FROM source`` (a registered view or table), with
    ``run_key`` derived from ``run_id`` for the keyed tables."""
    if table in KEYED_TABLES:
        con.execute(macros())  # temporary macros: defined per connection, at no cost
        con.execute(
            f"INSERT INTO {table} BY NAME SELECT *, run_key(run_id) AS run_key FROM {source}"
        )
    else:
        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM {source}")
