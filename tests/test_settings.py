"""Settings layering: flags > EVALWH_* env > eval.yaml settings > user config > defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalwh.config.settings import resolve_settings
from evalwh.errors import ConfigError
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
    import json

    s = resolve_settings(env={}, cwd=tmp_path)
    out = s.to_dict()
    assert "sources" not in out
    assert out["warehouse"] == str(s.warehouse) and out["output_dir"] == str(s.output_dir)
    assert json.loads(json.dumps(out)) == out  # plain JSON values only
