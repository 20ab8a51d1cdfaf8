"""Tests that kill mutants mutmut found alive in the warehouse's label store, the engine's
fake-model overrides and the lake settings (issue 21); each test names the user-visible
behaviour it pins."""

from __future__ import annotations

import json
import logging
import os
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb
import pytest

import evalwh
from evalwh import api
from evalwh.config.loader import load_config
from evalwh.config.model import Label, PointLabel, Price
from evalwh.config.settings import resolve_settings
from evalwh.engine.overrides import fake_models, fake_spec
from evalwh.errors import ConfigError
from evalwh.warehouse.lake import LakeTarget
from tests.conftest import dead_pid, write
from tests.test_judging import GARBAGE

# -- Warehouse.replace_labels ------------------------------------------------------------------


def stored_labels(store: Any) -> list[tuple[Any, ...]]:
    table = store.sql(
        "SELECT run_id, kind, comparison, case_id, prefer, label, note, labelled_by FROM labels "
        "ORDER BY run_id, kind, comparison, case_id"
    )
    return [tuple(row.values()) for row in table.to_pylist()]


def lake_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("EVALWH_LAKE", json.dumps({"data_path": str(tmp_path / "data")}))
    return api.open_warehouse(f"ducklake:{tmp_path / 'meta.ducklake'}").store


def file_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    return api.open_warehouse(tmp_path / "warehouse.duckdb").store


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


