"""Exports of a stored run (evalwh/reports/exports.py, `evalwh export`): json, csv, md,
parquet and junit read back; nothing re-runs."""

from __future__ import annotations

import csv
import io
import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.dataset as pads
import pytest

import evalwh
from evalwh.errors import UsageError
from evalwh.reports import fmt
from tests.builders import TERSE_RULE
from tests.conftest import PAIRWISE, QUICKSTART
from tests.inprocess import evalwh_inprocess


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("exports")
    shutil.copytree(QUICKSTART, root / "qs", ignore=shutil.ignore_patterns(".evalwh"))
    config = root / "qs" / "eval.yaml"
    worse = root / "qs" / "worse.yaml"
    worse.write_text(
        config.read_text().replace(TERSE_RULE, TERSE_RULE.replace("0.3", "0.8"))
        + "  regression:\n    max_drop_pass_rate: 0.01\n"
    )
    out = root / "out"
    a = evalwh.run_eval(config, output_dir=out, label="a")
    b = evalwh.run_eval(worse, output_dir=out, label="b")
    view = evalwh.open_warehouse(out / "warehouse.duckdb")
    view.set_baseline("a")
    return {"view": view, "a": a, "b": b, "out": out}


def test_json_export_is_the_whole_run(runs: dict[str, object]) -> None:
    view = runs["view"]
    text = view.export("b", "json").text  # type: ignore[attr-defined]
    data = json.loads(text)
    b = runs["b"]
    assert data["run"]["run_id"] == b.run_id and data["run"]["label"] == "b"  # type: ignore[attr-defined]
    assert data["totals"] == json.loads(json.dumps(b.totals, default=str))  # type: ignore[attr-defined]
    assert len(data["cases"]) == 48 and data["repeats"] is None and data["pairwise"] is None
    case = next(c for c in data["cases"] if c["case_id"] == "geo-1")
    assert set(case["criteria"]) == {"correct", "mentions-answer", "short"}
    assert case["metadata"] == {"topic": "geography", "difficulty": "easy"}
    assert data["gate"]["passed"] is False and data["gate"]["baseline_id"] == runs["a"].run_id  # type: ignore[attr-defined]


def test_json_and_markdown_carry_the_pairwise_win_rates(tmp_path: Path) -> None:
    # examples/pairwise: 6 cases won, 17 tied, 1 lost; json holds what `show --json` holds
    # under "pairwise", md the same win-rate text as the command line and the HTML report
    shutil.copytree(PAIRWISE, tmp_path / "pw", ignore=shutil.ignore_patterns(".evalwh"))
    result = evalwh.run_eval(tmp_path / "pw" / "eval.yaml", output_dir=tmp_path / "out")
    view = evalwh.open_warehouse(tmp_path / "out" / "warehouse.duckdb")
    data = json.loads(view.export(result.run_id, "json").text)
    (c,) = data["pairwise"]["comparisons"]
    assert [c[k] for k in ("cases_won", "cases_tied", "cases_lost", "n_cases")] == [6, 17, 1, 24]
    assert (c["win_rate"], c["verdict"]) == (14.5 / 24, "within noise")
    assert c["win_rate_p"] == pytest.approx(0.125, abs=1e-12)
    assert c == json.loads(json.dumps(view.judging(result.run_id)["comparisons"][0]))
    assert "baseline_pass_rate" not in c and c["baseline_eligible_rate"] == 1.0
    text = view.export(result.run_id, "md").text
    assert "**Pairwise** (ties count half a win)" in text
    row = f"| large-vs-small | plain × large vs plain × small | {fmt.win_rate(c)} | "
    assert row + "24 cases: 6 won, 17 tied, 1 lost | 33.3% (8/24) | UNCALIBRATED" in text
    assert "60.4% [47.7%–64.5%] p=0.125 within noise" in text


