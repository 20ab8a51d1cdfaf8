"""`evalwh prices`: the dated price table, and a config's prices and estimate (shown even when
the estimate is over the run's cap)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalwh import api
from tests.builders import eval_for
from tests.conftest import run_cli


def test_prices_show_the_dated_table_and_a_configs_prices(quickstart: Path) -> None:
    table = api.prices()
    assert table["as_of"] == "2025-08-15" and "anthropic.com/pricing" in table["source"]
    sonnet = next(r for r in table["table"] if r["model"] == "claude-sonnet-4-5")
    assert (sonnet["input_per_mtok"], sonnet["output_per_mtok"]) == (3.0, 15.0)
    assert (sonnet["cache_read_per_mtok"], sonnet["cache_write_per_mtok"]) == (0.3, 3.75)
    mine = api.prices(quickstart)["for"]
    assert [(m["id"], m["source"], m["input_per_mtok"]) for m in mine["models"]] == [
        ("mock-large", "config", 3.0),
        ("mock-small", "config", 0.25),
    ]
    assert mine["estimate"]["calls"] == 48 and mine["estimate"]["cost_usd"] > 0
    done = run_cli("prices", "--for", str(quickstart))
    assert done.returncode == 0 and "prices as of 2025-08-15" in done.stdout
    assert "estimate: 48 call(s)" in done.stdout and "mock-small" in done.stdout


def test_prices_for_a_config_over_its_cap_still_shows_the_estimate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ... and without its key: a question about prices, not a run (which would refuse both)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    block = "  - {id: m, provider: openai, model: gpt-4o, params: {max_tokens: 1000}}"
    cfg = eval_for(tmp_path, block, 300)  # ~ $3, over the default cap: a run would refuse
    mine = api.prices(cfg)["for"]
    assert mine["models"][0]["source"] == "table" and mine["estimate"]["cost_usd"] > 2.0
    assert mine["models"][0]["cache_read_per_mtok"] == 1.25  # gpt-4o's cached input


def test_prices_show_each_providers_batch_price() -> None:
    table = api.prices()
    factors = {r["provider"]: r["batch_factor"] for r in table["table"]}
    assert factors["openai"] == factors["anthropic"] == factors["google"] == 0.5
    assert "batch API" in table["batch"]
    done = run_cli("prices")
    assert done.returncode == 0 and "50 %" in done.stdout and "batch" in done.stdout
