"""sql/run_row.sql (and the heartbeat column of sql/runs.sql): a run's row with its heartbeat the
newest of the row's own and of its writers' appended beats (migration 0015), against
hand-built warehouses; the expected values are worked out in the comments."""

from __future__ import annotations

from pathlib import Path

from evalwh.warehouse import queries
from tests.sql.conftest import _warehouse

RUNS = (
    # run_id, status, the row's heartbeat (set at start / conclude), its beats (minutes)
    ("r1", "running", 1, (3, 2)),  # beats newer than the row: 10:03 wins
    ("r2", "running", 5, (4,)),  # the row (a claim at 10:05) is newer than its last beat
    ("r3", "running", 6, ()),  # no beat yet: the row's own
    ("r4", "completed", 9, (8,)),  # concluded: the row's (set at conclude)
)


def _fill(tmp_path: Path):  # type: ignore[no-untyped-def]
    con = _warehouse(tmp_path)
    for run_id, status, minute, beats in RUNS:
        con.execute(
            "INSERT INTO runs (run_id, suite, status, config_hash, dataset_hash, n_planned, "
            "started_at, heartbeat_at, evalwh_version) VALUES (?, 's', ?, 'h', 'd', 1, "
            "'2026-01-01 10:00:00+00', ?::TIMESTAMPTZ, 't')",
            [run_id, status, f"2026-01-01 10:0{minute}:00+00"],
        )
        for beat in beats:
            con.execute(
                "INSERT INTO run_beats (run_id, beat_at, lease_token, rows_written, retries) "
                "VALUES (?, ?::TIMESTAMPTZ, 'tok', 10, 0)",
                [run_id, f"2026-01-01 10:0{beat}:00+00"],
            )
    # another run's later beat must not lend r3 a heartbeat
    con.execute(
        "INSERT INTO run_beats (run_id, beat_at) VALUES ('other', '2026-01-01 10:07:00+00')"
    )
    return con


def test_a_runs_heartbeat_is_the_newest_of_its_row_and_its_appended_beats(tmp_path: Path) -> None:
    # bugs: the row's column read alone (a writer's beats ignored: a live run looks stale),
    # the oldest beat taken, another run's beats counted, a run without beats dropped
    con = _fill(tmp_path)
    minutes = {}
    for run_id, *_ in RUNS:
        (row,) = queries.run_query(con, "run_row", run_id=run_id).to_pylist()
        assert row["run_id"] == run_id and row["suite"] == "s"
        minutes[run_id] = row["heartbeat_at"].minute
    assert minutes == {"r1": 3, "r2": 5, "r3": 6, "r4": 9}
    assert queries.run_query(con, "run_row", run_id="nope").num_rows == 0


def test_the_runs_list_shows_a_running_runs_newest_beat(tmp_path: Path) -> None:
    # the same runs through the list: r4 is concluded, so its beats are not read (its row
    # holds the heartbeat written at conclude)
    con = _fill(tmp_path)
    listed = queries.run_query(
        con, "runs", limit=10, suite=None, label=None, status=None, since=None, until=None
    ).to_pylist()
    assert {r["run_id"]: r["heartbeat_at"].minute for r in listed} == {
        "r4": 9,
        "r3": 6,
        "r2": 5,
        "r1": 3,
    }
