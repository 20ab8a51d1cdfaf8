"""What a run stores about itself (evalwh.engine.execute.execute): every column of its `runs`
row after one small run in a git checkout, the commit it records (and when it records none),
the config snapshot of a no-look run (which keeps no answer in the cache), the progress a
run reports, and the refusal of an attachment edited after planning.

Written from mutants that survived the mutation run (docs/testing.md): `execute` is reached by
hundreds of whole runs, and the cheapest of them, all the mutation budget affords, check little
of its row. The runs table's columns are described in docs/storage.md.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import evalwh
from evalwh import __version__
from evalwh.config.loader import load_config
from evalwh.engine.execute import git_commit, store_files
from evalwh.errors import ConfigError
from tests.test_conveniences import git
from tests.test_survivors_refs_labels import only_row

CONFIG = """\
name: rows
models:
  - {id: m, provider: mock, mock: {default: hi}}
variants:
  - {id: v, messages: [{role: user, content: "{{ q }}"}]}
cases:
  - {id: c1, vars: {q: one}}
  - {id: c2, vars: {q: two}}
  - {id: other, vars: {q: three}}
scorecard:
  - {name: has, type: contains, value: hi}
"""

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def runs_row(warehouse: Path) -> dict[str, Any]:
    return only_row(
        warehouse,
        "SELECT * EXCLUDE (started_at, finished_at, heartbeat_at), "
        "started_at <= heartbeat_at AND heartbeat_at <= finished_at AS in_order, "
        "CAST(config_snapshot AS VARCHAR) AS config_snapshot, "
        "CAST(filters AS VARCHAR) AS filters, CAST(totals AS VARCHAR) AS totals FROM runs",
    )


@needs_git
def test_a_runs_row_holds_what_it_ran_where_and_how_it_went(tmp_path: Path) -> None:
    (tmp_path / "eval.yaml").write_text(CONFIG, encoding="utf-8")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "eval.yaml")
    git(tmp_path, "commit", "-q", "-m", "the eval")
    head = git(tmp_path, "rev-parse", "HEAD")
    result = evalwh.run_eval(
        tmp_path / "eval.yaml", output_dir=tmp_path / "out", label="first", cases=["c*"],
        repeat=2,
    )  # fmt: skip
    row = runs_row(tmp_path / "out" / "warehouse.duckdb")
    config = load_config(tmp_path / "eval.yaml")
    assert {k: row[k] for k in ("run_id", "label", "suite", "status", "git_commit")} == {
        "run_id": result.run_id, "label": "first", "suite": "rows", "status": "completed",
        "git_commit": head,
    }  # fmt: skip
    assert (row["config_path"], row["config_hash"], row["dataset_hash"]) == (
        str(tmp_path / "eval.yaml"), config.config_hash, config.dataset_hash,
    )  # fmt: skip
    assert json.loads(row["config_snapshot"]) == config.raw
    assert json.loads(row["filters"]) == {"cases": ["c*"], "repeat": 2}
    assert row["n_planned"] == 4  # two cases, two repeats
    assert json.loads(row["totals"]) == {
        "requests": 4, "cache_hits": 0, "retries": 0, "errors": 0, "judge_requests": 0,
        "rows": 4,
    }  # fmt: skip
    assert (row["pid"], row["evalwh_version"], row["no_look"]) == (os.getpid(), __version__, False)
    assert row["host"] and row["in_order"] is True
    assert (row["lease_token"], row["datasources"]) == (None, None)  # released; no datasource


@needs_git
def test_the_commit_is_heads_of_the_configs_folder_and_none_without_one(
    tmp_path: Path,
) -> None:
    repo, empty, plain = tmp_path / "repo", tmp_path / "empty", tmp_path / "plain"
    for folder in (repo, empty, plain):
        folder.mkdir()
    (repo / "f").write_text("x", encoding="utf-8")
    git(repo, "init", "-q")
    git(repo, "add", "f")
    git(repo, "commit", "-q", "-m", "one")
    git(empty, "init", "-q")  # `git rev-parse HEAD` prints "HEAD" there, and fails
    assert os.getcwd() != str(repo)  # the folder asked about, not the working one
    assert git_commit(repo) == git(repo, "rev-parse", "HEAD")
    assert git_commit(repo / ".git" / "..") == git(repo, "rev-parse", "HEAD")
    assert git_commit(empty) is None
    assert git_commit(plain) is None


def test_a_git_that_hangs_costs_a_run_five_seconds_not_forever(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a credential prompt or a dead network mount: the run goes on without a commit
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "git").write_text("#!/bin/sh\nsleep 30\necho 0123abcd\n", encoding="utf-8")
    (fake / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    started = time.monotonic()
    assert git_commit(tmp_path) is None
    assert time.monotonic() - started < 20


def test_without_git_a_run_records_no_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    assert git_commit(tmp_path) is None


def test_a_no_look_snapshot_keeps_file_and_datasource_entries_and_counts_the_rest(
    tmp_path: Path,
) -> None:
    (tmp_path / "cases.jsonl").write_text('{"id": "f1", "vars": {"q": "x"}}\n', encoding="utf-8")
    text = CONFIG.replace("name: rows\n", "name: rows\nprivacy: {no_look: true}\n").replace(
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
    (tmp_path / "eval.yaml").write_text(CONFIG, encoding="utf-8")
    plain = load_config(tmp_path / "eval.yaml")
    assert plain.snapshot() == plain.raw  # a run that may look keeps its inline cases


def test_an_attachment_edited_after_planning_refuses_the_run(tmp_path: Path) -> None:
    photo = tmp_path / "photo.png"
    planned = b"the bytes the run planned with"
    photo.write_bytes(b"the bytes someone saved since")
    prepared = SimpleNamespace(
        files={hashlib.sha256(planned).hexdigest(): [photo]},
        config=SimpleNamespace(no_look=False, path=tmp_path / "eval.yaml"),
        settings=SimpleNamespace(local_dir=tmp_path / ".evalwh"),
    )
    with pytest.raises(ConfigError) as refused:
        store_files(prepared)  # type: ignore[arg-type]
    error = refused.value
    assert (error.file, error.fix) == (
        str(tmp_path / "eval.yaml"),
        "run again to use the new content",
    )
    assert str(photo) in error.message and "changed" in error.message


def test_progress_counts_the_cells_against_the_runs_total(tmp_path: Path) -> None:
    (tmp_path / "eval.yaml").write_text(CONFIG, encoding="utf-8")
    seen: list[tuple[int, int]] = []
    evalwh.run_eval(
        tmp_path / "eval.yaml", output_dir=tmp_path / "out",
        progress=lambda done, total, result: seen.append((done, total)),
    )  # fmt: skip
    assert sorted(seen) == [(1, 3), (2, 3), (3, 3)]


def test_a_no_look_run_keeps_no_answer_in_the_response_cache(tmp_path: Path) -> None:
    (tmp_path / "eval.yaml").write_text(
        CONFIG.replace("name: rows\n", "name: rows\nprivacy: {no_look: true}\n"), encoding="utf-8"
    )
    evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out")
    stored = only_row(
        tmp_path / "out" / "warehouse.duckdb", "SELECT count(*) AS n FROM response_cache"
    )
    assert stored == {"n": 0}
    (tmp_path / "eval.yaml").write_text(CONFIG, encoding="utf-8")
    evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out")
    stored = only_row(
        tmp_path / "out" / "warehouse.duckdb", "SELECT count(*) AS n FROM response_cache"
    )
    assert stored == {"n": 3}  # a run that may look keeps its answers


def test_the_engine_waits_once_a_whole_batch_is_pending(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the backpressure execute hands the engine: full at exactly max_pending unwritten cases
    # (RunWriter.max_pending), not one case later
    from evalwh.engine import execute as execute_module
    from evalwh.warehouse import writer as writer_module

    seen: dict[str, Any] = {}

    class Writer(writer_module.RunWriter):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            seen["writer"] = self

    class Engine(execute_module.Engine):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            seen["full"] = kwargs["backpressure"]

    monkeypatch.setattr(writer_module, "RunWriter", Writer)
    monkeypatch.setattr(execute_module, "Engine", Engine)
    (tmp_path / "eval.yaml").write_text(CONFIG, encoding="utf-8")
    evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out")
    writer, full = seen["writer"], seen["full"]
    writer.add_case((None,) * len(writer_module.CASE_COLUMNS))  # one unwritten case
    writer.max_pending = 2
    assert (writer.pending, full()) == (1, False)
    writer.max_pending = 1
    assert full() is True


def test_a_run_of_its_own_cases_stopped_at_its_cost_cap_keeps_its_planned_size(
    tmp_path: Path,
) -> None:
    # n_planned is the plan's cell count; only a datasource run's (known at its end) is the
    # count its feed queued, which for a stopped run is a handful, not the plan
    cases = "".join(f"  - {{id: c{i}, vars: {{q: q{i}}}}}\n" for i in range(30))
    config = (
        CONFIG.replace(
            "mock: {default: hi}",
            "params: {max_tokens: 5}, price: {input_per_mtok: 1000, output_per_mtok: 1000}, "
            "mock: {default: " + "hi " * 100 + "}",  # the estimate counts 5 tokens out, not 100
        )
        .split("cases:\n")[0]
        .replace("name: rows\n", "name: rows\nsettings: {concurrency: 1, max_cost_usd: 0.5}\n")
        + "cases:\n"
        + cases
        + "scorecard:\n  - {name: has, type: contains, value: hi}\n"
    )
    (tmp_path / "eval.yaml").write_text(config, encoding="utf-8")
    result = evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out")
    row = only_row(
        tmp_path / "out" / "warehouse.duckdb",
        "SELECT status, n_planned, (SELECT count(*) FROM cases) AS answered FROM runs",
    )
    assert result.status == "stopped" and row["status"] == "stopped"
    assert row["n_planned"] == 30 and 0 < row["answered"] < 30


def test_a_run_stopped_at_its_cost_cap_judges_no_pairs(tmp_path: Path) -> None:
    # the pairwise judge runs after the matrix, and only after a whole one: a run the cap
    # stopped compares nothing (its answered cells are not the matrix the pairs were meant for)
    priced = (
        "params: {max_tokens: 5}, price: {input_per_mtok: 1000, output_per_mtok: 1000}, "
        "mock: {latency_ms: 5, default: " + "hi " * 100 + "}"  # both models take turns
    )
    cases = "".join(f"  - {{id: c{i}, vars: {{q: q{i}}}}}\n" for i in range(30))
    config = f"""\
