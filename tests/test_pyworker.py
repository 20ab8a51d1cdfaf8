"""The python scorer's worker, in this process: its pipe protocol (evalwh.scoring.pyworker's
``_serve``) and the conversion of what a user's function returns (evalwh.scoring.userfunc).

tests/test_scoring.py and tests/test_security_bounds.py drive the same code through a real
worker process (hangs, exits, restarts). These tests feed ``_serve`` its frames from memory,
so every reply is checked exactly, and mutmut (docs/testing.md), whose mutants exist only in
this process, sees them.
"""

from __future__ import annotations

import io
import math
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalwh.config.model import Case, Criterion
from evalwh.errors import ConfigError
from evalwh.scoring.base import ScoreResult
from evalwh.scoring.pyworker import _receive, _send, _serve, main
from evalwh.scoring.userfunc import RETURN_HINT, call_function, convert, load_function

FILE = "eval.yaml"
NAMED = "criterion 'py' (python): "  # how a criterion's option errors begin

SCORERS = """\
import sys

from evalwh.scoring.base import ScoreResult


def is_yes(output, case):
    return output.strip().lower() == "yes"


def counts(output, case, *, word, minimum=1):
    return output.count(word) >= minimum


def boom(output, case):
    raise ValueError("boom on " + case.id)


def silent(output, case):
    raise KeyError()


def leaves(output, case):
    sys.exit(3)


def unsendable(output, case):
    class Local(float):  # a float a pipe cannot carry: pickle cannot find a local class
        pass

    return ScoreResult(Local(0.5))


NOT_CALLABLE = 3


def noisy(output, case):
    import os

    print("printed by the scorer")  # Python-level stdout
    os.write(1, b"written to fd 1\\n")  # what a C library or a child process would do
    return os.read(0, 16) == b""  # stdin is /dev/null: the protocol is not readable
"""


@pytest.fixture
def scorers(tmp_path: Path) -> Iterator[str]:
    """A module of scorers importable as ``<name>:function`` from ``tmp_path``."""
    name = f"workerfns_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(SCORERS)
    yield name
    sys.modules.pop(name, None)


def criterion(function: str, **options: Any) -> Criterion:
    return Criterion(
        name="py", type="python", options={"function": function, **options}, where="scorecard[2]"
    )


def serve(frames: list[Any], *, cut: int = 0) -> list[Any]:
    """The replies of ``_serve`` to ``frames`` (the last ``cut`` bytes left off the input)."""
    buffer = io.BytesIO()
    for frame in frames:
        _send(buffer, frame)
    data = buffer.getvalue()
    replies = io.BytesIO()
    _serve(io.BytesIO(data[: len(data) - cut]), replies)
    replies.seek(0)
    out = []
    while True:
        try:
            out.append(_receive(replies))
        except EOFError:
            return out


def load(crit: Criterion, root: Path) -> tuple[str, Criterion, str, str]:
    return ("load", crit, str(root), FILE)


def test_a_loaded_function_answers_each_call_in_order(tmp_path: Path, scorers: str) -> None:
    replies = serve(
        [
            load(criterion(f"{scorers}:is_yes"), tmp_path),
            ("call", " Yes ", Case(id="a")),
            ("call", "no", Case(id="b")),
        ]
    )
    assert replies == [
        ("loaded", f"{scorers}:is_yes"),
        ("result", ScoreResult(1.0, passed=True)),
        ("result", ScoreResult(0.0, passed=False)),
    ]


def test_options_are_passed_as_keyword_arguments(tmp_path: Path, scorers: str) -> None:
    crit = criterion(f"{scorers}:counts", options={"word": "ab", "minimum": 2})
    replies = serve(
        [load(crit, tmp_path), ("call", "ab ab", Case(id="a")), ("call", "ab", Case(id="b"))]
    )
    assert [r[1].score for r in replies[1:]] == [1.0, 0.0]


def test_a_raising_function_is_a_reply_and_the_worker_keeps_serving(
    tmp_path: Path, scorers: str
) -> None:
    replies = serve(
        [
            load(criterion(f"{scorers}:boom"), tmp_path),
            ("call", "x", Case(id="a")),
            ("call", "x", Case(id="b")),
        ]
    )
    assert replies[1:] == [("raised", "ValueError: boom on a"), ("raised", "ValueError: boom on b")]


