"""Tests that kill mutants mutmut found alive in evalwh/config/settings.py (issue 21): where the
user config lives, which layer a setting came from, a layer's unset and unknown keys, where a
warehouse set beside ``output_dir`` goes, a DuckLake target's paths and credentials, and the
place and fix of each settings error. Each test names the behaviour it pins."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalwh.config.settings import resolve_settings, user_config_dir
from evalwh.errors import ConfigError
from evalwh.warehouse.lake import LakeTarget
from tests.conftest import write


def test_the_user_config_lives_in_evalwh_under_xdg_config_home_else_under_dot_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert user_config_dir({}) == tmp_path / "home" / ".config" / "evalwh"
    assert (
        user_config_dir({"XDG_CONFIG_HOME": str(tmp_path / "xdg")}) == tmp_path / "xdg" / "evalwh"
    )
    # EVALWH_CONFIG_DIR names the folder itself, and wins over both
    both = {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "EVALWH_CONFIG_DIR": str(tmp_path / "c")}
    assert user_config_dir(both) == tmp_path / "c"


def test_a_bad_user_config_names_the_line_and_column_of_the_bad_key(tmp_path: Path) -> None:
    user = tmp_path / "user"
    write(user / "config.yaml", "cache: false\nconcurency: 2\n")
    with pytest.raises(ConfigError) as exc:
        resolve_settings(env={"EVALWH_CONFIG_DIR": str(user)}, cwd=tmp_path)
    assert (exc.value.file, exc.value.line, exc.value.column) == (str(user / "config.yaml"), 2, 1)


def test_a_setting_from_the_eval_yaml_is_sourced_to_its_settings_block(tmp_path: Path) -> None:
    s = resolve_settings(config_settings={"concurrency": 3}, env={}, cwd=tmp_path)
    assert (s.concurrency, s.sources["concurrency"]) == (3, "eval.yaml settings")


def test_an_unset_flag_leaves_the_layer_below_and_does_not_stop_the_flags_after_it(
    tmp_path: Path,
) -> None:
    # the CLI passes every flag, None when not given; an unknown key is left out as well
    flags = {"cache": None, "bogus": 1, "repeat": 2, "concurrency": None}
    s = resolve_settings(flags, {"concurrency": 3, "cache": False}, env={}, cwd=tmp_path)
    assert (s.concurrency, s.cache, s.repeat) == (3, False, 2)
    assert (s.sources["cache"], s.sources["repeat"]) == ("eval.yaml settings", "flag")
    assert "bogus" not in s.sources


def test_a_warehouse_set_in_the_same_layer_as_output_dir_stays_where_that_layer_put_it(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "evals"
    s = resolve_settings(
        config_settings={"output_dir": "out", "warehouse": "w.duckdb"},
        config_dir=folder,
        env={},
        cwd=tmp_path,
    )
    assert s.warehouse == (folder / "w.duckdb").resolve()
    assert s.sources["warehouse"] == "eval.yaml settings"


def test_a_warehouse_that_follows_output_dir_is_sourced_where_output_dir_came_from(
    tmp_path: Path,
) -> None:
    s = resolve_settings({"output_dir": "o"}, {"warehouse": "w.duckdb"}, env={}, cwd=tmp_path)
    assert s.warehouse == (tmp_path / "o" / "warehouse.duckdb").resolve()
    assert s.sources["warehouse"] == "flag"


def test_a_lake_data_path_resolves_against_the_file_that_set_it_not_the_warehouse_flag(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "evals"
    s = resolve_settings(
        {"warehouse": "ducklake:meta.ducklake"},
        {"lake": {"data_path": "data"}},
        config_dir=folder,
        env={},
        cwd=tmp_path,
    )
    assert isinstance(s.warehouse, LakeTarget)
    assert s.warehouse.catalog == str((tmp_path / "meta.ducklake").resolve())
    assert s.warehouse.data_path == str((folder / "data").resolve()) + "/"


def test_a_lake_target_takes_its_credentials_from_the_environment_by_default(
    tmp_path: Path,
) -> None:
    env = {"EVALWH_WAREHOUSE": "ducklake:meta.ducklake", "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE"}
    s = resolve_settings(env=env, cwd=tmp_path)
    assert isinstance(s.warehouse, LakeTarget)
    assert s.warehouse.credentials == (("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),)


def test_a_memory_size_that_is_not_one_names_the_setting_and_its_source(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as exc:
        resolve_settings(env={"EVALWH_MEMORY_LIMIT": "lots"}, cwd=tmp_path)
    assert (exc.value.message, exc.value.where, exc.value.fix) == (
        "memory_limit='lots' is not a memory size",
        "setting memory_limit (from environment)",
        "write a size such as 1GB or 512MB for memory_limit",
    )


def test_an_output_dir_that_is_a_file_names_its_source_and_the_fix(tmp_path: Path) -> None:
    write(tmp_path / "taken", "a file\n")
    with pytest.raises(ConfigError) as exc:
        resolve_settings({"output_dir": "taken"}, env={}, cwd=tmp_path)
    assert (exc.value.message, exc.value.where, exc.value.fix) == (
        f"the output folder {(tmp_path / 'taken').resolve()} is a file",
        "output_dir (from flag)",
        "point -o / output_dir at a folder (it is created when missing)",
    )
