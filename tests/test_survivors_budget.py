"""The cost cap's bookkeeping (evalwh.engine.budget.Budget), called directly: the reservation
of one request, the comparison with the cap at its boundary, and what a finished request
releases and counts. The end-to-end stops are in test_datasources.py and test_boundaries.py.

Written from mutants that survived the mutation run (docs/testing.md). Prices here are whole
dollars per token, so every figure below is exact.
"""

from __future__ import annotations

from evalwh.config.model import ModelSpec, Price
from evalwh.engine.budget import Budget

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
