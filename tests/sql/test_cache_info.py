"""sql/cache_info.sql: response-cache entries and bytes per provider and model, against hand-computed
fixtures: each warehouse is built by hand, row by row, and the expected numbers are worked out in
the comments.
"""

from __future__ import annotations

from pathlib import Path

from evalwh.warehouse import queries
from tests.sql.conftest import _warehouse


def test_cache_info_counts_entries_and_bytes_per_model(tmp_path: Path) -> None:
    # p/m1: 2 entries, outputs 'abc' + 'hello' = 8 bytes; p/m2: 1 entry, 'xy' = 2 bytes
    # ('é' would be 2 bytes: strlen counts bytes) -> m3 'é' 2 bytes
    con = _warehouse(tmp_path)
    entries = [
        ("h1", "m1", "abc", "2026-01-01 00:00:00"),
        ("h2", "m1", "hello", "2026-01-03 00:00:00"),
        ("h3", "m2", "xy", "2026-01-02 00:00:00"),
        ("h4", "m3", "é", "2026-01-02 00:00:00"),
    ]
    cols = [
        r[0]
        for r in con.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_name = 'response_cache' ORDER BY ordinal_position"
        ).fetchall()
    ]
    for key, model, output, at in entries:
        values = {
            "request_hash": key,
            "provider": "p",
            "model": model,
            "output": output,
            "created_at": at,
        }
        names = [c for c in cols if c in values]
        con.execute(
            f"INSERT INTO response_cache ({', '.join(names)}) VALUES "
            f"({', '.join('?' for _ in names)})",
            [values[c] for c in names],
        )
    rows = queries.run_query(con, "cache_info").to_pylist()
    assert [(r["provider"], r["model"], r["entries"], r["text_bytes"]) for r in rows] == [
        ("p", "m1", 2, 8),
        ("p", "m2", 1, 2),
        ("p", "m3", 1, 2),
    ]
    m1 = rows[0]
    assert (str(m1["oldest"])[:10], str(m1["newest"])[:10]) == ("2026-01-01", "2026-01-03")
