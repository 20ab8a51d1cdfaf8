"""The warehouse store (evalwh/warehouse/store.py), called directly on real DuckDB files and
on a DuckLake whose catalog is a local DuckDB file: run ids, what `create_run`,
`finish_run` and `set_status` store and the lease they release, a run's labels (from the
config, and `evalwh labels import` replacing only its own keys), the name each write gives
the lake's conflict retry, reading a warehouse that was never written, the post-run queries'
memory limit, and a run's Parquet export (hive-partitioned, streamed in bounded row groups,
into a folder whose name holds a quote, over a killed export's leftovers). Exports are
described in docs/storage.md. Also: an export that does not fit its memory limit retries with more, and clearing the
cache after a lake conflict is logged as such. The temporary names of an export are in
test_tempnames.py."""

from __future__ import annotations

import json
import logging
import os
import re
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import duckdb
import polars as pl
import pyarrow.parquet as pq
import pytest

import evalwh
from evalwh import api
from evalwh.analysis.baselines import remove_baseline, set_baseline
from evalwh.config.model import Case, Label, PointLabel
from evalwh.warehouse import connect, store
from evalwh.warehouse.connect import write_connection
from evalwh.warehouse.store import Warehouse, new_run_id, utcnow
from tests.builders import (
    DATASOURCE_HEAD,
    GARBAGE_JUDGE_CONFIG,
    add_run,
    lake_store,
    lose_the_first_commit,
    only_row,
)
from tests.builders import ROWS_CONFIG as CONFIG_WITH_ROWS
from tests.conftest import dead_pid, write


def test_an_export_that_does_not_fit_its_memory_limit_retries_with_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalwh.warehouse import exportfiles

    cfg = write(
        tmp_path / "eval.yaml", DATASOURCE_HEAD + "cases: [{id: a, vars: {q: x}, expected: x}]\n"
    )
    monkeypatch.setattr(exportfiles, "MEMORY_LIMIT", "1MB")  # no export sorts in 1 MB
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "o")
    assert result.status == "completed"
    assert exportfiles.final_file(Path(result.exports or ""), "cases", result.run_id).is_file()
    monkeypatch.setattr(exportfiles, "MEMORY_RETRY", "1MB")
    with pytest.raises(Exception, match="Out of Memory"):
        evalwh.run_eval(cfg, output_dir=tmp_path / "o2")


CACHE_EVAL = """
models: [{id: m, provider: mock, mock: {default: "a"}}]
variants: [{id: v, messages: [{role: user, content: "{{ q }}"}]}]
scorecard: [{name: exact, type: exact}]
cases: [{id: c1, vars: {q: one}, expected: a}, {id: c2, vars: {q: two}, expected: a}]
"""


def test_a_cache_clear_retried_after_a_lake_conflict_is_logged_as_clearing_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from evalwh.warehouse import lake, store

    cfg = write(tmp_path / "eval.yaml", CACHE_EVAL)
    evalwh.run_eval(cfg, output_dir=tmp_path / "o")
    real = store.write_transaction
    tries: list[int] = []

    def like_a_lake(path: Any, body: Any, *, what: str = "write") -> Any:
        def attempt() -> Any:
            if not tries:
                tries.append(1)
                raise duckdb.TransactionException("Transaction conflict: another writer won")
            return real(path, body, what=what)

        return lake.retry_conflicts(attempt, what=what, first_delay=0.0)

    monkeypatch.setattr(store, "write_transaction", like_a_lake)
    caplog.set_level(logging.DEBUG, logger="evalwh.warehouse")
    assert store.Warehouse(tmp_path / "o" / "warehouse.duckdb").clear_cache() == 2
    assert any(
        r.getMessage().startswith("clear the cache: DuckLake conflict (try 1), retrying")
        for r in caplog.records
    )


def warehouse(tmp_path: Path, *run_ids: str, git_dir: Path | None = None) -> Warehouse:
    path = tmp_path / "w.duckdb"
    with write_connection(path) as con:
        for run_id in run_ids:
            add_run(con, run_id, [])
    return Warehouse(path, git_dir=git_dir)


