"""A DuckLake warehouse (evalwh/warehouse/lake.py): reading a `ducklake:` target from the
settings (each refusal with its place and fix, what a file catalog and a local or S3 data
path become, which credentials are looked up and that none is ever shown), the extensions
loaded from the evalwh[lake] packages, the lake variant of a migration, the S3 secret and
the PostgreSQL password, retrying a conflicting commit and racing first writers (on a fake
clock; which of DuckLake's errors are conflicts to retry), and attaching a catalog.

Most tests need no server: parse_target only reads text; the S3 secret is created in a plain
DuckDB with the httpfs extension from the evalwh[lake] packages and read back from
``duckdb_secrets()`` (what DuckDB will sign S3 requests with); a lake whose catalog is a
DuckDB file on a local path is attached for real. Two tests attach a catalog in a real
PostgreSQL on loopback (the `lake` fixture of tests/conftest.py, tests/fakes/lake.py).
Whole sharded runs and push/pull against that lake are in tests/features/test_scale_out.py."""

from __future__ import annotations

import json
import logging
import os
import types
from pathlib import Path
from typing import Any

import duckdb
import pytest

from evalwh.errors import ConfigError, WarehouseError
from evalwh.warehouse import connect
from evalwh.warehouse import lake as lakemod
from evalwh.warehouse.lake import FORMS, LakeTarget
from tests.fakes.lake import Lake


def test_a_lake_deadlock_is_a_conflict_to_retry() -> None:
    from evalwh.warehouse.lake import is_conflict

    assert is_conflict(duckdb.TransactionException("Deadlock detected while committing"))


def refusal(text: str, lake: dict[str, Any] | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        lakemod.parse_target(text, lake, base=Path.cwd(), where="setting warehouse")
    return caught.value


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ducklake:", "the DuckLake target 'ducklake:' names no catalog"),
        ("ducklake:   ", "the DuckLake target 'ducklake:   ' names no catalog"),
        ("ducklake:postgres:", "the PostgreSQL connection string is empty"),
        ("ducklake:mysql:host=h:3306", "unsupported DuckLake catalog 'mysql'"),
    ],
)
def test_a_target_without_a_usable_catalog_names_the_setting_and_the_two_forms(
    text: str, message: str
) -> None:
    error = refusal(text, {"data_path": "s3://b/"})
    assert (error.message, error.where, error.fix) == (message, "setting warehouse", FORMS)


def test_a_postgres_catalog_needs_a_data_path_and_an_unknown_catalog_is_named() -> None:
    with pytest.raises(ConfigError, match=r"lake\.data_path"):
        lakemod.parse_target("ducklake:postgres:dbname=e", None, base=Path.cwd(), where="w")
    with pytest.raises(ConfigError, match="unsupported DuckLake catalog 'mysql'"):
        lakemod.parse_target("ducklake:mysql:db=x", None, base=Path.cwd(), where="w")
    with pytest.raises(ConfigError, match="names no catalog"):
        lakemod.parse_target("ducklake:", None, base=Path.cwd(), where="w")


def test_a_password_in_the_target_is_refused_with_the_variable_to_use() -> None:
    with pytest.raises(ConfigError) as caught:
        lakemod.parse_target(
            "ducklake:postgres:dbname=e host=h password=hunter22",
            {"data_path": "s3://b/"},
            base=Path.cwd(),
            where="setting warehouse",
        )
    assert "EVALWH_PG_PASSWORD" in str(caught.value) and "hunter22" not in str(caught.value)


def test_a_password_in_the_connection_string_is_refused_with_where_it_belongs() -> None:
    error = refusal("ducklake:postgres:dbname=e PASSWORD = x", {"data_path": "s3://b/"})
    assert error.message == (
        "the DuckLake target holds a password; credentials never go in the config"
    )
    assert error.where == "setting warehouse"
    assert error.fix == (
        "remove password=... and set EVALWH_PG_PASSWORD in the environment or the secrets "
        "file (.evalwh.secrets.yaml)"
    )