def test_csv_and_parquet_read_back(runs: dict[str, object], tmp_path: Path) -> None:
    view = runs["view"]
    rows = list(csv.DictReader(io.StringIO(view.export("a", "csv").text)))  # type: ignore[attr-defined]
    assert len(rows) == 48
    assert sum(r["passed"] == "true" for r in rows) == runs["a"].totals["n_passed"]  # type: ignore[attr-defined]
    failed = [r for r in rows if r["passed"] == "false" and not r["error"]]
    assert failed and all(r["failed_criteria"] for r in failed)
    target = tmp_path / "pq"
    result = view.export("a", "parquet", out=target)  # type: ignore[attr-defined]
    assert result.path == target  # type: ignore[attr-defined]
    cases = pl.scan_parquet(str(target / "cases"), hive_partitioning=True).collect()
    assert cases.height == 48 and cases["run_id"].unique().to_list() == [runs["a"].run_id]  # type: ignore[attr-defined]
    written = view.export("a", "csv", out=tmp_path / "sub" / "a.csv")  # type: ignore[attr-defined]
    assert written.text is None and pl.read_csv(written.path).height == 48


def test_markdown_is_a_pr_comment_with_gate_and_movers(runs: dict[str, object]) -> None:
    text = runs["view"].export("b", "md").text  # type: ignore[attr-defined]
    assert text.startswith("## evalwh · quickstart · run `")
    assert "**Gate: ❌ failed** (1 of 7 rules)" in text
    assert "pass_rate_drop &lt;= 0.01 for run:" in text and "(n=48)" in text
    assert f"### vs baseline `{runs['a'].run_id}` (a)" in text  # type: ignore[attr-defined]
    assert "**Top movers** (worst first" in text and "| broken |" in text
    assert "| terse | mock-small | 12 |" in text
    assert "**Overall:** " in text and "(n=48 paired)" in text
    assert "Hmm." not in text  # model outputs stay out of PR comments
    clean = runs["view"].export("a", "md").text  # type: ignore[attr-defined]
    assert "**Gate: ✅ passed** (all 6 rules)" in clean and "vs baseline" not in clean


def test_junit_lists_the_failing_cases_and_the_gate(runs: dict[str, object]) -> None:
    text = runs["view"].export("b", "junit").text  # type: ignore[attr-defined]
    root = ET.fromstring(text.split("\n", 1)[1])
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {
        "reasoned × mock-large",
        "reasoned × mock-small",
        "terse × mock-large",
        "terse × mock-small",
        "gate",
    }
    cases = [c for name, s in suites.items() if name != "gate" for c in s.iter("testcase")]
    failures = [c for c in cases if c.find("failure") is not None]
    errors = [c for c in cases if c.find("error") is not None]
    totals = runs["b"].totals  # type: ignore[attr-defined]
    assert len(cases) == 48 and len(errors) == totals["n_errors"] == 2
    assert len(failures) == 48 - totals["n_passed"] - totals["n_errors"]
    assert int(root.get("failures")) == len(failures) + 1  # + the failed regression rule
    assert all("failed: " in c.find("failure").get("message") for c in failures)  # type: ignore[union-attr]
    gate = [c.find("failure") for c in suites["gate"].iter("testcase")]
    assert sum(f is not None for f in gate) == 1


