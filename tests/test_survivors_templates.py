"""The check on what a prompt template prints (evalwh.config.prompts._defined), called
directly: containers of plain values pass unchanged, an undefined value inside a mapping is an
error, and a container that holds itself ends the walk.

Written from mutants that survived the mutation run (docs/testing.md). The rendered prompts
are in test_security.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import jinja2
import pytest

from evalwh.config.prompts import _defined, environment

REPO = Path(__file__).resolve().parents[1]


def test_plain_values_in_containers_pass_unchanged() -> None:
    value = [1, "a", None, 2.5, {"k": (2, 3), "j": [True]}]
    assert _defined(value) is value
    assert environment().from_string("{{ xs }}").render(xs=[1, 2]) == "[1, 2]"


def test_an_undefined_value_inside_a_printed_mapping_is_an_error() -> None:
    template = environment().from_string("{{ {'k': [q.nope]} }}")
    with pytest.raises(jinja2.UndefinedError, match="has no attribute 'nope'"):
        template.render(q={"a": 1})


def test_a_container_that_holds_itself_is_walked_once() -> None:
    # data handed to the Python API may hold itself; the walk must end (it runs in a child so
    # that a walk that does not end is stopped)
    script = (
        "from evalwh.config.prompts import _defined\n"
        "a = [1, {'k': None}]\n"
        "a.append(a)\n"
        "a[1]['k'] = a\n"
        "print(_defined(a) is a)\n"
    )
    # cwd: in mutmut's stats pass the child records its calls too, which reads mutmut's
    # config from the working folder (the tests run in a temporary one)
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True, text=True, timeout=15, cwd=REPO, check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "True\n"), done.stderr