def run_row(**extra: Any) -> dict[str, Any]:
    return {
        "run_id": "r-1",
        "suite": "s",
        "status": "running",
        "config_hash": "h",
        "dataset_hash": "d",
        "n_planned": 0,
        "started_at": datetime(2026, 12, 2, tzinfo=timezone.utc),
        "evalwh_version": "t",
        **extra,
    }


def one_run(tmp_path: Path, n: int = 5) -> tuple[Path, str]:
    cfg = tmp_path / "eval.yaml"
    cfg.write_text(
        "models: [{id: m, provider: mock}]\n"
        'variants: [{id: v, messages: [{role: user, content: "{{ q }}"}]}]\n'
        "cases: [" + ", ".join(f"{{id: c{i}, vars: {{q: x{i}}}}}" for i in range(n)) + "]\n"
        "scorecard: [{name: has, type: contains, value: x}]\n"
        "settings: {cache: false}\n",
        encoding="utf-8",
    )
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    return tmp_path / "out" / "warehouse.duckdb", result.run_id


def stored_labels(store: Any) -> list[tuple[Any, ...]]:
    table = store.sql(
        "SELECT run_id, kind, comparison, case_id, prefer, label, note, labelled_by FROM labels "
        "ORDER BY run_id, kind, comparison, case_id"
    )
    return [tuple(row.values()) for row in table.to_pylist()]


def file_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    return api.open_warehouse(tmp_path / "warehouse.duckdb").store


def write_labels(monkeypatch: pytest.MonkeyPatch, *modules: Any) -> list[str]:
    """The ``what`` of every write_transaction the given modules call from now on (the label
    that names a write in the log of a lake's conflict retries)."""
    labels: list[str] = []
    real = connect.write_transaction

    def spy(path: Any, body: Any, *, what: str = "write", **options: Any) -> Any:
        labels.append(what)
        return real(path, body, what=what, **options)

    for module in modules:
        monkeypatch.setattr(module, "write_transaction", spy)
    return labels


def test_a_run_id_is_its_utc_start_to_the_millisecond_and_four_hex_digits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    at = datetime(2026, 12, 2, 5, 6, 7, 500_000, tzinfo=timezone.utc)
    assert re.fullmatch(r"2026-12-02T050607\.500-[0-9a-f]{4}", new_run_id(at))
    # the clock is read in UTC whatever the machine's zone
    monkeypatch.setenv("TZ", "Pacific/Kiritimati")  # UTC+14: another day
    time.tzset()
    try:
        before = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H%M%S")
        made = new_run_id()[:17]
        after = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H%M%S")
    finally:
        monkeypatch.undo()
        time.tzset()
    assert before <= made <= after


def test_timestamps_are_utc_whatever_the_machines_zone() -> None:
    saved = os.environ.get("TZ")
    os.environ["TZ"] = "IST-5:30"  # a POSIX zone string: +05:30, no tz database needed
    time.tzset()
    try:
        assert utcnow().utcoffset() == timedelta(0)
    finally:
        if saved is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = saved
        time.tzset()


def test_a_new_run_stores_its_json_columns_as_json_and_names_its_process(
    tmp_path: Path,
) -> None:
    runs = warehouse(tmp_path)
    runs.create_run(
        run_row(config_snapshot={"name": "s"}, filters={"case": ["c1"]}, datasources=None)
    )
    con = duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True)
    try:
        row = con.execute(
            "SELECT config_snapshot, filters, datasources, host, pid FROM runs"
        ).fetchone()
    finally:
        con.close()
    assert row is not None
    assert (json.loads(row[0]), json.loads(row[1]), row[2]) == (
        {"name": "s"},
        {"case": ["c1"]},
        None,
    )
    assert (row[3], row[4]) == (store.HOST, os.getpid())


def run_state(tmp_path: Path) -> dict[str, Any]:
    return only_row(
        tmp_path / "w.duckdb",
        "SELECT status, totals, datasources, n_planned, lease_token, finished_at IS NOT NULL"
        " AS finished FROM runs WHERE run_id = 'r-1'",
    )


