"""Tests that kill mutants mutmut found alive in evalwh/scoring/judge.py: how a pairwise
judge's reply becomes a verdict (`parse_winner`, `_normal`) and how the verdicts of both
orders combine (`combine`). Every accepted spelling and a rejected one near each is pinned;
each test names the behaviour it pins."""

from __future__ import annotations

import pytest

from evalwh.scoring.judge import _normal, combine, parse_score, parse_winner

VERDICT_KEYS = ["winner", "verdict", "better", "preference", "choice"]
RATIONALE_KEYS = ["rationale", "reasoning", "explanation", "reason", "justification"]


# -- JSON replies ------------------------------------------------------------------------------
@pytest.mark.parametrize("key", VERDICT_KEYS)
def test_each_verdict_key_of_a_json_reply_is_read(key: str) -> None:
    # "both" is a tie word only _normal knows: the text fallback could not find it.
    assert parse_winner(f'{{"{key}": "both"}}') == ("tie", None)


@pytest.mark.parametrize("key", ["WINNER", "Verdict", "winners", "XXchoiceXX", "result"])
def test_other_json_keys_are_not_verdict_keys(key: str) -> None:
    assert parse_winner(f'{{"{key}": "both"}}') == ("invalid", None)


def test_a_verdict_key_whose_value_is_null_is_skipped_for_the_next_key() -> None:
    assert parse_winner('{"winner": null, "verdict": "both"}') == ("tie", None)
    assert parse_winner('{"winner": null}') == ("invalid", None)


def test_the_first_present_verdict_key_wins_over_later_ones() -> None:
    assert parse_winner('{"choice": "B", "winner": "A"}') == ("A", None)


def test_a_json_object_inside_prose_is_extracted_with_its_rationale() -> None:
    reply = 'Having compared both: {"winner": "B", "rationale": "clearer"} That is all.'
    assert parse_winner(reply) == ("B", "clearer")
    assert parse_winner('Verdict follows {"winner": "both"}') == ("tie", None)


def test_a_fenced_json_reply_keeps_its_rationale() -> None:
    assert parse_winner('```json\n{"winner": "A", "reason": "shorter"}\n```') == ("A", "shorter")


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [('"A"', "A"), ('"tie"', "tie"), ('["B"]', "invalid"), ("1", "invalid"), ("null", "invalid")],
)
def test_a_json_reply_that_is_not_an_object_falls_back_to_the_text(
    reply: str, verdict: str
) -> None:
    assert parse_winner(reply) == (verdict, None)


# -- rationale ---------------------------------------------------------------------------------
@pytest.mark.parametrize("key", RATIONALE_KEYS)
def test_each_rationale_key_is_returned_with_the_verdict(key: str) -> None:
    assert parse_winner(f'{{"winner": "A", "{key}": "because"}}') == ("A", "because")


def test_the_rationale_is_the_first_non_empty_rationale_key() -> None:
    reply = '{"justification": "fifth", "rationale": "", "reasoning": null, "explanation": "third"}'
    assert parse_winner(reply) == ("invalid", "third")
    assert parse_winner('{"winner": "B", "reason": "r", "rationale": "first"}') == ("B", "first")


def test_a_non_string_rationale_is_turned_into_text() -> None:
    assert parse_winner('{"winner": "A", "rationale": 42}') == ("A", "42")


def test_an_unknown_rationale_key_gives_no_rationale() -> None:
    assert parse_winner('{"winner": "A", "comment": "x", "Rationale": "y"}') == ("A", None)


def test_a_rationale_is_kept_when_the_verdict_comes_from_the_text() -> None:
    reply = '{"rationale": "close call"}\nWinner: B'
    assert parse_winner(reply) == ("B", "close call")