def lose_the_first_commit(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The next transaction loses a race with another writer at its commit; the ones after
    it commit. Returns the list of tries, one entry per transaction begun."""
    from evalwh.warehouse import connect

    real, tries = connect.transaction, []

    @contextmanager
    def loses_once(con: Any) -> Any:
        tries.append(1)
        if len(tries) == 1:
            raise duckdb.TransactionException("Transaction conflict: another writer committed")
        with real(con):
            yield

    monkeypatch.setattr(connect, "transaction", loses_once)
    return tries


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


# -- fake_models / fake_spec (--fake) ------------------------------------------------------------


FAKE_CONFIG = """\
models:
  - id: big
    provider: anthropic
    model: claude-sonnet-4-5
    price: {input_per_mtok: 1.0, output_per_mtok: 2.0}
    timeout_s: 45
    max_retries: 6
    params: {max_tokens: 100}
  - {id: small, provider: openai, model: gpt-4o-mini, params: {max_tokens: 100}}
variants:
  - id: v
    messages:
      - {role: user, content: "{{ q }}"}
cases:
  - {id: c1, vars: {q: "what is 2+2"}, expected: "4"}
judges:
  - id: j
    rubric: The answer is the number four.
    scale: {min: 1, max: 5}
    messages:
      - {role: user, content: "Grade {{ output }} against {{ rubric }}"}
    model:
      id: j
      provider: anthropic
      model: claude-sonnet-4-5
      timeout_s: 90
      max_retries: 4
scorecard:
  - {name: judged, type: llm-judge, judge: j}
"""


def test_fake_keeps_each_judge_as_written_but_answered_by_the_mock(tmp_path: Path) -> None:
    """`--fake` answers a judge with the mock, and keeps the judge's rubric, custom prompt,
    scale and place in eval.yaml (its prompt errors still name judges[0])."""
    config = load_config(write(tmp_path / "eval.yaml", FAKE_CONFIG))
    (real,) = config.judges
    (faked,) = fake_models(config).judges
    assert faked.model.provider == "mock" and faked.model.options == {"faked_provider": "anthropic"}
    assert faked.rubric == "The answer is the number four."
    assert faked.messages == real.messages and faked.messages is not None
    assert faked.scale == (1.0, 5.0)
    assert faked.where == real.where == "judges[0]"
    assert faked == replace(real, model=fake_spec(real.model))


def test_fake_run_stores_a_snapshot_saying_each_model_was_mocked(tmp_path: Path) -> None:
    """The stored config snapshot of a `--fake` run: every model's provider is ``mock`` and
    ``faked_provider`` names the provider it stands for, so the run is never mistaken for a
    real one."""
    config = load_config(write(tmp_path / "eval.yaml", FAKE_CONFIG))
    raw = fake_models(config).raw
    assert raw["fake"] is True
    assert [(m["id"], m["provider"], m["faked_provider"]) for m in raw["models"]] == [
        ("big", "mock", "anthropic"),
        ("small", "mock", "openai"),
    ]
    assert "fake" not in config.raw and config.raw["models"][0]["provider"] == "anthropic"
    result = evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out", fake=True)
    snap = evalwh.open_warehouse(tmp_path / "out" / "warehouse.duckdb").run(result.run_id)
    stored = json.loads(snap["config_snapshot"])
    assert {m["id"]: m["provider"] for m in stored["models"]} == {"big": "mock", "small": "mock"}


def test_a_faked_model_keeps_its_own_price_and_gets_a_short_timeout_and_no_retries(
    tmp_path: Path,
) -> None:
    """`--fake`: a model's own ``price:`` beats the shipped table (the estimate is that of
    the real run); the shipped price fills in when none is given; the mock answers at once,
    so a faked model (or judge) gets a 10 s timeout and no retries whatever eval.yaml says."""
    config = load_config(write(tmp_path / "eval.yaml", FAKE_CONFIG))
    big, small = fake_models(config).models
    assert big.price == Price(1.0, 2.0)  # the table says 3.0 / 15.0 for claude-sonnet-4-5
    assert small.price == Price(0.15, 0.6)  # the table's price of gpt-4o-mini
    for spec in (big, small, fake_models(config).judges[0].model):
        assert (spec.timeout_s, spec.max_retries) == (10.0, 0)
    assert (config.models[0].timeout_s, config.models[0].max_retries) == (45.0, 6)
    # the estimate of the fake dry run prices `big` by its own price, not the table's
    plan = evalwh.validate(tmp_path / "eval.yaml", fake=True)
    real = evalwh.validate(tmp_path / "eval.yaml")
    cost = {r["model"]: r["cost_usd"] for r in plan.estimate["by_model"]}
    assert cost == {r["model"]: r["cost_usd"] for r in real.estimate["by_model"]}


# -- EVALWH_LAKE -----------------------------------------------------------------------------


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
    assert error.message == "EVALWH_LAKE is not a JSON object of data_path, s3, secret"
    assert error.fix == LAKE_FIX
    assert (
        str(error)
        == f"EVALWH_LAKE is not a JSON object of data_path, s3, secret\n  fix: {LAKE_FIX}"
    )
    # the example given is itself accepted
    example = LAKE_FIX.removeprefix("set EVALWH_LAKE to e.g. ")
    env = {"EVALWH_WAREHOUSE": "ducklake:meta.ducklake", "EVALWH_LAKE": example}
    assert resolve_settings(env=env, cwd=tmp_path).warehouse.s3 == (("region", "us-east-1"),)


def test_pairwise_verdicts_that_lost_a_lake_race_are_retried_and_logged_by_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The same for a run's pairwise verdicts: the debug log names the run they belong to."""
    from evalwh.warehouse import connect
    from evalwh.warehouse.writer import RunWriter

    store = lake_store(tmp_path, monkeypatch)
    connect.write_transaction(
        store.path,
        lambda con: con.execute(
            "INSERT INTO runs (run_id, suite, status, config_hash, dataset_hash, n_planned, "
            "started_at, evalwh_version) VALUES ('r1', 's', 'running', 'h', 'd', 1, now(), 't')"
        ),
        what="seed a run",
    )
    tries = lose_the_first_commit(monkeypatch)
    with caplog.at_level(logging.DEBUG, logger="evalwh.warehouse"):
        RunWriter(store.path, "r1").write_pairs([], ["a-vs-b"])
    assert len(tries) == 2
    retried = [r.getMessage() for r in caplog.records if "DuckLake conflict" in r.getMessage()]
    assert len(retried) == 1
    assert retried[0].startswith("write pairs of run r1: DuckLake conflict (try 1), retrying")


def test_an_unpinning_that_lost_a_lake_race_is_retried_and_logged_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from evalwh.analysis.baselines import list_baselines, remove_baseline
    from evalwh.warehouse import connect

    store = lake_store(tmp_path, monkeypatch)

    def pin(con: Any) -> None:
        con.execute(
            "INSERT INTO runs (run_id, suite, status, config_hash, dataset_hash, n_planned, "
            "started_at, evalwh_version) VALUES ('r1', 's', 'completed', 'h', 'd', 1, now(), 't')"
        )
        con.execute("INSERT INTO baselines VALUES ('nightly', 'r1', now())")

    connect.write_transaction(store.path, pin, what="pin a run")
    tries = lose_the_first_commit(monkeypatch)
    with caplog.at_level(logging.DEBUG, logger="evalwh.warehouse"):
        assert remove_baseline(store, "nightly")["run_id"] == "r1"
    assert len(tries) == 2 and list_baselines(store) == []
    retried = [r.getMessage() for r in caplog.records if "DuckLake conflict" in r.getMessage()]
    assert retried == [
        "unpin baseline nightly: DuckLake conflict (try 1), retrying: "
        "Transaction conflict: another writer committed"
    ]


