"""sql/metadata_keys.sql: the metadata keys of some runs, their distinct values and the rows carrying
each, against hand-computed fixtures: each warehouse is built by hand, row by row, and the expected
numbers are worked out in the comments.
"""

from __future__ import annotations

import json
from pathlib import Path

from evalwh.warehouse import queries
from tests.builders import fill_run_keys
from tests.sql.conftest import _case, _warehouse


def test_metadata_keys_count_distinct_values_and_the_rows_carrying_each(tmp_path: Path) -> None:
    # bugs: a row more per metadata object, values counted per object instead of distinct.
    # Run r: {lang en, doc d1} twice, {lang en, doc d2} once, {lang fr} once; run s must not
    # count. lang: 2 values (en, fr) on 4 rows (3 objects); doc: 2 values on 3 rows.
    con = _warehouse(tmp_path)
    metas = [{"lang": "en", "doc": "d1"}] * 2 + [{"lang": "en", "doc": "d2"}, {"lang": "fr"}]
    for run, i, meta in [*(("r", i, m) for i, m in enumerate(metas)), ("s", 0, {"x": "1"})]:
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, metadata, cached, "
            "request_hash, attempts, passed, created_at) "
            "VALUES (?, 'v', 'm', ?, 0, ?, false, 'h', 1, true, now())",
            [run, f"c{i}", json.dumps(meta)],
        )
        fill_run_keys(con)
    rows = queries.run_query(con, "metadata_keys", run_ids=["r"]).to_pylist()
    assert [(r["key"], r["n_values"], r["n"]) for r in rows] == [("doc", 2, 3), ("lang", 2, 4)]


def test_metadata_keys_count_distinct_values_and_case_rows_of_the_given_runs(
    tmp_path: Path,
) -> None:
    # run r: {lang en, t a} x2, {lang fr} x1, {lang en, t b} x1, no metadata x1;
    # run s (not asked for): {lang de, z 1}.
    # lang: values en, fr -> 2 (3 distinct objects carry it), rows 2 + 1 + 1 = 4;
    # t: values a, b -> 2, rows 2 + 1 = 3. z is only in run s.
    con = _warehouse(tmp_path)
    for i, meta in enumerate(
        [{"lang": "en", "t": "a"}] * 2 + [{"lang": "fr"}, {"lang": "en", "t": "b"}, None]
    ):
        _case(con, "r", f"c{i}", metadata=meta)
    _case(con, "s", "c0", metadata={"lang": "de", "z": 1})
    got = queries.run_query(con, "metadata_keys", run_ids=["r"]).to_pylist()
    assert [(r["key"], r["n_values"], r["n"]) for r in got] == [("lang", 2, 4), ("t", 2, 3)]
    both = queries.run_query(con, "metadata_keys", run_ids=["r", "s"]).to_pylist()
    assert [(r["key"], r["n_values"], r["n"]) for r in both] == [
        ("lang", 3, 5),
        ("t", 2, 3),
        ("z", 1, 1),
    ]
