"""The CLI's console (evalwh/cli/state.py)."""

from __future__ import annotations

import pytest

from evalwh.cli import state


@pytest.mark.parametrize("text", ["ok :thumbs_up: :x:", ":fire: label", "[bold]x[/bold] :smile:"])
def test_emoji_codes_and_markup_in_untrusted_text_print_as_typed(
    capsys: pytest.CaptureFixture[str], text: str
) -> None:
    """rich replaces ``:name:`` with an emoji unless told not to: a model output, a label or a
    suite name must print as it was stored, not as another character (and rich's emoji
    table, ~10 ms to import, is then never loaded)."""
    state.out().print(text)
    assert capsys.readouterr().out.rstrip("\n") == text
