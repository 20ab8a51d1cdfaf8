"""Reliability under kills, concurrency, full disks, outages and foreign files.

Every test drives the real `evalwh` command in subprocesses over real DuckDB files; providers
are the mock or a fake server on loopback. Each names the failure it guards against.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
import pytest

import evalwh
from evalwh.engine.limits import DEAD_ENDPOINT_AFTER, MAX_RETRY_AFTER_S
from evalwh.engine.signals import GRACE_S
from tests.builders import case_of, closed_port, eval_for
from tests.conftest import run_cli, write
from tests.fakes.servers import (
    FakeLLMServer,
    Faults,
    error,
    hang,
    rate_limited,
    server_error,
)


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as s:
        yield s


def _start(
    cfg: Path, cwd: Path, *extra: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "evalwh.cli.main", "run", str(cfg), "-q", *extra],
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(check: Callable[[], bool]) -> None:
    """Poll until ``check()`` holds; no wall-clock limit of its own (pytest-timeout bounds a
    condition that is never reached)."""
    while not check():
        time.sleep(0.05)


def _stored(db: Path) -> list[tuple[str, int]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT case_id, repeat FROM cases").fetchall()


def _runs(cwd: Path) -> list[dict]:
    listed = run_cli("--json", "list", cwd=cwd)
    return json.loads(listed.stdout)["runs"] if listed.returncode == 0 else []


def _stored_at_least(cwd: Path, db: Path, n: int) -> Callable[[], bool]:
    def check() -> bool:
        runs = _runs(cwd) if db.exists() else []
        return bool(runs) and runs[0]["n"] >= n

    return check


def _http_model(server: FakeLLMServer) -> str:
    return (
        f"  - {{id: m, provider: openai-compatible, model: local, "
        f"base_url: '{server.openai_url}', price: 0}}"
    )


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- 1. one process per run ------------------------------------------------------------------
def test_two_concurrent_resumes_one_is_refused_and_rows_are_exact(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    """Bug: two `--resume` of one run at once both ran every missing cell (1077/600 rows)."""
    server.latency = 0.03
    cfg = eval_for(tmp_path, _http_model(server), 240, concurrency=2)
    db = tmp_path / ".evalwh" / "warehouse.duckdb"
    proc = _start(cfg, tmp_path)
    _wait_for(_stored_at_least(tmp_path, db, 40))
    proc.kill()
    proc.wait(timeout=30)
    run_id = _runs(tmp_path)[0]["run_id"]

    first, second = (_start(cfg, tmp_path, "--resume", run_id) for _ in range(2))
    results = [p.communicate(timeout=120) for p in (first, second)]
    codes = sorted(p.returncode for p in (first, second))
    assert codes == [0, 2], results
    refused = next(
        err for (_, err), p in zip(results, (first, second), strict=True) if p.returncode == 2
    )
    assert "is held by pid" in refused and socket.gethostname() in refused
    assert "Traceback" not in refused
    rows = _stored(db)
    assert len(rows) == len(set(rows)) == 240  # exact: no duplicates, n equals the plan
    (listed,) = _runs(tmp_path)
    assert listed["status"] == "completed" and listed["n"] == 240


# -- 2. atomic exports, part of the run's life ---------------------------------------------
def test_sigkill_during_the_export_leaves_no_partial_file_and_resume_repairs_it(
    tmp_path: Path,
) -> None:
    """Bug: a kill during the export left a partial cases.parquet on a `completed` run."""
    cfg = eval_for(tmp_path, "  - {id: m, provider: mock}", 30)
    exports = tmp_path / ".evalwh" / "exports"
    proc = _start(cfg, tmp_path, env={"EVALWH_DEBUG_EXPORT_PAUSE_S": "60"})
    _wait_for(lambda: any(exports.glob(".tmp/.cases.*.parquet.tmp-*")))
    proc.kill()
    proc.wait(timeout=30)

    assert list(exports.glob("*/*/*.parquet")) == []  # readers never see the partial file
    (listed,) = _runs(tmp_path)
    assert listed["status"] == "interrupted"
    shown = run_cli("show", listed["run_id"], cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert f"--resume {listed['run_id']}" in shown.stderr  # how to repair it

    repaired = run_cli("run", str(cfg), "--resume", listed["run_id"], "-q", cwd=tmp_path)
    assert repaired.returncode == 0, repaired.stderr
    (written,) = exports.glob("cases/*/cases.parquet")
    assert list(exports.glob(".tmp/*")) == []  # the killed export's leftovers are gone
    with duckdb.connect() as con:
        (n,) = con.execute(f"SELECT count(*) FROM '{written}'").fetchone()  # type: ignore[misc]
    assert n == 30
    assert _runs(tmp_path)[0]["status"] == "completed"


# -- 3. liveness by heartbeat, signals, --force --------------------------------------------
def _forge(db: Path, run_id: str, *, host: str, heartbeat_age_s: float) -> None:
    """The run as another host's writer left it: its lease, and its last heartbeat (its own
    beats, appended per flush, dropped) ``heartbeat_age_s`` ago."""
    with duckdb.connect(str(db)) as con:
        con.execute(
            "UPDATE runs SET status = 'running', host = ?, pid = 6257, lease_token = 'theirs', "
            "heartbeat_at = now() - to_microseconds(CAST(? * 1e6 AS BIGINT)) WHERE run_id = ?",
            [host, heartbeat_age_s, run_id],
        )
        con.execute("DELETE FROM run_beats WHERE run_id = ?", [run_id])


def test_a_fresh_run_of_another_host_is_refused_and_taken_over_with_force(
    tmp_path: Path,
) -> None:
    """Bug: a run from another host stayed `running` forever and nothing could override it."""
    cfg = eval_for(tmp_path, "  - {id: m, provider: mock}", 5)
    db = tmp_path / ".evalwh" / "warehouse.duckdb"
    assert run_cli("run", str(cfg), "-q", cwd=tmp_path).returncode == 0
    run_id = _runs(tmp_path)[0]["run_id"]

    _forge(db, run_id, host="ci-runner-7", heartbeat_age_s=5)
    assert _runs(tmp_path)[0]["status"] == "running"  # fresh heartbeat: cannot tell it died
    refused = run_cli("run", str(cfg), "--resume", run_id, cwd=tmp_path)
    assert refused.returncode == 2
    assert "held by pid 6257 on ci-runner-7" in refused.stderr and "--force" in refused.stderr
    taken = run_cli("run", str(cfg), "--resume", run_id, "--force", "-q", cwd=tmp_path)
    assert taken.returncode == 0, taken.stderr
    assert _runs(tmp_path)[0]["status"] == "completed"


def test_a_stale_heartbeat_from_another_host_counts_as_interrupted(tmp_path: Path) -> None:
    """Bug: a heartbeat two days old still read `still running (pid ... on ci-runner-7)`."""
    cfg = eval_for(tmp_path, "  - {id: m, provider: mock}", 5)
    db = tmp_path / ".evalwh" / "warehouse.duckdb"
    assert run_cli("run", str(cfg), "-q", cwd=tmp_path).returncode == 0
    run_id = _runs(tmp_path)[0]["run_id"]
    _forge(db, run_id, host="ci-runner-7", heartbeat_age_s=2 * 86400)
    assert _runs(tmp_path)[0]["status"] == "interrupted"
    resumed = run_cli("run", str(cfg), "--resume", run_id, "--force", "-q", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    with duckdb.connect(str(db), read_only=True) as con:
        row = con.execute("SELECT status, host, lease_token FROM runs").fetchone()
    assert row == ("completed", socket.gethostname(), None)


# SIGTERM by default; SIGINT (the same path, Ctrl-C) under `slow`, which CI runs
@pytest.mark.parametrize(
    "sig", [signal.SIGTERM, pytest.param(signal.SIGINT, marks=pytest.mark.slow)]
)
def test_a_signal_marks_the_run_interrupted_after_flushing_and_resume_pays_nothing_twice(
    sig: signal.Signals, tmp_path: Path, server: FakeLLMServer
) -> None:
    """Bugs: SIGTERM left the run `running`; Ctrl-C printed nothing; up to ~1 s of answered
    but unwritten cells were asked (and paid) again on resume."""
    # 1,000 x 30 ms / 2 = 15 s: the signal lands mid-run even on a loaded machine
    server.latency = 0.03
    cfg = eval_for(tmp_path, _http_model(server), 1000, concurrency=2)
    db = tmp_path / ".evalwh" / "warehouse.duckdb"
    proc = _start(cfg, tmp_path)
    _wait_for(_stored_at_least(tmp_path, db, 20))
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "--resume" in stderr and "Traceback" not in stderr
    with duckdb.connect(str(db), read_only=True) as con:
        (status,) = con.execute("SELECT status FROM runs").fetchone()  # type: ignore[misc]
    assert status == "interrupted"  # stored as such, not inferred from a dead pid
    answered = Counter(case_of(r) for r in server.requests)
    stored = _stored(db)
    # the calls in flight were let finish, and everything answered was flushed
    assert len(stored) == len(answered) < 1000

    run_id = _runs(tmp_path)[0]["run_id"]
    server.latency = 0.0  # the resume need not be slow
    resumed = run_cli("run", str(cfg), "--resume", run_id, "-q", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    rows = _stored(db)
    assert len(rows) == len(set(rows)) == 1000
    asked = Counter(case_of(r) for r in server.requests)
    assert sum(asked.values()) == 1000 and set(asked.values()) == {1}  # nothing asked twice


def _hung_config(folder: Path, server: FakeLLMServer, phase: str) -> Path:
    """Four cells whose requests (``sending``) or whose judges' (``judging``) hang."""
    hung = (
        f"{{id: h, provider: openai-compatible, model: local, base_url: "
        f"'{server.openai_url}', price: 0}}"
    )
    scorecard = "scorecard:\n  - {name: r, type: contains}\n"
    if phase == "sending":
        models, judges = f"models:\n  - {hung}\n", ""
    else:
        models = "models:\n  - {id: m, provider: mock}\n"
        judges = f"judges:\n  - id: j\n    model: {hung}\n"
        scorecard += "  - {name: judged, type: llm-judge, judge: j}\n"
    return write(
        folder / "eval.yaml",
        models
        + "variants:\n  - {id: v, messages: [{role: user, content: '{{ q }}'}]}\n"
        + "cases:\n"
        + "".join(f"  - {{id: c{i}, vars: {{q: q{i}}}, expected: q{i}}}\n" for i in range(4))
        + judges
        + scorecard
        + "settings: {concurrency: 2}\n",
    )


