"""The run lease (evalwh/warehouse/lease.py): a run is held by one process at a time, and
whether a run marked running is alive, dead (interrupted) or unverifiable (another host)
is read from its host, pid and heartbeat, and how its holder is named. The rules are tested end to end in
tests/features/test_reliability.py, through processes; these drive the same rules in this
process, on a real warehouse file for claim and release."""

from __future__ import annotations

import os
import re
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import duckdb
import pytest

import evalwh
from evalwh.errors import UsageError
from evalwh.warehouse import lease
from tests.conftest import dead_pid, write


def test_a_lease_holder_names_its_heartbeat_age_when_known() -> None:
    from evalwh.warehouse.lease import holder

    beat = datetime.now(timezone.utc) - timedelta(seconds=30)
    assert holder({"pid": 12, "host": "box", "heartbeat_at": beat}) == (
        "pid 12 on box, heartbeat 30 s ago"
    )
    assert holder({"pid": 12, "host": "box"}) == "pid 12 on box"


NOW = datetime(2026, 12, 1, 12, 0, 0, tzinfo=timezone.utc)


def _row(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "status": "running",
        "host": lease.HOST,
        "pid": os.getpid(),
        "heartbeat_at": datetime.now(timezone.utc),
    }
    return {**base, **fields}


def test_a_token_is_16_hex_digits_and_new_each_time() -> None:
    tokens = {lease.new_token() for _ in range(20)}
    assert len(tokens) == 20
    assert all(re.fullmatch(r"[0-9a-f]{16}", t) for t in tokens)


def test_pid_alive_for_this_process_and_not_for_a_finished_one_or_none() -> None:
    assert lease.pid_alive(os.getpid()) is True
    assert lease.pid_alive(dead_pid()) is False
    assert lease.pid_alive(None) is False
    assert lease.pid_alive(0) is False  # 0 would signal our own process group


@pytest.mark.parametrize(
    ("error", "alive"),
    [(PermissionError, True), (ProcessLookupError, False), (OSError, False)],
)
def test_pid_alive_when_the_signal_check_is_refused(
    monkeypatch: pytest.MonkeyPatch, error: type[OSError], alive: bool
) -> None:
    # another user's process refuses the signal (it exists); other failures say nothing lives
    seen: list[tuple[int, int]] = []

    def kill(pid: int, sig: int) -> None:
        seen.append((pid, sig))
        raise error()

    monkeypatch.setattr(lease.os, "kill", kill)
    assert lease.pid_alive(4242) is alive
    assert seen == [(4242, 0)]  # signal 0: a check, never a real signal


def test_heartbeat_age_counts_a_naive_timestamp_as_utc() -> None:
    beat = NOW - timedelta(seconds=90)
    assert lease.heartbeat_age_s({"heartbeat_at": beat}, NOW) == 90.0
    assert lease.heartbeat_age_s({"heartbeat_at": beat.replace(tzinfo=None)}, NOW) == 90.0
    local = beat.astimezone(timezone(timedelta(hours=5)))
    assert lease.heartbeat_age_s({"heartbeat_at": local}, NOW) == 90.0
    assert lease.heartbeat_age_s({}, NOW) is None
    assert lease.heartbeat_age_s({"heartbeat_at": "2026-12-01 12:00"}, NOW) is None
    # without `now`, the clock: the age runs from the beat to the moment of the call
    beat = datetime.now(timezone.utc) - timedelta(seconds=90)
    age = lease.heartbeat_age_s({"heartbeat_at": beat})
    since = (datetime.now(timezone.utc) - beat).total_seconds()
    assert age is not None and 90 <= age <= since


def test_liveness_of_each_kind_of_row() -> None:
    assert lease.liveness(_row()) == "alive"
    assert lease.liveness(_row(status="exporting")) == "alive"
    assert lease.liveness(_row(status="completed")) == "done"
    assert lease.liveness(_row(status="interrupted", heartbeat_at=None)) == "done"
    assert lease.liveness(_row(heartbeat_at=None)) == "dead"
    assert lease.liveness(_row(pid=dead_pid())) == "dead"
    assert lease.liveness(_row(host="ci-runner-7", pid=dead_pid())) == "unverified"
    old = datetime.now(timezone.utc) - timedelta(seconds=500)
    assert lease.liveness(_row(host="ci-runner-7", heartbeat_at=old)) == "dead"
    assert lease.liveness(_row(heartbeat_at=old)) == "dead"  # even with our pid alive


