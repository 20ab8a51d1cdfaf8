"""What a judge is shown, pinned where mutation testing found it loose (docs/testing.md): the
conversation the answer replied to, and the values a judge's prompt can use."""

from __future__ import annotations

from typing import Any

import pytest

from evalwh.config.model import Case, Judge, ModelSpec
from evalwh.config.prompts import messages_from_config
from evalwh.errors import ConfigError
from evalwh.scoring.judge import DEFAULT_RUBRIC, JudgePrompts, input_text


def text(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": content}]}


# --- the conversation ----------------------------------------------------------------------


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


# --- the values a prompt can use ---------------------------------------------------------------


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
