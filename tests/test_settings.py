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