name: pairs
settings: {{concurrency: 1, max_cost_usd: 0.5}}
models:
  - {{id: a, provider: mock, {priced}}}
  - {{id: b, provider: mock, {priced}}}
variants:
  - {{id: v, messages: [{{role: user, content: "{{{{ q }}}}"}}]}}
judges:
  - id: j
    model: {{id: j, provider: mock, mock: {{default: '{{"winner": "A"}}'}}}}
pairwise:
  - {{name: ab, judge: j, baseline: {{model: a}}, candidate: {{model: b}}}}
scorecard:
  - {{name: has, type: contains, value: hi}}
cases:
{cases}"""
    (tmp_path / "eval.yaml").write_text(config, encoding="utf-8")
    result = evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out")
    row = only_row(
        tmp_path / "out" / "warehouse.duckdb",
        "SELECT (SELECT count(*) FROM pairs) AS pairs, "
        "(SELECT count(*) FROM (SELECT case_id FROM cases GROUP BY case_id "
        "HAVING count(DISTINCT model) = 2)) AS both_answered, "
        "CAST(totals->>'judge_requests' AS INTEGER) AS judge_requests FROM runs",
    )
    assert result.status == "stopped"
    assert row["both_answered"] > 0  # there was something a judge could have compared
    assert (row["pairs"], row["judge_requests"]) == (0, 0)


def test_the_run_writer_takes_the_runs_settings_lease_and_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalwh.warehouse import writer as writer_module

    seen: list[Any] = []

    class Writer(writer_module.RunWriter):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            seen.append(self)

    monkeypatch.setattr(writer_module, "RunWriter", Writer)
    settings = "settings: {batch_size: 7, stale_after_s: 40, cache_dir: answers}\n"
    (tmp_path / "eval.yaml").write_text(
        CONFIG.replace("name: rows\n", "name: rows\n" + settings), encoding="utf-8"
    )
    first = evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out")
    again = evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out", no_cache=True)
    evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out", retry_errors=first.run_id)
    written, fresh, retried = seen
    assert retried.replace is True  # a retry's new rows replace the stored errors
    cache = (tmp_path / "answers" / "cache.duckdb").resolve()
    assert (written.batch_size, written.heartbeat_s, written.cache_path) == (7, 10.0, cache)
    assert (written.refresh_cache, fresh.refresh_cache) == (False, True)  # --no-cache: rewrite
    assert written.replace is False and (written.run_id, fresh.run_id) == (
        first.run_id,
        again.run_id,
    )
    # each run's writer holds the run's own lease, which every flush checks is still its own
    assert isinstance(written.token, str) and isinstance(fresh.token, str)
    assert written.token != fresh.token


def test_a_keyboard_interrupt_inside_the_run_is_stored_and_reported_as_sigint(
    tmp_path: Path,
) -> None:
    # a KeyboardInterrupt no handler turned into a stop (here raised by the progress callback,
    # as Ctrl-C in an embedding program would be) ends the run as interrupted by SIGINT
    interrupted = interrupt_run(tmp_path)
    assert interrupted.signal_name == "SIGINT"
    assert_continue_hint(
        interrupted, f"`evalwh run {tmp_path / 'eval.yaml'} --resume {interrupted.run_id}`"
    )
    row = only_row(tmp_path / "out" / "warehouse.duckdb", "SELECT run_id, status FROM runs")
    assert row == {"run_id": interrupted.run_id, "status": "interrupted"}


def assert_continue_hint(interrupted: Any, hint: str) -> None:
    """``interrupted``'s message: stopped by SIGINT after flushing its rows, then ``hint``."""
    assert re.fullmatch(
        rf"interrupted \(SIGINT\): run {re.escape(interrupted.run_id)} stopped after flushing "
        rf"\d answered row\(s\); continue it with {re.escape(hint)}",
        str(interrupted),
    ), str(interrupted)


