"""sql/cache_holds.sql: whether the response cache holds an answer of any of the given provider
models, against hand-built caches."""

from __future__ import annotations

from pathlib import Path

from evalwh.warehouse import queries
from tests.sql.conftest import _cache, _warehouse


def holds(con: object, models: list[list[str]]) -> bool:
    (row,) = queries.run_query(con, "cache_holds", models=models).to_pylist()
    return bool(row["holds"])


def test_the_cache_holds_an_answer_only_of_a_listed_provider_and_model(tmp_path: Path) -> None:
    con = _warehouse(tmp_path)
    assert not holds(con, [["p", "m1"]])  # an empty cache
    _cache(con, [("a", "p", "m1"), ("b", "q", "m2")])
    assert holds(con, [["p", "m1"]])
    assert holds(con, [["x", "y"], ["q", "m2"]])
    # the pair must match as a pair: p's m2 and q's m1 are not stored
    assert not holds(con, [["p", "m2"], ["q", "m1"]])
    assert not holds(con, [])