def test_finishing_a_run_records_its_end_and_releases_its_lease(tmp_path: Path) -> None:
    runs = warehouse(tmp_path)
    runs.create_run(run_row(lease_token="tok"))
    runs.finish_run("r-1", "exporting", {"n": 3}, token="other")  # not its lease: nothing
    assert run_state(tmp_path)["status"] == "running"
    runs.finish_run(
        "r-1", "exporting", {"n": 3}, token="tok", datasources=[{"name": "src"}], n_planned=7
    )
    state = run_state(tmp_path)
    assert (json.loads(state["totals"]), json.loads(state["datasources"])) == (
        {"n": 3},
        [{"name": "src"}],
    )
    assert (state["status"], state["n_planned"], state["lease_token"], state["finished"]) == (
        "exporting",
        7,
        "tok",  # exporting keeps the lease until the export is in place
        True,
    )
    runs.finish_run("r-1", "interrupted", token="tok")  # no totals or datasources: kept
    state = run_state(tmp_path)
    assert (state["status"], json.loads(state["totals"]), state["n_planned"]) == (
        "interrupted",
        {"n": 3},
        7,
    )
    assert state["lease_token"] is None


def test_the_final_status_releases_the_lease_and_only_for_its_holder(tmp_path: Path) -> None:
    runs = warehouse(tmp_path)
    runs.create_run(run_row(lease_token="tok"))
    runs.set_status("r-1", "failed", token="other")
    assert run_state(tmp_path)["status"] == "running"
    runs.set_status("r-1", "completed", token="tok")
    state = run_state(tmp_path)
    assert (state["status"], state["lease_token"]) == ("completed", None)


def test_a_run_silent_longer_than_the_warehouses_stale_limit_reads_as_interrupted(
    tmp_path: Path,
) -> None:
    """`run_row` judges a running run by the warehouse's own stale limit, not the default: a
    run of this very process (alive) whose last heartbeat is a minute old is interrupted for
    a warehouse that waits 5 s, and still running for one that waits the default 120 s."""
    from evalwh.warehouse import connect
    from evalwh.warehouse.lease import HOST
    from evalwh.warehouse.store import Warehouse

    path = tmp_path / "warehouse.duckdb"
    connect.write_transaction(
        path,
        lambda con: con.execute(
            "INSERT INTO runs (run_id, suite, status, config_hash, dataset_hash, n_planned, "
            "started_at, heartbeat_at, host, pid, evalwh_version) VALUES ('r1', 's', "
            "'running', 'h', 'd', 1, now(), now() - INTERVAL 60 SECOND, ?, ?, 't')",
            [HOST, os.getpid()],
        ),
        what="seed a run",
    )
    assert Warehouse(path, stale_after_s=5).run_row("r1")["status"] == "interrupted"
    assert Warehouse(path).run_row("r1")["status"] == "running"


def test_a_warehouse_opened_by_a_string_path_is_a_path_and_an_unknown_run_is_named(
    tmp_path: Path,
) -> None:
    """`Warehouse("out/warehouse.duckdb")` works as with a Path (its exports and locks are
    built from it), and asking it for a run it does not hold names the run."""
    from evalwh.errors import RunNotFoundError
    from evalwh.warehouse import connect
    from evalwh.warehouse.store import Warehouse

    path = tmp_path / "warehouse.duckdb"
    connect.write_transaction(path, lambda con: None, what="create the warehouse")
    opened = Warehouse(str(path))
    assert opened.path == path and isinstance(opened.path, Path) and opened.exists
    with pytest.raises(RunNotFoundError) as refused:
        opened.run_row("nope")
    assert str(refused.value) == "no run nope"


def test_reading_a_warehouse_that_was_never_written_says_how_to_make_or_find_one(
    tmp_path: Path,
) -> None:
    """`evalwh show latest` in a folder where nothing ran: the error names the path and both
    ways out (run an eval there, or point -o at the folder that holds the warehouse)."""
    from evalwh.errors import UsageError

    missing = tmp_path / "out" / "warehouse.duckdb"
    with pytest.raises(UsageError) as refused:
        api.open_warehouse(missing).store.resolve("latest")
    assert str(refused.value) == (
        f"no warehouse at {missing}: nothing has been run here yet "
        "(run `evalwh run`, or point -o/--output-dir at the folder that holds it)"
    )
    assert not missing.exists()


