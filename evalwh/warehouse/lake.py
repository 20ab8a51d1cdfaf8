"""A shared warehouse in DuckLake: the target, the offline extensions, the attach, the retries.

A DuckDB file serves one machine. A team's warehouse lives in DuckLake instead: the catalog
in PostgreSQL (or a DuckDB file on a shared path) and the data as Parquet in S3-compatible
storage (or a shared folder). DuckDB attaches it natively, so every named query, view and
migration runs on it unchanged; evalwh only has to open it. A target is a setting
(``settings.warehouse``, ``EVALWH_WAREHOUSE`` or ``--warehouse``) that starts ``ducklake:``::

    warehouse: "ducklake:postgres:dbname=evals host=db.internal user=evalwh"
    lake:
      data_path: s3://team-evals/evalwh/
      s3: {endpoint: minio.internal:9000, region: us-east-1, url_style: path, use_ssl: false}

or ``ducklake:/shared/evals/meta.ducklake`` with a folder as ``data_path``. Credentials never
sit in the target or the config (a ``password=`` in it is refused): the PostgreSQL password
comes from ``EVALWH_PG_PASSWORD`` and S3 keys from ``AWS_ACCESS_KEY_ID`` /
``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN`` (environment or secrets file), or from a
persistent DuckDB secret named by ``lake.secret``. Every error text is redacted before it
leaves this module.

The extensions come from the ``evalwh[lake]`` extra (PyPI packages pinned to DuckDB 1.5.5)
and are loaded by file path: nothing is ever downloaded (``INSTALL`` is never run).

DuckLake has no primary keys, no ``INSERT OR IGNORE`` and no ``RETURNING`` on updates:
:func:`lake_sql` drops the ``PRIMARY KEY`` clauses of the migrations and quotes a boolean
column default (the one lake variant of the schema), and the few writes that relied on them say so where they branch. Concurrent
writers each commit their own DuckLake transaction. DuckLake merges concurrent inserts into one
table by itself, but a delete (an UPDATE is a delete and an insert) conflicts with any other
writer's insert into or delete from that table, so a run's writer only appends while it runs
(docs/scale-out.md); a conflict that still happens is retried with bounded, jittered backoff
(:class:`Backoff`, :func:`retry_conflicts`), never dropped.
"""

from __future__ import annotations

import importlib.util
import logging
import random
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from evalwh.errors import ConfigError, UsageError, WarehouseError

if TYPE_CHECKING:
    import duckdb

