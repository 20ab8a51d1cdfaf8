"""Run bookkeeping over the warehouse: create, finish, resolve references, export, query."""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa

from evalwh.errors import RunNotFoundError, UsageError
from evalwh.warehouse import exportfiles
from evalwh.warehouse.connect import HELD, memory_limit, read_connection, write_transaction
from evalwh.warehouse.ioerrors import io_guard
from evalwh.warehouse.lake import LakeTarget, Location
from evalwh.warehouse.lease import DEFAULT_STALE_AFTER_S, HOST, effective_status
from evalwh.warehouse.queries import run_query
from evalwh.warehouse.writer import to_json

if TYPE_CHECKING:
    import duckdb

LABEL_INSERT = (
    "INSERT INTO labels (run_id, kind, comparison, case_id, prefer, label, note, labelled_by, "
    "labelled_at, variant, model, repeat) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
# The DuckDB limit of a run's own queries after its cells (totals, summary, errors, the gate),
# on one thread: they group by case, and within the warehouse's 2 GB a million cases took
# +630 MB for the gate alone; DuckDB also keeps what they read cached up to its limit. Within
# this limit they add ~+65 MB at a million cases (128 MB: ~+150 MB), as fast. A query that
# cannot fit runs again within the warehouse's limit (Warehouse.query).
POST_RUN_MEMORY_LIMIT = "32MB"
# A debugging switch for crash tests: sleep this long after the export's temporary files are
# written and before they are renamed into place (documented in docs/troubleshooting.md).
EXPORT_PAUSE_ENV = "EVALWH_DEBUG_EXPORT_PAUSE_S"


def new_run_id(now: datetime | None = None) -> str:
    now = now or datetime.now(timezone.utc)
    # Milliseconds keep ids in start order even for runs started within one second.
    return f"{now:%Y-%m-%dT%H%M%S}.{now.microsecond // 1000:03d}-{secrets.token_hex(2)}"


class Warehouse:
    """One DuckDB warehouse file (or DuckLake target). Connections are opened per call and
    closed right after, or held for the reads of one :meth:`reading` block (one page of the
    viewer)."""

    def __init__(
        self,
        path: Location,
        *,
        stale_after_s: float = DEFAULT_STALE_AFTER_S,
        git_dir: Path | None = None,
        memory_limit: str | None = None,
    ) -> None:
        self.path: Location = path if isinstance(path, LakeTarget) else Path(path)
        # named queries run within this DuckDB limit (and on one thread) first (None: the
        # warehouse's own), and again within the warehouse's when one cannot fit
        # (POST_RUN_MEMORY_LIMIT)
        self.memory_limit = memory_limit
        self.stale_after_s = stale_after_s  # a running run silent this long is interrupted
        self.git_dir = git_dir  # where `git:REF` runs git (None: the current folder)

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
    @contextmanager
    def reading(self) -> Iterator[None]:
        """Run the reads inside the block on one read connection, closed when it ends.

        One connection per read costs an open, a schema check and cold caches each time (a
        third of a run page's server time on a 10M-row warehouse); the viewer wraps each
        page in this block instead, so it holds the file only while that page's queries run
        (well under a second) and never between requests. The connection belongs to the
        calling thread (or task) only; a block inside a block reuses the outer one. Writes
        are not allowed in the block (they open their own connection after it).
        """
        held = HELD.get()
        if (held is not None and held[0] == self.path) or not self.exists:
            yield
            return
        with read_connection(self.path) as con:
            token = HELD.set((self.path, con))
            try:
                yield
            finally:
                HELD.reset(token)

    @contextmanager
    def _read(self) -> Iterator[duckdb.DuckDBPyConnection]:
        self._require()
        held = HELD.get()
        if held is not None and held[0] == self.path:
            yield held[1]
            return
        with read_connection(self.path) as con:
            yield con

    def query(self, name: str, **params: Any) -> pa.Table:
        with self._read() as con:
            if self.memory_limit is None:
                return run_query(con, name, **params)
            try:
                with _memory_limit(con, self.memory_limit), _one_thread(con):
                    return run_query(con, name, **params)
            except duckdb.OutOfMemoryException:
                return run_query(con, name, **params)  # _memory_limit restored the limit

    def sql(self, text: str, params: dict[str, Any] | list[Any] | None = None) -> pa.Table:
        with self._read() as con:
            return con.execute(text, params or []).to_arrow_table()

    def resolve(self, ref: str) -> str:
        """A run id from a full id, a unique prefix, a label (newest wins), ``latest``, a
        baseline name (``baseline`` unless pinned under another name), ``previous``,
        ``latest~N`` or ``git:REF`` (see :mod:`evalwh.warehouse.refs`)."""
        from evalwh.warehouse import refs

        self._require()
        offset = refs.relative_offset(ref)
        if offset is not None:
            return self._first(
                f"no run '{ref}': the newest run's suite has {offset} run(s) or fewer "
                "(see `evalwh list`)",
                "resolve_relative",
                offset=offset,
            )
        if ref.startswith(refs.GIT_PREFIX):
            name = ref[len(refs.GIT_PREFIX) :]
            commits = refs.git_ancestors(name, self.git_dir or Path.cwd())
            return self._first(
                f"no run recorded at {ref} or any of its last {len(commits)} ancestor "
                "commit(s) (runs record the commit of the config's repository)",
                "resolve_git",
                commits=commits,
            )
        rows = self.query("resolve_run", ref=ref).to_pylist()
        if not rows and ref == "baseline":
            raise RunNotFoundError(
                "no baseline is pinned yet: pin one with `evalwh baseline set RUN`"
            )
        if not rows:
            raise RunNotFoundError(
                f"no run matches '{ref}' (use a run id, a unique prefix, a label, 'latest', "
                "'previous', 'latest~N', 'git:REF' or a baseline name; see `evalwh list` and "
                "`evalwh baseline list`)"
            )
        best = rows[0]
        if best["how"] == 3 and len(rows) > 1:
            ids = ", ".join(r["run_id"] for r in rows[:5])
            raise RunNotFoundError(
                f"'{ref}' is a prefix of several runs ({ids}); give more of the id"
            )
        return str(best["run_id"])

    def resolve_suite(self, path: str | None, name: str) -> str:
        """The newest run of a suite: of those started from the config file ``path`` when
        any, else of those whose suite is named ``name``; RunNotFoundError when none."""
        source = f"started from {path} or " if path else ""
        return self._first(
            f"no run of suite '{name}' ({source}named '{name}'; see `evalwh list`)",
            "resolve_suite",
            path=path,
            suite=name,
        )

    def _first(self, missing: str, query: str, **params: Any) -> str:
        """The run id of a query's first row; RunNotFoundError(``missing``) when none."""
        found = self.query(query, **params).to_pylist()
        if not found:
            raise RunNotFoundError(missing)
        return str(found[0]["run_id"])

    def run_row(self, run_id: str) -> dict[str, Any]:
        rows = self.query("run_row", run_id=run_id).to_pylist()
        if not rows:
            raise RunNotFoundError(f"no run {run_id}")
        row: dict[str, Any] = rows[0]
        row["status"] = effective_status(row, self.stale_after_s)
        return row

    # -- writes --------------------------------------------------------------------------
    def create_run(self, row: dict[str, Any]) -> None:
        """Insert a new run, its lease (``lease_token``) held by this process."""
        row = {**row, "host": HOST, "pid": os.getpid()}
        for key in ("config_snapshot", "filters", "datasources"):
            row[key] = to_json(row.get(key))
        columns = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        write_transaction(
            self.path,
            lambda con: con.execute(
                f"INSERT INTO runs ({columns}) VALUES ({marks})", list(row.values())
            ),
            what="create a run",
        )

    def insert_labels(self, run_id: str, config: Any, *, pointwise: bool = True) -> None:
        """Store the config's human labels with the run: pairwise preferences, pointwise
        labels of one criterion (``comparison`` holds the criterion's name) and the cases'
        ``human_label`` (``comparison`` NULL: every llm-judge criterion). A no-look run
        passes ``pointwise=False``: a case's own label is case data."""
        rows = label_rows(run_id, [*config.labels, *(config.point_labels if pointwise else ())])
        rows += [
            [run_id, "pointwise", None, c.id, None, to_json(c.human_label), *[None] * 6]
            for c in (config.cases if pointwise else ())
            if c.human_label is not None
        ]
        if not rows:
            return
        write_transaction(
            self.path,
            lambda con: con.executemany(LABEL_INSERT, rows),
            what="store labels",
        )

    def replace_labels(self, run_id: str, labels: Any, *, by: str | None = None) -> int:
        """Store labels with a run (pairwise ``Label`` and pointwise ``PointLabel``) as given
        by ``by`` now, replacing its labels of the same kind, comparison or criterion, case
        and answer (a label of one answer replaces that answer's, a label of the case the
        case's); returns how many stored labels were replaced (one transaction, retried whole
        on a lake)."""
        rows = label_rows(run_id, labels, by=by, at=utcnow())
        keys = [row[:4] + row[9:] for row in rows]
        same = (
            "EXISTS (SELECT 1 FROM new_keys k WHERE k.run_id = l.run_id AND k.kind = l.kind "
            "AND k.comparison IS NOT DISTINCT FROM l.comparison AND k.case_id = l.case_id "
            "AND k.variant IS NOT DISTINCT FROM l.variant AND k.model IS NOT DISTINCT FROM "
            "l.model AND k.repeat IS NOT DISTINCT FROM l.repeat)"
        )

        def body(con: Any) -> int:
            con.execute(
                "CREATE TEMP TABLE new_keys (run_id VARCHAR, kind VARCHAR, comparison VARCHAR, "
                "case_id VARCHAR, variant VARCHAR, model VARCHAR, repeat INTEGER)"
            )
            if keys:
                con.executemany("INSERT INTO new_keys VALUES (?, ?, ?, ?, ?, ?, ?)", keys)
            found = con.execute(f"SELECT count(*) FROM labels l WHERE {same}").fetchone()
            con.execute(f"DELETE FROM labels l WHERE {same}")
            if rows:
                con.executemany(LABEL_INSERT, rows)
            con.execute("DROP TABLE new_keys")
            return int(found[0]) if found else 0

        return write_transaction(self.path, body, what=f"store labels of run {run_id}")

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
        where: list[str] = ["true"]
        args: list[Any] = []
        if model is not None:
            where.append("model = ?")
            args.append(model)
        if older_than_days is not None:
            where.append("created_at < now() - to_microseconds(CAST(? * 86400e6 AS BIGINT))")
            args.append(older_than_days)
        condition = " AND ".join(where)

        def body(con: Any) -> int:  # counted first: a lake has no RETURNING on deletes
            found = con.execute(
                f"SELECT count(*) FROM response_cache WHERE {condition}", args
            ).fetchone()
            con.execute(f"DELETE FROM response_cache WHERE {condition}", args)
            return int(found[0]) if found else 0

        return write_transaction(self.path, body, what="clear the cache")

    def finish_run(
        self,
        run_id: str,
        status: str,
        totals: dict[str, Any] | None = None,
        *,
        token: str | None = None,
        datasources: list[dict[str, Any]] | None = None,
        n_planned: int | None = None,
    ) -> None:
        """Record the run's end (``exporting`` keeps the lease until the export is in place);
        a datasource run also records what it read and how many cells that made."""
        keep = status == "exporting"
        write_transaction(
            self.path,
            lambda con: con.execute(
                "UPDATE runs SET status = ?, finished_at = now(), heartbeat_at = now(), "
                "totals = coalesce(?, totals), lease_token = CASE WHEN ? THEN lease_token END, "
                "datasources = coalesce(?, datasources), n_planned = coalesce(?, n_planned) "
                "WHERE run_id = ? AND (? IS NULL OR lease_token = ?)",
                [
                    status,
                    to_json(totals),
                    keep,
                    to_json(datasources),
                    n_planned,
                    run_id,
                    token,
                    token,
                ],
            ),
            what=f"finish run {run_id}",
        )

    def set_status(self, run_id: str, status: str, *, token: str | None = None) -> None:
        """The final status after the export (completed, or failed: too many errors)."""
        write_transaction(
            self.path,
            lambda con: con.execute(
                "UPDATE runs SET status = ?, lease_token = NULL "
                "WHERE run_id = ? AND (? IS NULL OR lease_token = ?)",
                [status, run_id, token, token],
            ),
            what=f"set the status of run {run_id}",
        )

    def concluded_runs(self) -> list[str]:
        """The ids of the runs that ended (completed, failed, stopped: those a run exports),
        oldest first."""
        table = self.sql(
            "SELECT run_id FROM runs WHERE status IN ('completed', 'failed', 'stopped') "
            "ORDER BY run_id"
        )
        return [str(v) for v in table.column("run_id").to_pylist()]

    def export_run(self, run_id: str, exports_dir: Path) -> Path:
        """Write the run's rows as Parquet, one Hive-partitioned dataset per table:
        ``exports_dir/cases/run_id=<id>/cases.parquet`` and ``.../scores/...`` (layout and
        column types: :mod:`evalwh.warehouse.exportfiles`); return ``exports_dir``.

        Atomic for readers: each file is written under a temporary name in
        ``exports_dir/.tmp/`` and renamed into place, so a table's folder only ever holds
        whole files. The files also hold ``run_id`` as a column, so a reader needs no
        partition parsing (Polars would otherwise try to read the id as a date). Exports kept
        in the layout before it are moved first (:func:`~evalwh.warehouse.exportfiles.
        migrate_layout`).
        """
        with io_guard(exports_dir, "write the export"):
            exportfiles.migrate_layout(exports_dir)
            (exports_dir / exportfiles.STAGING).mkdir(parents=True, exist_ok=True)
            exportfiles.clean_staging(exports_dir)
            written: list[tuple[Path, Path]] = []
            try:
                with (
                    read_connection(self.path) as con,
                    _memory_limit(con, exportfiles.MEMORY_LIMIT),
                    _one_thread(con),
                ):
                    for table in exportfiles.TABLES:
                        select, json_columns = exportfiles.text_columns(con, table)
                        temp = exportfiles.staging_file(exports_dir, table, run_id)
                        query = f"SELECT {select} FROM {table} WHERE run_id = $run_id"
                        exportfiles.copy_table(con, query, temp, run_id, json_columns)
                        written.append((temp, exportfiles.final_file(exports_dir, table, run_id)))
                pause = float(os.environ.get(EXPORT_PAUSE_ENV) or 0)
                if pause > 0:
                    time.sleep(pause)
                exportfiles.move_into_place(written)
            finally:
                for temp, _ in written:
                    temp.unlink(missing_ok=True)
        return exports_dir


@contextmanager
def _memory_limit(con: Any, limit: str) -> Iterator[None]:
    """The connection's DuckDB memory_limit for the block, then back, errors included (the
    connection may be shared, and a query refused for memory is run again on it). A shared
    write connection holds the blocks of its last flush until a checkpoint, which the limit
    may not hold: it checkpoints first then (as its close would have)."""
    try:
        con.execute(f"SET memory_limit = '{limit}'")
    except duckdb.OutOfMemoryException:
        con.execute("CHECKPOINT")
        con.execute(f"SET memory_limit = '{limit}'")
    try:
        yield
    finally:
        con.execute(f"SET memory_limit = '{memory_limit()}'")


@contextmanager
def _one_thread(con: Any) -> Iterator[None]:
    """One DuckDB thread for the block (the export: rows in stored order; a run's closing
    queries: less memory), then the connection's count back (it may be shared)."""
    (threads,) = con.execute("SELECT current_setting('threads')").fetchone()
    con.execute("SET threads = 1")
    try:
        yield
    finally:
        con.execute(f"SET threads = {int(threads)}")


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def label_rows(
    run_id: str, labels: Any, *, by: str | None = None, at: datetime | None = None
) -> list[list[Any]]:
    """Rows of the labels table (``LABEL_INSERT``'s columns) for pairwise ``Label``s and
    pointwise ``PointLabel``s (whose ``comparison`` column holds the criterion's name, and
    ``variant``, ``model``, ``repeat`` the answer a label of one answer grades), stored by
    ``by`` at ``at`` (both NULL for labels from an eval config)."""
    rows = []
    for lb in labels:
        if hasattr(lb, "criterion"):
            point = [lb.criterion, lb.case_id, None, to_json(lb.label), lb.note]
            rows.append([run_id, "pointwise", *point, by, at, lb.variant, lb.model, lb.repeat])
        else:
            pair = [lb.comparison, lb.case_id, lb.prefer, None, lb.note]
            rows.append([run_id, "pairwise", *pair, by, at, None, None, None])
    return rows