def test_reading_a_missing_warehouse_creates_nothing(tmp_path: Path) -> None:
    wh = evalwh.open_warehouse(tmp_path / "none" / "w.duckdb")
    assert wh.runs() == []
    assert not (tmp_path / "none").exists()


def labels_of(tmp_path: Path) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True)
    try:
        return con.execute(
            "SELECT kind, comparison, case_id, prefer, label, note FROM labels "
            "ORDER BY kind, case_id, comparison NULLS FIRST"
        ).fetchall()
    finally:
        con.close()


CONFIG = SimpleNamespace(
    labels=[Label("cmp", "c1", "candidate", "longer")],
    point_labels=[PointLabel("judged", "c2", "fail")],
    cases=[Case(id="c1", human_label="pass"), Case(id="c2"), Case(id="c3", human_label=0.5)],
)


def test_a_runs_labels_are_the_configs_pairwise_pointwise_and_case_labels(
    tmp_path: Path,
) -> None:
    runs = warehouse(tmp_path, "r-1")
    runs.insert_labels("r-1", CONFIG)  # pointwise by default
    assert labels_of(tmp_path) == [
        ("pairwise", "cmp", "c1", "candidate", None, "longer"),
        ("pointwise", None, "c1", None, '"pass"', None),  # a case's own label: every criterion
        ("pointwise", "judged", "c2", None, '"fail"', None),
        ("pointwise", None, "c3", None, "0.5", None),
    ]


def test_a_no_look_run_stores_only_the_pairwise_labels(tmp_path: Path) -> None:
    # in a no-look run a case's label is case data the judge may not see stored as a label
    runs = warehouse(tmp_path, "r-1")
    runs.insert_labels("r-1", CONFIG, pointwise=False)
    assert labels_of(tmp_path) == [("pairwise", "cmp", "c1", "candidate", None, "longer")]


