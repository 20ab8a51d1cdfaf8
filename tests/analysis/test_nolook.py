"""What a no-look run shows (evalwh/analysis/nolook.py): a row keeps its scores and drops the
hidden keys (output, rationale, details) from its criteria, leaving other entries and the
caller's row as they were."""

from __future__ import annotations

from evalwh.analysis.nolook import minimal


def test_a_no_look_row_drops_hidden_keys_from_its_criteria_and_keeps_other_entries() -> None:
    tone = {"name": "tone", "score": 1.0, "rationale": "polite", "details": {"x": 1}}
    row = {
        "case_id": "c1",
        "output": "secret answer",
        "score": 0.5,
        "criteria": [
            tone,
            "legacy",
            None,
        ],
    }
    assert minimal(row) == {
        "case_id": "c1",
        "score": 0.5,
        "criteria": [{"name": "tone", "score": 1.0}, "legacy", None],
    }
    assert tone["rationale"] == "polite"  # the caller's row is left as it was
