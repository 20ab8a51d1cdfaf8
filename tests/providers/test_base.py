"""What every provider shares (evalwh/providers/base.py): the prompt text rule-matching
reads, and a provider error's defaults."""

from __future__ import annotations

from evalwh.providers.base import ProviderError, message_text, prompt_text


def test_the_prompt_text_is_each_message_by_role_a_blank_line_apart() -> None:
    messages = [
        {"role": "system", "content": [{"type": "text", "text": "be brief"}]},
        {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image"}]},
    ]
    assert prompt_text(messages) == "system: be brief\n\nuser: hi"


def test_a_text_part_without_text_adds_nothing() -> None:
    message = {"content": [{"type": "text"}, {"type": "image"}, {"type": "text", "text": "a"}]}
    assert message_text(message) == "a"


def test_a_provider_error_is_final_unless_it_says_otherwise() -> None:
    error = ProviderError("bad request")
    assert (error.retryable, error.retry_after, error.status, error.kind) == (
        False,
        None,
        None,
        "provider",
    )
