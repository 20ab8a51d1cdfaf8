"""sql/resolve_suite.sql: `evalwh last SUITE` finds the newest run started from a config file,
else the newest run of the suite's name, against a warehouse built row by row.
"""

from __future__ import annotations

from pathlib import Path

from evalwh.warehouse import queries
from tests.sql.conftest import _warehouse


def test_the_config_file_wins_over_a_newer_run_of_the_same_name(tmp_path: Path) -> None:
    # bugs: the path ignored (n-new, started later from another file, would win), the name
    # ignored when no run came from the file, ties not broken by the greater run id, another
    # suite's run let in. Runs: a1 and a2 from /x/eval.yaml (a2 and a3 start together, a3
    # greater), n-new named 's' from /y/eval.yaml started last, o-1 of suite 'o' newest of all.
    con = _warehouse(tmp_path)
    for run_id, suite, path, day in (
        ("a1", "s", "/x/eval.yaml", 1), ("a2", "s", "/x/eval.yaml", 2),
        ("a3", "s", "/x/eval.yaml", 2), ("n-new", "s", "/y/eval.yaml", 3),
        ("o-1", "o", "/z/eval.yaml", 4),
    ):  # fmt: skip
        con.execute(
            "INSERT INTO runs (run_id, suite, status, config_path, config_hash, dataset_hash, "
            "n_planned, started_at, evalwh_version) "
            "VALUES (?, ?, 'completed', ?, 'h', 'd', 1, ?, 't')",
            [run_id, suite, path, f"2026-01-0{day} 00:00:00+00"],
        )

    def found(path: str | None, name: str) -> list[tuple[str, bool]]:
        rows = queries.run_query(con, "resolve_suite", path=path, suite=name).to_pylist()
        return [(r["run_id"], r["same_file"]) for r in rows]

    assert found("/x/eval.yaml", "s") == [("a3", True)]  # a3 beats a2 at day 2, n-new is newer
    assert found("/w/eval.yaml", "s") == [("n-new", False)]  # no run from /w: the name's newest
    assert found(None, "s") == [("n-new", False)]
    assert found(None, "o") == [("o-1", False)]
    assert found("/w/eval.yaml", "nope") == []
