"""The memory bound of evalwh's children (evalwh/config/childmemory.py): the ``memory_mb``
option's values, the bound a child started with :func:`limit_memory` lives under (Linux, where
``RLIMIT_DATA`` is enforced), and how a failed program's output is read as out of memory.
The spawn sites are tested where they are (pyworker, command provider, tools, checks)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from evalwh.config import childmemory
from evalwh.config.childmemory import (
    DEFAULT_MEMORY_MB,
    limit_memory,
    memory_mb_of,
    out_of_memory,
    says_out_of_memory,
)

LINUX = pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_DATA is enforced on Linux")


@pytest.mark.parametrize(("given", "taken"), [(None, DEFAULT_MEMORY_MB), (1, 1), (65536, 65536)])
def test_memory_mb_is_a_whole_number_of_mib_with_a_default(given: Any, taken: int) -> None:
    assert memory_mb_of(given) == taken


@pytest.mark.parametrize("bad", [0, -5, 2.5, "2048", True])
def test_memory_mb_refuses_what_is_no_whole_number_above_0(bad: Any) -> None:
    assert memory_mb_of(bad) is None


def child(code: str, memory_mb: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        preexec_fn=limit_memory(memory_mb),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@LINUX
def test_a_child_allocating_8_gib_under_200_mb_gets_a_memory_error() -> None:
    # attack: code evalwh runs asks for far more memory than the machine should give it
    done = child("bytearray(8 << 30)", 200)
    assert done.returncode == 1 and done.stderr.rstrip().endswith("MemoryError")
    assert says_out_of_memory(done.stderr)


@LINUX
def test_a_child_cannot_lift_its_own_bound() -> None:
    # attack: code under the bound raises the limit again before allocating
    code = (
        "import resource\n"
        "soft, hard = resource.getrlimit(resource.RLIMIT_DATA)\n"
        "print(soft, hard)\n"
        "resource.setrlimit(resource.RLIMIT_DATA, (hard * 4, hard * 4))\n"
    )
    done = child(code, 200)
    assert done.stdout.split() == [str(200 << 20)] * 2
    assert done.returncode == 1 and "ValueError" in done.stderr


@LINUX
def test_what_it_forks_is_bounded_too() -> None:
    code = "import subprocess, sys; sys.exit(subprocess.call([sys.executable, '-c', 'bytearray(8 << 30)']))"
    done = child(code, 200)
    assert done.returncode == 1 and "MemoryError" in done.stderr


def test_without_rlimits_there_is_no_bound_to_apply(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(childmemory, "resource", None)  # as on Windows
    assert limit_memory(256) is None


@pytest.mark.parametrize(
    "printed",
    [
        "Traceback (most recent call last):\n  ...\nMemoryError",
        "numpy._core._exceptions._ArrayMemoryError: Unable to allocate 7.63 MiB",
        "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory",
        "fatal error: runtime: out of memory",
        "terminate called after throwing an instance of 'std::bad_alloc'",
        "memory allocation of 8589934592 bytes failed",
        "sh: 1: cannot fork: Cannot allocate memory",
    ],
)
def test_a_programs_out_of_memory_words_are_recognised(printed: str) -> None:
    assert says_out_of_memory(printed)


def test_other_failures_are_not_read_as_out_of_memory() -> None:
    assert not says_out_of_memory("ValueError: the memory of the model is 3 items")
    assert out_of_memory(256) == "ran out of memory (memory_mb: 256)"
