"""sql/resolve_relative.sql: `previous` and `latest~N` count back within the newest run's suite."""

from __future__ import annotations

from pathlib import Path

import pytest

import evalwh
from evalwh.warehouse import queries
from tests.conftest import run_cli
from tests.sql.conftest import _runs, _warehouse


def test_previous_and_latest_tilde_n_stay_in_the_newest_runs_suite(
    quickstart: Path, tmp_path: Path
) -> None:
    from evalwh.errors import RunNotFoundError

    out = tmp_path / "out"
    ids = [evalwh.run_eval(quickstart, output_dir=out, label=f"r{i}").run_id for i in range(3)]
    view = evalwh.open_warehouse(out / "warehouse.duckdb")
    assert view.resolve("latest~0") == view.resolve("latest") == ids[2]
    assert view.resolve("previous") == view.resolve("latest~1") == ids[1]
    assert view.resolve("latest~2") == ids[0]
    with pytest.raises(RunNotFoundError, match="latest~3"):
        view.resolve("latest~3")
    # another suite's run becomes the newest: references follow its suite
    other = quickstart.parent / "other.yaml"
    other.write_text(quickstart.read_text().replace("name: quickstart", "name: other"))
    evalwh.run_eval(other, output_dir=out)
    with pytest.raises(RunNotFoundError, match="previous"):
        view.resolve("previous")
    done = run_cli("compare", "latest~1", "latest~0", "-o", str(out))
    assert done.returncode == 2 and "no run 'latest~1'" in done.stderr
    # a reference that names nothing lists the forms a reference may take
    with pytest.raises(RunNotFoundError, match="'previous', 'latest~N', 'git:REF'"):
        view.resolve("nope")


def test_relative_references_break_time_ties_by_run_id(tmp_path: Path) -> None:
    """latest~N: the newest run is the latest start, and of runs started at the same instant
    the greatest run id (run ids sort by time); the same order inside the suite."""
    con = _warehouse(tmp_path)
    t1, t3 = "2026-01-01 00:00:01+00", "2026-01-01 00:00:03+00"
    _runs(con, [("a1", "s", t1, None), ("b2", "o", t3, None), ("c3", "s", t3, None)])
    _runs(con, [("c2", "s", t3, None)])
    order = [
        r["run_id"]
        for n in range(4)
        for r in queries.run_query(con, "resolve_relative", offset=n).to_pylist()
    ]
    assert order == ["c3", "c2", "a1"]  # suite s (c3 beats b2 at t3), newest first