# -- verdict words (_normal) ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("word", "verdict"),
    [
        ("a", "A"),
        ("A", "A"),
        ("answer a", "A"),
        ("Answer A", "A"),
        ("ANSWER A", "A"),
        ("b", "B"),
        ("B", "B"),
        ("answer b", "B"),
        ("Answer B", "B"),
        ("ANSWER B", "B"),
        ("tie", "tie"),
        ("TIE", "tie"),
        ("draw", "tie"),
        ("Draw", "tie"),
        ("equal", "tie"),
        ("EQUAL", "tie"),
        ("neither", "tie"),
        ("Neither", "tie"),
        ("both", "tie"),
        ("BOTH", "tie"),
    ],
)
def test_each_accepted_verdict_word_in_any_case(word: str, verdict: str) -> None:
    assert _normal(word) == verdict
    assert parse_winner(f'{{"winner": "{word}"}}') == (verdict, None)


@pytest.mark.parametrize(
    ("word", "verdict"),
    [
        ("**B**", "B"),
        ('"A"', "A"),
        ("'tie'", "tie"),
        ("B.", "B"),
        ("  *Answer A*.  ", "A"),
        (" draw ", "tie"),
        ("'\"*.equal.*\"'", "tie"),
    ],
)
def test_surrounding_quotes_asterisks_periods_and_spaces_are_stripped(
    word: str, verdict: str
) -> None:
    assert _normal(word) == verdict


@pytest.mark.parametrize(
    "word", ["", "C", "XB", "AX", "XtieX", "answer  a", "answer c", "a b", "-A-", "(B)", "ties"]
)
def test_other_words_are_invalid(word: str) -> None:
    assert _normal(word) == "invalid"
    assert parse_winner(f'{{"winner": "{word}"}}') == ("invalid", None)


# -- text and bare replies ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ("A", "A"),
        ("B", "B"),
        ("b", "B"),
        ("tie", "tie"),
        ("Tie.", "tie"),
        ("**B**", "B"),
        ('"A"', "A"),
        ("'b'.", "B"),
        ("  *A*  ", "A"),
    ],
)
def test_a_bare_reply_of_a_b_or_tie_is_read_after_stripping(reply: str, verdict: str) -> None:
    assert parse_winner(reply) == (verdict, None)


@pytest.mark.parametrize("reply", ["XB", "AX", "XTIEX", "C", "draw", "(A)", "A B", "", "-B"])
def test_any_other_bare_reply_is_invalid(reply: str) -> None:
    assert parse_winner(reply) == ("invalid", None)


# -- combining both orders ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("ab", "ba", "result"),
    [
        # AB order: A is the baseline; BA order: A is the candidate.
        ("B", "A", ("candidate", False)),
        ("A", "B", ("baseline", False)),
        ("tie", "A", ("tie", True)),
        ("tie", "B", ("tie", True)),
        ("A", "tie", ("tie", True)),
        ("B", "B", ("tie", True)),
        ("tie", "tie", ("tie", False)),
    ],
)
def test_the_second_order_maps_a_to_candidate_and_b_to_baseline(
    ab: str, ba: str, result: tuple[str, bool]
) -> None:
    assert combine(ab, ba) == result


@pytest.mark.parametrize(
    ("ab", "ba"),
    [
        ("A", "invalid"),
        ("B", "invalid"),
        ("tie", "invalid"),
        ("invalid", "B"),
        ("invalid", "tie"),
        ("invalid", "invalid"),
        ("A", "TIE"),
        ("TIE", "B"),
        ("A", "a"),
    ],
)
def test_an_invalid_or_unknown_verdict_in_either_order_is_a_tie_and_not_a_flip(
    ab: str, ba: str
) -> None:
    assert combine(ab, ba) == ("tie", False)


# -- pointwise scores: the rationale (the scores themselves: test_judging.py) -----------------
@pytest.mark.parametrize(
    "key", ["rationale", "reasoning", "explanation", "reason", "justification"]
)
def test_a_scores_rationale_is_read_from_each_rationale_key(key: str) -> None:
    result = parse_score(f'{{"score": 1, "{key}": "cites the source"}}', (0.0, 1.0))
    assert (result.score, result.rationale) == (1.0, "cites the source")


def test_a_score_without_a_rationale_has_none() -> None:
    assert parse_score('{"score": 1, "notes": "x"}', (0.0, 1.0)).rationale is None
