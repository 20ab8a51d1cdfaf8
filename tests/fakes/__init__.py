"""Test doubles shared by the test suite and the benchmarks (see :mod:`fakes.servers`).

Test modules import them as ``from fakes.servers import ...`` (pytest puts ``tests/`` on
``sys.path`` for test modules in it); scripts outside ``tests/`` add that folder to
``sys.path`` first.
"""

from .servers import (
    Behavior,
    FakeLLMServer,
    Faults,
    RecordedRequest,
    drop,
    error,
    fake_llm,
    malformed,
    missing_fields,
    overloaded,
    rate_limited,
    raw,
    reply,
    server_error,
    slow,
    truncated,
)

__all__ = [
    "Behavior",
    "FakeLLMServer",
    "Faults",
    "RecordedRequest",
    "drop",
    "error",
    "fake_llm",
    "malformed",
    "missing_fields",
    "overloaded",
    "rate_limited",
    "raw",
    "reply",
    "server_error",
    "slow",
    "truncated",
]