def test_liveness_at_the_stale_limit() -> None:
    beat = datetime.now(timezone.utc) - timedelta(seconds=30)
    other = _row(host="ci-runner-7", heartbeat_at=beat)
    assert lease.liveness(other, stale_after_s=3600) == "unverified"
    assert lease.liveness(other, stale_after_s=10) == "dead"
    assert lease.liveness(other) == "unverified"  # the default: 120 s
    assert lease.DEFAULT_STALE_AFTER_S == 120.0
    old = _row(host="ci-runner-7", heartbeat_at=datetime.now(timezone.utc) - timedelta(seconds=200))
    assert lease.liveness(old) == "dead"


def test_liveness_exactly_at_the_limit_is_still_fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lease, "heartbeat_age_s", lambda row, now=None: 120.0)
    assert lease.liveness(_row(host="ci-runner-7")) == "unverified"
    monkeypatch.setattr(lease, "heartbeat_age_s", lambda row, now=None: 120.001)
    assert lease.liveness(_row(host="ci-runner-7")) == "dead"


def test_effective_status_turns_only_a_dead_run_into_interrupted() -> None:
    assert lease.effective_status(_row(pid=dead_pid())) == "interrupted"
    assert lease.effective_status(_row()) == "running"
    assert lease.effective_status(_row(status="exporting")) == "exporting"
    assert lease.effective_status(_row(status="completed", pid=None)) == "completed"
    beat = datetime.now(timezone.utc) - timedelta(seconds=30)
    other = _row(host="ci-runner-7", heartbeat_at=beat)
    assert lease.effective_status(other, stale_after_s=10) == "interrupted"
    assert lease.effective_status(other, stale_after_s=60) == "running"


def test_holder_names_pid_host_and_heartbeat_age() -> None:
    beat = datetime.now(timezone.utc) - timedelta(seconds=42.4)
    assert lease.holder({"pid": 6257, "host": "ci-runner-7", "heartbeat_at": beat}) == (
        "pid 6257 on ci-runner-7, heartbeat 42 s ago"
    )
    assert lease.holder({"pid": 6257, "host": "ci-runner-7"}) == "pid 6257 on ci-runner-7"


# -- claim and release, on a real warehouse file -------------------------------------------------


@pytest.fixture
def stored(tmp_path: Path) -> tuple[Path, str]:
    cfg = write(
        tmp_path / "eval.yaml",
        "models:\n  - {id: m, provider: mock}\n"
        "variants:\n  - {id: v, messages: [{role: user, content: hi}]}\n"
        "cases:\n  - {id: c1, expected: x}\n"
        "scorecard:\n  - {name: r, type: contains, value: x}\n",
    )
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "o")
    return tmp_path / "o" / "warehouse.duckdb", result.run_id


def _forge(db: Path, run_id: str, *, host: str, pid: int, age_s: float) -> None:
    """The run as another writer left it: its row's lease, and its last heartbeat (the run's
    own beats, appended per flush, dropped) ``age_s`` ago."""
    with duckdb.connect(str(db)) as con:
        con.execute(
            "UPDATE runs SET status = 'running', host = ?, pid = ?, lease_token = 'theirs', "
            "heartbeat_at = now() - to_microseconds(CAST(? * 1e6 AS BIGINT)) WHERE run_id = ?",
            [host, pid, age_s, run_id],
        )
        con.execute("DELETE FROM run_beats WHERE run_id = ?", [run_id])


def _lease_row(db: Path, run_id: str) -> tuple[Any, ...]:
    with duckdb.connect(str(db), read_only=True) as con:
        row = con.execute(
            "SELECT status, host, pid, lease_token, finished_at IS NULL, epoch_us(heartbeat_at) "
            "FROM runs WHERE run_id = ?",
            [run_id],
        ).fetchone()
    assert row is not None
    return tuple(row)


