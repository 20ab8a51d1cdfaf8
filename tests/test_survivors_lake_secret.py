"""A DuckLake warehouse's S3 secret, its PostgreSQL password and its extensions, pinned where
mutation testing found them loose (docs/testing.md). The secret is created in a plain DuckDB
with the httpfs extension from the evalwh[lake] packages and read back from
``duckdb_secrets()``: what DuckDB will sign S3 requests with, no server needed."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import duckdb
import pytest

from evalwh.errors import WarehouseError
from evalwh.warehouse import lake as lakemod
from evalwh.warehouse.lake import LakeTarget


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


def test_a_password_goes_into_the_connection_string_quoted_for_libpq() -> None:
    # libpq conninfo: single quotes around, backslash and quote escaped with a backslash
    assert lakemod._conninfo_value("pa'ss\\word") == "'pa\\'ss\\\\word'"
    assert lakemod._conninfo_value("plain") == "'plain'"


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
