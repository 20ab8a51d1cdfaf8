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
    limited,
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
        limited([sys.executable, "-c", code], memory_mb),
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


def test_without_rlimits_the_program_is_started_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(childmemory, "RLIMITS", False)  # as on Windows
    assert limited(["python", "tool.py"], 256) == ["python", "tool.py"]
    assert childmemory.ulimit_line(256) == ""


def test_the_program_is_execd_by_the_shell_with_its_own_arguments_unquoted() -> None:
    # attack: an argument that is shell syntax stays one argument, never shell code
    argv = [sys.executable, "-c", "import sys; print(sys.argv[1:])", "$(touch x); rm -rf ~", "*"]
    if not childmemory.RLIMITS:
        pytest.skip("no rlimits here")
    wrapped = limited(argv, 256)
    assert wrapped[:2] == ["/bin/sh", "-c"] and wrapped[3:] == ["evalwh-exec", *argv]
    done = subprocess.run(wrapped, capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == str(["$(touch x); rm -rf ~", "*"])


@LINUX
def test_the_bound_is_the_data_limit_in_kib_and_the_program_keeps_the_shells_pid() -> None:
    code = "import os, resource\nprint(resource.getrlimit(resource.RLIMIT_DATA), os.getpid())\n"
    proc = subprocess.Popen(
        limited([sys.executable, "-c", code], 300), stdout=subprocess.PIPE, text=True
    )
    out, _ = proc.communicate(timeout=60)
    assert out.split(maxsplit=2)[:2] == [f"({300 << 20},", f"{300 << 20})"]
    assert out.split()[-1] == str(proc.pid)  # exec'd in place: a group kill reaches it


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


@pytest.mark.parametrize(
    ("code", "said", "why"),
    [
        (126, "evalwh-exec: 1: exec: ./prog: Exec format error\n", "Exec format error"),
        (
            126,
            "evalwh-exec: line 1: ./prog: cannot execute binary file: Exec format error\n",
            "Exec format error",
        ),
        (127, "evalwh-exec: 1: exec: ./prog: not found\n", "not found"),
        (126, "prog: my own failure\n", None),  # the program ran and failed with 126
        (1, "evalwh-exec: 1: exec: ./prog: not found\n", None),
    ],
)
def test_the_shells_words_for_a_program_it_could_not_start_are_read(
    code: int, said: str, why: str | None
) -> None:
    assert childmemory.exec_failure(code, said) == why
