"""The datasource protocol and registry (evalwh/datasources/__init__.py, docs/datasources.md):
built-in and entry-point registration, the errors of a source that cannot be found, imported
or paged (naming the config key and the fix), where open_source places its errors, and the
digest a run records of the rows it read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import evalwh
from evalwh.datasources import open_source, source_class
from evalwh.datasources.jsonl import JsonlGlobSource
from evalwh.datasources.sql import DuckDBSource
from evalwh.errors import ConfigError
from tests.builders import DATASOURCE_HEAD
from tests.conftest import write


def test_the_digest_of_rows_changes_with_the_data(tmp_path: Path, sources: Any) -> None:
    def digest(n: int) -> str:
        cfg = write(
            tmp_path / f"e{n}.yaml",
            DATASOURCE_HEAD
            + f'cases: [{{source: "mysources:Counting", params: {{n: {n}, page: 7}}}}]\n',
        )
        run = evalwh.run_eval(cfg, output_dir=tmp_path / "o")
        view = evalwh.open_warehouse(tmp_path / "o" / "warehouse.duckdb")
        return str(json.loads(view.run(run.run_id)["datasources"])[0]["digest"])

    assert digest(10) == digest(10) != digest(11)


def test_registration_errors_name_the_entry_and_the_fix(tmp_path: Path, sources: Any) -> None:
    for source, message in (
        ("nosuch", "unknown datasource 'nosuch'"),
        ("mysources:Missing", "cannot import datasource 'mysources:Missing'"),
        ("mysources:NoPages", r"has no pages\(cursor\) method"),
    ):
        cfg = write(tmp_path / "eval.yaml", DATASOURCE_HEAD + f'cases: [{{source: "{source}"}}]\n')
        with pytest.raises(ConfigError, match=message) as caught:
            evalwh.validate(cfg, output_dir=tmp_path / "o")
        assert "cases[0].source" in str(caught.value)
    assert source_class("sql") is source_class("duckdb") is DuckDBSource
    assert source_class("jsonl-glob") is JsonlGlobSource


def test_an_entry_point_registers_a_datasource(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib.metadata import EntryPoint

    import evalwh.datasources as registry

    point = EntryPoint("tickets", "evalwh.datasources.jsonl:JsonlGlobSource", "evalwh.datasources")
    monkeypatch.setattr(registry, "entry_points", lambda group: [point])
    registry.available.cache_clear()
    try:
        assert registry.source_class("tickets") is JsonlGlobSource
        assert registry.available()["duckdb"] == registry.BUILTIN["duckdb"]
    finally:
        registry.available.cache_clear()


def test_open_source_places_its_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="needs a pattern"):
        open_source("jsonl-glob", {}, tmp_path)
    cfg = write(
        tmp_path / "eval.yaml", DATASOURCE_HEAD + "cases: [{source: jsonl-glob, params: {}}]\n"
    )
    with pytest.raises(ConfigError) as caught:
        evalwh.validate(cfg, output_dir=tmp_path / "o")
    assert "cases[0].params.pattern" in str(caught.value) and str(cfg) in str(caught.value)