def test_a_postgres_catalog_without_a_data_path_points_at_the_lake_setting() -> None:
    error = refusal("ducklake:postgres:dbname=e", {"data_path": ""})
    assert error.message == "a DuckLake catalog in PostgreSQL needs a place for its data files"
    assert error.where == "settings.lake.data_path"
    assert error.fix == "set lake.data_path to s3://BUCKET/PREFIX/ or a shared folder"


def test_a_file_catalog_and_a_local_data_path_resolve_against_the_config_folder(
    tmp_path: Path,
) -> None:
    target = lakemod.parse_target(
        "ducklake:meta.ducklake", {"data_path": "data"}, base=tmp_path, where="w"
    )
    assert target.catalog == str(tmp_path / "meta.ducklake")
    assert target.data_path == str(tmp_path / "data") + "/"
    assert not target.on_postgres and not target.on_s3


@pytest.mark.parametrize(
    "path", ["C:/lakes/meta.ducklake", "c:/lakes/meta.ducklake", "c:\\lakes\\meta.ducklake"]
)
def test_a_windows_drive_is_a_catalog_file_not_a_catalog_kind(tmp_path: Path, path: str) -> None:
    target = lakemod.parse_target(f"ducklake:{path}", None, base=tmp_path, where="w")
    assert target.catalog == str((tmp_path / path).resolve())
    assert target.data_path is None


@pytest.mark.parametrize("url", ["s3://bucket/runs/", "s3a://bucket/runs/"])
def test_an_s3_data_path_is_kept_as_written(tmp_path: Path, url: str) -> None:
    target = lakemod.parse_target(
        "ducklake:postgres:dbname=e", {"data_path": url}, base=tmp_path, where="w"
    )
    assert (target.catalog, target.data_path) == ("postgres:dbname=e", url)


def test_a_local_data_path_resolves_against_its_own_folder_and_ends_in_a_slash(
    tmp_path: Path,
) -> None:
    target = lakemod.parse_target(
        "ducklake:meta.ducklake",
        {"data_path": "~/../data"},
        base=tmp_path / "project",
        where="w",
        lake_base=tmp_path / "settings",
    )
    assert target.catalog == str(tmp_path / "project" / "meta.ducklake")
    assert target.data_path == str((Path.home() / ".." / "data").resolve()) + "/"
    relative = lakemod.parse_target(
        "ducklake:m.ducklake",
        {"data_path": "data"},
        base=tmp_path,
        where="w",
        lake_base=tmp_path / "s",
    )
    assert relative.data_path == str(tmp_path / "s" / "data") + "/"


def test_s3_options_are_text_as_duckdb_reads_them_and_the_secret_is_named() -> None:
    target = lakemod.parse_target(
        "ducklake:postgres:dbname=e",
        {
            "data_path": "s3://b/",
            "s3": {"use_ssl": False, "endpoint": "MinIO.Lan:9000", "url_compat": True},
            "secret": "team_s3",  # pragma: allowlist secret
        },
        base=Path.cwd(),
        where="w",
    )
    assert target.s3 == (
        ("endpoint", "MinIO.Lan:9000"),  # only booleans are lowered
        ("url_compat", "true"),
        ("use_ssl", "false"),
    )
    assert target.secret == "team_s3"  # pragma: allowlist secret


def test_every_credential_is_looked_up_by_name_and_a_missing_one_left_out() -> None:
    found = {
        "EVALWH_PG_PASSWORD": "pg-pass",  # pragma: allowlist secret
        "AWS_ACCESS_KEY_ID": "key-id",
        "AWS_SESSION_TOKEN": "session",
    }
    asked: list[str] = []

    def secret(name: str) -> str | None:
        asked.append(name)
        return found.get(name)

    target = lakemod.parse_target(
        "ducklake:postgres:dbname=e",
        {"data_path": "s3://b/"},
        base=Path.cwd(),
        where="w",
        secret=secret,
    )
    assert asked == [
        "EVALWH_PG_PASSWORD",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
    ]
    assert target.credentials == (
        ("EVALWH_PG_PASSWORD", "pg-pass"),
        ("AWS_ACCESS_KEY_ID", "key-id"),
        ("AWS_SESSION_TOKEN", "session"),
    )
    assert target == LakeTarget("postgres:dbname=e", "s3://b/")  # credentials are not compared