def test_an_exception_without_a_message_is_named_by_its_type(tmp_path: Path, scorers: str) -> None:
    replies = serve([load(criterion(f"{scorers}:silent"), tmp_path), ("call", "x", Case(id="a"))])
    assert replies[1] == ("raised", "KeyError")


def test_sys_exit_in_a_scorer_is_a_scorer_error_not_a_dead_worker(
    tmp_path: Path, scorers: str
) -> None:
    replies = serve(
        [
            load(criterion(f"{scorers}:leaves"), tmp_path),
            ("call", "x", Case(id="a")),
            ("call", "x", Case(id="b")),
        ]
    )
    message = f"python scorer {scorers}:leaves: called sys.exit(3) instead of returning"
    assert replies[1:] == [("raised", message), ("raised", message)]


def test_a_result_the_pipe_cannot_carry_is_reported_and_serving_goes_on(
    tmp_path: Path, scorers: str
) -> None:
    replies = serve(
        [
            load(criterion(f"{scorers}:unsendable"), tmp_path),
            ("call", "x", Case(id="a")),
            ("call", "x", Case(id="b")),
        ]
    )
    assert [r[0] for r in replies] == ["loaded", "raised", "raised"]
    assert replies[1][1].startswith("its result could not be sent back: ")
    assert "Local" in replies[1][1]


def test_a_load_config_error_keeps_its_place_and_fix(tmp_path: Path, scorers: str) -> None:
    replies = serve([load(criterion(f"{scorers}:nope"), tmp_path)])
    assert len(replies) == 1
    kind, message, fields = replies[0]
    assert (kind, message) == ("config_error", f"{NAMED}'{scorers}' has no attribute 'nope'")
    assert fields == {
        "file": FILE,
        "where": "scorecard[2].function",
        "line": None,
        "column": None,
        "fix": "define `def nope(output, case): ...` in " + scorers + ", or fix the name",
    }
    # the parent rebuilds the same error from it
    rebuilt = ConfigError(message, **fields)
    assert rebuilt.where == "scorecard[2].function" and rebuilt.file == FILE


def test_a_load_that_raises_beyond_exception_is_failed(tmp_path: Path) -> None:
    (tmp_path / "quits.py").write_text(
        "raise SystemExit(4)\n\ndef fn(output, case):\n    return 1\n"
    )
    replies = serve([load(criterion("quits.py:fn"), tmp_path)])
    assert replies == [("failed", "SystemExit: 4")]
    assert not [m for m in sys.modules if m.startswith("_evalwh_scorer_quits")]


def test_a_failed_load_leaves_the_worker_serving_the_next_load(
    tmp_path: Path, scorers: str
) -> None:
    replies = serve(
        [
            load(criterion(f"{scorers}:NOT_CALLABLE"), tmp_path),
            load(criterion(f"{scorers}:is_yes"), tmp_path),
            ("call", "yes", Case(id="a")),
        ]
    )
    assert replies[0][:2] == (
        "config_error",
        f"{NAMED}'{scorers}:NOT_CALLABLE' is a int, not a function",
    )
    assert replies[1:] == [
        ("loaded", f"{scorers}:is_yes"),
        ("result", ScoreResult(1.0, passed=True)),
    ]


@pytest.mark.parametrize("cut", [1, 5, 12])
def test_a_frame_cut_short_ends_the_worker_quietly(tmp_path: Path, scorers: str, cut: int) -> None:
    """A parent that dies mid-frame (a cut header or body) leaves the worker nothing to do."""
    replies = serve(
        [load(criterion(f"{scorers}:is_yes"), tmp_path), ("call", "yes", Case(id="a"))], cut=cut
    )
    assert replies == [("loaded", f"{scorers}:is_yes")]


