"""The config model (evalwh/config/model.py): EvalConfig.locate_error gives the config's own
errors the line and column of the place they name, and only those.

The config snapshot a run stores (EvalConfig.snapshot): a no-look run's keeps its file and
datasource entries and only counts its inline cases.
"""

from __future__ import annotations

from pathlib import Path

from evalwh.config.loader import load_config
from evalwh.errors import ConfigError
from tests.builders import BASE, ROWS_CONFIG
from tests.conftest import write

CONFIG = BASE  # the minimal config (tests/builders.py)


def test_an_error_about_the_config_gets_the_line_of_the_place_it_names(tmp_path: Path) -> None:
    config = load_config(write(tmp_path / "eval.yaml", CONFIG))
    error = config.locate_error(ConfigError("bad", file=str(config.path), where="cases[0]"))
    assert (error.line, error.column) == (10, 5)
    assert str(error) == f"{config.path}:10:5: cases[0]: bad"


def test_an_error_about_another_file_keeps_no_line_from_the_config(tmp_path: Path) -> None:
    """A cases file's error at ``cases[0]`` is not given the line of eval.yaml's cases[0]."""
    config = load_config(write(tmp_path / "eval.yaml", CONFIG))
    other = str(tmp_path / "cases.jsonl")
    error = config.locate_error(ConfigError("bad", file=other, where="cases[0]"))
    assert (error.line, error.column) == (None, None)
    assert str(error) == f"{other}: cases[0]: bad"


def test_an_error_that_already_has_a_line_keeps_it(tmp_path: Path) -> None:
    config = load_config(write(tmp_path / "eval.yaml", CONFIG))
    error = ConfigError("bad", file=str(config.path), where="cases[0]", line=3, column=7)
    located = config.locate_error(error)
    assert (located.line, located.column) == (3, 7)
    assert str(located) == f"{config.path}:3:7: cases[0]: bad"


def test_an_error_naming_no_place_gets_no_line(tmp_path: Path) -> None:
    config = load_config(write(tmp_path / "eval.yaml", CONFIG))
    error = config.locate_error(ConfigError("bad", file=str(config.path)))
    assert (error.line, error.column) == (None, None)
    assert str(error) == f"{config.path}: bad"


def test_a_no_look_snapshot_keeps_file_and_datasource_entries_and_counts_the_rest(
    tmp_path: Path,
) -> None:
    (tmp_path / "cases.jsonl").write_text('{"id": "f1", "vars": {"q": "x"}}\n', encoding="utf-8")
    text = ROWS_CONFIG.replace("name: rows\n", "name: rows\nprivacy: {no_look: true}\n").replace(
        "  - {id: other, vars: {q: three}}\n",
        "  - {file: cases.jsonl}\n"
        "  - {source: jsonl-glob, params: {pattern: 'rows/*.jsonl'}, id: ticket_id}\n",
    )
    (tmp_path / "eval.yaml").write_text(text, encoding="utf-8")
    config = load_config(tmp_path / "eval.yaml")
    assert config.no_look
    snapshot = config.snapshot()
    assert snapshot["cases"] == [
        {"file": "cases.jsonl"},
        {"source": "jsonl-glob", "params": {"pattern": "rows/*.jsonl"}, "id": "ticket_id"},
    ]
    assert snapshot["inline_cases_stripped"] == 2
    assert {k: v for k, v in snapshot.items() if k not in ("cases", "inline_cases_stripped")} == {
        k: v for k, v in config.raw.items() if k != "cases"
    }
    (tmp_path / "eval.yaml").write_text(ROWS_CONFIG, encoding="utf-8")
    plain = load_config(tmp_path / "eval.yaml")
    assert plain.snapshot() == plain.raw  # a run that may look keeps its inline cases
