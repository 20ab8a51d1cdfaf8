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