def test_a_file_scorer_loads_under_its_own_module_name(tmp_path: Path) -> None:
    (tmp_path / "checks").mkdir()
    (tmp_path / "checks" / "my-scorer.py").write_text(SCORERS)
    fn, name = load_function(criterion("checks/my-scorer.py:is_yes"), tmp_path, FILE)
    assert name == "checks/my-scorer.py:is_yes"
    assert fn.__module__.startswith("_evalwh_scorer_my_scorer_")
    assert fn("yes", Case(id="a")) is True
    assert str(tmp_path) not in sys.path and str(tmp_path / "checks") not in sys.path


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "no_colon",
            "'function' must look like module:function or path/to/file.py:function, got 'no_colon'",
        ),
        (":fn", "'function' ':fn' lacks a module or a function name"),
        ("mod:", "'function' 'mod:' lacks a module or a function name"),
    ],
)
def test_a_malformed_function_option_is_named(tmp_path: Path, spec: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_function(criterion(spec), tmp_path, FILE)
    assert info.value.message == NAMED + message
    assert info.value.where == "scorecard[2].function"


def test_a_function_option_that_is_not_a_string_is_named(tmp_path: Path) -> None:
    crit = Criterion(name="py", type="python", options={"function": 3}, where="scorecard[0]")
    with pytest.raises(ConfigError, match="got 3"):
        load_function(crit, tmp_path, FILE)


def test_import_errors_of_modules_and_files_name_the_cause(tmp_path: Path) -> None:
    (tmp_path / "broken_mod.py").write_text("import json\nraise RuntimeError('no model')\n")
    with pytest.raises(ConfigError) as info:
        load_function(criterion("broken_mod:fn"), tmp_path, FILE)
    assert (
        info.value.message == NAMED + "importing module 'broken_mod' failed: RuntimeError: no model"
    )
    assert info.value.fix == "fix the error in the scorer module"
    sys.modules.pop("broken_mod", None)
    with pytest.raises(ConfigError) as info:
        load_function(criterion("absent_mod_q:fn"), tmp_path, FILE)
    assert info.value.message.startswith(NAMED + "cannot import module 'absent_mod_q': ")
    assert f"({tmp_path})" in info.value.fix
    (tmp_path / "bad.py").write_text("raise RuntimeError('at import')\n")
    with pytest.raises(ConfigError) as info:
        load_function(criterion("bad.py:fn"), tmp_path, FILE)
    path = (tmp_path / "bad.py").resolve()
    assert info.value.message == NAMED + f"importing {path} failed: RuntimeError: at import"
    assert info.value.fix == f"fix the error in the scorer file (run `python {path}` to see it)"
    with pytest.raises(ConfigError) as info:
        load_function(criterion("gone.py:fn"), tmp_path, FILE)
    assert (
        info.value.message == NAMED + f"python file not found: {(tmp_path / 'gone.py').resolve()}"
    )
    assert info.value.fix == "check the path; it is relative to the config file's folder"


def test_call_function_passes_options_only_when_given() -> None:
    seen: list[Any] = []

    def fn(output: str, case: Case, **kwargs: Any) -> float:
        seen.append(kwargs)
        return 0.25

    assert call_function(fn, "m:fn", None, "o", Case(id="a")) == ScoreResult(0.25)
    assert call_function(fn, "m:fn", {}, "o", Case(id="a")) == ScoreResult(0.25)
    assert call_function(fn, "m:fn", {"k": 1}, "o", Case(id="a")) == ScoreResult(0.25)
    assert seen == [{}, {}, {"k": 1}]


def bad(message: str) -> ScoreResult:
    return ScoreResult(0.0, passed=False, error=f"python scorer m:f: {message}")


class Opaque:
    def __repr__(self) -> str:
        return "Opaque()"


@pytest.mark.parametrize(
    ("returned", "expected"),
    [
        (True, ScoreResult(1.0, passed=True)),
        (False, ScoreResult(0.0, passed=False)),
        (0, ScoreResult(0.0)),
        (1, ScoreResult(1.0)),
        (0.0, ScoreResult(0.0)),
        (1.0, ScoreResult(1.0)),
        (0.25, ScoreResult(0.25)),
        (1.0000001, bad("returned score 1.0000001, outside [0, 1]")),
        (-0.0001, bad("returned score -0.0001, outside [0, 1]")),
        (math.nan, bad("returned score nan, outside [0, 1]")),
        ("great", bad("returned str; " + RETURN_HINT)),
        (None, bad("returned NoneType; " + RETURN_HINT)),
        (
            {"passed": True},
            bad("returned a dict without 'score' (keys: ['passed']); " + RETURN_HINT),
        ),
        ({"score": "x"}, bad("score must be a number, got str 'x'")),
        ({"score": 2}, bad("returned score 2, outside [0, 1]")),
        ({"score": True}, ScoreResult(1.0)),
        ({"score": 1, "passed": "yes"}, bad("'passed' must be true, false or None, got 'yes'")),
        ({"score": 1, "passed": None}, ScoreResult(1.0)),
        ({"score": 0.5, "passed": False}, ScoreResult(0.5, passed=False)),
        ({"score": 1, "details": [1]}, bad("details must be a dict, got list")),
        ({"score": 1, "details": None}, ScoreResult(1.0)),
        (
            {"score": 1, "details": {"a": 1}, "n": 2, "rationale": 7},
            ScoreResult(1.0, details={"a": 1, "n": 2}, rationale="7"),
        ),
        ({"score": 0.5, "why": "short"}, ScoreResult(0.5, details={"why": "short"})),
        ({"score": 0.5, "rationale": None}, ScoreResult(0.5)),
        (ScoreResult(0.5, details={"k": "v"}), ScoreResult(0.5, details={"k": "v"})),
        (ScoreResult(1.5), bad("returned score 1.5, outside [0, 1]")),
        (ScoreResult("x"), bad("score must be a number, got str 'x'")),  # type: ignore[arg-type]
        (ScoreResult(0.5, details=[1]), bad("details must be a dict, got list")),  # type: ignore[arg-type]
    ],
)
def test_what_a_function_returns_becomes_a_score_or_a_named_error(
    returned: Any, expected: ScoreResult
) -> None:
    assert convert("m:f", returned) == expected


def test_details_that_are_not_json_are_an_error_wherever_they_come_from() -> None:
    nested = convert("m:f", {"score": 1, "details": {"o": Opaque()}})
    extra = convert("m:f", {"score": 1, "o": Opaque()})
    result = convert("m:f", ScoreResult(1.0, details={"o": Opaque()}))
    for converted in (nested, extra, result):
        assert (converted.score, converted.passed) == (0.0, False)
        assert converted.error is not None
        assert converted.error.startswith("python scorer m:f: details are not JSON-serialisable: ")
        assert "Opaque" in converted.error


def test_main_keeps_the_protocol_on_the_original_stdout_and_prints_off_it(
    tmp_path: Path, scorers: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The worker's entry point, in this process with its descriptors swapped for files: the
    frames arrive on fd 0 and the replies leave on fd 1, while a scorer's print() and a raw
    write to fd 1 both land on stderr (fd 2), and the scorer reads an empty stdin. A print
    that reached the reply stream would corrupt the next frame."""
    requests, replies, stderr = (tmp_path / n for n in ("requests", "replies", "stderr"))
    with requests.open("wb") as out:
        _send(out, load(criterion(f"{scorers}:noisy"), tmp_path))
        _send(out, ("call", "x", Case(id="a")))
    saved = {fd: os.dup(fd) for fd in (0, 1, 2)}
    python_stdout = sys.stdout
    try:
        with requests.open("rb") as r, replies.open("wb") as w, stderr.open("wb") as e:
            for fd, file in ((0, r), (1, w), (2, e)):
                os.dup2(file.fileno(), fd)
            main()
            assert sys.stdout is sys.stderr  # print() goes where stderr goes
    finally:
        for fd, copy in saved.items():
            os.dup2(copy, fd)
            os.close(copy)
        sys.stdout = python_stdout
    with replies.open("rb") as got:
        assert _receive(got) == ("loaded", f"{scorers}:noisy")
        assert _receive(got) == ("result", ScoreResult(1.0, passed=True))
        assert got.read() == b""  # nothing else on the protocol stream
    assert stderr.read_bytes() == b"written to fd 1\n"
    assert capsys.readouterr().err == "printed by the scorer\n"
