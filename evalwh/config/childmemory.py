"""The memory bound of every child evalwh starts for code it does not trust the input of:
python scorer and tool workers, command providers and tools, exec checks' snippets.

Each of them takes ``memory_mb`` beside its ``timeout_s`` (default :data:`DEFAULT_MEMORY_MB`,
2 GiB). :func:`limit_memory` gives the ``preexec_fn`` that applies it in the child, after the
fork and before its program starts, so the program and whatever it forks are bounded::

    subprocess.Popen(argv, preexec_fn=limit_memory(256), ...)   # None where there is no bound

What is bounded: the child's private writable memory, ``RLIMIT_DATA`` (soft and hard, so the
child cannot lift it again), which Linux counts for the heap and every private anonymous
mapping (since Linux 4.7): whatever ``malloc``, Python objects, numpy arrays and thread stacks
take. An allocation past it fails (``MemoryError`` in Python, ``NULL`` from ``malloc``).
``RLIMIT_AS`` (the address space) is not used: it also counts what a runtime reserves but never
touches. Measured on Linux 6.18, Python 3.11, numpy 2.4 / pandas 3.1: a child importing both
and multiplying two 2000 x 2000 matrices has 194 MB resident, 1.3 GB of data and 1.5 GB of
address space (OpenBLAS and the allocator reserve); Node.js 20 dies at start under a 256 MiB
address-space limit and runs under a 256 MiB data limit. The default, 2 GiB, leaves such
numpy/pandas code room for its own data; a child that needs more names more.

Where the bound does not hold: shared mappings (``mmap(-1, n)`` in Python is shared) and
files in a memory-backed file system (``/dev/shm``) are not counted by ``RLIMIT_DATA``; a
program that sets out to use them escapes it (a container or a cgroup bounds all of it).
macOS accepts the limit but does not enforce it for most allocations; Windows has no
``resource`` module, and there :func:`limit_memory` is None: no bound, as documented in
docs/security.md.

A child past its bound is a stored error that says so (:func:`out_of_memory`): the python
worker recognises ``MemoryError`` and is restarted for the next call; a program's failure is
recognised by what it prints (:func:`says_out_of_memory`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

try:
    import resource
except ImportError:  # Windows: no rlimits
    resource = None  # type: ignore[assignment]

DEFAULT_MEMORY_MB = 2048
MIB = 1024 * 1024

#: What a program that ran out of memory prints: Python's MemoryError, Node's "JavaScript heap
#: out of memory", Go's "runtime: out of memory", C++'s std::bad_alloc, Rust's "memory
#: allocation of N bytes failed", and ENOMEM's text ("Cannot allocate memory").
OUT_OF_MEMORY = re.compile(
    r"MemoryError|out of memory|bad_alloc|Cannot allocate memory|memory allocation of \d+ bytes",
    re.IGNORECASE,
)


def memory_mb_of(value: Any) -> int | None:
    """A ``memory_mb`` option as a whole number of MiB (the default when absent), or None when
    it is not a whole number above 0 (the caller refuses it at its place)."""
    if value is None:
        return DEFAULT_MEMORY_MB
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value


def limit_memory(memory_mb: int) -> Callable[[], None] | None:
    """The ``preexec_fn`` that bounds a child's private writable memory to ``memory_mb`` MiB
    (both limits, so it cannot raise them; below a lower hard limit already set, that one).
    None where there are no rlimits (Windows). It never raises: a system that refuses the
    limit runs the child unbounded, as one without rlimits does."""
    if resource is None:
        return None
    limit = memory_mb * MIB
    which = resource.RLIMIT_DATA
    infinity = resource.RLIM_INFINITY

    def apply() -> None:  # runs in the child between fork and exec: nothing but the call
        try:
            hard = resource.getrlimit(which)[1]
            bound = limit if hard == infinity else min(limit, hard)
            resource.setrlimit(which, (bound, bound))
        except (OSError, ValueError):
            pass

    return apply


def out_of_memory(memory_mb: int) -> str:
    """How a stored error says a child passed its bound."""
    return f"ran out of memory (memory_mb: {memory_mb})"


def says_out_of_memory(text: str) -> bool:
    """Whether a failed program's output says it ran out of memory."""
    return OUT_OF_MEMORY.search(text) is not None
