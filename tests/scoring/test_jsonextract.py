"""Digging JSON out of a model's prose (``extract: true``, evalwh/scoring/jsonextract.py): which
fenced block wins, where a broken one is reported, how far the scan for ``{`` and ``[`` goes
(bound in time: a reply of openers is not tried to its end), and what a value that is not text
gets.
"""

from __future__ import annotations

from evalwh.scoring.jsonextract import MAX_CANDIDATES, parse_json

FENCE = "```"


def test_extraction_is_asked_for_not_assumed() -> None:
    assert parse_json('the answer: {"a": 1}')[:2] == (False, None)
    assert parse_json('the answer: {"a": 1}', extract=True)[:2] == (True, {"a": 1})


def test_a_block_tagged_json_in_any_case_wins_over_an_earlier_untagged_one() -> None:
    text = f'{FENCE}\n[1]\n{FENCE}\nthen\n{FENCE}JSON\n{{"a": 1}}\n{FENCE}\n'
    assert parse_json(text, extract=True) == (True, {"a": 1}, {"extracted": "fenced block"})
    untagged_first = f"{FENCE}text\n[1]\n{FENCE}\n{FENCE}python\n[2]\n{FENCE}\n"
    assert parse_json(untagged_first, extract=True)[1] == [1]  # otherwise in order


def test_a_broken_fenced_block_is_reported_where_it_breaks_inside_the_block() -> None:
    text = f"intro\n{FENCE}json\n{{bad\n{FENCE}\n"
    assert parse_json(text, extract=True) == (
        False,
        None,
        {
            "error": "fenced block: invalid JSON: Expecting property name enclosed in double quotes",
            "line": 3,
            "column": 2,
            "position": 15,
        },
    )


def test_a_failed_candidate_does_not_end_the_scan() -> None:
    assert parse_json('see [oops and {"a": 1}', extract=True) == (
        True,
        {"a": 1},
        {"extracted": "embedded"},
    )


def test_the_scan_tries_at_most_max_candidates_openers() -> None:
    found = parse_json("{" * (MAX_CANDIDATES - 1) + ' {"a": 1}', extract=True)
    assert found[:2] == (True, {"a": 1})  # the last one allowed
    beyond = parse_json("{" * MAX_CANDIDATES + ' {"a": 1}', extract=True)
    assert beyond[:2] == (False, None)  # one opener too far: not tried


def test_a_value_that_is_not_text_is_invalid_json_with_the_reason() -> None:
    assert parse_json(None) == (  # type: ignore[arg-type]
        False,
        None,
        {"error": "invalid JSON: the JSON object must be str, bytes or bytearray, not NoneType"},
    )


def test_a_json_error_after_a_leading_newline_is_on_line_2() -> None:
    from evalwh.scoring.jsonextract import parse_json

    assert parse_json('\n{"a": 1 x}\n\n') == (
        False,
        None,
        {"error": "invalid JSON: Expecting ',' delimiter", "line": 2, "column": 9, "position": 9},
    )


def test_a_json_error_column_counts_from_the_nearest_newline() -> None:
    from evalwh.scoring.jsonextract import parse_json

    assert parse_json('\n\n{"a" 1}') == (
        False,
        None,
        {"error": "invalid JSON: Expecting ':' delimiter", "line": 3, "column": 6, "position": 7},
    )
