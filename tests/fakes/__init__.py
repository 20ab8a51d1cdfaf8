"""Test doubles shared by the test suite and the benchmarks (see :mod:`tests.fakes.servers`).

Test modules and the benchmarks (with the checkout on ``sys.path``) import them as
``from tests.fakes.servers import ...``.
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
    wire,
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
    "wire",
]
