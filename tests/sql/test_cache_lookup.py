"""sql/cache_lookup.sql: the cached responses of exactly the planned request hashes, against hand-
computed fixtures: each warehouse is built by hand, row by row, and the expected numbers are worked
out in the comments.
"""

from __future__ import annotations

from pathlib import Path

from evalwh.warehouse import queries
from tests.sql.conftest import _cache, _warehouse


def test_cache_lookup_returns_exactly_the_planned_hashes(tmp_path: Path) -> None:
    import pyarrow as pa

    con = _warehouse(tmp_path)
    _cache(con, [("h1", "p", "m"), ("h2", "p", "m"), ("h3", "p", "m")])
    for planned, expected in ((["h2"], ["h2"]), (["h1", "h3", "hX"], ["h1", "h3"]), (["hX"], [])):
        con.register("planned_hashes", pa.table({"request_hash": pa.array(planned, pa.string())}))
        rows = queries.run_query(con, "cache_lookup").to_pylist()
        assert sorted(r["request_hash"] for r in rows) == expected
        assert all(r["output"] == f"out-{r['request_hash']}" for r in rows)
        con.unregister("planned_hashes")


def test_a_hash_answered_twice_is_read_oldest_first_so_the_newest_wins(tmp_path: Path) -> None:
    # bug: a DuckLake keeps a --no-cache run's new answer beside the old one (a delete would
    # conflict with other writers); read in stored or hash order, the old answer could win.
    # h1 answered at 10:00 ("new", stored first) and 09:00 ("old", stored last).
    import pyarrow as pa

    from evalwh.engine.execute import cached_answers

    con = _warehouse(tmp_path)
    for output, at in (("new", "2026-01-01 10:00:00+00"), ("old", "2026-01-01 09:00:00+00")):
        con.execute(
            "INSERT INTO response_cache (request_hash, provider, model, output, created_at) "
            "VALUES ('h1', 'p', 'm', ?, ?)",
            [output, at],
        )
    con.register("planned_hashes", pa.table({"request_hash": pa.array(["h1"], pa.string())}))
    rows = queries.run_query(con, "cache_lookup")
    assert rows.column("output").to_pylist() == ["old", "new"]
    assert cached_answers(rows)["h1"].output == "new"
    judged = queries.run_query(con, "cache_for_model", provider="p", model="m")
    assert cached_answers(judged)["h1"].output == "new"
