"""Command-line changes to a config's model matrix, applied before the run is planned.

- ``--fake``: every model (and judge) is answered by the deterministic mock provider, under
  the same ids and with the prices the real ones would have (from ``price:`` or the shipped
  table), so a suite is dry-run end to end with no key and the estimate still means something.
- ``--model a,b``: comma lists as well as repeats (:func:`split_models`).
- ``--model provider/model`` naming no model of the config, with a known provider before the
  slash: that model joins the matrix under the id ``provider/model``
  (``--model anthropic/claude-sonnet-4-5``), beside the config's models (or the ones the other
  ``--model`` values select).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from fnmatch import fnmatchcase

from evalwh.config.model import EvalConfig, Judge, ModelSpec

FAKE_PROVIDER = "mock"
FAKED = "faked_provider"  # the option of a faked model that names its real provider
# providers an ad-hoc ``provider/model`` may name: not ``command`` (it runs a program, which
# needs its own entry in eval.yaml; an MCP client could otherwise reach it past --allow-code)
NOT_ADHOC = frozenset({"command"})


def split_models(values: Sequence[str]) -> list[str]:
    """``["a,b", "c"]`` -> ``["a", "b", "c"]`` (blanks dropped, order kept, no repeats)."""
    parts = [p.strip() for value in values for p in value.split(",")]
    return list(dict.fromkeys(p for p in parts if p))


def adhoc_models(config: EvalConfig, values: Sequence[str]) -> tuple[list[ModelSpec], list[str]]:
    """Split ``--model`` values into models to add (``provider/model`` strings that match no
    model of the config and name a known provider) and the rest (filters by id)."""
    from evalwh import providers

    known = providers.available()
    added: list[ModelSpec] = []
    filters: list[str] = []
    for value in values:
        provider, sep, model = value.partition("/")
        matches = any(fnmatchcase(m.id, value) for m in config.models)
        if sep and model and provider in known and provider not in NOT_ADHOC and not matches:
            added.append(
                ModelSpec(
                    id=value,
                    provider=provider,
                    model=model,
                    where=f"--model {value}",
                    root=config.root,
                )
            )
        else:
            filters.append(value)
    return added, filters


def with_models(
    config: EvalConfig, values: Sequence[str], *, fake: bool
) -> tuple[EvalConfig, list[str]]:
    """The config with ad-hoc models added (and every model faked when ``fake``), and the
    ``--model`` values left to filter by. With ad-hoc models and no filter, the config's own
    models stay in the matrix; with filters, the filters pick among them."""
    added, filters = adhoc_models(config, split_models(values))
    if added:
        ids = {m.id for m in config.models}
        models = [*config.models, *(m for m in added if m.id not in ids)]
        if filters:
            filters = [*filters, *(m.id for m in added)]
        config = replace(config, models=models)
    if fake:
        config = fake_models(config)
    return config, filters


def fake_spec(spec: ModelSpec) -> ModelSpec:
    """``spec`` answered by the mock: same id, params and price, no provider options but the
    provider it stands for (``faked_provider``)."""
    from evalwh.providers.pricing import table_price

    price = spec.price if spec.price is not None else table_price(spec.provider, spec.model)
    options = {FAKED: spec.provider}
    return replace(
        spec, provider=FAKE_PROVIDER, options=options, price=price, max_retries=0, timeout_s=10.0
    )


def real_spec(spec: ModelSpec) -> ModelSpec:
    """The model a faked one stands for (``spec`` itself when it is not faked): what its
    provider accepts and how it counts an image's tokens hold for the fake run as well, so
    ``--fake`` refuses and estimates a multimodal suite as the real run would."""
    faked = spec.options.get(FAKED)
    return replace(spec, provider=str(faked)) if faked else spec


def fake_models(config: EvalConfig) -> EvalConfig:
    judges = [
        Judge(j.id, fake_spec(j.model), j.rubric, j.messages, j.scale, j.where)
        for j in config.judges
    ]
    # the stored snapshot (runs.config_snapshot) says the run was faked, and by what
    raw = {**config.raw, "fake": True}
    raw["models"] = [
        {**m, "provider": FAKE_PROVIDER, "faked_provider": m.get("provider")}
        if isinstance(m, dict)
        else m
        for m in config.raw.get("models") or []
    ]
    models = [fake_spec(m) for m in config.models]
    embedders = [fake_spec(m) for m in config.embedders]
    return replace(config, models=models, judges=judges, embedders=embedders, raw=raw)