def test_credentials_never_show_in_the_target_or_its_errors() -> None:
    target = lakemod.parse_target(
        "ducklake:postgres:dbname=e host=h",
        {"data_path": "s3://bucket/x/"},
        base=Path.cwd(),
        where="w",
        secret={"EVALWH_PG_PASSWORD": "pw-very-secret", "AWS_SECRET_ACCESS_KEY": "aws-abcdef"}.get,
    )
    shown = f"{target} {target!r}"
    assert "pw-very-secret" not in shown and "aws-abcdef" not in shown
    echoed = "failed: dbname=e host=h password='pw-very-secret' and key aws-abcdef"
    assert lakemod.redact(echoed, target) == "failed: dbname=e host=h password=*** and key ***"


def test_redaction_masks_a_four_character_secret_but_not_a_shorter_one() -> None:
    target = lakemod.LakeTarget(
        catalog="postgres:dbname=e",
        credentials=(("EVALWH_PG_PASSWORD", "abcd"), ("AWS_SECRET_ACCESS_KEY", "xyz")),
    )
    assert lakemod.redact("abcd xyz", target) == "*** xyz"


def test_a_lake_target_is_not_a_file_path() -> None:
    # a DuckLake URI handed to open() or Path() would create a stray local file
    target = lakemod.LakeTarget(catalog="postgres:dbname=e", credentials=())
    with pytest.raises(
        TypeError, match=r"^ducklake:postgres:dbname=e is a DuckLake target, not a file path$"
    ):
        os.fspath(target)


def test_the_extensions_load_from_the_installed_packages_by_path() -> None:
    for name in lakemod.PACKAGES:
        file = lakemod.extension_file(name)
        assert file.is_file() and f"v{duckdb.__version__}" in str(file)


def test_a_missing_extra_names_evalwh_lake(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lakemod.importlib.util, "find_spec", lambda _name: None)
    with pytest.raises(lakemod.LakeExtraMissing) as caught:
        lakemod.extension_file("ducklake")
    assert "evalwh[lake]" in str(caught.value) and caught.value.exit_code == 2


FIX = "install the extra: pip install 'evalwh[lake]' (or uv sync --extra lake)"


def test_a_missing_extension_package_is_named_as_pip_spells_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lakemod.importlib.util, "find_spec", lambda _name: None)
    with pytest.raises(lakemod.LakeExtraMissing) as caught:
        lakemod.extension_file("postgres_scanner")
    assert str(caught.value) == (
        "a DuckLake warehouse needs DuckDB's postgres_scanner extension, from the evalwh[lake] "
        f"extra (duckdb-extension-postgres-scanner is not installed)\n  fix: {FIX}"
    )


