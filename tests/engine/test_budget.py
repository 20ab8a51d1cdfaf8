"""The cost caps of a run (evalwh/engine/budget.py), such as the MCP cost cap's environment and
request checks.

The cost cap's bookkeeping (Budget), called directly: the reservation of one request, the
comparison with the cap at its boundary, and what a finished request releases and counts
(prices here are whole dollars per token, so every figure is exact); and the refusal an agent
reads when an estimate is over the cap (over_cap). The end-to-end stops are in
tests/engine/test_execute.py.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import evalwh
from evalwh.config.model import ModelSpec, Price
from evalwh.engine import budget
from evalwh.engine.budget import (
    DEFAULT_PAID_CAP_USD,
    Budget,
    CostCapError,
    mcp_cost_cap,
    over_cap,
    run_cap,
)
from evalwh.errors import CostRefusedError, UsageError
from tests.builders import eval_for
from tests.conftest import run_cli
from tests.fakes.servers import FakeLLMServer


def test_a_cost_env_var_that_is_not_a_number_names_it_and_gives_an_example() -> None:
    with pytest.raises(UsageError) as info:
        budget.ceiling({budget.ENV_CEILING: "lots"})
    assert str(info.value) == (
        "EVALWH_MCP_MAX_COST_CEILING='lots' is not a number: set it to dollars, e.g. 2.50"
    )


def test_a_negative_cost_env_var_is_refused_with_the_range_it_must_be_in() -> None:
    with pytest.raises(UsageError) as info:
        budget.ceiling({budget.ENV_CEILING: "-1"})
    assert str(info.value) == (
        "EVALWH_MCP_MAX_COST_CEILING='-1' must be a finite amount of 0 or more dollars"
    )


def test_a_cost_env_var_of_exactly_zero_dollars_is_a_valid_cap() -> None:
    assert budget.ceiling({budget.ENV_CEILING: "0"}) == 0.0
    assert budget.mcp_cost_cap(None, None, {budget.ENV_DEFAULT: "0"}) == 0.0


def test_a_negative_requested_cap_is_refused_with_the_value_it_got() -> None:
    with pytest.raises(UsageError) as info:
        budget.mcp_cost_cap(-0.5, None, {})
    assert str(info.value) == "max_cost_usd must be 0 or more dollars, got -0.5"


def test_cap_defaults_to_one_dollar_without_a_config_limit():
    assert mcp_cost_cap(None, None, {}) == 1.0


def test_cap_is_the_smaller_of_the_config_limit_and_the_mcp_default():
    assert mcp_cost_cap(None, 0.25, {}) == 0.25
    assert mcp_cost_cap(None, 3.0, {}) == 1.0
    assert mcp_cost_cap(None, 3.0, {"EVALWH_MCP_MAX_COST": "2"}) == 2.0
    assert mcp_cost_cap(None, 0.5, {"EVALWH_MCP_MAX_COST": "2"}) == 0.5


def test_the_default_never_exceeds_the_ceiling():
    env = {"EVALWH_MCP_MAX_COST": "9", "EVALWH_MCP_MAX_COST_CEILING": "4"}
    assert mcp_cost_cap(None, None, env) == 4.0


def test_a_request_within_the_ceiling_is_the_cap():
    assert mcp_cost_cap(3.0, 0.1, {}) == 3.0
    assert mcp_cost_cap(5.0, None, {}) == 5.0
    assert mcp_cost_cap(0.0, None, {}) == 0.0


def test_a_request_above_the_ceiling_is_refused_not_trimmed():
    with pytest.raises(CostCapError) as info:
        mcp_cost_cap(5.01, None, {})
    assert isinstance(info.value, CostRefusedError)
    assert info.value.exit_code == 4
    data = info.value.to_dict()
    assert data["refused"] is True
    assert data["ceiling_usd"] == 5.0
    assert data["cap_usd"] is None
    assert data["spent_usd"] == 0.0
    assert "EVALWH_MCP_MAX_COST_CEILING" in data["reason"] and "not trimmed" in data["reason"]
    assert mcp_cost_cap(20.0, None, {"EVALWH_MCP_MAX_COST_CEILING": "25"}) == 20.0


@pytest.mark.parametrize(
    ("env", "requested"),
    [
        ({"EVALWH_MCP_MAX_COST": "lots"}, None),
        ({"EVALWH_MCP_MAX_COST_CEILING": "-1"}, None),
        ({"EVALWH_MCP_MAX_COST_CEILING": "inf"}, None),
        ({}, -1.0),
        ({}, math.nan),
    ],
)
def test_bad_amounts_are_usage_errors(env, requested):
    with pytest.raises(UsageError):
        mcp_cost_cap(requested, None, env)


def test_over_cap_carries_the_numbers():
    over_cap({"cost_usd": 0.5, "calls": 10}, 0.5, {})  # equal is allowed
    with pytest.raises(CostCapError) as info:
        over_cap({"cost_usd": 0.75, "calls": 10}, 0.5, {})
    data = info.value.to_dict()
    assert (data["estimate_usd"], data["cap_usd"], data["calls"]) == (0.75, 0.5, 10)
    assert "nothing was called" in data["reason"]


# $1 per input token, $2 per output token
PRICE = Price(input_per_mtok=1e6, output_per_mtok=2e6)


def model(id: str = "m", price: Price | None = PRICE, **params: object) -> ModelSpec:
    return ModelSpec(id=id, provider="mock", model="x", params=dict(params), price=price)


def test_a_reservation_is_characters_over_4_in_and_max_tokens_out() -> None:
    budget = Budget(cap=None)
    ten = model(max_tokens=10)
    # input tokens: rendered characters // 4, and at least 1; output: max_tokens
    assert [budget.reservation(ten, chars) for chars in (0, 3, 7, 8, 20)] == [
        1 + 20,
        1 + 20,
        1 + 20,
        2 + 20,
        5 + 20,
    ]
    # max_tokens unset (or 0): 512 tokens of output
    assert budget.reservation(model(), 4) == 1 + 2 * 512
    assert budget.reservation(model(max_tokens=0), 4) == 1 + 2 * 512
    assert budget.reservation(model(), 4, default_output=100) == 1 + 200
    # no price: nothing to reserve
    assert budget.reservation(model(price=None, max_tokens=10), 400) == 0.0


def test_a_reservation_is_raised_to_the_most_one_request_of_that_model_cost() -> None:
    budget = Budget(cap=None)
    budget.settle(0.0, 5000.0, model("a"))
    assert budget.reservation(model("a", max_tokens=10), 4) == 5000.0
    assert budget.reservation(model("b", max_tokens=10), 4) == 21.0  # another model: its own
    # below $1 too: the first actual cost of a model is its largest so far
    cheap = model("c", price=Price(input_per_mtok=0.001, output_per_mtok=0.001), max_tokens=10)
    assert budget.reservation(cheap, 4) < 0.5
    budget.settle(0.0, 0.5, cheap)
    assert budget.reservation(cheap, 4) == 0.5
    budget.settle(0.0, 0.25, cheap)  # a cheaper request later does not lower it
    assert budget.reservation(cheap, 4) == 0.5


def test_a_request_that_reaches_the_cap_exactly_is_sent_and_the_next_cent_is_not() -> None:
    budget = Budget(cap=100.0)
    assert budget.reserve(60.0) and budget.reserve(40.0)  # 0 + 60 + 40 == 100: still sent
    assert budget.reserved == 100.0 and not budget.stopped
    assert budget.reserve(0.01) is False
    assert budget.reason == (
        "cost cap $100.0000 reached: $0.0000 spent, $100.0000 in flight, the next request may"
        " cost $0.0100; nothing more was sent (raise --max-cost or settings.max_cost_usd)"
    )
    # once stopped, nothing more is sent, even a request that would fit
    budget.settle(100.0, None, model())
    assert budget.reserved == 0.0
    assert budget.reserve(0.0) is False


def test_spent_and_in_flight_both_count_against_the_cap() -> None:
    budget = Budget(cap=100.0)
    assert budget.reserve(30.0)
    budget.settle(30.0, 30.0, model())
    assert (budget.spent, budget.reserved) == (30.0, 0.0)
    assert budget.reserve(30.0) and budget.reserve(40.0)  # 30 spent + 70 in flight == 100
    assert budget.reserve(1.0) is False
    assert budget.reason is not None and "$30.0000 spent, $70.0000 in flight" in budget.reason


def test_a_finished_request_releases_its_reservation_and_adds_what_it_cost() -> None:
    budget = Budget(cap=None)  # no cap: every request is sent, the books are still kept
    assert budget.reserve(50.0) and budget.reserve(25.0)
    assert budget.reserved == 75.0
    budget.settle(50.0, 20.0, model())
    assert (budget.spent, budget.reserved) == (20.0, 25.0)
    budget.settle(25.0, 30.0, model())
    assert (budget.spent, budget.reserved) == (50.0, 0.0)
    budget.settle(0.0, None, model())  # a request with no known cost (failed, unpriced)
    assert budget.spent == 50.0


def test_a_refused_run_says_why_in_full_and_names_its_error() -> None:
    from evalwh.engine.budget import CostCapError, over_cap

    with pytest.raises(CostCapError) as info:
        over_cap({"cost_usd": 1.23456789, "calls": 7}, 0.5, {"EVALWH_MCP_MAX_COST_CEILING": "7"})
    assert info.value.to_dict() == {
        "error": "CostRefusedError",
        "refused": True,
        "reason": "estimated cost $1.2346 for 7 call(s) exceeds the cap $0.5000; nothing was "
        "called or written (pass a larger max_cost_usd up to the ceiling, or select fewer "
        "models, variants or cases)",
        "estimate_usd": 1.234568,
        "cap_usd": 0.5,
        "ceiling_usd": 7.0,
        "calls": 7,
        "spent_usd": 0.0,
    }


@pytest.mark.parametrize("cost", [None, 0.0])
def test_a_run_without_an_estimated_cost_is_not_refused(cost: float | None) -> None:
    from evalwh.engine.budget import over_cap

    over_cap({"cost_usd": cost, "calls": 3}, 0.5, {})
    over_cap({"calls": 3}, 0.0, {})


@pytest.mark.parametrize(
    ("explicit", "setting", "paid", "expected"),
    [
        (0.5, 3.0, True, (0.5, "--max-cost")),
        (None, 3.0, True, (3.0, "settings.max_cost_usd")),
        (None, None, True, (DEFAULT_PAID_CAP_USD, "default")),
        (None, None, False, (None, "none")),
        (0.0, None, True, (0.0, "--max-cost")),
    ],
)
def test_run_cap_order(
    explicit: float | None,
    setting: float | None,
    paid: bool,
    expected: tuple[float | None, str],
) -> None:
    assert run_cap(explicit, setting, paid=paid) == expected


def test_paid_run_over_the_default_cap_exits_4_naming_the_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")  # the keys are checked before the cost
    # gpt-4o at $10/M output x 1000 max tokens x 201 calls ~ $2.01 > $2.00
    block = "  - {id: m, provider: openai, model: gpt-4o, params: {max_tokens: 1000}}"
    cfg = eval_for(tmp_path, block, 201)
    with pytest.raises(CostRefusedError, match=r"default cap \$2\.00") as exc:
        evalwh.validate(cfg)
    assert "--max-cost" in str(exc.value)
    done = run_cli("run", str(cfg), cwd=tmp_path, env={"OPENAI_API_KEY": "k"})
    assert done.returncode == 4 and "--max-cost" in done.stderr
    # with the cap raised, or the models faked (the mock is free), the estimate passes
    assert evalwh.validate(cfg, max_cost=5).requests == 201
    assert evalwh.validate(cfg, fake=True).requests == 201
    under = eval_for(tmp_path / "under", block, 199)
    assert evalwh.validate(under).requests == 199


@pytest.mark.parametrize(
    ("provider", "paid"),
    [
        ("anthropic", True),
        ("openai", True),
        ("openai-compatible", True),
        ("google", True),
        ("mock", False),
        ("command", False),
    ],
)
def test_the_default_cap_covers_the_documented_paid_providers(provider: str, paid: bool) -> None:
    """docs/providers.md names the providers the $2.00 default applies to: every HTTP one."""
    from evalwh.config.model import ModelSpec
    from evalwh.engine.budget import uses_paid_provider

    assert uses_paid_provider([ModelSpec(id="m", provider=provider, model="x")]) is paid


def test_default_cap_boundary_is_inclusive() -> None:
    from types import SimpleNamespace

    from evalwh.api.run import _check_cost

    _check_cost(SimpleNamespace(cost_usd=2.0, calls=1), DEFAULT_PAID_CAP_USD, "default")
    with pytest.raises(CostRefusedError, match="default cap"):
        _check_cost(SimpleNamespace(cost_usd=2.0001, calls=1), DEFAULT_PAID_CAP_USD, "default")
    with pytest.raises(CostRefusedError, match=r"\(settings\.max_cost_usd\)"):
        _check_cost(SimpleNamespace(cost_usd=1.0, calls=1), 0.5, "settings.max_cost_usd")


def test_max_cost_refuses_with_exit_4_and_writes_nothing(
    tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")  # the keys are checked before the cost
    block = f"  - {{id: m, provider: openai, model: gpt-4o, base_url: '{server.openai_url}', params: {{max_tokens: 1000}}}}"
    cfg = eval_for(tmp_path, block, 100)
    with pytest.raises(CostRefusedError, match="exceeds the maximum"):
        evalwh.run_eval(cfg, output_dir=tmp_path / "out", max_cost=0.01)
    result = run_cli(
        "run", str(cfg), "--max-cost", "0.01", cwd=tmp_path, env={"OPENAI_API_KEY": "k"}
    )
    assert result.returncode == 4 and "estimated cost $1.0" in result.stderr
    settings_cap = run_cli(
        "run", str(cfg), cwd=tmp_path, env={"EVALWH_MAX_COST_USD": "0.5", "OPENAI_API_KEY": "k"}
    )
    assert settings_cap.returncode == 4
    assert (
        server.count == 0
        and not (tmp_path / ".evalwh").exists()
        and not (tmp_path / "out").exists()
    )
    dry = run_cli("run", str(cfg), "--dry-run", cwd=tmp_path)
    assert dry.returncode == 0 and "estimate: 100 call(s), up to ~$1.0" in dry.stdout
