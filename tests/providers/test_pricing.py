"""Prices of paid models (evalwh/providers/pricing.py): the shipped price table's lookup, and a
paid model without a known price (or an endpoint without `price:`) refused at validation,
with the fix to give one."""

from __future__ import annotations

from pathlib import Path

import pytest

import evalwh
from evalwh.config.model import Price
from evalwh.errors import ConfigError
from evalwh.providers import pricing
from evalwh.providers.pricing import table_price
from tests.builders import eval_for


def test_the_price_table_knows_exact_names_and_names_with_a_date_suffix() -> None:
    sonnet = Price(3.0, 15.0, 0.3, 3.75)  # with its prompt cache's read and write rates
    assert table_price("anthropic", "claude-sonnet-4-5") == sonnet
    assert table_price("anthropic", "claude-sonnet-4-5-20250929") == sonnet
    assert table_price("anthropic", "claude-sonnet-4-5-latest") == sonnet
    assert table_price("openai", "gpt-4.1") == Price(2.0, 8.0, 0.5, None)  # no write price
    assert table_price("openai", "gpt-3.5-turbo") == Price(0.5, 1.5)  # no cache pricing
    assert table_price("anthropic", "claude-sonnet") is None  # no guess from a prefix
    assert table_price("nobody", "claude-sonnet-4-5") is None


def test_an_exact_dated_entry_wins_over_its_undated_name(monkeypatch: pytest.MonkeyPatch) -> None:
    table = {"providers": {"p": {"m-20250101": [1.0, 2.0], "m": [3.0, 4.0]}}}
    monkeypatch.setattr(pricing, "price_table", lambda: table)
    assert table_price("p", "m-20250101") == Price(1.0, 2.0)
    assert table_price("p", "m-20260101") == Price(3.0, 4.0)


def test_the_table_bills_anthropics_prompt_caching_example_to_the_cent() -> None:
    """Anthropic's "Prompt caching" usage example on claude-sonnet-4-5: 21 uncached input
    tokens, 188,086 written to the cache on the first call and read from it on the second,
    393 output tokens. Input is every prompt token (evalwh.providers.base.Completion)."""
    price = table_price("anthropic", "claude-sonnet-4-5")
    assert price is not None
    prompt = 21 + 188086
    # 21 x $3 + 188,086 x $3.75 + 393 x $15 per million = $0.7112805
    assert round(price.cost(prompt, 393, 0, 188086), 2) == 0.71
    # 21 x $3 + 188,086 x $0.30 + 393 x $15 per million = $0.0623838
    assert round(price.cost(prompt, 393, 188086, 0), 2) == 0.06
    # the same tokens priced as plain input would have been billed $0.57
    assert round(price.cost(prompt, 393), 2) == 0.57


def test_openais_cached_input_is_billed_at_its_own_rate() -> None:
    """gpt-4.1: 100,000 prompt tokens of which 90,000 cached, 2,000 output (reasoning
    included): 10,000 x $2 + 90,000 x $0.50 + 2,000 x $8 per million = $0.081."""
    price = table_price("openai", "gpt-4.1")
    assert price is not None
    assert price.cost(100_000, 2_000, 90_000) == pytest.approx(0.081)


def test_paid_model_without_a_price_fails_validation(tmp_path: Path) -> None:
    block = "  - {id: m, provider: anthropic, model: claude-unknown-9}"
    cfg = eval_for(tmp_path, block, 1)
    with pytest.raises(
        ConfigError, match="no known price for anthropic model 'claude-unknown-9'"
    ) as exc:
        evalwh.api.validate(cfg)
    assert "price: 0" in str(exc.value)
    local = eval_for(
        tmp_path,
        "  - {id: m, provider: openai-compatible, model: x, base_url: 'http://127.0.0.1:9'}",
        1,
    )
    with pytest.raises(ConfigError, match="no known price"):
        evalwh.api.validate(local)
