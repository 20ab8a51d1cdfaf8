"""The cost guard for agent-started runs (``evalwh mcp``): which cap applies, and refusals.

An agent never gets an unbounded run. Without an explicit ``max_cost_usd`` the cap is the
smaller of the config's own limit (settings ``max_cost_usd``) and ``EVALWH_MCP_MAX_COST``
(default $1.00). An explicit request above ``EVALWH_MCP_MAX_COST_CEILING`` (default $5.00)
is refused, never trimmed to the ceiling. The run itself then refuses, before any call,
when its estimate exceeds the cap (``evalwh.api.run_eval(max_cost=...)``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

from evalwh.errors import CostRefusedError, UsageError

ENV_DEFAULT = "EVALWH_MCP_MAX_COST"
ENV_CEILING = "EVALWH_MCP_MAX_COST_CEILING"
DEFAULT_CAP_USD = 1.00
DEFAULT_CEILING_USD = 5.00


class CostCapError(CostRefusedError):
    """A refused agent run, with the numbers an agent can act on. Nothing was spent."""

    def __init__(
        self,
        reason: str,
        *,
        cap_usd: float | None,
        ceiling_usd: float,
        estimate_usd: float | None = None,
        calls: int | None = None,
    ) -> None:
        super().__init__(reason, estimate_usd=estimate_usd, cap_usd=cap_usd, calls=calls)
        self.reason = reason
        self.ceiling_usd = ceiling_usd

    def to_dict(self) -> dict[str, object]:
        return {
            "error": "CostRefusedError",
            "refused": True,
            "reason": self.reason,
            "estimate_usd": _round(self.estimate_usd),
            "cap_usd": _round(self.cap_usd),
            "ceiling_usd": _round(self.ceiling_usd),
            "calls": self.calls,
            "spent_usd": 0.0,
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _env_usd(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        raise UsageError(f"{name}={raw!r} is not a number: set it to dollars, e.g. 2.50") from None
    if not math.isfinite(value) or value < 0:
        raise UsageError(f"{name}={raw!r} must be a finite amount of 0 or more dollars")
    return value


def ceiling(env: Mapping[str, str] | None = None) -> float:
    """The most an agent may ask for in one run (``EVALWH_MCP_MAX_COST_CEILING``)."""
    return _env_usd(os.environ if env is None else env, ENV_CEILING, DEFAULT_CEILING_USD)


def mcp_cost_cap(
    requested: float | None,
    config_limit: float | None,
    env: Mapping[str, str] | None = None,
) -> float:
    """The cost cap in USD of one agent-started run.

    ``requested`` is the caller's ``max_cost_usd``: above the ceiling it is refused with a
    CostCapError (never trimmed); otherwise it is the cap, as ``--max-cost`` is on the
    command line. Without it the cap is the smallest of ``config_limit`` (the config's
    settings ``max_cost_usd``; None: no limit of its own), ``EVALWH_MCP_MAX_COST`` and the
    ceiling.
    """
    env = os.environ if env is None else env
    top = ceiling(env)
    if requested is not None:
        if not math.isfinite(requested) or requested < 0:
            raise UsageError(f"max_cost_usd must be 0 or more dollars, got {requested!r}")
        if requested > top:
            raise CostCapError(
                f"max_cost_usd ${requested:.2f} is above the ceiling ${top:.2f} "
                f"({ENV_CEILING}); the request is refused, not trimmed: ask for at most "
                f"${top:.2f}, or have the server's operator raise {ENV_CEILING}",
                cap_usd=None,
                ceiling_usd=top,
            )
        return requested
    candidates = [_env_usd(env, ENV_DEFAULT, DEFAULT_CAP_USD), top]
    if config_limit is not None:
        candidates.append(config_limit)
    return min(candidates)


def over_cap(estimate: Mapping[str, Any], cap: float, env: Mapping[str, str] | None = None) -> None:
    """Raise CostCapError when a run's estimate (``DryRun.estimate``) exceeds ``cap``."""
    cost = float(estimate.get("cost_usd") or 0.0)
    if cost > cap:
        calls = estimate.get("calls")
        raise CostCapError(
            f"estimated cost ${cost:.4f} for {calls} call(s) exceeds the cap ${cap:.4f}; "
            "nothing was called or written (pass a larger max_cost_usd up to the ceiling, "
            "or select fewer models, variants or cases)",
            cap_usd=cap,
            ceiling_usd=ceiling(env),
            estimate_usd=cost,
            calls=int(calls) if calls is not None else None,
        )
