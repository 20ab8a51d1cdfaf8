"""The mock provider (evalwh/providers/mock.py, docs/providers.md), called directly: which
rule fires, what a reply template is given, a rule's error (retryable only when transient),
a rate drawn stably per cell and again per attempt for transient errors, its latency (fixed
or a deterministic draw from a range, through a recorded sleep) and the token counts, and
the config errors of its patterns and templates."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from evalwh.config.model import Case, ModelSpec
from evalwh.errors import ConfigError
from evalwh.providers import mock as mockmod
from evalwh.providers.base import ProviderError, Request
from evalwh.providers.mock import MockProvider


def provider(**script: Any) -> MockProvider:
    return MockProvider(ModelSpec("m", "mock", "mock", options={"mock": script}, where="models[0]"))


def ask(
    mock: MockProvider,
    text: str = "hello",
    case: Case | None = None,
    variant: str = "v",
    repeat: int = 0,
    attempt: int = 1,
) -> Any:
    messages = [{"role": "user", "content": [{"type": "text", "text": text}]}]
    request = Request(
        model=mock.spec,
        messages=messages,
        case=case or Case("c1"),
        variant=variant,
        repeat=repeat,
        attempt=attempt,
    )
    return asyncio.run(mock.complete(request))


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(mockmod.asyncio, "sleep", sleep)
    return waits


def test_each_condition_of_a_rule_must_hold_for_it_to_fire(slept: list[float]) -> None:
    mock = provider(
        rules=[
            {
                "when": {"case": ["c1", "c2"], "variant": "v", "metadata": {"lang": 1}},
                "reply": "all three",
            },
            {"when": {"prompt": "ask me$"}, "reply": "by prompt"},
        ],
        default="default",
    )
    both = Case("c2", metadata={"lang": "1"})  # compared as text
    assert ask(mock, case=both).text == "all three"
    assert ask(mock, case=Case("c3", metadata={"lang": 1})).text == "default"
    assert ask(mock, case=both, variant="w").text == "default"
    assert ask(mock, case=Case("c1", metadata={"lang": 2})).text == "default"
    assert ask(mock, "ask me").text == "by prompt" and ask(mock, "ask you").text == "default"


def test_a_reply_template_is_given_the_case_the_variant_the_model_and_the_prompt() -> None:
    mock = provider(
        default="{{ q }}|{{ vars.q }}|{{ expected }}|{{ case.id }}|{{ case.metadata.t }}|"
        "{{ variant }}|{{ model }}|{{ prompt }}"
    )
    case = Case("c9", vars={"q": "why"}, metadata={"t": "x"})
    assert ask(mock, "hi", case=case, variant="v2").text == "why|why||c9|x|v2|m|user: hi"
    with_expected = Case("c9", vars={"q": "why"}, expected="because", metadata={"t": "x"})
    assert ask(mock, "hi", case=with_expected).text.split("|")[2] == "because"


def test_a_rules_error_is_a_provider_error_retryable_only_when_transient() -> None:
    for transient in (False, True):
        mock = provider(rules=[{"error": "boom", "transient": transient}])
        with pytest.raises(ProviderError) as caught:
            ask(mock)
        assert str(caught.value) == "mock: boom"
        assert (caught.value.retryable, caught.value.kind) == (transient, "provider")


def test_a_rate_fires_on_a_stable_share_and_a_transient_error_draws_again_per_attempt() -> None:
    half = provider(rules=[{"rate": 0.5, "reply": "hit"}], default="miss")
    cases = [Case(f"c{i}") for i in range(200)]
    hits = [ask(half, case=c).text == "hit" for c in cases]
    assert 70 < sum(hits) < 130  # about half
    assert hits == [ask(half, case=c).text == "hit" for c in cases]  # the same cells again
    always = provider(rules=[{"rate": 1.0, "reply": "hit"}], default="miss")
    assert all(ask(always, case=c).text == "hit" for c in cases[:20])
    flaky = provider(rules=[{"rate": 0.5, "error": "blip", "transient": True}], default="ok")

    def outcomes(attempt: int) -> list[str]:
        out = []
        for c in cases[:40]:
            try:
                out.append(ask(flaky, case=c, attempt=attempt).text)
            except ProviderError:
                out.append("error")
        return out

    first = outcomes(1)
    assert "error" in first and "ok" in first  # drawn per cell ...
    assert first != outcomes(2)  # ... and again per attempt: a retry may get through
    steady = provider(rules=[{"rate": 0.5, "error": "down"}], default="ok")
    for c in cases[:20]:  # a lasting error stays on its cells, whatever the attempt
        first = [_outcome(steady, c, attempt) for attempt in (1, 2, 3)]
        assert len(set(first)) == 1


def _outcome(mock: MockProvider, case: Case, attempt: int) -> str:
    try:
        return str(ask(mock, case=case, attempt=attempt).text)
    except ProviderError:
        return "error"


def test_latency_is_fixed_or_drawn_from_its_range_per_cell_and_a_rule_may_set_its_own(
    slept: list[float],
) -> None:
    ask(provider(latency_ms=250))
    assert slept == [0.25]
    slept.clear()
    ask(provider(latency_ms=250, rules=[{"latency_ms": 0, "reply": "fast"}]))
    ask(provider())  # none at all
    assert slept == []  # no sleep for no latency
    ranged = provider(latency_ms=[100, 300])
    for case, variant, repeat in [("a", "v", 0), ("b", "v", 0), ("a", "w", 0), ("a", "v", 1)]:
        ask(ranged, case=Case(case), variant=variant, repeat=repeat)
    assert all(0.1 <= s <= 0.3 for s in slept) and len(set(slept)) == 4
    again = list(slept)
    slept.clear()
    for case, variant, repeat in [("a", "v", 0), ("b", "v", 0), ("a", "w", 0), ("a", "v", 1)]:
        ask(ranged, case=Case(case), variant=variant, repeat=repeat)
    assert slept == again  # the same cells wait the same
    draw = mockmod._draw("latency", "m", "v", "a", 0)
    assert again[0] == pytest.approx((100 + 200 * draw) / 1000)


@pytest.mark.parametrize(("text", "tokens"), [("", 1), ("abcd", 1), ("abcde", 2), ("x" * 17, 5)])
def test_tokens_are_a_quarter_of_the_characters_rounded_up_and_at_least_one(
    text: str, tokens: int
) -> None:
    done = ask(provider(default=text), text="12345678")  # the prompt: "user: 12345678"
    assert (done.input_tokens, done.output_tokens) == (4, tokens)


def test_a_bad_prompt_pattern_names_its_rule_and_the_fix() -> None:
    spec = ModelSpec(
        "m",
        "mock",
        "mock",
        options={"mock": {"rules": [{}, {"when": {"prompt": "a("}}]}},
        where="models[0]",
    )
    with pytest.raises(ConfigError) as caught:
        MockProvider.check(spec, "eval.yaml")
    error = caught.value
    assert error.message.startswith("bad regular expression in when.prompt: missing )")
    assert (error.file, error.where, error.fix) == (
        "eval.yaml",
        "models[0].mock.rules[1].when.prompt",
        "fix the pattern (Python re syntax)",
    )


def test_a_broken_reply_template_in_a_rule_is_a_config_error_at_the_rule() -> None:
    with pytest.raises(ConfigError) as caught:
        provider(rules=[{"reply": "{{ unclosed"}])
    assert caught.value.file == "" and caught.value.where == "models[0].mock.rules[0].reply"


def test_a_broken_default_reply_is_a_config_error_naming_no_made_up_file() -> None:
    # built without a file (the config was checked before, with its file named)
    with pytest.raises(ConfigError) as built:
        provider(default="{{ unclosed")
    spec = ModelSpec(
        "m", "mock", "mock", options={"mock": {"default": "{% if %}"}}, where="models[0]"
    )
    with pytest.raises(ConfigError) as checked:
        MockProvider.check(spec)
    for caught in (built, checked):
        assert (caught.value.file, caught.value.where) == ("", "models[0].mock.default")
    with pytest.raises(ConfigError) as named:
        MockProvider.check(spec, "eval.yaml")
    assert named.value.file == "eval.yaml"


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        ("{{ q | attr(n) }}", "mock: reply template sandbox violation: "),
        ("{{ q.missing }}", "mock: reply template failed: "),
    ],
)
def test_a_reply_template_failing_on_a_case_is_a_provider_error_of_that_cell(
    reply: str, said: str
) -> None:
    # found only at render (the attribute comes from the case): one cell's error, not the run's
    with pytest.raises(ProviderError) as caught:
        ask(provider(default=reply), case=Case("c1", vars={"q": {}, "n": "__class__"}))
    assert str(caught.value).startswith(said)
    assert (caught.value.kind, caught.value.retryable) == ("provider", False)


def test_a_rule_scripts_a_tool_loops_calls_by_turn() -> None:
    from evalwh.config.tools import ToolSpec, ToolUse

    tools = ToolUse((ToolSpec("search", "", {"type": "object"}, "mock", []),))
    mock = provider(
        default="done",
        rules=[
            {"when": {"turn": 0}, "tool_calls": [{"name": "search", "arguments": {"q": "x"}}]},
            {
                "when": {"turn": 1, "prompt": "found it"},
                "reply": "one more",
                "tool_calls": [{"name": "search"}],
            },
        ],
    )
    user = {"role": "user", "content": [{"type": "text", "text": "hi"}]}

    def turn(*messages: dict[str, Any]) -> Any:
        request = Request(
            model=mock.spec, messages=[user, *messages], case=Case("c1"), variant="v", tools=tools
        )
        return asyncio.run(mock.complete(request))

    first = turn()
    assert (first.text, first.finish_reason) == ("", "tool_calls")
    assert first.tool_calls == [{"id": "call_0_0", "name": "search", "arguments": {"q": "x"}}]
    answered = {"role": "assistant", "content": [], "tool_calls": first.tool_calls}
    result = {
        "role": "tool",
        "content": [{"type": "text", "text": "found it"}],
        "tool_call_id": "call_0_0",
        "name": "search",
        "is_error": False,
    }
    second = turn(answered, result)  # the rule reads the tool's result in the prompt
    assert (second.text, second.tool_calls) == (
        "one more",
        [{"id": "call_1_0", "name": "search", "arguments": {}}],
    )
    third = turn(answered, result, {**answered, "tool_calls": second.tool_calls}, result)
    assert (third.text, third.tool_calls, third.finish_reason) == ("done", None, None)
    # offered no tools, a rule's calls are not made (a variant without tools)
    plain = asyncio.run(
        mock.complete(Request(model=mock.spec, messages=[user], case=Case("c1"), variant="v"))
    )
    assert plain.tool_calls is None