def interrupt_run(tmp_path: Path, **options: Any) -> Any:
    """Run CONFIG with a progress callback that raises KeyboardInterrupt at the first answer;
    the RunInterrupted the run raised."""
    from evalwh.engine.signals import RunInterrupted

    def ctrl_c(done: int, total: int, result: Any) -> None:
        raise KeyboardInterrupt

    (tmp_path / "eval.yaml").write_text(CONFIG, encoding="utf-8")
    with pytest.raises(RunInterrupted) as info:
        evalwh.run_eval(
            tmp_path / "eval.yaml", output_dir=tmp_path / "out", progress=ctrl_c, **options
        )
    return info.value


def test_a_run_that_fails_before_its_engine_exists_reports_that_error_and_is_stored_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the judges' cached answers are read before the engine is built: a failure there is the
    # run's error (not one of the bookkeeping after it), and the run is stored as failed
    from evalwh.engine import execute as execute_module

    def unreadable(*args: Any) -> Any:
        raise OSError("the cache file is unreadable")

    monkeypatch.setattr(execute_module, "judge_cache", unreadable)
    judged = CONFIG.replace(
        "scorecard:\n",
        "judges:\n  - {id: j, model: {id: jm, provider: mock, mock: {default: '5'}}}\n"
        "scorecard:\n  - {name: judged, type: llm-judge, judge: j}\n",
    )
    (tmp_path / "eval.yaml").write_text(judged, encoding="utf-8")
    with pytest.raises(OSError, match="the cache file is unreadable"):
        evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out")
    row = only_row(tmp_path / "out" / "warehouse.duckdb", "SELECT status, totals FROM runs")
    assert row["status"] == "failed"
    assert json.loads(row["totals"])["requests"] == 0