# two cases with human labels, an exact and an llm-judge criterion (the judge's reply to b
# is garbage: one failed criterion, the run completes)
LABELLED_RUN = GARBAGE


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


def test_an_export_that_cannot_make_its_folder_says_it_was_writing_the_export(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file where a run's export folder should be: a storage error that names the action
    (writing the export) and the path, and no Parquet file is written anywhere."""
    from evalwh.warehouse.ioerrors import StorageError

    exports = tmp_path / "exports"
    exports.mkdir()
    (exports / "run_id=r1").write_text("not a folder")
    with pytest.raises(StorageError) as refused:
        file_store(tmp_path, monkeypatch).export_run("r1", exports)
    assert str(refused.value).startswith(f"cannot write the export {exports / 'run_id=r1'}: ")
    assert list(exports.rglob("*.parquet*")) == []


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


def test_an_exports_temporary_files_are_named_as_the_next_export_cleans_them_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A killed export leaves `.<table>.parquet.tmp-<pid>-<6 hex>` behind, which the next
    export of the run removes (by that pattern): the names written and the names cleaned
    up must agree."""
    import re
    from fnmatch import fnmatch

    from evalwh.warehouse import store as store_module

    cfg = write(tmp_path / "eval.yaml", LABELLED_RUN)
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    store = api.open_warehouse(tmp_path / "out" / "warehouse.duckdb").store
    moved, real = [], os.replace
    monkeypatch.setattr(
        store_module.os, "replace", lambda a, b: (moved.append((Path(a), Path(b))), real(a, b))
    )
    target = store.export_run(result.run_id, tmp_path / "exports")
    assert [final.name for _, final in moved] == ["cases.parquet", "scores.parquet"]
    for temp, final in moved:
        assert temp.parent == final.parent == target
        assert re.fullmatch(rf"\.{final.name}\.tmp-{os.getpid()}-[0-9a-f]{{6}}", temp.name)
        assert fnmatch(temp.name, ".*.parquet.tmp-*")  # the cleanup's glob
    assert sorted(p.name for p in target.iterdir()) == ["cases.parquet", "scores.parquet"]


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


def test_a_leftover_another_export_removed_first_is_no_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two exports of one run at once (the run's own and `evalwh export`): both list a killed
    export's leftover, one removes it first, and the other goes on rather than failing."""
    leftover = f".cases.parquet.tmp-{dead_pid()}-abcdef"
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
    assert sorted(p.name for p in target.iterdir()) == ["cases.parquet", "scores.parquet"]


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


def test_an_export_leaves_the_temporary_files_of_a_live_export_alone(tmp_path: Path) -> None:
    """Two exports of one run at once: the second removes a killed export's leftovers, but
    not the files the first is still writing (their process is alive), which it would
    otherwise pull from under the first one's rename."""
    cfg = write(tmp_path / "eval.yaml", LABELLED_RUN)
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    store = api.open_warehouse(tmp_path / "out" / "warehouse.duckdb").store
    target = tmp_path / "exports" / f"run_id={result.run_id}"
    target.mkdir(parents=True)
    live = target / f".cases.parquet.tmp-{os.getpid()}-abcdef"  # being written by this process
    killed = target / f".scores.parquet.tmp-{dead_pid()}-abcdef"
    unnamed = target / ".cases.parquet.tmp-unknown"  # no process id: nobody is writing it
    for path in (live, killed, unnamed):
        path.write_bytes(b"half a file")
    assert store.export_run(result.run_id, tmp_path / "exports") == target
    assert live.read_bytes() == b"half a file"
    assert not killed.exists() and not unnamed.exists()
    assert sorted(p.name for p in target.iterdir()) == sorted(
        ["cases.parquet", "scores.parquet", live.name]
    )
