"""sql/resolve_run.sql: a run reference ranked: exact id, then latest or a baseline, then a label,
then an id prefix, against hand-computed fixtures: each warehouse is built by hand, row by row, and
the expected numbers are worked out in the comments.
"""

from __future__ import annotations

from pathlib import Path

from evalwh.warehouse import queries
from tests.sql.conftest import _warehouse


def test_a_run_reference_ranks_an_exact_id_then_baselines_then_labels(tmp_path: Path) -> None:
    # bugs: an exact id ranked with the baseline names (how 1: the newer baseline's run would
    # win), a baseline ranked with labels, a label ranked with id prefixes (how 3: two runs of
    # one label would read as an ambiguous prefix instead of the newest), a baseline joined to
    # the other runs or read under other names, runs started in the same second not newest id
    # first. Runs r-old and r-new labelled nightly, r-mid labelled weekly, t-a and t-b
    # labelled twin and started together; the baseline r-old is pinned to r-new, weekly to
    # r-old.
    from evalwh.warehouse.store import Warehouse

    con = _warehouse(tmp_path)
    for run_id, label, day in (
        ("r-old", "nightly", 1), ("r-new", "nightly", 2), ("r-mid", "weekly", 3),
        ("t-a", "twin", 4), ("t-b", "twin", 4),
    ):  # fmt: skip
        con.execute(
            "INSERT INTO runs (run_id, label, suite, status, config_hash, dataset_hash, "
            "n_planned, started_at, evalwh_version) "
            "VALUES (?, ?, 's', 'completed', 'h', 'd', 1, ?, 't')",
            [run_id, label, f"2026-01-0{day} 00:00:00+00"],
        )
    con.execute(
        "INSERT INTO baselines VALUES ('r-old', 'r-new', now()), ('weekly', 'r-old', now())"
    )

    def found(ref: str) -> list[tuple[str, int]]:
        rows = queries.run_query(con, "resolve_run", ref=ref).to_pylist()
        return [(r["run_id"], r["how"]) for r in rows]

    assert found("r-old") == [("r-old", 0), ("r-new", 1)]
    assert found("weekly") == [("r-old", 1), ("r-mid", 2)]
    assert found("nightly") == [("r-new", 2), ("r-old", 2)]
    assert found("twin") == [("t-b", 2), ("t-a", 2)]
    assert found("r-") == [("r-mid", 3), ("r-new", 3), ("r-old", 3)]
    con.close()
    store = Warehouse(tmp_path / "w.duckdb")
    resolved = [store.resolve(ref) for ref in ("r-old", "weekly", "nightly", "twin")]
    assert resolved == ["r-old", "r-old", "r-new", "t-b"]


def test_resolve_run_ranks_exact_id_then_latest_or_baseline_then_label_then_prefix(
    tmp_path: Path,
) -> None:
    # Runs (started minute, label): abc1 (1), zzz9 (3), yyy8 (4, label 'abc1'), abc1x (5),
    # qqq1 (2, label 'rel'), rel77 (6), ttt0 (6). A baseline named 'abc1' pins zzz9.
    # 'abc1': the exact id (how 0) beats the baseline (1, although newer), the label (2) and the
    # prefix match abc1x (3). 'rel': the label (2) beats the newer prefix match rel77 (3).
    # 'latest': every run ranks 1, newest first; ttt0 and rel77 started at the same instant:
    # the greater run id first.
    con = _warehouse(tmp_path)
    for run_id, minute, label in (
        ("abc1", 1, None),
        ("zzz9", 3, None),
        ("yyy8", 4, "abc1"),
        ("abc1x", 5, None),
        ("qqq1", 2, "rel"),
        ("rel77", 6, None),
        ("ttt0", 6, None),
    ):
        con.execute(
            "INSERT INTO runs (run_id, suite, label, status, config_hash, dataset_hash, "
            "n_planned, started_at, evalwh_version) "
            "VALUES (?, 's', ?, 'completed', 'h', 'd', 1, ?::TIMESTAMPTZ, 't')",
            [run_id, label, f"2026-01-01 10:0{minute}:00+00"],
        )
    con.execute("INSERT INTO baselines VALUES ('abc1', 'zzz9', now())")

    def resolve(ref: str) -> list[tuple[str, int]]:
        rows = queries.run_query(con, "resolve_run", ref=ref).to_pylist()
        return [(r["run_id"], r["how"]) for r in rows]

    assert resolve("abc1") == [("abc1", 0), ("zzz9", 1), ("yyy8", 2), ("abc1x", 3)]
    assert resolve("rel") == [("qqq1", 2), ("rel77", 3)]
    assert resolve("latest") == [
        ("ttt0", 1),
        ("rel77", 1),
        ("abc1x", 1),
        ("yyy8", 1),
        ("zzz9", 1),
        ("qqq1", 1),
        ("abc1", 1),
    ]
