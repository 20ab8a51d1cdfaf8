"""The cost cap: which cap applies, the refusal before a run, and the guard during it.

During a run (CLI ``--max-cost``, ``settings.max_cost_usd`` and MCP ``max_cost_usd`` alike)
:class:`Budget` holds the cap. The rule, stated exactly: before a request is sent (an
answer, a pointwise judgement, either order of a pairwise judgement) its *reservation* is
taken: its estimated input tokens (rendered characters / 4) at the input price plus its
``max_tokens`` (512 when unset) at the output price, raised to the most one request of that
model has actually cost so far. The request is sent only when ``spent + reserved + its
reservation <= cap``, where ``spent`` is the actual cost of finished requests and
``reserved`` the reservations of requests in flight; otherwise nothing more is sent and the
run is stored as ``stopped`` with the reason (exit code 4). So the spend passes the cap
only by what requests already in flight cost beyond their reservations (a provider that
bills more than ``max_tokens``): with one request in flight, by at most one request.

Agent-started runs (``evalwh mcp``) get a cap in any case: an agent never gets an unbounded run. Without an explicit ``max_cost_usd`` the cap is the
smaller of the config's own limit (settings ``max_cost_usd``) and ``EVALWH_MCP_MAX_COST``
(default $1.00). An explicit request above ``EVALWH_MCP_MAX_COST_CEILING`` (default $5.00)
is refused, never trimmed to the ceiling. The run itself then refuses, before any call,
when its estimate exceeds the cap (``evalwh.api.run_eval(max_cost=...)``).
"""

from __future__ import annotations

import math
import os
import threading
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


class Budget:
    """Actual spend plus in-flight reservations against a cap (see the module docstring)."""

    def __init__(self, cap: float | None) -> None:
        self.cap = cap
        self.spent = 0.0
        self.reserved = 0.0
        self.reason: str | None = None  # why nothing more is sent (None: still open)
        self._largest: dict[str, float] = {}  # model id -> the most one request cost
        self._lock = threading.Lock()

    @property
    def stopped(self) -> bool:
        return self.reason is not None

    def reservation(self, model: Any, input_chars: int, default_output: int = 512) -> float:
        """What a request to ``model`` may cost: estimated input, max_tokens of output."""
        price = model.price
        if price is None:
            return 0.0
        output = int(model.params.get("max_tokens") or default_output)
        estimate = price.cost(max(1, input_chars // 4), output)
        return max(float(estimate), self._largest.get(model.id, 0.0))

    def reserve(self, amount: float) -> bool:
        """Take ``amount`` for a request about to be sent; False (and stopped) when it would
        cross the cap."""
        with self._lock:
            if self.reason is not None:
                return False
            if self.cap is not None and self.spent + self.reserved + amount > self.cap:
                self.reason = (
                    f"cost cap ${self.cap:.4f} reached: ${self.spent:.4f} spent, "
                    f"${self.reserved:.4f} in flight, the next request may cost ${amount:.4f}; "
                    "nothing more was sent"
                )
                return False
            self.reserved += amount
            return True

    def settle(self, amount: float, actual: float | None, model: Any) -> None:
        """A request ended: release its reservation, count what it actually cost."""
        with self._lock:
            self.reserved -= amount
            if actual:
                self.spent += actual
                if actual > self._largest.get(model.id, 0.0):
                    self._largest[model.id] = actual
