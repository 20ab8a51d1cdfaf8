"""The warehouse in a notebook (evalwh/api/frames.py): `evalwh.connect()` reads and only reads,
and `evalwh.frames.runs()/cases()/scores()` give Polars frames whose JSON columns are typed
where their values share a shape and JSON text where they do not."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import polars as pl
import pytest

import evalwh
from evalwh.api import frames
from evalwh.errors import RunNotFoundError
from tests.builders import fill_run_keys
from tests.sql.conftest import _warehouse


def _case(con: duckdb.DuckDBPyConnection, run: str, case: str, metadata: object) -> None:
    con.execute(
        "INSERT INTO cases (run_id, variant, model, case_id, repeat, metadata, cached, "
        "request_hash, attempts, passed, created_at) "
        "VALUES (?, 'v', 'm', ?, 0, ?, false, 'h', 1, true, now())",
        [run, case, json.dumps(metadata)],
    )
    fill_run_keys(con)


def _run(con: duckdb.DuckDBPyConnection, run: str, label: str) -> None:
    con.execute(
        "INSERT INTO runs (run_id, label, suite, status, config_hash, dataset_hash, n_planned, "
        "started_at, evalwh_version, totals) "
        "VALUES (?, ?, 's', 'completed', 'h', 'd', 1, now(), 't', '{\"rows\": 1}')",
        [run, label],
    )


def test_the_frames_of_a_run_have_typed_json_an_analyst_filters_on(
    quickstart: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    first = evalwh.run_eval(quickstart, output_dir=out, label="first").run_id
    second = evalwh.run_eval(quickstart, output_dir=out, models=["mock-small"]).run_id
    runs = evalwh.frames.runs(output_dir=out)
    assert runs["run_id"].to_list() == [second, first]  # newest first
    assert runs.schema["totals"] == pl.Struct and runs["totals"].struct.field("rows").to_list() == [
        24,
        48,
    ]
    assert runs["filters"].struct.field("models").to_list() == [["mock-small"], None]
    cases = evalwh.frames.cases("first", output_dir=out)
    assert cases.height == 48 and set(cases["run_id"]) == {first}
    hard = cases.filter(pl.col("metadata").struct.field("difficulty") == "hard")
    assert 0 < hard.height < cases.height
    assert cases.schema["messages"] == pl.List  # of {role, content: [{type, text}]}
    roles = cases["messages"].list.eval(pl.element().struct.field("role")).explode()
    assert set(roles) == {"system", "user"}
    assert evalwh.frames.cases(output_dir=out).height == 48 + 24  # every run
    scores = evalwh.frames.scores("latest", output_dir=out)
    assert set(scores["run_id"]) == {second} and scores.schema["details"] == pl.Struct
    with pytest.raises(RunNotFoundError):
        evalwh.frames.scores("nope", output_dir=out)


def test_json_values_that_disagree_stay_json_text_where_they_disagree(tmp_path: Path) -> None:
    # n is a number in one case and text in another: typing it would drop one of them
    con = _warehouse(tmp_path)
    _run(con, "r1", "a")
    _case(con, "r1", "c1", {"lang": "fr", "n": 1, "tags": ["x"]})
    _case(con, "r1", "c2", {"lang": "en", "n": "one"})
    _case(con, "r1", "c3", None)
    con.close()
    cases = frames.cases("a", warehouse=tmp_path / "w.duckdb")
    meta = cases["metadata"]
    assert meta.struct.field("lang").to_list() == ["fr", "en", None]
    assert meta.struct.field("n").to_list() == ["1", '"one"', None]  # JSON text
    assert meta.struct.field("tags").to_list() == [["x"], None, None]
    assert cases.schema["vars"] == pl.String  # no value at all: the column as stored


def test_a_case_file_with_thousands_of_distinct_metadata_keys_keeps_metadata_as_json_text(
    tmp_path: Path,
) -> None:
    # attack: a case file whose metadata has 20,000 distinct keys would make every notebook
    # frame of that warehouse a struct of 20,000 fields; past MAX_SHAPE the column stays text
    con = _warehouse(tmp_path)
    _run(con, "r1", "a")
    _case(con, "r1", "big", {f"k{i:05d}": i for i in range(20_000)})
    _case(con, "r1", "small", {"lang": "fr"})
    con.close()
    cases = frames.cases(warehouse=tmp_path / "w.duckdb")
    assert cases.schema["metadata"] == pl.String
    assert json.loads(cases["metadata"][1]) == {"lang": "fr"}


def test_connect_reads_the_warehouse_and_nothing_else(quickstart: Path, tmp_path: Path) -> None:
    # attack: a notebook connection used to change the warehouse, reach another file or
    # unlock its own limits
    out = tmp_path / "out"
    evalwh.run_eval(quickstart, output_dir=out, label="first")
    outside = tmp_path / "outside.csv"
    outside.write_text("a\n1\n")
    with evalwh.connect(output_dir=out) as con:
        assert con.sql("SELECT count(*) FROM cases").fetchall() == [(48,)]
        with pytest.raises(duckdb.Error, match="read-only"):
            con.execute("DELETE FROM cases")
        with pytest.raises(duckdb.Error, match="disabled by configuration"):
            con.execute(f"SELECT * FROM read_csv('{outside}')")
        with pytest.raises(duckdb.Error, match="configuration has been locked"):
            con.execute("SET enable_external_access = true")
    # closed: a run writes again
    evalwh.run_eval(quickstart, output_dir=out, label="second")
    assert evalwh.frames.runs(output_dir=out)["label"].to_list() == ["second", "first"]


def test_connect_without_a_warehouse_says_nothing_has_run(tmp_path: Path) -> None:
    with pytest.raises(evalwh.errors.WarehouseError, match="nothing has been run here yet"):
        evalwh.connect(output_dir=tmp_path / "none")
    assert not (tmp_path / "none").exists()


def test_connect_and_the_frames_read_a_lake(quickstart: Path, tmp_path: Path) -> None:
    target = f"ducklake:{tmp_path / 'meta.ducklake'}"
    run_id = evalwh.run_eval(quickstart, warehouse=target).run_id
    assert evalwh.frames.cases("latest", warehouse=target)["run_id"].unique().to_list() == [run_id]
    with evalwh.connect(warehouse=target) as con:
        assert con.sql("SELECT run_id FROM runs").fetchall() == [(run_id,)]
        with pytest.raises(duckdb.Error, match="read-only"):
            con.execute("DELETE FROM runs")