def test_export_cli_writes_files_and_rejects_bad_formats(
    runs: dict[str, object], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(runs["out"])
    target = tmp_path / "report.xml"
    code, _, err = evalwh_inprocess(
        capsys, "export", "b", "-f", "junit", "--out", str(target), "-o", out
    )
    assert code == 0 and f"wrote {target}" in err
    ET.parse(target)
    code, stdout, _ = evalwh_inprocess(capsys, "export", "a", "--format", "md", "-o", out)
    assert code == 0 and stdout.startswith("## evalwh")
    code, _, err = evalwh_inprocess(capsys, "export", "a", "--format", "xlsx", "-o", out)
    assert code == 2 and "unknown export format 'xlsx'" in err
    with pytest.raises(UsageError):
        runs["view"].export("nope", "json")  # type: ignore[attr-defined]


# -- parquet: one dataset per table --------------------------------------------------------
def _warehouse_columns(db: Path, table: str) -> tuple[int, dict[str, str], object]:
    """A table's row count, DuckDB column types and Arrow schema in the warehouse file."""
    with duckdb.connect(str(db), read_only=True) as con:
        (n,) = con.execute(f"SELECT count(*) FROM {table}").fetchone()  # type: ignore[misc]
        types = dict(
            con.execute(f"SELECT column_name, column_type FROM (DESCRIBE {table})").fetchall()
        )
        con.execute("SET TimeZone = 'UTC'")  # as Parquet stores an instant (not 'Etc/UTC')
        schema = con.execute(f"SELECT * FROM {table} LIMIT 0").to_arrow_table().schema
    return n, types, schema


@pytest.mark.parametrize("table", ["cases", "scores"])
def test_each_exported_table_loads_as_a_dataset_with_the_warehouses_rows_and_types(
    runs: dict[str, object], table: str
) -> None:
    """Bug: cases and scores shared each run_id=... folder, so a Hive dataset of the exports
    mixed both tables under one schema, and Polars read vars, metadata, expected and messages
    as bytes (DuckDB writes its JSON type as Parquet's JSON annotation on binary). Each table
    is now a dataset of its own that pyarrow, Polars and a fresh DuckDB read with their Hive
    option alone: the warehouse's rows and column types, its JSON columns as text."""
    import pyarrow as pa

    out = Path(runs["out"])  # type: ignore[arg-type]
    folder = out / "exports" / table
    n, types, schema = _warehouse_columns(out / "warehouse.duckdb", table)
    json_columns = [c for c, t in types.items() if t == "JSON"]
    assert {"cases": {"vars", "expected", "metadata", "messages"}, "scores": {"details"}}[
        table
    ] <= set(json_columns)

    dataset = pads.dataset(folder, format="parquet", partitioning="hive")
    assert dataset.count_rows() == n
    assert dataset.schema.names == list(types)
    for field in schema:  # type: ignore[attr-defined]
        got = dataset.schema.field(field.name).type
        assert got == (pa.string() if field.name in json_columns else field.type), field.name

    frame = pl.scan_parquet(folder, hive_partitioning=True).collect()
    assert frame.height == n and frame.columns == list(types)
    expected = pl.from_arrow(schema.empty_table()).schema  # type: ignore[attr-defined]
    for name, dtype in frame.schema.items():
        assert dtype == (pl.String if name in json_columns else expected[name]), name
    for name in json_columns:  # text that parses as JSON
        [json.loads(v) for v in frame[name].drop_nulls()]
    assert frame["run_id"].n_unique() == 2

    with duckdb.connect() as fresh:
        source = f"read_parquet('{folder.as_posix()}/*/*.parquet', hive_partitioning = true)"
        (count,) = fresh.execute(f"SELECT count(*) FROM {source}").fetchone()  # type: ignore[misc]
        read = dict(
            fresh.execute(
                f"SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM {source})"
            ).fetchall()
        )
    assert count == n
    assert read == {c: ("VARCHAR" if t == "JSON" else t) for c, t in types.items()}


def test_export_all_writes_every_concluded_run_and_moves_the_old_layout(
    runs: dict[str, object], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`evalwh export --all` is the one command that brings an exports folder to the current
    layout: every old-layout folder moved, every concluded run written."""
    from tests.warehouse.test_exportfiles import old_layout_export

    out = runs["out"]
    a, b = runs["a"].run_id, runs["b"].run_id  # type: ignore[attr-defined]
    target = tmp_path / "pq"
    old = old_layout_export(out / "warehouse.duckdb", a, target)  # type: ignore[operator]
    code, stdout, err = evalwh_inprocess(
        capsys, "--json", "export", "--all", "--out", str(target), "-o", str(out)
    )
    assert code == 0, err
    assert json.loads(stdout) == {
        "format": "parquet",
        "path": str(target),
        "run_ids": [a, b],
        "migrated": [a],
    }
    assert not old.exists()
    for table in ("cases", "scores"):
        assert sorted(p.name for p in (target / table).iterdir()) == [f"run_id={a}", f"run_id={b}"]
    code, _, err = evalwh_inprocess(capsys, "export", "--all", "--out", str(target), "-o", str(out))
    assert code == 0 and f"wrote 2 run(s) to {target}/{{cases,scores}}/" in err
    code, _, err = evalwh_inprocess(capsys, "export", "--all", "-f", "csv", "-o", str(out))
    assert code == 2 and "--all exports every run as Parquet" in err
    code, _, err = evalwh_inprocess(capsys, "export", "a", "--all", "-o", str(out))
    assert code == 2 and "--all exports every run as Parquet" in err
