"""sql/run_attachments.sql: distinct attachment files, bytes and case rows per name and media type,
against hand-computed fixtures: each warehouse is built by hand, row by row, and the expected
numbers are worked out in the comments.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalwh.warehouse import queries
from tests.builders import fill_run_keys
from tests.sql.conftest import _warehouse


def test_run_attachments_count_distinct_files_bytes_and_case_rows(tmp_path: Path) -> None:
    # Run r: c1 img (sha a, png, 10 bytes) + doc (sha b, text, 5); c2 img a again; c3 img
    # (sha c, png, 20); c4 img (sha e, jpeg, 7); c5 no attachments. Run s: img (sha d, png, 99).
    # img png: files a, c -> 2, 10 + 20 = 30 bytes, case rows c1 c2 c3 -> 3.
    con = _warehouse(tmp_path)

    def att(sha: str, media: str, size: int) -> dict[str, Any]:
        return {"sha256": sha, "media_type": media, "bytes": size}

    png, text, jpeg = "image/png", "text/plain", "image/jpeg"
    for run, case, files in (
        ("r", "c1", {"img": att("a", png, 10), "doc": att("b", text, 5)}),
        ("r", "c2", {"img": att("a", png, 10)}),
        ("r", "c3", {"img": att("c", png, 20)}),
        ("r", "c4", {"img": att("e", jpeg, 7)}),
        ("r", "c5", None),
        ("s", "c1", {"img": att("d", png, 99)}),
    ):
        con.execute(
            "INSERT INTO cases (run_id, variant, model, case_id, repeat, attachments, cached, "
            "request_hash, attempts, score, passed, created_at) "
            "VALUES (?, 'v', 'm', ?, 0, ?, false, 'h', 1, 1, true, now())",
            [run, case, None if files is None else json.dumps(files)],
        )
        fill_run_keys(con)
    got = queries.run_query(con, "run_attachments", run_id="r").to_pylist()
    assert [(r["name"], r["media_type"], r["files"], r["bytes"], r["case_rows"]) for r in got] == [
        ("doc", text, 1, 5, 1),
        ("img", jpeg, 1, 7, 1),
        ("img", png, 2, 30, 3),
    ]
