"""``evalwh prices``: the shipped price table (its date and source), and for a config each
model's price (where it comes from) and the run's cost estimate.

    evalwh.api.prices()                        # the table
    evalwh.api.prices(config="eval.yaml")      # plus the config's models and estimate
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalwh.config.model import EvalConfig


def prices(
    config: str | Path | EvalConfig | None = None,
    *,
    output_dir: str | Path | None = None,
    fake: bool = False,
    warehouse: str | Path | None = None,
) -> dict[str, Any]:
    """The dated table as rows (provider, model, USD per million input / output tokens and
    prompt-cache reads / writes, None where the input price applies, and ``batch_factor``:
    the price of a batch answer as a factor of these, docs/batch.md);
    with ``config``, ``for``: its models' prices (``source``: ``config`` for a ``price:``,
    ``table``, or ``none``) and the estimate of a run of the whole matrix."""
    from evalwh.providers.pricing import batch_factor, price_table

    table = price_table()
    out: dict[str, Any] = {
        "as_of": table["as_of"],
        "source": table["source"],
        "unit": table["unit"],
        "batch": table["batch"]["note"],
        "table": [
            {
                "provider": p,
                "model": m,
                "input_per_mtok": v[0],
                "output_per_mtok": v[1],
                "cache_read_per_mtok": v[2] if len(v) > 2 else None,
                "cache_write_per_mtok": v[3] if len(v) > 3 else None,
                "batch_factor": batch_factor(p),
            }
            for p, models in table["providers"].items()
            for m, v in models.items()
        ],
    }
    if config is not None:
        out["for"] = _for_config(config, output_dir=output_dir, fake=fake, warehouse=warehouse)
    return out


def _for_config(
    config: str | Path | EvalConfig,
    *,
    output_dir: str | Path | None,
    fake: bool,
    warehouse: str | Path | None = None,
) -> dict[str, Any]:
    from evalwh.api.run import _config, _plan, dry_run
    from evalwh.engine.execute import check_config
    from evalwh.providers.pricing import batch_factor

    cfg = _config(config)
    _, checked = check_config(cfg)
    rows = []
    for given, resolved in zip(cfg.models, checked.models, strict=True):
        price = resolved.price
        rows.append(
            {
                "id": given.id,
                "provider": given.provider,
                "model": given.model,
                "input_per_mtok": price.input_per_mtok if price else None,
                "output_per_mtok": price.output_per_mtok if price else None,
                "cache_read_per_mtok": price.cache_read_per_mtok if price else None,
                "cache_write_per_mtok": price.cache_write_per_mtok if price else None,
                "source": "config" if given.price else "table" if price else "none",
                "batch_factor": batch_factor(given.provider),
            }
        )
    # the estimate whatever the cap and whether or not the keys are set (a price question)
    planned = _plan(
        cfg,
        models=(),
        variants=(),
        cases=(),
        repeat=None,
        output_dir=output_dir,
        warehouse=warehouse,
        fake=fake,
    )
    plan = dry_run(planned)
    return {"config": str(cfg.path), "models": rows, "estimate": plan.estimate}
