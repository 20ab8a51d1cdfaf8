"""Tests that kill mutants mutmut found alive in how the command provider runs a command: its argv, stdin payload, paths and errors (issue 21); each test names the user-visible behaviour it pins."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from evalwh.config import attachments
from evalwh.config.model import Case
from evalwh.errors import ConfigError
from evalwh.providers.base import Request
from evalwh.providers.command import CommandProvider, _argv
from tests.test_provider_command import failure, run, script, spec_for

ECHO = """\
    import json, sys
    raw = sys.stdin.buffer.read()
    sys.stdout.write(json.dumps({"text": json.dumps({"raw": raw.decode("latin-1"), "argv": sys.argv[1:]})}))
"""


def _complete(spec: Any, messages: list[dict[str, Any]]) -> Any:
    prov = CommandProvider(spec)
    request = Request(model=spec, messages=messages, case=Case(id="c1"), variant="v1", repeat=0)
    return asyncio.run(prov.complete(request))


# --- _argv ------------------------------------------------------------------------


def test_a_command_that_is_neither_string_nor_list_says_what_it_must_be() -> None:
    with pytest.raises(ValueError) as info:
        _argv(42)
    assert str(info.value) == "command must be a string or a list of strings"
    with pytest.raises(ConfigError) as cfg:
        CommandProvider.check(spec_for(["python", 3]))
    assert "bad command: command must be a string or a list of strings" in str(cfg.value)


@pytest.mark.parametrize("command", ["", "   ", [], [""]])
def test_an_empty_command_says_it_is_empty(command: Any) -> None:
    with pytest.raises(ValueError) as info:
        _argv(command)
    assert str(info.value) == "command is empty"
    with pytest.raises(ConfigError) as cfg:
        CommandProvider.check(spec_for(command))
    assert "bad command: command is empty" in str(cfg.value)


def test_a_string_command_on_windows_keeps_its_quotes_and_backslashes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Windows paths have backslashes that POSIX splitting would eat.
    monkeypatch.setattr(os, "name", "nt")
    argv = _argv(r'C:\tools\agent.exe "a b"')
    monkeypatch.undo()
    assert argv == [r"C:\tools\agent.exe", '"a b"']
    assert _argv(r'prog "a b" c\d') == ["prog", "a b", "cd"]


# --- _payload / _with_paths --------------------------------------------------------


def test_stdin_payload_is_utf8_json_without_ascii_escapes(tmp_path: Path) -> None:
    echo = script(tmp_path, "echo.py", ECHO)
    spec = spec_for([sys.executable, str(echo), "--fast"], params={"note": "café ✓"})
    done = run(spec)
    seen = json.loads(done.text)
    raw = seen["raw"].encode("latin-1")
    assert seen["argv"] == ["--fast"]
    assert "café ✓".encode() in raw
    assert b"\\u" not in raw
    assert json.loads(raw.decode("utf-8"))["params"] == {"note": "café ✓"}


def test_text_parts_next_to_a_binary_part_go_through_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(attachments, "_BY_HASH", {})
    stored = tmp_path / "img.png"
    stored.write_bytes(b"png")
    sha = "ab" * 32
    attachments.remember(sha, stored)
    echo = script(tmp_path, "echo.py", ECHO)
    spec = spec_for([sys.executable, str(echo)])
    image = {"type": "image", "name": "photo", "sha256": sha, "media_type": "image/png"}
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "look"}, image]},
    ]
    done = _complete(spec, messages)
    payload = json.loads(json.loads(done.text)["raw"].encode("latin-1").decode("utf-8"))
    assert payload["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "look"}, {**image, "path": str(stored.resolve())}],
        }
    ]


# --- complete: starting the program ------------------------------------------------


def test_a_missing_program_is_a_final_failure(tmp_path: Path) -> None:
    err = failure(spec_for([str(tmp_path / "nope"), "--flag"]))
    assert str(err) == f"command: program not found: {tmp_path / 'nope'}"
    assert err.retryable is False and err.kind == "provider"


def test_a_non_executable_program_is_named_and_final(tmp_path: Path) -> None:
    prog = script(tmp_path, "prog.sh", "#!/bin/sh\necho hi\n")
    prog.chmod(0o644)
    err = failure(spec_for([str(prog), "--flag"]))
    assert str(err) == f"command: program is not executable: {prog}"
    assert err.retryable is False and err.kind == "provider"


def test_a_program_that_cannot_start_is_named_and_final(tmp_path: Path) -> None:
    prog = tmp_path / "garbage"
    prog.write_bytes(b"\x7fELF\x00garbage")
    prog.chmod(0o755)
    err = failure(spec_for([str(prog), "--flag"]))
    assert str(err).startswith(f"command: cannot start {prog}: ")
    assert "--flag" not in str(err)
    assert err.retryable is False and err.kind == "provider"


# --- complete: timeout, exit code, stderr --------------------------------------------


def test_a_timeout_names_the_program_not_its_argument(tmp_path: Path) -> None:
    slow = script(tmp_path, "slow.py", "import time\ntime.sleep(30)\n")
    err = failure(spec_for([sys.executable, str(slow)], timeout_s=0.5))
    assert str(err) == f"command: {sys.executable} did not finish within 0.5s (killed)"
    assert err.retryable is True
    assert err.kind == "timeout"


def test_a_silent_non_zero_exit_says_no_stderr(tmp_path: Path) -> None:
    prog = script(tmp_path, "fail.py", "import sys\nsys.exit(3)\n")
    err = failure(spec_for([sys.executable, str(prog)]))
    assert str(err) == f"command: {sys.executable} exited with code 3 (no stderr)"
    assert err.retryable is False
    assert err.kind == "exit"


def test_a_program_killed_by_a_signal_says_which(tmp_path: Path) -> None:
    prog = script(tmp_path, "die.py", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    err = failure(spec_for([sys.executable, str(prog)]))
    assert str(err) == f"command: {sys.executable} was killed by signal 9 (no stderr)"
    assert err.retryable is False
    assert err.kind == "exit"


def test_stderr_that_is_not_utf8_is_still_quoted(tmp_path: Path) -> None:
    prog = script(
        tmp_path,
        "bad.py",
        "import sys\nsys.stderr.buffer.write(b'oops \\xff\\xfe done')\nsys.exit(2)\n",
    )
    err = failure(spec_for([sys.executable, str(prog)]))
    assert str(err) == f"command: {sys.executable} exited with code 2: oops \ufffd\ufffd done"
    assert err.retryable is False


def test_stdout_that_is_not_utf8_is_still_an_answer(tmp_path: Path) -> None:
    prog = script(tmp_path, "bad.py", "import sys\nsys.stdout.buffer.write(b'hi \\xff there\\n')\n")
    done = run(spec_for([sys.executable, str(prog)]))
    assert done.text == "hi \ufffd there"