def test_a_run_taken_over_mid_run_leaves_the_new_holders_row_alone(tmp_path: Path) -> None:
    # another process took the run over (`--resume RUN --force`) while this one was running:
    # this one's next flush stops it, and its last word (the run's end) is written only under
    # its own lease, so the new holder's status and lease stay as that process set them
    import duckdb

    from evalwh.warehouse.writer import LeaseLostError

    db = tmp_path / "out" / "warehouse.duckdb"

    def take_over(done: int, total: int, result: Any) -> None:
        if done == 1:
            with duckdb.connect(str(db)) as con:
                con.execute(
                    "UPDATE runs SET status = 'running', host = 'ci-runner-7', pid = 6257, "
                    "lease_token = 'theirs'"
                )

    (tmp_path / "eval.yaml").write_text(CONFIG, encoding="utf-8")
    with pytest.raises(LeaseLostError, match="taken over by another process"):
        evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out", progress=take_over)
    row = only_row(
        db, "SELECT status, host, pid, lease_token, finished_at IS NULL AS open, totals FROM runs"
    )
    assert row == {
        "status": "running", "host": "ci-runner-7", "pid": 6257, "lease_token": "theirs",
        "open": True, "totals": None,
    }  # fmt: skip


def test_a_run_taken_over_while_it_exports_leaves_the_new_holders_row_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the lease the run was executed under is the one its final status is written under: taken
    # over after the answers were stored (here while the run's totals are read for its
    # status), the run's end leaves the new holder's status and lease as that process set them
    from evalwh.api import run as run_module
    from evalwh.warehouse.connect import write_transaction

    db = tmp_path / "out" / "warehouse.duckdb"
    count_errors = run_module._too_many_errors

    def take_over(*args: Any) -> Any:
        write_transaction(
            db,
            lambda con: con.execute("UPDATE runs SET status = 'running', lease_token = 'theirs'"),
            what="take the run over",
        )
        return count_errors(*args)

    monkeypatch.setattr(run_module, "_too_many_errors", take_over)
    (tmp_path / "eval.yaml").write_text(CONFIG, encoding="utf-8")
    evalwh.run_eval(tmp_path / "eval.yaml", output_dir=tmp_path / "out")
    row = only_row(db, "SELECT status, lease_token FROM runs")
    assert row == {"status": "running", "lease_token": "theirs"}


def test_an_interrupted_shard_says_to_rerun_its_shard_and_leaves_the_runs_status_alone(
    tmp_path: Path,
) -> None:
    # the other shards may still be writing the run: the hint is the shard's own command (not
    # `--resume`, which would claim the whole run), and its status is not this shard's to set
    interrupted = interrupt_run(tmp_path, shard=(1, 1), run_id="nightly")
    assert_continue_hint(interrupted, "the same `evalwh run ... --shard K/N --run-id RUN` command")
    row = only_row(tmp_path / "out" / "warehouse.duckdb", "SELECT run_id, status FROM runs")
    assert row == {"run_id": "nightly", "status": "running"}