def test_a_package_without_this_duckdbs_extension_says_which_file_it_looked_for(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    spec = types.SimpleNamespace(submodule_search_locations=[str(tmp_path)])
    monkeypatch.setattr(lakemod.importlib.util, "find_spec", lambda _name: spec)
    version = duckdb.__version__
    with pytest.raises(lakemod.LakeExtraMissing) as caught:
        lakemod.extension_file("ducklake")
    file = tmp_path / "extensions" / f"v{version}" / "ducklake.duckdb_extension"
    assert str(caught.value) == (
        f"duckdb-extension-ducklake holds no ducklake extension for DuckDB {version} "
        f"(looked for {file})\n  fix: {FIX} at the version matching duckdb=={version}"
    )


def test_the_lake_variant_of_the_migrations_drops_primary_keys_only() -> None:
    sql = "CREATE TABLE t (a VARCHAR PRIMARY KEY, b INTEGER NOT NULL)"
    assert lakemod.lake_sql(sql) == "CREATE TABLE t (a VARCHAR, b INTEGER NOT NULL)"


def test_the_lake_variant_quotes_a_boolean_default_only() -> None:
    """DuckLake refuses ``ADD COLUMN ... DEFAULT false`` (not a literal to it) and takes
    ``DEFAULT 'false'`` (0008_no_look_datasources.sql); other defaults and names stay."""
    sql = "ALTER TABLE runs ADD COLUMN no_look BOOLEAN DEFAULT false;"
    assert lakemod.lake_sql(sql) == "ALTER TABLE runs ADD COLUMN no_look BOOLEAN DEFAULT 'false';"
    assert lakemod.lake_sql("ADD COLUMN x BOOLEAN default TRUE") == (
        "ADD COLUMN x BOOLEAN DEFAULT 'TRUE'"
    )
    for kept in ("ADD COLUMN n INTEGER DEFAULT 0", "ADD COLUMN falsey BOOLEAN", "-- default"):
        assert lakemod.lake_sql(kept) == kept


def test_a_migration_loses_its_primary_keys_and_quotes_boolean_defaults_on_a_lake() -> None:
    sql = "CREATE TABLE t (id VARCHAR primary  key, on_ BOOLEAN default TRUE, b BOOLEAN DEFAULT false)"
    assert lakemod.lake_sql(sql) == (
        "CREATE TABLE t (id VARCHAR, on_ BOOLEAN DEFAULT 'TRUE', b BOOLEAN DEFAULT 'false')"
    )


def test_every_migration_runs_on_a_lake_and_gives_a_files_tables_and_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new migration (0005_attachments, and whatever comes next) must run on DuckLake too,
    which has no UNIQUE, CHECK, index or sequence: this fails the day one uses them."""
    from evalwh import api
    from evalwh.warehouse.connect import migrations, write_connection

    monkeypatch.setenv("EVALWH_LAKE", json.dumps({"data_path": str(tmp_path / "data")}))
    on_lake = api.migrate_warehouse(f"ducklake:{tmp_path / 'meta.ducklake'}")
    with write_connection(tmp_path / "w.duckdb"):  # a new file, created at the latest version
        pass
    latest = migrations()[-1][0]
    assert (on_lake["from_version"], on_lake["to_version"]) == (0, latest) and latest >= 5
    shape = (  # a view's columns are bound when it is read, so views are compared by name
        "SELECT c.table_name, t.table_type, "
        "if(t.table_type = 'VIEW', NULL, c.column_name) AS column_name, "
        "if(t.table_type = 'VIEW', NULL, c.data_type) AS data_type "
        "FROM information_schema.columns c JOIN information_schema.tables t "
        "USING (table_catalog, table_schema, table_name) "
        "WHERE c.table_catalog = current_database() AND c.table_schema = 'main' "
        "GROUP BY ALL ORDER BY ALL"
    )
    lake_cols = api.open_warehouse(f"ducklake:{tmp_path / 'meta.ducklake'}").store.sql(shape)
    file_cols = api.open_warehouse(tmp_path / "w.duckdb").store.sql(shape)
    assert lake_cols.to_pylist() == file_cols.to_pylist()
    assert {
        "table_name": "cases",
        "table_type": "BASE TABLE",
        "column_name": "attachments",
        "data_type": "JSON",
    } in lake_cols.to_pylist()


@pytest.fixture
def con() -> Any:
    connection = duckdb.connect(config={"allow_unredacted_secrets": True})
    connection.execute(f"LOAD {lakemod.quote(lakemod.extension_file('httpfs').as_posix())}")
    yield connection
    connection.close()


def secrets(connection: Any) -> dict[str, dict[str, str]]:
    rows = connection.execute(
        "SELECT name, secret_string FROM duckdb_secrets(redact := false)"
    ).fetchall()
    return {name: dict(p.split("=", 1) for p in text.split(";") if p) for name, text in rows}


def test_the_s3_secret_carries_every_credential_and_option_as_written(con: Any) -> None:
    target = LakeTarget(
        "postgres:dbname=e",
        "s3://bucket/runs/",
        s3=(("endpoint", "MinIO.Lan:9000"), ("url_style", "path"), ("use_ssl", "false")),
    )
    creds = {
        "AWS_ACCESS_KEY_ID": "key-id",
        "AWS_SECRET_ACCESS_KEY": "it's-secret",  # a quote inside is escaped
        "AWS_SESSION_TOKEN": "session",
    }
    lakemod._s3_secret(con, target, creds)
    secret = secrets(con)["evalwh_lake_s3"]
    assert secret["type"] == "s3"
    assert (secret["key_id"], secret["secret"], secret["session_token"]) == (
        "key-id",
        "it's-secret",
        "session",
    )
    assert (secret["endpoint"], secret["url_style"], secret["use_ssl"]) == (
        "MinIO.Lan:9000",
        "path",
        "false",
    )


@pytest.mark.parametrize(
    ("written", "read"),
    [("true", "true"), ("1", "true"), ("yes", "true"), ("false", "false"), ("TRUE", "false")],
)
def test_use_ssl_is_on_for_true_1_or_yes(con: Any, written: str, read: str) -> None:
    # parse_target lowers a YAML boolean to "true"/"false"; other text is taken as written
    lakemod._s3_secret(con, LakeTarget("c", "s3://b/", s3=(("use_ssl", written),)), {})
    assert secrets(con)["evalwh_lake_s3"]["use_ssl"] == read


def test_credentials_missing_from_the_environment_are_left_to_duckdb(con: Any) -> None:
    lakemod._s3_secret(con, LakeTarget("c", "s3://b/"), {"AWS_ACCESS_KEY_ID": ""})
    secret = secrets(con)["evalwh_lake_s3"]
    assert "key_id" not in secret and "secret" not in secret and "session_token" not in secret


def test_a_named_secret_is_used_when_it_exists_and_refused_when_it_does_not(con: Any) -> None:
    con.execute("CREATE SECRET team_s3 (TYPE s3, KEY_ID 'team')")
    lakemod._s3_secret(
        con,
        LakeTarget("c", "s3://b/", secret="team_s3"),  # pragma: allowlist secret
        {"AWS_ACCESS_KEY_ID": "x"},  # pragma: allowlist secret
    )
    assert set(secrets(con)) == {"team_s3"}  # no secret of our own beside it
    with pytest.raises(WarehouseError) as caught:
        missing = LakeTarget("c", "s3://b/", secret="nope")  # pragma: allowlist secret
        lakemod._s3_secret(con, missing, {})
    assert str(caught.value) == (
        "lake.secret names the DuckDB secret 'nope', which does not exist\n"
        "  fix: create it with CREATE PERSISTENT SECRET, or drop lake.secret and set "
        "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY"
    )


def test_only_a_commit_conflict_is_retried() -> None:
    assert lakemod.is_conflict(duckdb.TransactionException("Transaction conflict - x"))
    assert lakemod.is_conflict(duckdb.TransactionException("could not serialize access"))
    # eight writers racing for the next snapshot id outlast DuckLake's own retries
    assert lakemod.is_conflict(
        duckdb.TransactionException(
            "TransactionContext Error: Failed to commit: Failed to commit DuckLake transaction.\n"
            "Exceeded the maximum retry count of 10 set by the ducklake_max_retry_count setting."
        )
    )
    assert not lakemod.is_conflict(duckdb.TransactionException("cannot rollback"))
    assert not lakemod.is_conflict(duckdb.ConstraintException("ON CONFLICT columns"))
    assert not lakemod.is_conflict(duckdb.CatalogException("table already exists"))


def test_a_conflicted_commit_is_retried_until_it_lands_and_other_errors_are_not() -> None:
    tries: list[int] = []

    def flaky() -> str:
        tries.append(1)
        if len(tries) < 3:
            raise duckdb.TransactionException("Transaction conflict - lost the race")
        return "landed"

    assert lakemod.retry_conflicts(flaky, what="t", first_delay=0.0) == "landed"
    assert len(tries) == 3

    def broken() -> str:
        tries.append(1)
        raise duckdb.TransactionException("not a race")

    tries.clear()
    with pytest.raises(duckdb.TransactionException):
        lakemod.retry_conflicts(broken, what="t", first_delay=0.0)
    assert len(tries) == 1
    tries.clear()

    def racing_create() -> str:
        tries.append(1)
        if len(tries) < 2:
            raise duckdb.CatalogException("Table runs already exists")
        return "ok"

    assert (
        lakemod.retry_conflicts(racing_create, what="t", first_delay=0.0, also=("already exists",))
        == "ok"
    )


def conflict(text: str = "TransactionContext Error: Transaction conflict: cannot commit") -> Any:
    return duckdb.TransactionException(text)


def failing(times: int, error: Any) -> Any:
    calls = [0]

    def attempt() -> str:
        calls[0] += 1
        if calls[0] <= times:
            raise error
        return "committed"

    return attempt


def test_a_conflicting_commit_is_retried_with_doubling_jittered_waits_up_to_two_seconds(
    lake_clock: list[float], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="evalwh")
    error = conflict()
    assert lakemod.retry_conflicts(failing(7, error), what="write run r") == "committed"
    # 0.05 s doubling to the 2 s cap, each x 0.75 (the jitter 0.5 + random())
    assert lake_clock == [0.0375, 0.075, 0.15, 0.3, 0.6, 1.2, 1.5]
    tries = [r.getMessage() for r in caplog.records if "DuckLake conflict" in r.getMessage()]
    assert tries == [
        f"write run r: DuckLake conflict (try {n}), retrying: {error}" for n in range(1, 8)
    ]


def test_a_conflict_that_lasts_is_given_up_after_ten_minutes(lake_clock: list[float]) -> None:
    with pytest.raises(duckdb.TransactionException):
        lakemod.retry_conflicts(failing(10**6, conflict()), what="w")
    waited = sum(lake_clock)
    # the first failure after 600 s is raised: 2.3625 s of rising waits, then 1.5 s each
    assert waited == pytest.approx(2.3625 + 1.5 * 399)


def test_only_conflicts_and_the_named_texts_are_retried(lake_clock: list[float]) -> None:
    other = duckdb.CatalogException("Catalog Error: Table with name x does not exist!")
    with pytest.raises(duckdb.CatalogException):
        lakemod.retry_conflicts(failing(1, other), what="w")
    assert lake_clock == []
    named = duckdb.IOException("IO Error: could not write the file (EAGAIN)")
    assert lakemod.retry_conflicts(failing(1, named), what="w", also=("EAGAIN",)) == "committed"
    assert lake_clock == [0.0375]


class Racing:
    """A connection whose ATTACH fails ``times`` times with ``text``."""

    def __init__(self, times: int, text: str) -> None:
        self.times, self.text, self.calls = times, text, 0

    def execute(self, statement: str) -> None:
        self.calls += 1
        if self.calls <= self.times:
            raise duckdb.CatalogException(self.text)


@pytest.mark.parametrize(
    "text",
    [
        'Catalog Error: Table with name "ducklake_metadata" already exists!',
        'Constraint Error: duplicate key "0" violates primary key constraint',
    ],
)
def test_first_writers_racing_for_a_fresh_catalog_attach_again_with_growing_waits(
    lake_clock: list[float], text: str
) -> None:
    con = Racing(7, text)
    lakemod._attach(con, "ATTACH ...")  # type: ignore[arg-type]
    assert con.calls == 8
    # 0.1 s x the attempt's number, x 0.75
    assert lake_clock == [round(0.075 * n, 6) for n in range(1, 8)]


def test_a_race_lost_eight_times_or_any_other_error_is_raised(lake_clock: list[float]) -> None:
    with pytest.raises(duckdb.CatalogException, match="already exists"):
        lakemod._attach(Racing(8, "Catalog Error: x already exists"), "ATTACH ...")  # type: ignore[arg-type]
    assert len(lake_clock) == 7
    lake_clock.clear()
    with pytest.raises(duckdb.CatalogException, match="does not exist"):
        lakemod._attach(Racing(1, "Catalog Error: x does not exist"), "ATTACH ...")  # type: ignore[arg-type]
    assert lake_clock == []


def test_a_file_catalog_attaches_without_options_and_loads_no_extension_on_its_own(
    file_lake: LakeTarget,
) -> None:
    con = lakemod.connect(file_lake, read_only=False, memory_limit="256MB")
    try:
        settings = con.execute(
            "SELECT current_setting('autoinstall_known_extensions'), "
            "current_setting('autoload_known_extensions'), "
            "(SELECT readonly FROM duckdb_databases() WHERE database_name = 'lake'), "
            "(SELECT path FROM duckdb_databases() WHERE database_name = 'lake')"
        ).fetchone()
        assert settings == (False, False, False, file_lake.catalog)  # no password appended
    finally:
        con.close()
    again = lakemod.connect(file_lake, read_only=True, memory_limit="256MB")
    try:
        assert again.execute(
            "SELECT readonly FROM duckdb_databases() WHERE database_name = 'lake'"
        ).fetchone() == (True,)
    finally:
        again.close()


def test_a_catalog_that_is_not_a_database_is_reported_with_the_fix(tmp_path: Path) -> None:
    (tmp_path / "meta.ducklake").write_text("not a catalog\n" * 100)
    target = LakeTarget(str(tmp_path / "meta.ducklake"))
    for read_only in (True, False):
        with pytest.raises(WarehouseError) as caught:
            lakemod.connect(target, read_only=read_only, memory_limit="256MB")
        assert type(caught.value) is WarehouseError  # not "nothing written yet"
        message = str(caught.value)
        assert message.startswith(f"cannot attach the DuckLake warehouse {target}: ")
        assert "not a valid DuckDB database file" in message
        assert message.endswith(
            "\n  fix: check the catalog (is PostgreSQL reachable, does the database exist, is "
            "EVALWH_PG_PASSWORD set?) and lake.data_path / lake.s3 (docs/scale-out.md)"
        )


def test_a_read_of_a_file_catalog_shares_the_writable_attach_of_the_process(
    file_lake: LakeTarget,
) -> None:
    # a DuckDB file can be attached once per process: the first read attaches it writable
    # and a later write uses that same attach
    reader = lakemod.cursor(file_lake, read_only=True, memory_limit="256MB")
    writer = lakemod.cursor(file_lake, read_only=False, memory_limit="256MB")
    assert_one_writable_attach(file_lake, reader, writer)


def test_a_read_connection_on_a_file_lake_uses_the_writable_attach_already_there(
    file_lake: LakeTarget,
) -> None:
    writer = connect.open_connection(file_lake, read_only=False)
    reader = connect.open_connection(file_lake, read_only=True)
    assert_one_writable_attach(file_lake, reader, writer)


def assert_one_writable_attach(
    target: LakeTarget, reader: duckdb.DuckDBPyConnection, writer: duckdb.DuckDBPyConnection
) -> None:
    """The reader sees what the writer wrote: both are cursors of the process's one attach of
    ``target``, a writable one (then both are closed)."""
    try:
        writer.execute("CREATE TABLE t AS SELECT 1 AS x")
        assert reader.execute("SELECT x FROM t").fetchall() == [(1,)]
        assert [k for k in lakemod._INSTANCES if k[0] == target] == [(target, False)]
    finally:
        reader.close()
        writer.close()


def test_a_postgres_lake_exists_once_a_writer_created_it_and_asking_creates_nothing(
    lake: Lake, tmp_path: Path
) -> None:
    """Asking whether the lake is there (every read does, to say "no runs yet" rather than
    fail) attaches its catalog read-only: a fresh database stays empty however often it is
    asked. After the first write it exists, and stays so without another round trip."""
    from evalwh import api
    from evalwh.warehouse.connect import write_transaction

    target = api.open_warehouse(lake.target).store.path
    assert isinstance(target, lakemod.LakeTarget) and target.on_postgres
    assert target.exists() is False
    assert target.exists() is False  # the first look created no catalog
    write_transaction(target, lambda con: None, what="create the lake")
    assert target.exists() is True
    assert target.exists() is True


def test_a_fresh_postgres_lake_read_says_nothing_was_written_and_reads_share_a_writers_attach(
    lake: Lake,
) -> None:
    from evalwh import api

    target = api.open_warehouse(lake.target).store.path
    assert isinstance(target, lakemod.LakeTarget)
    with pytest.raises(lakemod.LakeMissing) as caught:
        lakemod.connect(target, read_only=True, memory_limit="256MB")
    assert str(caught.value) == (
        f"no warehouse at {target}: nothing has been written to this lake yet "
        "(run `evalwh run` or `evalwh migrate` against it first)"
    )
    # a read after a write of this process uses the writable attach (no second second-long
    # attach); a read alone attaches read-only
    writer = lakemod.cursor(target, read_only=False, memory_limit="256MB")
    reader = lakemod.cursor(target, read_only=True, memory_limit="256MB")
    try:
        assert [k for k in lakemod._INSTANCES if k[0] == target] == [(target, False)]
    finally:
        reader.close()
        writer.close()
        lakemod.release(target)
    alone = lakemod.cursor(target, read_only=True, memory_limit="256MB")
    try:
        assert [k for k in lakemod._INSTANCES if k[0] == target] == [(target, True)]
    finally:
        alone.close()
        lakemod.release(target)


def test_a_backoffs_waits_are_jittered_bounded_counted_and_given_up_on_its_clock() -> None:
    """The waits between retries of a conflicting commit, on an injected clock, sleep and
    random source: writers that lost the same race must not retry in lockstep (jitter), no
    wait may grow past 1.5 x the cap, every retry is counted (a run stores its writer's
    count), and a conflict that outlasts max_wait_s is raised."""
    now, slept = [0.0], []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    draws = iter([0.0, 0.999, 0.5] * 1000)
    backoff = lakemod.Backoff(
        first_delay=0.1, cap_s=0.4, max_wait_s=5.0, sleep=sleep, random=lambda: next(draws),
        clock=lambda: now[0],
    )  # fmt: skip
    assert backoff.run(failing(5, conflict()), what="flush run r") == "committed"
    assert backoff.retries == 5
    # 0.1, 0.2, 0.4, then the 0.4 cap; each x (0.5 + random()): 0.5, 1.499 and 1.0
    assert slept == pytest.approx([0.05, 0.2998, 0.4, 0.2, 0.5996])
    assert (
        len({round(s / b, 3) for s, b in zip(slept, [0.1, 0.2, 0.4, 0.4, 0.4], strict=True)}) == 3
    )
    slept.clear()
    with pytest.raises(duckdb.TransactionException):
        backoff.run(failing(10**6, conflict()), what="flush run r")
    assert max(slept) <= 0.4 * 1.5 and sum(slept[:-1]) <= 5.0 < sum(slept) + 0.6
    assert backoff.retries == 5 + len(slept)  # the count runs on across commits


@pytest.mark.parametrize(
    ("lake", "sizes"),
    [
        ({}, (50_000, 2.0)),
        ({"flush_rows": 10_000, "flush_interval_s": 0.5}, (10_000, 0.5)),
        ({"flush_interval_s": 5}, (50_000, 5.0)),
    ],
)
def test_a_lake_flushes_by_its_own_rows_and_seconds_and_a_file_by_batch_size(
    tmp_path: Path, lake: dict[str, Any], sizes: tuple[int, float]
) -> None:
    target = lakemod.parse_target("ducklake:meta.ducklake", lake, base=tmp_path, where="w")
    assert lakemod.flush_sizes(target, 2000) == sizes
    assert lakemod.flush_sizes(tmp_path / "w.duckdb", 2000) == (2000, 1.0)
    # the sizes are no part of which lake it is (attaches are shared by target)
    assert target == lakemod.parse_target("ducklake:meta.ducklake", {}, base=tmp_path, where="w")


@pytest.mark.parametrize(
    ("lake", "where"),
    [
        ({"flush_rows": 0}, "settings.lake.flush_rows"),
        ({"flush_rows": 2.5}, "settings.lake.flush_rows"),
        ({"flush_rows": True}, "settings.lake.flush_rows"),
        ({"flush_interval_s": 0}, "settings.lake.flush_interval_s"),
        ({"flush_interval_s": "2s"}, "settings.lake.flush_interval_s"),
    ],
)
def test_a_flush_size_that_is_no_count_or_no_duration_is_refused_where_it_was_set(
    tmp_path: Path, lake: dict[str, Any], where: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        lakemod.parse_target("ducklake:meta.ducklake", lake, base=tmp_path, where="w")
    assert caught.value.where == where and "e.g." in (caught.value.fix or "")
