"""LLM judges (evalwh/scoring/judge.py): how a pairwise judge's reply becomes a verdict
(``parse_winner``, ``_normal``; every accepted spelling and a rejected one near each), how the
verdicts of both orders combine (``combine``), a pointwise score's rationale, and what a judge
is shown: the conversation the answer replied to and the values a judge's prompt can use."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

import evalwh
from evalwh.config.model import Case, Criterion, Judge, ModelSpec
from evalwh.config.prompts import messages_from_config
from evalwh.errors import ConfigError
from evalwh.scoring.judge import (
    DEFAULT_RUBRIC,
    JudgePrompts,
    _normal,
    combine,
    input_text,
    judge_criterion,
    parse_score,
    parse_winner,
)
from tests.builders import DATASOURCE_JUDGED, GARBAGE_JUDGE_CONFIG
from tests.conftest import write

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


def text(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": content}]}


def test_one_question_is_shown_bare_without_the_system_prompt() -> None:
    assert input_text([text("system", "be brief"), text("user", "What is 2+2?")]) == "What is 2+2?"
    assert input_text([text("user", "hi"), text("assistant", "hello")]) == "hi\n\nhello"


def test_a_longer_conversation_names_each_turns_role_and_still_leaves_the_system_out() -> None:
    messages = [
        text("system", "be brief"),
        text("user", "q1"),
        text("assistant", "a1"),
        text("user", "q2"),
    ]
    assert input_text(messages) == "user: q1\n\nassistant: a1\n\nuser: q2"
    assert input_text(messages[1:]) == "user: q1\n\nassistant: a1\n\nuser: q2"


def test_a_part_that_is_not_text_is_shown_by_its_type() -> None:
    image = {"type": "image", "media_type": "image/png", "data": "iVBORw0KGgo="}
    message = {"role": "user", "content": [{"type": "text", "text": "What is in "}, image]}
    assert input_text([message]) == "What is in [image]"


def judge(**kwargs: Any) -> Judge:
    model = ModelSpec(id="j", provider="mock", model="j", params={}, where="judges[0].model")
    return Judge(id="j", model=model, where="judges[0]", **kwargs)


EVERY_VALUE = (
    "input={{ input }}|expected={{ expected }}|rubric={{ rubric }}|"
    "min={{ scale_min }}|max={{ scale_max }}|output={{ output }}|"
    "a={{ answer_a }}|b={{ answer_b }}|topic={{ topic }}"
)


def shown(rendered: Any) -> str:
    return "".join(part["text"] for part in rendered[0]["content"])


def test_a_custom_prompt_gets_every_value_and_empty_ones_for_the_other_kind_of_judging() -> None:
    custom = messages_from_config([{"role": "user", "content": EVERY_VALUE}])
    prompts = JudgePrompts(judge(rubric="Be exact.", scale=(1.0, 5.0), messages=custom), "e.yaml")
    case = Case(id="c", vars={"topic": "math"}, expected=4)
    assert shown(prompts.point(case, "2+2?", "four")) == (
        "input=2+2?|expected=4|rubric=Be exact.|min=1|max=5|output=four|a=|b=|topic=math"
    )
    assert shown(prompts.pair(case, "2+2?", "4", "5")) == (
        "input=2+2?|expected=4|rubric=Be exact.|min=1|max=5|output=|a=4|b=5|topic=math"
    )


def test_no_expected_answer_and_no_rubric_give_empty_text_and_the_default_rubric() -> None:
    custom = messages_from_config([{"role": "user", "content": EVERY_VALUE}])
    prompts = JudgePrompts(judge(messages=custom), "e.yaml")
    rendered = shown(prompts.point(Case(id="c", vars={"topic": "t"}), "q", "o"))
    assert rendered == (
        f"input=q|expected=|rubric={DEFAULT_RUBRIC}|min=0|max=1|output=o|a=|b=|topic=t"
    )


def test_the_default_pointwise_prompt_shows_the_answer_the_input_and_the_reference() -> None:
    prompts = JudgePrompts(judge(rubric="Be exact."), "e.yaml")
    rendered = prompts.point(Case(id="c", expected="4"), "2+2?", "the answer is four")
    everything = "\n".join(part["text"] for m in rendered for part in m["content"])
    for value in ("Be exact.", "2+2?", "the answer is four", "4"):
        assert value in everything


def test_a_broken_template_in_a_judges_prompt_is_reported_at_that_judge() -> None:

    custom = messages_from_config([{"role": "user", "content": "Grade {{ output"}])
    with pytest.raises(ConfigError) as caught:
        JudgePrompts(judge(messages=custom), "e.yaml")
    assert caught.value.file == "e.yaml"
    assert (caught.value.where or "").startswith("judges[0].messages[0]")


@pytest.mark.parametrize("no_look", [False, True])
def test_a_row_the_judges_prompt_cannot_render_errs_that_criterion_not_the_run(
    tmp_path: Path, no_look: bool
) -> None:
    """A datasource row is read during the run, after the checks: a row without a variable
    the judge's template uses ends as that criterion's error, naming the config, the judge's
    message and the variable (a no-look run stores no message), and the other rows are judged."""
    rows = [{"id": "r1", "q": "a", "topic": "maths"}, {"id": "r2", "q": "b"}]
    write(tmp_path / "s" / "0.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")
    cfg = write(
        tmp_path / "eval.yaml",
        DATASOURCE_JUDGED + ("privacy: {no_look: true}\n" if no_look else ""),
    )
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "o")
    assert result.status == "completed" and result.totals["n"] == 2
    stored = duckdb_rows(
        tmp_path / "o" / "warehouse.duckdb",
        "SELECT case_id, score, passed, error FROM scores ORDER BY case_id",
    )
    assert stored[0] == ("r1", 1.0, True, None)
    case_id, score, passed, error = stored[1]
    assert (case_id, score, passed) == ("r2", 0.0, False)
    if no_look:  # a no-look run stores that a criterion erred, never its message
        assert error == "error"
    else:
        prefix = f"judge 'j' prompt did not render: {tmp_path / 'eval.yaml'}: judges[0].messages[0]"
        assert error.startswith(prefix) and "'topic' is undefined" in error


def duckdb_rows(path: Path, sql: str) -> list[tuple[Any, ...]]:

    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute(sql).fetchall()


@pytest.mark.parametrize(
    ("reply", "scale", "score", "raw"),
    [
        ('{"score": 1, "rationale": "ok"}', (0, 1), 1.0, 1.0),
        ('Here you go:\n```json\n{"score": 4, "reasoning": "good"}\n```', (1, 5), 0.75, 4.0),
        ("I think it is decent. Score: 3/5", (1, 5), 0.5, 3.0),
        ("Rating = 0.8", (0, 1), 0.8, 0.8),
        ("**Score:** 7 / 10", (0, 1), 0.7, 0.7),
        ('{"score": "5 (excellent)"}', (1, 5), 1.0, 5.0),
        ('{"score": true}', (0, 1), 1.0, 1.0),
        ('{"score": false}', (0, 1), 0.0, 0.0),
        ('{"rating": 4}', (1, 5), 0.75, 4.0),
        ('{"grade": 2}', (1, 5), 0.25, 2.0),
        # a fraction on another scale is rescaled onto the judge's: 4/5 of 1..10 is 8.2
        ("I would say 4/5 overall.", (1, 10), 0.8, 8.2),
        ("Score: 3/4", (0, 10), 0.75, 7.5),
    ],
)
def test_score_replies_are_parsed_leniently(
    reply: str, scale: tuple[float, float], score: float, raw: float
) -> None:
    result = parse_score(reply, scale)
    assert result.error is None
    assert result.score == pytest.approx(score)
    assert result.details == {"raw_score": pytest.approx(raw)}


@pytest.mark.parametrize("reply", ["I cannot grade this.", "", '{"verdict": "good"}', "Score: 9"])
def test_unusable_score_is_an_error_not_a_crash(reply: str) -> None:
    result = parse_score(reply, (1, 5))
    assert result.error is not None and result.score == 0.0


@pytest.mark.parametrize(
    ("reply", "winner"),
    [
        ('{"winner": "B", "rationale": "x"}', "B"),
        ('```json\n{"verdict": "tie"}\n```', "tie"),
        ("After comparing both, the better answer is A.", "A"),
        ("Winner: **B**", "B"),
        ("A", "A"),
        ("They are equally good. Verdict: tie", "tie"),
        ("no idea", "invalid"),
    ],
)
def test_pairwise_replies(reply: str, winner: str) -> None:
    assert parse_winner(reply)[0] == winner


def test_a_win_needs_both_orders() -> None:
    # AB: A is the baseline; BA: A is the candidate.
    assert combine("B", "A") == ("candidate", False)
    assert combine("A", "B") == ("baseline", False)
    assert combine("A", "A") == ("tie", True)  # position bias: the first answer always wins
    assert combine("B", "tie") == ("tie", True)
    assert combine("tie", "tie") == ("tie", False)
    assert combine("invalid", "A") == ("tie", False)


def test_a_garbage_judge_reply_fails_one_criterion_only(tmp_path: Path) -> None:
    cfg = write(tmp_path / "eval.yaml", GARBAGE_JUDGE_CONFIG)
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert (
        result.status == "completed" and result.totals["n"] == 2 and result.totals["n_errors"] == 0
    )
    with duckdb.connect(str(tmp_path / "out" / "warehouse.duckdb"), read_only=True) as con:
        rows = con.execute(
            "SELECT case_id, criterion, passed, error FROM scores ORDER BY ALL"
        ).fetchall()
    assert rows[0] == ("a", "exact", True, None) and rows[1] == ("a", "judged", True, None)
    assert rows[2] == ("b", "exact", True, None)
    assert rows[3][:3] == ("b", "judged", False) and "no usable score" in rows[3][3]
    # pointwise calibration counts the judged, labelled answers (the broken reply is left out)
    point = result.pairwise["pointwise"][0]
    assert point["criterion"] == "judged" and point["n_labels"] == 1 and point["agreement"] == 1.0


FAILING_JUDGE = """\
models:
  - {id: m, provider: mock, mock: {default: "an answer"}}
