"""sql/slice_criterion.sql: one criterion cut by a metadata key, worst first, against hand-computed
fixtures: each warehouse is built by hand, row by row, and the expected numbers are worked out in
the comments.
"""

from __future__ import annotations

from pathlib import Path

from evalwh.warehouse import queries
from tests.sql.conftest import _case, _score, _warehouse


def test_slice_criterion_cuts_one_criterion_by_a_key_worst_first(tmp_path: Path) -> None:
    # Run r, criterion q: c1 en pass, c2 en fail, c3 fr pass, c4 (no lang) fail, c5 de pass.
    # By lang: (none) 0/1, en 1/2, then de and fr both 1/1 (by name). Whole run: 3/5.
    # Not counted: criterion x of run r, criterion q of run s.
    con = _warehouse(tmp_path)
    for case, lang, ok in (
        ("c1", "en", True),
        ("c2", "en", False),
        ("c3", "fr", True),
        ("c4", None, False),
        ("c5", "de", True),
    ):
        _case(con, "r", case, metadata={"lang": lang} if lang else {"t": 1})
        _score(con, "r", case, "q", ok)
        _score(con, "r", case, "x", not ok)
    _case(con, "s", "c1", metadata={"lang": "en"})
    _score(con, "s", "c1", "q", False)

    def sliced(key: str | None) -> list[tuple[str, int, float, float]]:
        rows = queries.run_query(con, "slice_criterion", run_id="r", key=key, criterion="q")
        return [(r["slice"], r["n"], r["pass_rate"], r["mean_score"]) for r in rows.to_pylist()]

    assert sliced("lang") == [
        ("(none)", 1, 0.0, 0.0),
        ("en", 2, 0.5, 0.5),
        ("de", 1, 1.0, 1.0),
        ("fr", 1, 1.0, 1.0),
    ]
    assert sliced(None) == [("(all)", 5, 0.6, 0.6)]
