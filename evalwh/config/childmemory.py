"""The memory bound of every child evalwh starts for code it does not trust the input of:
python scorer and tool workers, command providers and tools, exec checks' snippets.

Each of them takes ``memory_mb`` beside its ``timeout_s`` (default :data:`DEFAULT_MEMORY_MB`,
2 GiB). :func:`limited` is the argument vector that applies it: the program is started through
``/bin/sh``, which sets the limit (``ulimit -d``) and then execs the program in the same
process (same pid, so killing its process group still reaches it), so the program and whatever
it forks are bounded from their first instruction; an exec check's snippet, which runs in ``/bin/sh``
anyway, starts with :func:`ulimit_line`::

    argv = limited(["python", "tool.py"], 256)   # as it was where there is no bound

Not ``preexec_fn``: it makes Python ``fork()`` evalwh instead of ``vfork()``, which copies
evalwh's page tables on every start. Measured (Linux 6.18, Python 3.11, 100 starts of
``/bin/true``): with evalwh holding 200 MB, 58-77 ms per start with ``preexec_fn`` against
2-5 ms without (1 GB: 170-220 ms against 2 ms), and the command provider starts its program
from the event loop, once per request; the shell costs 1-3 ms more per start whatever
evalwh holds.

What is bounded: the child's private writable memory, ``RLIMIT_DATA`` (soft and hard, so the
child cannot lift it again), which Linux counts for the heap and every private anonymous
mapping (since Linux 4.7): whatever ``malloc``, Python objects and numpy arrays take. An allocation past it fails (``MemoryError`` in Python, ``NULL`` from ``malloc``).
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
rlimits, and there :func:`limited` leaves the program as it is: no bound, as documented in
docs/security.md.

A child past its bound is a stored error that says so (:func:`out_of_memory`): the python
worker recognises ``MemoryError`` and is restarted for the next call; a program's failure is
recognised by what it prints (:func:`says_out_of_memory`).
"""

from __future__ import annotations

import os
import re
from typing import Any

RLIMITS = os.name == "posix"  # Windows has none
DEFAULT_MEMORY_MB = 2048
SHELL = "/bin/sh"
#: The shell's ``$0`` in :func:`limited`: the shell names itself so only when its ``exec`` of
#: the program fails, and :func:`exec_failure` reads that.
EXEC_NAME = "evalwh-exec"

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


def ulimit_line(memory_mb: int) -> str:
    """The shell line that bounds the shell and what it starts to ``memory_mb`` MiB of data
    (soft and hard limit: nothing it runs can raise it again). A system that refuses it (a
    lower hard limit already set) keeps its own; empty where there are no rlimits."""
    if not RLIMITS:
        return ""
    return f"ulimit -d {memory_mb * 1024} 2>/dev/null; "


def limited(argv: list[str], memory_mb: int) -> list[str]:
    """``argv`` started under a bound of ``memory_mb`` MiB: through ``/bin/sh``, which sets it
    and then execs ``argv`` in its own process; ``argv`` as it is where there are no
    rlimits (Windows) or no ``/bin/sh``."""
    line = ulimit_line(memory_mb)
    if not line or not os.path.exists(SHELL):
        return list(argv)
    return [SHELL, "-c", line + 'exec "$@"', EXEC_NAME, *argv]


def exec_failure(returncode: int | None, stderr: str) -> str | None:
    """Why the shell of :func:`limited` could not start the program (dash: ``evalwh-exec: 1:
    exec: ./prog: Exec format error``, bash: ``evalwh-exec: line 1: ./prog: cannot execute
    binary file: Exec format error``), or None when the program ran."""
    if returncode not in (126, 127) or not stderr.startswith(EXEC_NAME + ":"):
        return None
    return stderr.splitlines()[0].rsplit(": ", 1)[-1].strip()


def out_of_memory(memory_mb: int) -> str:
    """How a stored error says a child passed its bound."""
    return f"ran out of memory (memory_mb: {memory_mb})"


def says_out_of_memory(text: str) -> bool:
    """Whether a failed program's output says it ran out of memory."""
    return OUT_OF_MEMORY.search(text) is not None
