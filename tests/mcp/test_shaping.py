"""evalwh/mcp/shaping.py: JSON-ready plain data, four significant digits, and truncation that
marks the cut and the full length."""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path

from evalwh.mcp import shaping


def test_plain_makes_json_ready_data():
    when = datetime(2026, 1, 2, 3, 4, tzinfo=timezone.utc)
    data = shaping.plain(
        {"t": when, "d": Decimal("1.5"), "nan": math.nan, "p": Path("/x"), "s": {2, 1}, "b": b"ab"}
    )
    assert data == {
        "t": "2026-01-02T03:04:00+00:00",
        "d": 1.5,
        "nan": None,
        "p": "/x",
        "s": [1, 2],
        "b": "<2 bytes>",
    }
    json.dumps(data)


def test_num_keeps_four_significant_digits():
    assert shaping.num(0.123456) == 0.1235
    assert shaping.num(8.7e-05) == 8.7e-05
    assert shaping.num(Decimal("1279")) == 1279
    assert shaping.num("218") == 218
    assert shaping.num(None) is None


def test_clip_marks_the_cut_and_the_full_length():
    assert shaping.clip("short", 10) == "short"
    cut = shaping.clip("x" * 50, 10)
    assert cut == "x" * 10 + "…[truncated: 10 of 50 chars]"


def test_clip_tree_records_every_cut_field():
    lengths: dict[str, int] = {}
    out = shaping.clip_tree(
        {"output": "a" * 30, "messages": [{"content": [{"text": "b" * 40}]}], "n": 3},
        20,
        cut=lengths,
    )
    assert lengths == {"output": 30, "messages[0].content[0].text": 40}
    assert out["output"].startswith("a" * 20) and "of 30 chars" in out["output"]
    assert out["n"] == 3
