"""evalwh: evaluate LLM prompts and models; keep every result in a DuckDB warehouse.

The public API is lazy so that ``import evalwh`` (and ``evalwh --help``) stays fast.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["connect", "load_config", "open_warehouse", "run_eval", "validate"]


def __getattr__(name: str) -> Any:
    if name in __all__ or name == "frames":  # evalwh.frames.runs() ...: evalwh.api.frames
        from evalwh import api

        return getattr(api, name)
    raise AttributeError(f"module 'evalwh' has no attribute {name!r}")