variants:
  - id: v
    messages: [{role: user, content: "{{ q }}"}]
cases:
  - {id: fine, vars: {q: one}}
  - {id: broken, vars: {q: two}}
judges:
  - id: j
    scale: {min: 1, max: 5}
    model:
      id: jm
      provider: mock
      max_retries: 0
      mock:
        rules:
          - when: {case: broken}
            error: judge exploded on the answer an answer
        default: '{"score": 4}'
scorecard:
  - {name: judged, type: llm-judge, judge: j}
"""


@pytest.mark.parametrize(
    ("privacy", "stored"),
    [
        ("", "judge 'j' failed: mock: judge exploded on the answer an answer"),
        # a no-look run stores that a criterion erred, never the text (it may echo the answer)
        ("privacy: {no_look: true}\n", "error"),
    ],
)
def test_a_failed_judge_request_scores_zero_with_the_reason_and_the_run_goes_on(
    tmp_path: Path, privacy: str, stored: str
) -> None:
    cfg = write(tmp_path / "eval.yaml", FAILING_JUDGE + privacy)
    evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    with duckdb.connect(str(tmp_path / "out" / "warehouse.duckdb"), read_only=True) as con:
        rows = con.execute(
            "SELECT case_id, score, error, judge_model, raw_score FROM scores "
            "WHERE criterion = 'judged' ORDER BY case_id"
        ).fetchall()
    assert rows == [("broken", 0.0, stored, "jm", None), ("fine", 0.75, None, "jm", 4.0)]


def test_the_judge_is_shown_the_question_the_answer_was_given(tmp_path: Path) -> None:
    # the judge scores 5 only when its prompt holds the case's question
    cfg = write(
        tmp_path / "eval.yaml",
        FAILING_JUDGE.replace(
            "          - when: {case: broken}\n"
            "            error: judge exploded on the answer an answer\n",
            "          - when: {prompt: 'what is two plus two'}\n"
            "            reply: '{\"score\": 5}'\n",
        ).replace("vars: {q: two}", "vars: {q: what is two plus two}"),
    )
    evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    with duckdb.connect(str(tmp_path / "out" / "warehouse.duckdb"), read_only=True) as con:
        rows = con.execute(
            "SELECT case_id, raw_score FROM scores WHERE criterion = 'judged' ORDER BY case_id"
        ).fetchall()
    assert rows == [("broken", 5.0), ("fine", 4.0)]


def no_score(reply: str) -> str | None:
    from evalwh.scoring.judge import parse_score

    return parse_score(reply, (0.0, 1.0)).error


def test_an_unusable_judge_reply_is_quoted_with_its_spaces_squeezed() -> None:
    assert no_score("no  idea\n at all") == "judge reply has no usable score: 'no idea at all'"


def test_an_unusable_judge_reply_of_160_characters_is_quoted_whole() -> None:
    assert no_score("y" * 160) == "judge reply has no usable score: '" + "y" * 160 + "'"


def test_an_unusable_judge_reply_of_161_characters_is_cut_at_160_with_an_ellipsis() -> None:
    assert no_score("y" * 161) == "judge reply has no usable score: '" + "y" * 160 + "…'"


def test_the_judge_placeholder_is_an_error_if_called_synchronously() -> None:
    crit = Criterion(name="j", type="llm-judge", options={"judge": "ref"})
    placeholder = judge_criterion(crit, None, "eval.yaml")
    result = placeholder("answer", Case(id="c"))
    assert (result.score, result.error) == (
        0.0,
        "llm-judge criteria are scored by the engine, not synchronously",
    )
    assert (placeholder.is_judge, placeholder.judge_id) == (True, "ref")


def test_a_judges_rationale_is_kept_with_its_score() -> None:
    result = parse_score('{"score": 4, "rationale": "names the capital"}', (1.0, 5.0))
    assert (result.score, result.rationale, result.details) == (
        0.75,
        "names the capital",
        {"raw_score": 4.0},
    )