log = logging.getLogger("evalwh.warehouse")
PREFIX = "ducklake:"
ALIAS = "lake"  # the attached catalog's name; every statement runs after USE lake
PACKAGES = {
    "ducklake": "duckdb_extension_ducklake",
    "postgres_scanner": "duckdb_extension_postgres_scanner",
    "httpfs": "duckdb_extension_httpfs",
}
S3_ENV_SETTINGS = ("s3_access_key_id", "s3_secret_access_key", "s3_session_token")
S3_KEYS = ("endpoint", "region", "url_style", "use_ssl")
CREDENTIAL_NAMES = ("EVALWH_PG_PASSWORD", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
FORMS = (
    "`ducklake:postgres:dbname=NAME host=HOST user=USER` (catalog in PostgreSQL) or "
    "`ducklake:/shared/path/meta.ducklake` (catalog in a DuckDB file)"
)
_PASSWORD_IN_DSN = re.compile(r"(?i)\bpassword\s*=")
T = TypeVar("T")


class LakeMissing(WarehouseError):
    """A read of a DuckLake catalog that no writer has created yet."""


class LakeExtraMissing(UsageError):
    """The ``evalwh[lake]`` extra (DuckDB's extensions as PyPI packages) is not installed."""


@dataclass(frozen=True)
class LakeTarget:
    """Where a DuckLake warehouse lives. Stands where a warehouse file's Path stands."""

    catalog: str  # "postgres:<libpq conninfo>" or the path of a DuckDB catalog file
    data_path: str | None = None
    s3: tuple[tuple[str, str], ...] = ()
    secret: str | None = None  # a persistent DuckDB secret to use for S3
    credentials: tuple[tuple[str, str], ...] = field(default=(), repr=False, compare=False)
    # a run's writer flushes when this many case rows wait or this long has passed
    # (settings.lake.flush_rows / flush_interval_s; see flush_sizes)
    flush_rows: int = field(default=50_000, compare=False)
    flush_interval_s: float = field(default=2.0, compare=False)

    name = "lake"

    def __str__(self) -> str:
        return PREFIX + self.catalog

    def __fspath__(self) -> str:  # a guard: a lake is not a file
        raise TypeError(f"{self} is a DuckLake target, not a file path")

    def exists(self) -> bool:
        """Whether the catalog has been created (by the first writer that attached it)."""
        if self in _SEEN:
            return True
        if not self.on_postgres:
            return Path(self.catalog).is_file()
        try:
            cursor(self, read_only=True, memory_limit="256MB").close()
        except LakeMissing:
            return False
        _SEEN.add(self)
        return True

    @property
    def on_postgres(self) -> bool:
        return self.catalog.startswith("postgres:")

    @property
    def on_s3(self) -> bool:
        return bool(self.data_path and self.data_path.startswith(("s3://", "s3a://")))

    def secrets(self) -> list[str]:
        return [value for _, value in self.credentials if value]


_SEEN: set[LakeTarget] = set()  # targets whose catalog this process has seen exist
_INSTANCES: dict[tuple[LakeTarget, bool], duckdb.DuckDBPyConnection] = {}
_INSTANCES_LOCK = threading.Lock()

#: A warehouse: a DuckDB file or a DuckLake target.
Location: TypeAlias = "Path | LakeTarget"


def is_lake(location: object) -> bool:
    return isinstance(location, LakeTarget)


def is_target(text: object) -> bool:
    return isinstance(text, str) and text.startswith(PREFIX)


def parse_target(
    text: str,
    lake: Mapping[str, Any] | None,
    *,
    base: Path,
    where: str,
    secret: Callable[[str], str | None] = lambda _name: None,
    lake_base: Path | None = None,
) -> LakeTarget:
    """A :class:`LakeTarget` from a ``ducklake:...`` setting and ``settings.lake``.

    ``base`` resolves a relative catalog path (``lake_base``, default ``base``, a relative
    data path): each against the folder of the file that set it. ``secret`` looks
    credentials up by name (environment, then the secrets files); ``where`` names the setting
    in errors.
    """
    rest = text[len(PREFIX) :].strip()
    lake = dict(lake or {})
    if not rest:
        raise ConfigError(f"the DuckLake target {text!r} names no catalog", where=where, fix=FORMS)
    if _PASSWORD_IN_DSN.search(rest):
        raise ConfigError(
            "the DuckLake target holds a password; credentials never go in the config",
            where=where,
            fix="remove password=... and set EVALWH_PG_PASSWORD in the environment or the "
            "secrets file (.evalwh.secrets.yaml)",
        )
    data_path = lake.get("data_path")
    if rest.startswith("postgres:"):
        if len(rest) == len("postgres:"):
            raise ConfigError("the PostgreSQL connection string is empty", where=where, fix=FORMS)
        catalog = rest
        if not data_path:
            raise ConfigError(
                "a DuckLake catalog in PostgreSQL needs a place for its data files",
                where="settings.lake.data_path",
                fix="set lake.data_path to s3://BUCKET/PREFIX/ or a shared folder",
            )
    elif re.match(r"^[a-z][a-z0-9_]*:", rest) and not re.match(r"^[A-Za-z]:[\\/]", rest):
        raise ConfigError(
            f"unsupported DuckLake catalog {rest.split(':', 1)[0]!r}", where=where, fix=FORMS
        )
    else:
        catalog = str((base / Path(rest).expanduser()).resolve())
    if data_path and not str(data_path).startswith(("s3://", "s3a://")):
        folder = lake_base or base
        data_path = str((folder / Path(str(data_path)).expanduser()).resolve()) + "/"
    s3 = {
        k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in lake.get("s3", {}).items()
    }
    credentials = tuple(
        (name, value)
        for name in (*CREDENTIAL_NAMES, "AWS_SESSION_TOKEN")
        if (value := secret(name))
    )
    return LakeTarget(
        catalog=catalog,
        data_path=str(data_path) if data_path else None,
        s3=tuple(sorted(s3.items())),
        secret=lake.get("secret"),
        credentials=credentials,
        **_flush_settings(lake),
    )


def _flush_settings(lake: Mapping[str, Any]) -> dict[str, Any]:
    """``flush_rows`` (an integer >= 1) and ``flush_interval_s`` (> 0) of settings.lake."""
    out: dict[str, Any] = {}
    rows, every = lake.get("flush_rows"), lake.get("flush_interval_s")
    if rows is not None:
        if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
            raise ConfigError(
                f"lake.flush_rows is {rows!r}: a number of case rows, at least 1",
                where="settings.lake.flush_rows",
                fix="e.g. flush_rows: 50000 (the default)",
            )
        out["flush_rows"] = rows
    if every is not None:
        if isinstance(every, bool) or not isinstance(every, (int, float)) or every <= 0:
            raise ConfigError(
                f"lake.flush_interval_s is {every!r}: a number of seconds above 0",
                where="settings.lake.flush_interval_s",
                fix="e.g. flush_interval_s: 2 (the default)",
            )
        out["flush_interval_s"] = float(every)
    return out


# A file warehouse's writer flushes every batch_size case rows or this often: a flush holds
# the file's lock only briefly, so readers (the viewer's live tail) see answers within a second.
FILE_FLUSH_INTERVAL_S = 1.0


def flush_sizes(location: Location, batch_size: int) -> tuple[int, float]:
    """(case rows, seconds): when a run's writer flushes into ``location``.

    A file keeps ``settings.batch_size`` and a second. A DuckLake commit costs round trips to
    the catalog and one data file per table whatever its size, so a lake flushes by its own
    larger sizes, ``lake.flush_rows`` (default 50,000) and ``lake.flush_interval_s`` (2 s),
    whichever comes first (benchmarks/README.md, the lake group)."""
    if isinstance(location, LakeTarget):
        return location.flush_rows, location.flush_interval_s
    return batch_size, FILE_FLUSH_INTERVAL_S


def redact(text: str, target: LakeTarget) -> str:
    """``text`` without the target's credentials (an error may echo the connection string)."""
    for value in target.secrets():
        if len(value) >= 4:  # a shorter value would mask letters of every word
            text = text.replace(value, "***")
    return re.sub(r"(?i)\bpassword\s*=\s*('(?:[^'\\]|\\.)*'|\S+)", "password=***", text)


def extension_file(name: str) -> Path:
    """The extension's file inside its PyPI package, for this DuckDB's version."""
    import duckdb

    package = PACKAGES[name]
    spec = importlib.util.find_spec(package)
    version = duckdb.__version__
    fix = "install the extra: pip install 'evalwh[lake]' (or uv sync --extra lake)"
    if spec is None or not spec.submodule_search_locations:
        raise LakeExtraMissing(
            f"a DuckLake warehouse needs DuckDB's {name} extension, from the evalwh[lake] "
            f"extra ({package.replace('_', '-')} is not installed)\n  fix: {fix}"
        )
    folder = Path(next(iter(spec.submodule_search_locations)))
    file = folder / "extensions" / f"v{version}" / f"{name}.duckdb_extension"
    if not file.is_file():
        raise LakeExtraMissing(
            f"{package.replace('_', '-')} holds no {name} extension for DuckDB {version} "
            f"(looked for {file})\n  fix: {fix} at the version matching duckdb=={version}"
        )
    return file


def quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def connect(target: LakeTarget, *, read_only: bool, memory_limit: str) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the lake attached as ``lake`` and in use."""
    import duckdb

    con = duckdb.connect(
        config={
            "memory_limit": memory_limit,
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
        }
    )
    try:
        needed = ["ducklake"]
        if target.on_postgres:
            needed.append("postgres_scanner")
        if target.on_s3:
            needed.append("httpfs")
        for name in needed:
            con.execute(f"LOAD {quote(extension_file(name).as_posix())}")
        if target.on_s3:  # httpfs copies the AWS_* variables into settings anyone can read
            for setting in S3_ENV_SETTINGS:
                con.execute(f"SET GLOBAL {setting} = ''")
        creds = dict(target.credentials)
        if target.on_s3:
            _s3_secret(con, target, creds)
        spec = PREFIX + target.catalog
        if target.on_postgres and creds.get("EVALWH_PG_PASSWORD"):
            # a secret, not the attach path: DuckDB shows the path (duckdb_databases(),
            # pragma_database_list, the allowed_paths setting) but redacts a secret's password
            con.execute(
                f"CREATE SECRET (TYPE postgres, PASSWORD {quote(creds['EVALWH_PG_PASSWORD'])})"
            )
        options = [f"DATA_PATH {quote(target.data_path)}"] if target.data_path else []
        if read_only:
            options.append("READ_ONLY")
        suffix = f" ({', '.join(options)})" if options else ""
        _attach(con, f"ATTACH {quote(spec)} AS {ALIAS}{suffix}")
        con.execute(f"USE {ALIAS}")
    except LakeExtraMissing:
        con.close()
        raise
    except duckdb.Error as exc:
        con.close()
        if read_only and "does not exist" in str(exc) and "catalog" in str(exc):
            raise LakeMissing(
                f"no warehouse at {target}: nothing has been written to this lake yet "
                "(run `evalwh run` or `evalwh migrate` against it first)"
            ) from None
        raise WarehouseError(
            f"cannot attach the DuckLake warehouse {target}: {redact(str(exc), target)}\n"
            "  fix: check the catalog (is PostgreSQL reachable, does the database exist, is "
            "EVALWH_PG_PASSWORD set?) and lake.data_path / lake.s3 (docs/scale-out.md)"
        ) from None
    return con


def _attach(con: duckdb.DuckDBPyConnection, statement: str, tries: int = 8) -> None:
    """ATTACH; the first writers of a fresh catalog race to create its tables, and the losers
    see "already exists" / "duplicate key": attaching again finds the tables made."""
    import duckdb

    for attempt in range(tries):
        try:
            con.execute(statement)
            return
        except duckdb.Error as exc:
            text = str(exc)
            racing = "already exists" in text or "duplicate key" in text
            if not racing or attempt == tries - 1:
                raise
            time.sleep(0.1 * (attempt + 1) * (0.5 + random.random()))


def cursor(
    target: LakeTarget, *, read_only: bool, memory_limit: str, use: bool = True
) -> duckdb.DuckDBPyConnection:
    """A connection to this process's DuckDB with the lake attached (read-only or not).

    Loading the three extensions takes about a second, so each process attaches a lake once
    and hands out cursors; closing a cursor leaves the attach in place. DuckLake starts every
    transaction from the catalog's latest snapshot, so a long-lived attach still sees what
    other writers committed. ``use``: point the cursor at the lake (``USE lake``) now; on its
    own that statement reads the catalog's snapshot in a transaction of its own (a PostgreSQL
    transaction of six statements), so a caller about to begin one says False and sends the
    ``USE`` inside it."""
    # A DuckDB file catalog can be attached once per process: reads share the writable attach.
    key = (target, read_only and target.on_postgres)
    with _INSTANCES_LOCK:
        # a read may use the writable attach this process already has (one second saved)
        base = _INSTANCES.get(key) or (_INSTANCES.get((target, False)) if read_only else None)
        if base is None:
            base = _INSTANCES[key] = connect(target, read_only=key[1], memory_limit=memory_limit)
    con = base.cursor()
    if use:
        con.execute(f"USE {ALIAS}")
    return con


def release(target: LakeTarget) -> None:
    """Close this process's attaches of ``target`` (a DuckDB file catalog must be detached
    before another connection of the process may attach it)."""
    with _INSTANCES_LOCK:
        for key in [k for k in _INSTANCES if k[0] == target]:
            _INSTANCES.pop(key).close()


def _s3_secret(con: duckdb.DuckDBPyConnection, target: LakeTarget, creds: dict[str, str]) -> None:
    """A temporary S3 secret from settings.lake.s3 and the AWS variables (or a named one)."""
    if target.secret:
        found = con.execute(
            "SELECT count(*) FROM duckdb_secrets() WHERE name = ?", [target.secret]
        ).fetchone()
        if not found or not found[0]:
            raise WarehouseError(
                f"lake.secret names the DuckDB secret {target.secret!r}, which does not exist\n"
                "  fix: create it with CREATE PERSISTENT SECRET, or drop lake.secret and set "
                "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY"
            )
        return
    parts = ["TYPE s3"]
    for key, name in (
        ("AWS_ACCESS_KEY_ID", "KEY_ID"),
        ("AWS_SECRET_ACCESS_KEY", "SECRET"),
        ("AWS_SESSION_TOKEN", "SESSION_TOKEN"),
    ):
        if creds.get(key):
            parts.append(f"{name} {quote(creds[key])}")
    for key, value in target.s3:
        if key == "use_ssl":
            parts.append(f"USE_SSL {'true' if value in ('true', '1', 'yes') else 'false'}")
        else:
            parts.append(f"{key.upper()} {quote(value)}")
    con.execute(f"CREATE SECRET evalwh_lake_s3 ({', '.join(parts)})")


def lake_sql(sql: str) -> str:
    """A migration's lake variant: DuckLake has no primary keys (or any index), and the
    default of an added column must be a literal, which ``true``/``false`` are not to it (it
    takes them quoted: ``DEFAULT 'false'``, cast to the column's BOOLEAN once)."""
    sql = re.sub(r"\s+PRIMARY\s+KEY\b", "", sql, flags=re.IGNORECASE)
    return re.sub(r"\bDEFAULT\s+(true|false)\b", r"DEFAULT '\1'", sql, flags=re.IGNORECASE)


# What DuckLake says when a commit lost a race. Besides logical conflicts, concurrent commits
# race for the next snapshot id (a primary key in the catalog): DuckLake retries that itself,
# ducklake_max_retry_count (10) times, then gives up with "Exceeded the maximum retry count"
# (seen with eight writers on two cores); the transaction is still whole, so it is retried.
CONFLICT_TEXTS = (
    "conflict",
    "could not serialize",
    "deadlock",
    "exceeded the maximum retry count",
)


def is_conflict(exc: BaseException) -> bool:
    """A DuckLake commit that lost a race with another writer (safe to retry whole)."""
    import duckdb

    if not isinstance(exc, (duckdb.TransactionException, duckdb.CatalogException)):
        return False
    text = str(exc).lower()
    return any(words in text for words in CONFLICT_TEXTS)


@dataclass
class Backoff:
    """Bounded, jittered exponential waits between retries of a conflicting commit, and how
    many retries there were (a run stores its writer's count in its totals).

    The n-th wait is ``min(first_delay * 2**(n-1), cap_s) * (0.5 + random())``, so never above
    1.5 x ``cap_s``; after ``max_wait_s`` of ``clock`` the next conflict is raised. ``sleep``,
    ``random`` and ``clock`` are injectable (tests count the waits on a fake clock); by default
    they are this module's ``time.sleep``, ``random.random`` and ``time.monotonic``."""

    first_delay: float = 0.05
    cap_s: float = 2.0
    max_wait_s: float = 600.0
    sleep: Callable[[float], None] = field(default=lambda s: time.sleep(s), repr=False)
    random: Callable[[], float] = field(default=lambda: random.random(), repr=False)
    clock: Callable[[], float] = field(default=lambda: time.monotonic(), repr=False)
    retries: int = 0  # waits taken so far, over every attempt this object served

    def run(self, attempt: Callable[[], T], *, what: str, also: tuple[str, ...] = ()) -> T:
        """``attempt()`` until it commits; a transaction conflict (or an error holding one of
        ``also``) is retried after a wait (the rows are still in memory: nothing is lost)."""
        import duckdb

        deadline = self.clock() + self.max_wait_s
        delay, tries = self.first_delay, 0
        while True:
            try:
                return attempt()
            except duckdb.Error as exc:
                retry = is_conflict(exc) or any(text in str(exc) for text in also)
                if not retry or self.clock() > deadline:
                    raise
                tries += 1
                self.retries += 1
                log.debug("%s: DuckLake conflict (try %d), retrying: %s", what, tries, exc)
                self.sleep(delay * (0.5 + self.random()))
                delay = min(delay * 2, self.cap_s)


def retry_conflicts(
    attempt: Callable[[], T],
    *,
    what: str,
    max_wait_s: float = 600.0,
    first_delay: float = 0.05,
    also: tuple[str, ...] = (),
    backoff: Backoff | None = None,
) -> T:
    """Run ``attempt`` until it commits, retrying conflicts with ``backoff`` (a new
    :class:`Backoff` of ``first_delay`` and ``max_wait_s`` when None; a writer passes its own
    to count its retries)."""
    if backoff is None:
        backoff = Backoff(first_delay=first_delay, max_wait_s=max_wait_s)
    return backoff.run(attempt, what=what, also=also)
