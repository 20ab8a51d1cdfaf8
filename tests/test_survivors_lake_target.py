"""A ``ducklake:`` target read from the settings, pinned where mutation testing found it loose
(docs/testing.md): each refusal with its place and fix, what a file catalog and a local or S3
data path become, the S3 options as DuckDB reads them, and which credentials are looked up.
No server: parse_target only reads text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalwh.errors import ConfigError
from evalwh.warehouse import lake as lakemod
from evalwh.warehouse.lake import FORMS, LakeTarget


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