def test_claim_takes_a_finished_run_and_says_what_it_was(stored: tuple[Path, str]) -> None:
    db, run_id = stored
    before = time.time_ns() // 1000  # microseconds, as the warehouse stores them
    token, previous = lease.claim(db, run_id)
    after = -(-time.time_ns() // 1000)
    assert previous == "completed"
    status, host, pid, stored_token, unfinished, beat = _lease_row(db, run_id)
    assert (status, host, pid, stored_token, unfinished) == (
        "running", lease.HOST, os.getpid(), token, True
    )  # fmt: skip
    assert before <= beat <= after  # the claim beat its heartbeat
    # the same process holds it now, alive: a second claim is refused
    with pytest.raises(lease.RunHeldError) as held:
        lease.claim(db, run_id)
    assert re.fullmatch(
        f"run {run_id} is held by pid {os.getpid()} on {re.escape(lease.HOST)}, heartbeat "
        r"\d+ s ago: wait for it to finish, or stop that process",
        str(held.value),
    ), str(held.value)
    assert held.value.exit_code == 2


def test_claim_refuses_a_fresh_run_of_another_host_unless_forced(
    stored: tuple[Path, str],
) -> None:
    db, run_id = stored
    _forge(db, run_id, host="ci-runner-7", pid=6257, age_s=5)
    with pytest.raises(lease.RunHeldError) as held:
        lease.claim(db, run_id, stale_after_s=300)
    assert re.fullmatch(
        f"run {run_id} is held by pid 6257 on ci-runner-7, heartbeat \\d+ s ago: if that "
        "process is gone \\(a killed container\\), take the run over with "
        f"`evalwh run CONFIG --resume {run_id} --force`, or wait 300 s after its last heartbeat",
        str(held.value),
    ), str(held.value)
    assert _lease_row(db, run_id)[3] == "theirs"  # nothing changed
    token, previous = lease.claim(db, run_id, force=True)
    assert previous == "running"
    assert _lease_row(db, run_id)[:4] == ("running", lease.HOST, os.getpid(), token)


def test_claim_takes_a_stale_or_dead_run_without_force(stored: tuple[Path, str]) -> None:
    db, run_id = stored
    _forge(db, run_id, host="ci-runner-7", pid=6257, age_s=30)
    token, previous = lease.claim(db, run_id, stale_after_s=10)  # 30 s old: stale
    assert previous == "running" and _lease_row(db, run_id)[3] == token
    _forge(db, run_id, host=lease.HOST, pid=dead_pid(), age_s=1)
    token, _ = lease.claim(db, run_id)  # this host, pid gone
    assert _lease_row(db, run_id)[3] == token


def test_claim_of_an_unknown_run_is_a_usage_error(stored: tuple[Path, str]) -> None:
    db, _ = stored
    with pytest.raises(UsageError, match=r"^no run nope$") as info:
        lease.claim(db, "nope")
    assert not isinstance(info.value, lease.RunHeldError)


def test_release_gives_the_run_back_only_to_the_token_holder(stored: tuple[Path, str]) -> None:
    db, run_id = stored
    token, _ = lease.claim(db, run_id)
    lease.release(db, run_id, "not-the-token", "completed")
    assert _lease_row(db, run_id)[0] == "running" and _lease_row(db, run_id)[3] == token
    lease.release(db, run_id, token, "interrupted")
    assert _lease_row(db, run_id)[0] == "interrupted" and _lease_row(db, run_id)[3] is None


def test_claim_and_release_name_themselves_to_the_write_transaction(
    stored: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the name is what a DuckLake commit conflict's retry message says was being written
    from evalwh.warehouse import connect

    db, run_id = stored
    real = connect.write_transaction
    names: list[str] = []

    def named(path: Any, body: Any, *, what: str = "write") -> Any:
        names.append(what)
        return real(path, body, what=what)

    monkeypatch.setattr(connect, "write_transaction", named)
    token, _ = lease.claim(db, run_id)
    lease.release(db, run_id, token, "completed")
    assert names == [f"claim run {run_id}", f"release run {run_id}"]