@pytest.mark.parametrize("phase", ["sending", "judging"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_ctrl_c_while_requests_hang_on_a_silent_server_ends_interrupted_within_the_grace(
    sig: signal.Signals, phase: str, tmp_path: Path, server: FakeLLMServer
) -> None:
    """Reported (issue 46): Ctrl-C while the requests hung on a server that never answers
    ended 487 s later, exit 3, `failed`; SIGTERM in the same state was answered. Both end
    the run `interrupted`, exit 130, once the grace has cancelled the hung requests."""
    server.default = hang()  # reads each request, answers none
    cfg = _hung_config(tmp_path, server, phase)
    # a 1 s grace (EVALWH_INTERRUPT_GRACE_S) proves what the 10 s default does, in a tenth
    proc = _start(cfg, tmp_path, env={"EVALWH_INTERRUPT_GRACE_S": "1"})
    _wait_for(lambda: server.count >= 2 or proc.poll() is not None)  # both workers hang
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(sig)
    # the bound is the grace plus a wide margin for a loaded machine, not a timing assertion
    _, stderr = proc.communicate(timeout=GRACE_S + 50)
    assert proc.returncode == 130, stderr
    assert f"interrupted ({sig.name})" in stderr and "Traceback" not in stderr
    with duckdb.connect(str(tmp_path / ".evalwh" / "warehouse.duckdb"), read_only=True) as con:
        assert con.execute("SELECT status FROM runs").fetchall() == [("interrupted",)]


# `evalwh run` with the planning's last step (before the run exists) or the export held until
# a signal comes: the process writes argv[1] once it is held there
_HELD_AT = """
import pathlib, sys, time
from evalwh.api import run as api
from evalwh.cli.main import run
from evalwh.engine import execute

marker, phase = pathlib.Path(sys.argv[1]), sys.argv[2]

def held(*args, **kwargs):
    marker.write_text(phase)
    while True:
        time.sleep(60)  # a signal's handler raises here, or the signal ends the process

setattr(*((execute, "store_files") if phase == "planning" else (api, "conclude")), held)
sys.argv = ["evalwh", "run", sys.argv[3], "-q"]
run()
"""


@pytest.mark.parametrize("phase", ["planning", "export"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_sigterm_while_planning_or_exporting_kills_the_command_where_ctrl_c_is_answered(
    sig: signal.Signals, phase: str, tmp_path: Path
) -> None:
    """Bug: outside the run's event loop SIGTERM had its default action (the process killed,
    no message, no exit code 130; asyncio also put it back to the default after the run) while
    Ctrl-C raised and was answered with 130: both take the same path."""
    cfg = eval_for(tmp_path, "  - {id: m, provider: mock}", 3)
    marker = tmp_path / "held"
    proc = subprocess.Popen(
        [sys.executable, "-c", _HELD_AT, str(marker), phase, str(cfg)],
        cwd=tmp_path,
        env={**os.environ, "COLUMNS": "200"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for(lambda: marker.exists() or proc.poll() is not None)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, (proc.returncode, stderr)
    assert "interrupted" in stderr and "Traceback" not in stderr
    runs = _runs(tmp_path)
    if phase == "planning":
        assert runs == []  # nothing was started
    else:  # the rows are kept; the run, its export unfinished, reads as interrupted
        assert [(r["status"], r["n"]) for r in runs] == [("interrupted", 3)]


# -- 4. I/O failures are clear errors ------------------------------------------------------
@contextlib.contextmanager
def _tmpfs(folder: Path, options: str) -> Iterator[Path]:
    """A tmpfs mounted on ``folder`` for the block; skips the test when mount fails."""
    folder.mkdir(exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.fixture
def tiny_fs(tmp_path: Path) -> Iterator[Path]:
    """A 16 MB tmpfs (needs root and mount): room for a small run, not for a big one."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tiny tmpfs needs root")
    with _tmpfs(tmp_path / "tiny", "size=16m") as folder:
        yield folder


def test_a_full_disk_is_a_clear_error_and_the_data_stays_intact(
    tmp_path: Path, tiny_fs: Path
) -> None:
    """Bug: disk full printed a 17-28 line traceback, exit 1, ending in "cannot rollback"."""
    small = eval_for(tmp_path / "small", "  - {id: m, provider: mock}", 10)
    first = run_cli("run", str(small), "-o", str(tiny_fs), "-q", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    rows = (  # incompressible answers, ~24 MB once in cases and once in the cache
        json.dumps({"id": f"c{i:04d}", "vars": {"q": f"q{i}"}, "expected": os.urandom(2000).hex()})
        for i in range(3000)
    )
    big = eval_for(tmp_path / "big", "  - {id: m, provider: mock}", 1)
    write(tmp_path / "big" / "cases.jsonl", "\n".join(rows) + "\n")
    full = run_cli("run", str(big), "-o", str(tiny_fs), cwd=tmp_path)
    assert full.returncode == 2, full.stderr
    assert "No space left on device" in full.stderr and str(tiny_fs) in full.stderr
    assert "Traceback" not in full.stderr and "rollback" not in full.stderr
    listed = run_cli("--json", "list", "-o", str(tiny_fs), cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    by_suite = {r["suite"]: r for r in json.loads(listed.stdout)["runs"]}
    assert by_suite and min(r["n"] for r in by_suite.values()) >= 0
    first_run = [r for r in json.loads(listed.stdout)["runs"] if r["n_planned"] == 10]
    assert first_run and first_run[-1]["n"] == 10 and first_run[-1]["status"] == "completed"


@pytest.fixture
def unwritable(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A folder evalwh cannot write: a read-only tmpfs as root, else a chmod 0500 folder."""
    folder = tmp_path / "locked"
    folder.mkdir()
    if os.geteuid() == 0:  # root ignores permissions: a read-only file system instead
        with _tmpfs(folder, "ro,size=1m"):
            yield folder, "Read-only file system"
        return
    folder.chmod(0o500)
    try:
        yield folder, "Permission denied"
    finally:
        folder.chmod(0o700)


def test_an_unwritable_folder_is_a_clear_error(
    tmp_path: Path, unwritable: tuple[Path, str]
) -> None:
    folder, cause = unwritable
    cfg = eval_for(tmp_path, "  - {id: m, provider: mock}", 3)
    done = run_cli("run", str(cfg), "-o", str(folder / "out"), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert cause in done.stderr and str(folder) in done.stderr
    assert "Traceback" not in done.stderr


def test_a_folder_where_the_warehouse_file_should_be_is_a_clear_error(tmp_path: Path) -> None:
    cfg = eval_for(tmp_path, "  - {id: m, provider: mock}", 3)
    (tmp_path / ".evalwh" / "warehouse.duckdb").mkdir(parents=True)
    for args in (["run", str(cfg)], ["list"], ["show"]):
        done = run_cli(*args, cwd=tmp_path)
        assert done.returncode == 2, (args, done.stderr)
        assert "warehouse.duckdb" in done.stderr and "Traceback" not in done.stderr, args


# -- 5. outages fail the run, fast ----------------------------------------------------------
def test_a_closed_port_fails_the_run_fast_with_exit_3(tmp_path: Path) -> None:
    """Bug: 200 of 200 requests failing ended `completed`, exit 0, after ~20 s of retries."""
    port = closed_port()
    block = (
        f"  - {{id: m, provider: openai-compatible, model: local, "
        f"base_url: 'http://127.0.0.1:{port}/v1', price: 0, max_retries: 3}}"
    )
    cfg = eval_for(tmp_path, block, 60, concurrency=4)
    done = run_cli("run", str(cfg), "--json", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    data = json.loads(done.stdout)
    assert data["status"] == "failed" and "too many requests errored" in data["failure"]
    # fail fast: the model is declared unreachable after DEAD_ENDPOINT_AFTER refusals (plus
    # the attempts already in flight), instead of 60 cells x 4 attempts
    assert data["stats"]["requests"] <= DEAD_ENDPOINT_AFTER + 4
    grouped = {e["error"].split(":")[0]: e["n"] for e in data["errors"]}
    assert grouped.get("endpoint unreachable", 0) >= 60 - DEAD_ENDPOINT_AFTER - 4
    assert sum(grouped.values()) == 60
    assert "the run failed" in done.stderr
    assert _runs(tmp_path)[0]["status"] == "failed"
    # the next step names the endpoint (the refused requests and the cells declared
    # unreachable after them: one cause), then the command that asks the cells again
    assert data["next"] == (
        f"failed: nothing answered at http://127.0.0.1:{port}/v1/chat/completions: start the "
        "server there or correct the model's base_url; then re-run the errored cells with "
        f"`evalwh run {cfg} --retry-errors {data['run_id']}`"
    )


def test_max_error_rate_fails_a_partly_broken_run(tmp_path: Path) -> None:
    """A run whose errored share reaches settings.max_error_rate exits 3, thresholds or not."""
    block = (
        "  - id: m\n    provider: mock\n    mock:\n      rules:\n"
        "        - {error: broken, rate: 0.5}"
    )
    cfg = eval_for(tmp_path, block, 40)
    assert run_cli("run", str(cfg), "-q", cwd=tmp_path).returncode == 0  # default 1.0: all
    strict = run_cli("run", str(cfg), "-q", cwd=tmp_path, env={"EVALWH_MAX_ERROR_RATE": "0.25"})
    assert strict.returncode == 3, strict.stderr
    assert "too many requests errored" in strict.stderr


def test_a_long_retry_after_fails_the_call_instead_of_waiting(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    """Bug: a 429 with a long Retry-After held one cell for up to 15 minutes."""
    server.default = rate_limited(retry_after=MAX_RETRY_AFTER_S * 10)
    cfg = eval_for(tmp_path, _http_model(server), 2, concurrency=2)
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert server.count == 2  # one attempt per cell, no waiting
    (group,) = result.errors
    assert f"longer than the {MAX_RETRY_AFTER_S:g} s evalwh waits" in group["error"]
    assert result.exit_code == 3


def test_the_deadline_bounds_a_call_with_its_retries(
    tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bug: a hung server cost 4 x 60 s per cell with no overall bound.

    The runner's clock is virtual here: it moves only by the waits between attempts (the
    runner's ``asyncio.sleep``), so how many attempts fit in ``deadline_s`` does not depend on
    how busy the machine is (0, 0.3, 0.6, 0.9 s: the wait after the fourth would pass 1 s)."""
    import asyncio

    from evalwh.engine import runner

    now = [0.0]

    class Clock:  # the runner's `time`
        monotonic = staticmethod(lambda: now[0])
        perf_counter = staticmethod(time.perf_counter)

    class Waits:  # the runner's `asyncio`: a sleep advances the clock instead of waiting
        def __getattr__(self, name: str) -> object:
            return getattr(asyncio, name)

        @staticmethod
        async def sleep(delay: float) -> None:
            now[0] += delay
            await asyncio.sleep(0)

    monkeypatch.setattr(runner, "time", Clock)
    monkeypatch.setattr(runner, "asyncio", Waits())
    server.default = server_error(500, retry_after=0.3)
    block = (
        f"  - {{id: m, provider: openai-compatible, model: local, base_url: "
        f"'{server.openai_url}', price: 0, max_retries: 50, deadline_s: 1}}"
    )
    cfg = eval_for(tmp_path, block, 1)
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert 2 <= server.count <= 4  # 1 s / 0.3 s, not 51 attempts
    assert "deadline_s of 1 s" in result.errors[0]["error"]


# -- 6. foreign files and old warehouses ---------------------------------------------------
def test_a_foreign_duckdb_file_is_refused_and_left_byte_for_byte_unchanged(
    tmp_path: Path,
) -> None:
    """Bug: a DuckDB file with its own `runs` table got a traceback and a schema_migrations
    table added to it."""
    cfg = eval_for(tmp_path, "  - {id: m, provider: mock}", 3)
    db = tmp_path / ".evalwh" / "warehouse.duckdb"
    db.parent.mkdir()
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE TABLE runs (id INTEGER, note VARCHAR)")
        con.execute("INSERT INTO runs VALUES (1, 'mine')")
    before = _sha(db)
    commands = (
        ["run", str(cfg)],
        ["list"],
        ["show"],
        ["sql", "SELECT 1"],
        ["compare", "a", "b"],
        ["gate", "latest"],
        ["export", "latest", "--format", "json"],
        ["migrate"],
    )
    for args in commands:
        done = run_cli(*args, cwd=tmp_path)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert "not an evalwh warehouse" in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr
        assert _sha(db) == before, args


def test_read_commands_never_migrate_an_old_warehouse(tmp_path: Path) -> None:
    from evalwh.warehouse.connect import migrations

    db = tmp_path / ".evalwh" / "warehouse.duckdb"
    db.parent.mkdir()
    with duckdb.connect(str(db)) as con:
        con.execute(
            "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, "
            "applied_at TIMESTAMPTZ NOT NULL)"
        )
        for version, name, sql in migrations()[:3]:
            con.execute(sql)
            con.execute("INSERT INTO schema_migrations VALUES (?, ?, now())", [version, name])
    before = _sha(db)
    for args in (["list"], ["show"], ["sql", "SELECT 1"]):
        done = run_cli(*args, cwd=tmp_path)
        assert done.returncode == 2, (args, done.stderr)
        assert "evalwh migrate" in done.stderr and _sha(db) == before, args
    migrated = run_cli("migrate", cwd=tmp_path)
    assert migrated.returncode == 0, migrated.stderr
    assert "from schema version 3" in migrated.stdout
    assert run_cli("list", cwd=tmp_path).returncode == 0


def test_a_writer_whose_run_was_taken_over_stops_instead_of_writing(tmp_path: Path) -> None:
    """After `--resume --force` elsewhere, the old owner's next flush must not add rows."""
    from evalwh.warehouse.writer import LeaseLostError, RunWriter

    cfg = eval_for(tmp_path, "  - {id: m, provider: mock}", 3)
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    db = tmp_path / "out" / "warehouse.duckdb"
    _forge(db, result.run_id, host=socket.gethostname(), heartbeat_age_s=0)  # token 'theirs'
    writer = RunWriter(db, result.run_id, token="mine", heartbeat_s=0)
    with pytest.raises(LeaseLostError, match="taken over"):
        writer.flush(writer.take_batch())
    with duckdb.connect(str(db), read_only=True) as con:
        (token,) = con.execute("SELECT lease_token FROM runs").fetchone()  # type: ignore[misc]
    assert token == "theirs" and len(_stored(db)) == 3


SLOW_MODEL = """\
settings: {concurrency: 4, batch_size: 10}
models:
  - id: slow
    provider: mock
    mock: {latency_ms: 40}
variants:
  - id: v
    messages: [{role: user, content: "{{ q }}"}]
cases:
  - file: cases.jsonl
scorecard:
  - {name: exact, type: exact}
"""


def _slow_eval(tmp_path: Path, n: int) -> Path:
    lines = "\n".join(
        json.dumps({"id": f"c{i:04d}", "vars": {"q": str(i)}, "expected": str(i)}) for i in range(n)
    )
    write(tmp_path / "cases.jsonl", lines + "\n")
    return write(tmp_path / "eval.yaml", SLOW_MODEL)


def _count(db: Path) -> int:
    with duckdb.connect(str(db), read_only=True) as con:
        return int(con.execute("SELECT count(*) FROM cases").fetchone()[0])  # type: ignore[index]


def test_sigkill_keeps_flushed_rows_and_readers_work_during_a_run(tmp_path: Path) -> None:
    # 2,000 x 40 ms / 4 = ~20 s: the kill comes long before the end even on a loaded machine
    cfg = _slow_eval(tmp_path, 2000)
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalwh.cli.main", "run", str(cfg), "-q"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    db = tmp_path / ".evalwh" / "warehouse.duckdb"
    try:
        # poll while the run lives (no wall-clock limit: pytest-timeout bounds the test)
        seen = 0
        while proc.poll() is None:
            listed = run_cli("--json", "list", cwd=tmp_path)  # another process reads mid-run
            if listed.returncode == 0 and listed.stdout.strip():
                runs = json.loads(listed.stdout)["runs"]
                if runs and runs[0]["n"] >= 40:
                    assert runs[0]["status"] == "running"
                    seen = runs[0]["n"]
                    break
            time.sleep(0.1)
        assert seen >= 40, "the run never showed flushed rows to a reader"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    stored = _count(db)
    assert 40 <= stored < 2000
    listed = json.loads(run_cli("--json", "list", cwd=tmp_path).stdout)["runs"][0]
    assert listed["status"] == "interrupted"  # its process is gone
    assert listed["n"] == stored and listed["n_planned"] == 2000
    shown = run_cli("show", "latest", cwd=tmp_path)
    assert f"interrupted ({stored}/2000 cases stored)" in shown.stdout


@pytest.mark.parametrize("provider", ["anthropic", pytest.param("openai", marks=pytest.mark.slow)])
def test_thousand_cases_with_injected_faults(
    provider: str, tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-anthropic-0000")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-openai-0000")
    server.faults = Faults(error_rate=0.05, rate_limit_rate=0.05, retry_after=0.01, seed=7)
    bad = {f"question {i}" for i in (3, 500, 999)}  # permanent failures: 400 for these cases
    server.responder = lambda req: error(400, "prompt rejected") if case_of(req) in bad else None
    url = server.url if provider == "anthropic" else server.openai_url
    model = "claude-3-5-haiku-20241022" if provider == "anthropic" else "gpt-4o-mini"
    block = (
        f"  - {{id: m, provider: {provider}, model: {model}, base_url: '{url}', max_retries: 6}}"
    )
    cfg = eval_for(tmp_path, block, 1000)

    # ~$2.05 at list prices: over the default cap of a run on a paid provider
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out", max_cost=10.0)
    assert result.status == "completed"
    assert result.totals["n"] == 1000  # every case stored
    assert result.totals["n_errors"] == 3
    assert result.stats["retries"] > 50  # ~10% transient faults were retried
    assert result.totals["n_passed"] == 997
    assert result.totals["cost_usd"] > 0  # priced from the shipped table
    wh = evalwh.open_warehouse(tmp_path / "out" / "warehouse.duckdb")
    errors = wh.query("errors", run_id=result.run_id).to_pylist()
    assert len(errors) == 1 and errors[0]["n"] == 3 and errors[0]["error_kind"] == "http"
    assert "HTTP 400" in errors[0]["error"] and "prompt rejected" in errors[0]["error"]
    assert errors[0]["examples"] == ["c0003 v × m", "c0500 v × m", "c0999 v × m"]
    # the run summary names them
    run = run_cli("show", result.run_id, "-o", str(tmp_path / "out"))
    assert "prompt rejected" in run.stdout and "3 case(s)" in run.stdout

    # A rerun of the unchanged config makes no request for cached answers, same scores.
    before = server.count
    again = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert server.count - before == again.stats["requests"] == 3  # only the 3 errors: never cached
    assert again.stats["cache_hits"] == 997
    scores = wh.sql(
        "SELECT run_id, list(score ORDER BY case_id) AS s FROM cases GROUP BY run_id"
    ).to_pylist()
    assert scores[0]["s"] == scores[1]["s"]


@pytest.mark.slow  # a long end-to-end proof; CI runs it (`pytest -m slow`)
def test_sigkill_then_resume_is_exact(tmp_path: Path, server: FakeLLMServer) -> None:
    server.latency = 0.02
    block = f"  - {{id: m, provider: openai-compatible, model: local, base_url: '{server.openai_url}', price: 0}}"
    # ~3,000 x 20 ms / 8 = 7.5 s: the kill lands mid-run even on a loaded machine
    cfg = eval_for(tmp_path, block, 3000, concurrency=8)
    db = tmp_path / ".evalwh" / "warehouse.duckdb"
    proc = _start(cfg, tmp_path)
    # poll until 100 rows are stored (or the run ended): no wall-clock deadline of its own
    reached = _stored_at_least(tmp_path, db, 100)
    _wait_for(lambda: reached() or proc.poll() is not None)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    stored_before = set(_stored(db))
    assert 100 <= len(stored_before) < 3000
    asked_before = Counter(case_of(r) for r in server.requests)

    resumed = run_cli("run", str(cfg), "--resume", "latest", "--json", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    data = json.loads(resumed.stdout)
    rows = _stored(db)
    assert len(rows) == 3000 and len(set(rows)) == 3000  # exact, no duplicates
    assert data["status"] == "completed" and data["totals"]["n"] == 3000
    asked_after = Counter(case_of(r) for r in server.requests)
    for case_id, _ in stored_before:
        question = f"question {int(case_id[1:])}"
        assert asked_after[question] == asked_before[question] == 1, case_id  # never asked twice
    listed = json.loads(run_cli("--json", "list", cwd=tmp_path).stdout)["runs"]
    assert len(listed) == 1 and listed[0]["status"] == "completed"