@pytest.mark.parametrize("opener", [file_store, lake_store], ids=["file", "lake"])
def test_stored_labels_replace_only_their_own_keys_and_count_them(
    opener: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`evalwh labels import` twice: the second import replaces exactly the labels with the
    same run, kind, comparison (or criterion) and case, says how many it replaced, and leaves
    every other label (another case, criterion, kind or run) as it was."""
    store = opener(tmp_path, monkeypatch)
    started = datetime.now(timezone.utc)
    first = [
        PointLabel("judged", "q01", "pass"),
        PointLabel("judged", "q02", "fail"),
        PointLabel("tone", "q01", 0.5),
        Label("a-vs-b", "q01", "candidate"),
    ]
    assert store.replace_labels("r1", first, by="ann") == 0
    assert store.replace_labels("r2", [PointLabel("judged", "q01", "fail")], by="bob") == 0
    again = [
        PointLabel("judged", "q01", "fail", note="on second look"),
        Label("a-vs-b", "q01", "tie"),
    ]
    assert store.replace_labels("r1", again, by="cy") == 2
    assert stored_labels(store) == [
        ("r1", "pairwise", "a-vs-b", "q01", "tie", None, None, "cy"),
        ("r1", "pointwise", "judged", "q01", None, '"fail"', "on second look", "cy"),
        ("r1", "pointwise", "judged", "q02", None, '"fail"', None, "ann"),
        ("r1", "pointwise", "tone", "q01", None, "0.5", None, "ann"),
        ("r2", "pointwise", "judged", "q01", None, '"fail"', None, "bob"),
    ]
    # a new key replaces nothing; an empty import replaces nothing and changes nothing
    assert store.replace_labels("r1", [PointLabel("judged", "q03", "pass")]) == 0
    before = stored_labels(store)
    assert store.replace_labels("r1", []) == 0
    assert stored_labels(store) == before and len(before) == 6
    # the temporary key table is gone with its transaction: the next import works the same
    assert store.replace_labels("r1", [PointLabel("judged", "q03", "fail")]) == 1
    # each imported label says when it was stored (storage.md: NULL only for a config's labels)
    stamps = store.sql(
        "SELECT min(labelled_at) AS first, max(labelled_at) AS last, count(*) AS n, "
        "count(labelled_at) AS stamped FROM labels"
    ).to_pylist()[0]
    assert stamps["n"] == stamps["stamped"] == 6
    assert started <= stamps["first"] <= stamps["last"] <= datetime.now(timezone.utc)


def test_imported_labels_replace_their_keys_on_a_lake(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`evalwh labels import` on a lake: its temporary key table and the delete and insert
    run in one DuckLake transaction; a second import of the same keys replaces them."""
    from evalwh import api
    from evalwh.config.model import Label, PointLabel

    monkeypatch.setenv("EVALWH_LAKE", json.dumps({"data_path": str(tmp_path / "data")}))
    store = api.open_warehouse(f"ducklake:{tmp_path / 'meta.ducklake'}").store
    labels = [PointLabel("judged", "q01", "pass"), Label("a-vs-b", "q02", "candidate")]
    assert store.replace_labels("r1", labels) == 0
    assert store.replace_labels("r1", [PointLabel("judged", "q01", "fail"), labels[1]]) == 2
    rows = store.sql("SELECT kind, comparison, case_id, label FROM labels ORDER BY kind")
    assert rows.to_pylist() == [
        {"kind": "pairwise", "comparison": "a-vs-b", "case_id": "q02", "label": None},
        {"kind": "pointwise", "comparison": "judged", "case_id": "q01", "label": '"fail"'},
    ]


def test_a_label_import_that_lost_a_lake_race_is_retried_and_logged_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Two writers on one lake: the import whose commit lost the race is retried whole, and
    the debug log (`evalwh -v`) names what was retried: storing the labels of that run."""

    store = lake_store(tmp_path, monkeypatch)
    assert store.replace_labels("r1", [PointLabel("judged", "q01", "pass")]) == 0
    tries = lose_the_first_commit(monkeypatch)
    with caplog.at_level(logging.DEBUG, logger="evalwh.warehouse"):
        assert store.replace_labels("r1", [PointLabel("judged", "q01", "fail")]) == 1
    assert len(tries) == 2
    retried = [r.getMessage() for r in caplog.records if "DuckLake conflict" in r.getMessage()]
    assert len(retried) == 1
    assert retried[0].startswith("store labels of run r1: DuckLake conflict (try 1), retrying")
    assert [row[5] for row in stored_labels(store)] == ['"fail"']


def test_each_write_carries_its_label(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    labels = write_labels(monkeypatch, store, connect)  # baselines import it when called
    runs = warehouse(tmp_path)
    runs.create_run(run_row())
    runs.insert_labels("r-1", CONFIG)
    runs.insert_labels("r-1", SimpleNamespace(labels=[], point_labels=[], cases=[]))  # none
    set_baseline(runs, "r-1", "prod")
    remove_baseline(runs, "prod")
    runs.finish_run("r-1", "completed")
    runs.set_status("r-1", "completed")
    assert labels == [
        "create a run",
        "store labels",
        "pin baseline prod",
        "unpin baseline prod",
        "finish run r-1",
        "set the status of run r-1",
    ]


# two cases with human labels, an exact and an llm-judge criterion (the judge's reply to b
# is garbage: one failed criterion, the run completes)
LABELLED_RUN = GARBAGE_JUDGE_CONFIG


def test_every_write_of_a_lake_run_that_lost_its_first_commit_is_retried_and_logged_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A whole run on a lake shared with a busy writer: each of its writes loses its first
    commit. Every one is retried whole (the run completes with every row) and the debug log
    (`evalwh -v`) says which write it was: creating the run, storing its labels, recording its
    end and its final status."""
    from evalwh.warehouse import lake

    store = lake_store(tmp_path, monkeypatch)
    real = lake.retry_conflicts

    def first_commit_loses(attempt: Any, **kwargs: Any) -> Any:
        lost: list[bool] = []

        def once() -> Any:
            if not lost:
                lost.append(True)
                raise duckdb.TransactionException("Transaction conflict: another writer committed")
            return attempt()

        return real(once, **kwargs)

    monkeypatch.setattr(lake, "retry_conflicts", first_commit_loses)
    cfg = write(tmp_path / "eval.yaml", LABELLED_RUN)
    with caplog.at_level(logging.DEBUG, logger="evalwh.warehouse"):
        result = evalwh.run_eval(cfg, output_dir=tmp_path / "out", warehouse=str(store.path))
    assert result.status == "completed" and result.totals["n"] == 2
    retried = [
        r.getMessage().partition(": DuckLake conflict (try 1), retrying")[0]
        for r in caplog.records
        if "DuckLake conflict" in r.getMessage()
    ]
    run_id = result.run_id
    for what in ("create a run", "store labels", f"finish run {run_id}"):
        assert what in retried
    assert retried[-1] == f"set the status of run {run_id}"
    assert sorted(row[3] for row in stored_labels(store)) == ["a", "b"]
    assert store.run_row(run_id)["status"] == "completed"


def test_post_run_queries_run_within_their_limit_and_again_within_the_warehouse_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's own queries after its cells start within POST_RUN_MEMORY_LIMIT (they group by
    case: within 2 GB they grew with the run); one that cannot fit runs again within the
    warehouse's limit instead of failing, and the limit is restored after each."""
    import evalwh.warehouse.store as store

    db, run_id = one_run(tmp_path)
    limits: list[str] = []
    real = store.run_query

    def watched(con: duckdb.DuckDBPyConnection, name: str, **params: object) -> object:
        (limit,) = con.execute("SELECT current_setting('memory_limit')").fetchone() or ("",)
        limits.append(limit)
        if limit == "976.5 KiB":  # 1 MB: held to it, this query cannot fit
            raise duckdb.OutOfMemoryException("held to 1 MB")
        return real(con, name, **params)

    monkeypatch.setattr(store, "run_query", watched)
    assert Warehouse(db, memory_limit="100MB").query("run_totals", run_id=run_id).num_rows == 1
    assert Warehouse(db).query("run_totals", run_id=run_id).num_rows == 1
    assert limits[0] == "95.3 MiB" and limits[1] != "95.3 MiB"  # 100 MB = 95.3 MiB
    whole = limits[1]
    limits.clear()
    bounded = Warehouse(db, memory_limit="1MB")
    with connect.shared_connection(db):  # as a run's closing steps read it
        assert bounded.query("run_totals", run_id=run_id).num_rows == 1
        assert Warehouse(db).query("run_totals", run_id=run_id).num_rows == 1
    assert limits == ["976.5 KiB", whole, whole]  # refused, again within the whole; restored


