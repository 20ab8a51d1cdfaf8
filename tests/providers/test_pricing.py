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
    assert table_price("anthropic", "claude-sonnet-4-5") == Price(3.0, 15.0)
    assert table_price("anthropic", "claude-sonnet-4-5-20250929") == Price(3.0, 15.0)
    assert table_price("anthropic", "claude-sonnet-4-5-latest") == Price(3.0, 15.0)
    assert table_price("anthropic", "claude-sonnet") is None  # no guess from a prefix
    assert table_price("nobody", "claude-sonnet-4-5") is None


def test_an_exact_dated_entry_wins_over_its_undated_name(monkeypatch: pytest.MonkeyPatch) -> None:
    table = {"providers": {"p": {"m-20250101": [1.0, 2.0], "m": [3.0, 4.0]}}}
    monkeypatch.setattr(pricing, "price_table", lambda: table)
    assert table_price("p", "m-20250101") == Price(1.0, 2.0)
    assert table_price("p", "m-20260101") == Price(3.0, 4.0)


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
