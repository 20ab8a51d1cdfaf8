"""Settings layering (evalwh/config/settings.py): flags > EVALWH_* env > eval.yaml settings >
user config > defaults. Where the user config lives, which layer each setting came from, a
layer's unset and unknown keys, paths resolved against the file that set them (a warehouse
set beside output_dir, a DuckLake target's data path and credentials), and the place and fix
of each settings error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalwh.config.settings import resolve_settings, user_config_dir
from evalwh.errors import ConfigError
from evalwh.warehouse.lake import LakeTarget
from tests.conftest import write


def test_defaults(tmp_path: Path) -> None:
    s = resolve_settings(env={}, cwd=tmp_path)
    assert s.output_dir == (tmp_path / ".evalwh").resolve()
    assert s.warehouse == s.output_dir / "warehouse.duckdb"
    assert (s.concurrency, s.cache, s.repeat, s.max_cost_usd) == (16, True, 1, None)
    assert s.sources["concurrency"] == "default"


def test_each_layer_beats_the_one_below(tmp_path: Path) -> None:
    user = tmp_path / "user"
    write(user / "config.yaml", "concurrency: 2\ncache: false\nrepeat: 3\n")
    env = {"EVALWH_CONFIG_DIR": str(user)}
    s = resolve_settings(env=env, cwd=tmp_path)
    assert (s.concurrency, s.cache, s.repeat) == (2, False, 3)
    assert s.sources["concurrency"].endswith("config.yaml")

    s = resolve_settings(config_settings={"concurrency": 4, "cache": True}, env=env, cwd=tmp_path)
    assert (s.concurrency, s.cache, s.repeat) == (4, True, 3)

    env2 = {**env, "EVALWH_CONCURRENCY": "8", "EVALWH_MAX_COST_USD": "2.5"}
    s = resolve_settings(config_settings={"concurrency": 4}, env=env2, cwd=tmp_path)
    assert (s.concurrency, s.max_cost_usd, s.sources["concurrency"]) == (8, 2.5, "environment")

    s = resolve_settings({"concurrency": 16}, {"concurrency": 4}, env=env2, cwd=tmp_path)
    assert (s.concurrency, s.sources["concurrency"]) == (16, "flag")


def test_paths_resolve_against_the_file_that_set_them(tmp_path: Path) -> None:
    config_dir = tmp_path / "project" / "evals"
    s = resolve_settings(
        config_settings={"output_dir": "results"}, config_dir=config_dir, env={}, cwd=tmp_path
    )
    assert s.output_dir == (config_dir / "results").resolve()
    # a flag is relative to where you run, and -o moves a warehouse set lower down with it
    s = resolve_settings(
        {"output_dir": "out"},
        {"warehouse": "w.duckdb"},
        config_dir=config_dir,
        env={},
        cwd=tmp_path,
    )
    assert s.warehouse == (tmp_path / "out" / "warehouse.duckdb").resolve()


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("EVALWH_CONCURRENCY", "many", "is not an integer"),
        ("EVALWH_CONCURRENCY", "0", "must be at least 1"),
        ("EVALWH_CACHE", "maybe", "is not a boolean"),
        ("EVALWH_MAX_COST_USD", "-1", "must not be negative"),
    ],
)
def test_bad_environment_values_say_how_to_fix_them(
    tmp_path: Path, name: str, value: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as exc:
        resolve_settings(env={name: value}, cwd=tmp_path)
    assert name in str(exc.value) and "fix:" in str(exc.value)


def test_a_bad_user_config_names_its_file(tmp_path: Path) -> None:
    user = tmp_path / "user"
    write(user / "config.yaml", "concurency: 2\n")
    with pytest.raises(ConfigError, match="unknown key 'concurency'") as exc:
        resolve_settings(env={"EVALWH_CONFIG_DIR": str(user)}, cwd=tmp_path)
    assert "config.yaml" in str(exc.value) and "did you mean 'concurrency'" in str(exc.value)


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        *[(raw, True) for raw in ("1", "true", "yes", "on", " TRUE ", "On")],
        *[(raw, False) for raw in ("0", "false", "no", "off", " FALSE ", "Off")],
    ],
)
def test_a_boolean_environment_value_takes_every_usual_spelling(
    tmp_path: Path, raw: str, value: bool
) -> None:
    # the layer below says the opposite, so the variable is seen to decide
    s = resolve_settings(
        config_settings={"cache": not value}, env={"EVALWH_CACHE": raw}, cwd=tmp_path
    )
    assert s.cache is value and s.sources["cache"] == "environment"


def test_a_zero_cost_cap_from_the_environment_is_a_cap_not_an_error(tmp_path: Path) -> None:
    s = resolve_settings(env={"EVALWH_MAX_COST_USD": "0"}, cwd=tmp_path)
    assert s.max_cost_usd == 0.0


def test_a_setting_with_no_default_is_read_from_the_environment_as_text(tmp_path: Path) -> None:
    s = resolve_settings(env={"EVALWH_CACHE_DIR": "responses"}, cwd=tmp_path)
    assert s.cache_dir == (tmp_path / "responses").resolve()


def test_settings_as_a_mapping_hold_text_paths_and_leave_out_where_each_came_from(
    tmp_path: Path,
) -> None:

    s = resolve_settings(env={}, cwd=tmp_path)
    out = s.to_dict()
    assert "sources" not in out
    assert out["warehouse"] == str(s.warehouse) and out["output_dir"] == str(s.output_dir)
    assert json.loads(json.dumps(out)) == out  # plain JSON values only


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


def test_cache_dir_setting_resolves_against_the_config_folder(quickstart: Path) -> None:
    from evalwh.config.settings import resolve_settings

    s = resolve_settings({}, {"cache_dir": "cache"}, quickstart.parent)
    assert s.cache_path == quickstart.parent / "cache" / "cache.duckdb"
    assert resolve_settings({}, {}, quickstart.parent).cache_path == s.warehouse


def test_evalwh_lake_takes_data_path_s3_and_secret_together(tmp_path: Path) -> None:
    """EVALWH_LAKE (a CI job's lake settings as JSON) may give all three of its keys at once,
    and each reaches the DuckLake target."""
    env = {
        "EVALWH_WAREHOUSE": "ducklake:meta.ducklake",
        "EVALWH_LAKE": json.dumps(
            {
                "data_path": "s3://bucket/evalwh/",
                "s3": {"region": "eu-west-1"},
                "secret": "ci_lake",
            }
        ),
    }
    target = resolve_settings(env=env, cwd=tmp_path).warehouse
    assert isinstance(target, LakeTarget)
    assert target.data_path == "s3://bucket/evalwh/"
    assert target.s3 == (("region", "eu-west-1"),)
    assert target.secret == "ci_lake"
    assert target.catalog == str((tmp_path / "meta.ducklake").resolve())


@pytest.mark.parametrize(
    "value",
    [
        {"s3": {"region": "eu-west-1"}},
        {"secret": "ci_lake"},
        {"data_path": "s3://bucket/evalwh/"},
        {},
    ],
    ids=["s3", "secret", "data_path", "empty"],
)
def test_evalwh_lake_takes_any_of_its_keys_alone(value: dict[str, Any], tmp_path: Path) -> None:
    env = {"EVALWH_WAREHOUSE": "ducklake:meta.ducklake", "EVALWH_LAKE": json.dumps(value)}
    target = resolve_settings(env=env, cwd=tmp_path).warehouse
    assert isinstance(target, LakeTarget)
    assert target.secret == value.get("secret")
    assert target.s3 == tuple(value.get("s3", {}).items())


LAKE_FIX = (
    'set EVALWH_LAKE to e.g. {"data_path": "s3://bucket/evalwh/", "s3": {"region": "us-east-1"}}'
)


@pytest.mark.parametrize(
    "raw",
    ['{"data_path": "s3://b/", "bucket": "b"}', "not json", '["s3"]', '"s3"', "", "{"],
    ids=["unknown-key", "not-json", "list", "string", "empty", "broken"],
)
def test_a_bad_evalwh_lake_names_the_variable_its_keys_and_an_example(
    raw: str, tmp_path: Path
) -> None:
    """The error a user sees for a bad EVALWH_LAKE: the variable, the keys it may hold, and
    a working example to copy."""
    with pytest.raises(ConfigError) as caught:
        resolve_settings(env={"EVALWH_LAKE": raw}, cwd=tmp_path)
    error = caught.value
    assert (
        error.message
        == "EVALWH_LAKE is not a JSON object of data_path, flush_interval_s, flush_rows, s3, secret"
    )
    assert error.fix == LAKE_FIX
    assert (
        str(error)
        == f"EVALWH_LAKE is not a JSON object of data_path, flush_interval_s, flush_rows, s3, secret\n  fix: {LAKE_FIX}"
    )
    # the example given is itself accepted
    example = LAKE_FIX.removeprefix("set EVALWH_LAKE to e.g. ")
    env = {"EVALWH_WAREHOUSE": "ducklake:meta.ducklake", "EVALWH_LAKE": example}
    assert resolve_settings(env=env, cwd=tmp_path).warehouse.s3 == (("region", "us-east-1"),)