def test_parquet_export_is_hive_partitioned_with_schema_version(
    quickstart_runs: tuple[Path, list[str]],
) -> None:
    out, (run_a, run_b) = quickstart_runs
    cases = pl.scan_parquet(
        str(out / "exports" / "cases"), hive_partitioning=True, try_parse_hive_dates=False
    ).collect()
    assert set(cases["run_id"].unique()) == {run_a, run_b}
    assert cases.height == 96
    scores = pl.scan_parquet(
        str(out / "exports" / "scores"), hive_partitioning=True, try_parse_hive_dates=False
    ).collect()
    with duckdb.connect(str(out / "warehouse.duckdb"), read_only=True) as con:
        (n_scores,) = con.execute("SELECT count(*) FROM scores").fetchone()  # type: ignore[misc]
    assert scores.height == n_scores
    meta = pq.read_metadata(out / "exports" / "cases" / f"run_id={run_a}" / "cases.parquet")
    assert meta.metadata[b"schema_version"] == b"2"
    assert meta.metadata[b"run_id"] == run_a.encode()


def test_the_export_streams_in_bounded_row_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalwh.warehouse import exportfiles

    monkeypatch.setattr(exportfiles, "ROW_GROUP", 2048)  # DuckDB's smallest: one vector
    _, run_id = one_run(tmp_path, 5000)
    exports = tmp_path / "out" / "exports"
    cases = pq.ParquetFile(exportfiles.final_file(exports, "cases", run_id))
    for file in (cases, pq.ParquetFile(exportfiles.final_file(exports, "scores", run_id))):
        sizes = [file.metadata.row_group(i).num_rows for i in range(file.metadata.num_row_groups)]
        # DuckDB closes a group once it holds the limit, so a group may overshoot by the last
        # chunk it took (under one vector, 2,048 rows); without the limit: one group
        assert len(sizes) >= 2 and max(sizes) < 2 * 2048, sizes
    assert cases.metadata.num_rows == 5000


