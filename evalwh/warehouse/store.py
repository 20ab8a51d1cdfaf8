"""Run bookkeeping over the warehouse: create, finish, resolve references, export, query."""

from __future__ import annotations

import os
import secrets
import socket
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa

from evalwh.errors import RunNotFoundError, UsageError
from evalwh.warehouse.connect import read_connection, write_connection
from evalwh.warehouse.queries import run_query
from evalwh.warehouse.writer import to_json

EXPORT_SCHEMA_VERSION = "1"
EXPORT_MEMORY_LIMIT = "128MB"
ORDER = {
    "cases": "variant, model, case_id, repeat",
    "scores": "variant, model, case_id, repeat, criterion",
}
HOST = socket.gethostname()


def new_run_id(now: datetime | None = None) -> str:
    now = now or datetime.now(timezone.utc)
    # Milliseconds keep ids in start order even for runs started within one second.
    return f"{now:%Y-%m-%dT%H%M%S}.{now.microsecond // 1000:03d}-{secrets.token_hex(2)}"


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


class Warehouse:
    """One DuckDB warehouse file. Connections are opened per call and closed right after."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    @property
    def exists(self) -> bool:
        return self.path.exists()

    def _require(self) -> None:
        if not self.exists:
            raise UsageError(
                f"no warehouse at {self.path}: nothing has been run here yet "
                "(run `evalwh run`, or point -o/--output-dir at the folder that holds it)"
            )

    # -- reads ---------------------------------------------------------------------------
    def query(self, name: str, **params: Any) -> pa.Table:
        self._require()
        with read_connection(self.path) as con:
            return run_query(con, name, **params)

    def sql(self, text: str, params: dict[str, Any] | list[Any] | None = None) -> pa.Table:
        self._require()
        with read_connection(self.path) as con:
            return con.execute(text, params or []).to_arrow_table()

    def resolve(self, ref: str) -> str:
        """A run id from a full id, a unique prefix, a label (newest wins), ``latest`` or a
        baseline name (``baseline`` unless pinned under another name)."""
        self._require()
        rows = self.query("resolve_run", ref=ref).to_pylist()
        if not rows and ref == "baseline":
            raise RunNotFoundError(
                "no baseline is pinned yet: pin one with `evalwh baseline set RUN`"
            )
        if not rows:
            raise RunNotFoundError(
                f"no run matches '{ref}' (use a run id, a unique prefix, a label, 'latest' or a "
                "baseline name; see `evalwh list` and `evalwh baseline list`)"
            )
        best = rows[0]
        if best["how"] == 3 and len(rows) > 1:
            ids = ", ".join(r["run_id"] for r in rows[:5])
            raise RunNotFoundError(
                f"'{ref}' is a prefix of several runs ({ids}); give more of the id"
            )
        return str(best["run_id"])

    def run_row(self, run_id: str) -> dict[str, Any]:
        rows = self.sql("SELECT * FROM runs WHERE run_id = ?", [run_id]).to_pylist()
        if not rows:
            raise RunNotFoundError(f"no run {run_id}")
        row = rows[0]
        row["status"] = effective_status(row)
        return row

    # -- writes --------------------------------------------------------------------------
    def create_run(self, row: dict[str, Any]) -> None:
        row = {**row, "host": HOST, "pid": os.getpid()}
        for key in ("config_snapshot", "filters"):
            row[key] = to_json(row.get(key))
        columns = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        with write_connection(self.path, wait_s=None) as con:
            con.execute(f"INSERT INTO runs ({columns}) VALUES ({marks})", list(row.values()))

    def insert_labels(self, run_id: str, config: Any) -> None:
        """Store the config's human labels with the run (pairwise and pointwise)."""
        rows = [
            [run_id, "pairwise", lb.comparison, lb.case_id, lb.prefer, None, lb.note]
            for lb in config.labels
        ]
        rows += [
            [run_id, "pointwise", None, c.id, None, to_json(c.human_label), None]
            for c in config.cases
            if c.human_label is not None
        ]
        if not rows:
            return
        with write_connection(self.path, wait_s=None) as con:
            con.executemany("INSERT INTO labels VALUES (?, ?, ?, ?, ?, ?, ?)", rows)

    def replace_labels(self, run_id: str, labels: Any) -> int:
        """Store pairwise labels with a run, replacing its labels of the same comparison and
        case; returns how many stored labels were replaced."""
        rows = [
            [run_id, "pairwise", lb.comparison, lb.case_id, lb.prefer, None, lb.note]
            for lb in labels
        ]
        keys = [[run_id, lb.comparison, lb.case_id] for lb in labels]
        with write_connection(self.path, wait_s=None) as con:
            con.execute("BEGIN")
            con.execute(
                "CREATE TEMP TABLE new_keys (run_id VARCHAR, comparison VARCHAR, case_id VARCHAR)"
            )
            if keys:
                con.executemany("INSERT INTO new_keys VALUES (?, ?, ?)", keys)
            found = con.execute(
                "SELECT count(*) FROM labels l SEMI JOIN new_keys k USING (run_id, comparison, case_id) "
                "WHERE l.kind = 'pairwise'"
            ).fetchone()
            con.execute(
                "DELETE FROM labels WHERE kind = 'pairwise' AND (run_id, comparison, case_id) IN "
                "(SELECT (run_id, comparison, case_id) FROM new_keys)"
            )
            if rows:
                con.executemany("INSERT INTO labels VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
            con.execute("DROP TABLE new_keys")
            con.execute("COMMIT")
        return int(found[0]) if found else 0

    def reopen_run(self, run_id: str) -> None:
        """Mark a stored run as running again, owned by this process (resume, retry errors)."""
        with write_connection(self.path, wait_s=None) as con:
            con.execute(
                "UPDATE runs SET status = 'running', finished_at = NULL, heartbeat_at = now(), "
                "host = ?, pid = ? WHERE run_id = ?",
                [HOST, os.getpid(), run_id],
            )

    def cells(self, run_id: str, *, errors_only: bool = False) -> set[tuple[str, str, str, int]]:
        """The (variant, model, case_id, repeat) cells stored for a run."""
        table = self.query("run_cells", run_id=run_id, errors_only=errors_only)
        cols = table.to_pydict()
        return set(
            zip(cols["variant"], cols["model"], cols["case_id"], cols["repeat"], strict=True)
        )

    def clear_cache(self, *, model: str | None = None, older_than_days: float | None = None) -> int:
        """Delete response-cache entries (all, one model's, or older ones); returns how many."""
        if not self.exists:
            return 0
        where, args = ["true"], []
        if model is not None:
            where.append("model = ?")
            args.append(model)
        if older_than_days is not None:
            where.append("created_at < now() - to_microseconds(CAST(? * 86400e6 AS BIGINT))")
            args.append(older_than_days)
        with write_connection(self.path, wait_s=None) as con:
            row = con.execute(
                f"DELETE FROM response_cache WHERE {' AND '.join(where)} RETURNING 1", args
            ).fetchall()
        return len(row)

    def finish_run(self, run_id: str, status: str, totals: dict[str, Any] | None = None) -> None:
        with write_connection(self.path, wait_s=None) as con:
            con.execute(
                "UPDATE runs SET status = ?, finished_at = now(), heartbeat_at = now(), totals = ? "
                "WHERE run_id = ?",
                [status, to_json(totals), run_id],
            )

    def export_run(self, run_id: str, exports_dir: Path) -> Path:
        """Write Hive-partitioned Parquet: exports/run_id=<id>/{cases,scores}.parquet.

        The files also hold ``run_id`` as a column, so a reader needs no partition parsing
        (Polars would otherwise try to read the id as a date).
        """
        target = exports_dir / f"run_id={run_id}"
        target.mkdir(parents=True, exist_ok=True)
        with read_connection(self.path) as con:
            # Sorting a large run for the export may spill to disk rather than hold it all.
            con.execute(f"SET memory_limit = '{EXPORT_MEMORY_LIMIT}'")
            for table in ("cases", "scores"):
                out = (target / f"{table}.parquet").as_posix().replace("'", "''")
                con.execute(
                    f"COPY (SELECT * FROM {table} WHERE run_id = $run_id "
                    f"ORDER BY {ORDER[table]}) TO '{out}' (FORMAT parquet, COMPRESSION zstd, "
                    f"KV_METADATA {{schema_version: '{EXPORT_SCHEMA_VERSION}', run_id: '{run_id}'}})",
                    {"run_id": run_id},
                )
        return target


def effective_status(row: dict[str, Any]) -> str:
    """A run still marked running whose process is gone on this host did not finish."""
    if row.get("status") == "running" and row.get("host") == HOST and not pid_alive(row.get("pid")):
        return "interrupted"
    return str(row.get("status"))


def utcnow() -> datetime:
    return datetime.now(timezone.utc)
