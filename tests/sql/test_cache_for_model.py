"""sql/cache_for_model.sql: the response-cache rows of one provider and model, against hand-computed
fixtures: each warehouse is built by hand, row by row, and the expected numbers are worked out in
the comments.
"""

from __future__ import annotations

from pathlib import Path

from evalwh.warehouse import queries
from tests.sql.conftest import _cache, _warehouse


def test_cache_for_model_holds_only_that_provider_and_model(tmp_path: Path) -> None:
    con = _warehouse(tmp_path)
    _cache(con, [("a", "p", "m1"), ("b", "p", "m2"), ("c", "q", "m1"), ("d", "p", "m1")])
    rows = queries.run_query(con, "cache_for_model", provider="p", model="m1").to_pylist()
    assert sorted(r["request_hash"] for r in rows) == ["a", "d"]