def test_an_export_into_a_quoted_folder_replaces_a_killed_exports_leftovers(
    tmp_path: Path,
) -> None:
    (tmp_path / "eval.yaml").write_text(CONFIG_WITH_ROWS, encoding="utf-8")
    out = tmp_path / "it's here"  # a quote in the path: the COPY target is escaped
    run = evalwh.run_eval(tmp_path / "eval.yaml", output_dir=out)
    root = Path(run.exports)
    cases = pl.read_parquet(root / "cases" / f"run_id={run.run_id}" / "cases.parquet")
    assert sorted(cases["case_id"]) == ["c1", "c2", "other"]
    assert pl.read_parquet(root / "scores" / f"run_id={run.run_id}" / "scores.parquet").height == 3
    # a killed export's file
    leftover = root / ".tmp" / f".cases.{run.run_id}.parquet.tmp-{dead_pid()}-abcdef"
    leftover.write_bytes(b"half a file")
    again = Warehouse(out / "warehouse.duckdb").export_run(run.run_id, out / "exports")
    assert again == root
    assert not leftover.exists()
    assert files_under(root) == exported(run.run_id)


def test_a_leftover_another_export_removed_first_is_no_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two exports of one run at once (the run's own and `evalwh export`): both list a killed
    export's leftover, one removes it first, and the other goes on rather than failing."""
    leftover = f".cases.r.parquet.tmp-{dead_pid()}-abcdef"
    cfg = write(tmp_path / "eval.yaml", LABELLED_RUN)
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    store = api.open_warehouse(tmp_path / "out" / "warehouse.duckdb").store
    exports = tmp_path / "exports"
    real_glob = Path.glob

    def listed_then_gone(self: Path, pattern: str) -> Any:
        if pattern == ".*.parquet.tmp-*":  # as listed before the other export removed it
            return iter([self / leftover])
        return real_glob(self, pattern)

    monkeypatch.setattr(Path, "glob", listed_then_gone)
    target = store.export_run(result.run_id, exports)
    assert files_under(target) == exported(result.run_id)


def files_under(root: Path) -> list[str]:
    """Every file under ``root``, hidden ones included, as paths relative to it."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def exported(run_id: str) -> list[str]:
    """What an export folder holds after one run's export: its three tables' files (turns
    empty without a tool loop), nothing else (the staging folder left empty)."""
    return [f"{table}/run_id={run_id}/{table}.parquet" for table in ("cases", "scores", "turns")]


def test_an_export_that_cannot_make_its_folder_says_it_was_writing_the_export(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file where the exports folder should be: a storage error that names the action
    (writing the export) and the path, and no Parquet file is written anywhere."""
    from evalwh.warehouse.ioerrors import StorageError

    exports = tmp_path / "exports"
    exports.write_text("not a folder")
    with pytest.raises(StorageError) as refused:
        file_store(tmp_path, monkeypatch).export_run("r1", exports)
    assert str(refused.value).startswith(f"cannot write the export {exports / '.tmp'}: ")
    assert list(tmp_path.rglob("*.parquet*")) == []


def test_an_export_pauses_only_when_the_debug_variable_asks_and_as_long_as_it_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """EVALWH_DEBUG_EXPORT_PAUSE_S holds an export between writing its files and moving them
    into place (the kill tests use it); unset or 0, an export never sleeps."""
    from evalwh.warehouse import store as store_module

    cfg = write(tmp_path / "eval.yaml", LABELLED_RUN)
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    store = api.open_warehouse(tmp_path / "out" / "warehouse.duckdb").store
    slept: list[float] = []
    monkeypatch.setattr(store_module.time, "sleep", slept.append)
    monkeypatch.delenv(store_module.EXPORT_PAUSE_ENV, raising=False)
    store.export_run(result.run_id, tmp_path / "exports")
    monkeypatch.setenv(store_module.EXPORT_PAUSE_ENV, "0")
    store.export_run(result.run_id, tmp_path / "exports")
    assert slept == []
    monkeypatch.setenv(store_module.EXPORT_PAUSE_ENV, "0.5")
    store.export_run(result.run_id, tmp_path / "exports")
    assert slept == [0.5]
