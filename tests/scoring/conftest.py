"""Fixtures of the scoring tests: ``helper_module``, a module of python scorers that the python
scorer's tests (test_python.py) and the entry-point registry's test (test_base.py) load.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

HELPERS = """
from evalwh.scoring import ScoreResult


def is_yes(output, case):
    return output.strip().lower() == "yes"


def half(output, case):
    return 0.5


def graded(output, case):
    return {
        "score": 0.8,
        "passed": False,
        "details": {"length": len(output)},
        "rationale": "too long",
        "note": case.metadata.get("topic"),
    }


def too_big(output, case):
    return 1.5


def wrong_type(output, case):
    return "great"


def no_score(output, case):
    return {"passed": True}


def boom(output, case):
    raise ValueError("boom on " + case.id)


def result(output, case):
    return ScoreResult(0.25, details={"expected": case.expected})


def with_options(output, case, *, word, minimum=1):
    return output.count(word) >= minimum


NOT_CALLABLE = 3
"""


@pytest.fixture
def helper_module(tmp_path: Path):
    """A helper scorer module importable as ``module:function`` from ``tmp_path``."""
    name = f"helpers_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(HELPERS)
    yield name
    sys.modules.pop(name, None)
