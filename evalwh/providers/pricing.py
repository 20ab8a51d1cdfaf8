"""Token prices: a dated table shipped in the package, overridden per model by ``price:``.

Each table entry is ``[input, output]`` USD per million tokens, followed by the prompt cache's
``cache_read`` (and ``cache_write``) rates where the provider prices them apart; a rate not
given is the input price (:meth:`evalwh.config.model.Price.cost`).

A paid provider (one whose class sets ``paid = True``) must know the price of every model it
runs: from ``price:`` in eval.yaml, or from the table. An unknown price is a validation error,
never a silent $0. Local models say ``price: 0``.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any

from evalwh.config.model import ModelSpec, Price
from evalwh.errors import ConfigError

# Dated snapshots such as claude-3-5-sonnet-20241022 or gpt-4o-2024-08-06 price like their family.
_DATE_SUFFIX = re.compile(r"(-\d{8}|-\d{4}-\d{2}-\d{2}|-latest)$")


@cache
def price_table() -> dict[str, Any]:
    table: dict[str, Any] = json.loads(
        resources.files("evalwh.providers").joinpath("prices.json").read_text("utf-8")
    )
    return table


def table_price(provider: str, model: str) -> Price | None:
    models = price_table()["providers"].get(provider, {})
    # Exact names only (after a date suffix): a guess from a prefix could be a wrong price.
    entry = models.get(model) or models.get(_DATE_SUFFIX.sub("", model))
    if not entry:
        return None
    # [input, output] and, where the provider prices its prompt cache, cache_read, cache_write
    cached = [float(v) for v in entry[2:4]] + [None, None]
    return Price(float(entry[0]), float(entry[1]), cached[0], cached[1])


def batch_factor(provider: str) -> float:
    """The price of a batch answer of ``provider`` as a factor of its list price (0.5: half);
    1.0 for a provider the table gives no batch price."""
    return float(price_table().get("batch", {}).get("factor", {}).get(provider, 1.0))


def price_for(spec: ModelSpec, *, paid: bool, file: str | None = None) -> Price | None:
    """The price of a model, or None for a free provider with no price given."""
    if spec.price is not None:
        return spec.price
    found = table_price(spec.provider, spec.model)
    if found is None and paid:
        table = price_table()
        raise ConfigError(
            f"no known price for {spec.provider} model '{spec.model}' "
            f"(the shipped table, dated {table['as_of']}, does not list it)",
            file=file,
            where=spec.where,
            fix="add `price: {input_per_mtok: ..., output_per_mtok: ...}` to the model, "
            "or `price: 0` for a local model",
        )
    return found
