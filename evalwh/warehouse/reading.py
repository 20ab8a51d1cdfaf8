"""``one_connection``: a question's queries on one read connection (``Warehouse.reading``).

A gate, a compare or a calibration report asks several named queries; each would otherwise
open the file, check its schema, define the macros and start with cold caches (15-35 ms each
on the 100M-row warehouse, more under load). Imports nothing heavy: the modules it decorates
are imported at start-up.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Concatenate, ParamSpec, Protocol, TypeVar


class Reads(Protocol):
    """A warehouse (or a view of one) that can hold one read connection for a block."""

    def reading(self) -> AbstractContextManager[None]: ...


P = ParamSpec("P")
T = TypeVar("T")
R = TypeVar("R", bound=Reads)


def one_connection(func: Callable[Concatenate[R, P], T]) -> Callable[Concatenate[R, P], T]:
    """``func(store, ...)`` inside ``store.reading()``: its queries share one read connection
    (a block inside a block reuses the outer one)."""

    @functools.wraps(func)
    def reading(store: R, /, *args: P.args, **kwargs: P.kwargs) -> T:
        with store.reading():
            return func(store, *args, **kwargs)

    return reading
