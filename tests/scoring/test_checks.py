"""Exec checks (evalwh/scoring/checks.py): parsing a case's ``check`` (every config error with
its message, place and fix), and running it in real /bin/sh subprocesses: pass, fail, setup,
timeouts, the environment (secrets never reach the snippet; case variables as CASE_*), the
answer file and the fresh folder, output capture (CAPTURE_BYTES kept from each end, every byte
counted) and clipping, several fenced blocks and their report, every early error result, the
check's own stdin and pipes, leftover and escaped processes, and the exit poll.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import sys
import time
import types
import uuid
from pathlib import Path
from typing import Any

import pytest

from evalwh.config import secrets
from evalwh.errors import ConfigError
from evalwh.scoring import checks
from evalwh.scoring.checks import (
    CAPTURE_BYTES,
    MAX_OUTPUT,
    CheckResult,
    CheckSpec,
    _Capture,
    _scalar,
    check_environment,
    clip_output,
    env_name,
    parse_check,
    run_check,
)

pytestmark = pytest.mark.skipif(os.name != "posix", reason="checks need a POSIX shell")


FILE = "eval.yaml"


WHERE = "cases[2].check"


ANTHROPIC = "sk-ant-api03-" + "A" * 40


OPENAI = "sk-proj-" + "B" * 40


def check(
    run: str,
    answer: str = "42",
    case_vars: dict | None = None,
    *,
    env: dict[str, str] | None = None,
    **spec,
) -> CheckResult:
    return asyncio.run(run_check(CheckSpec(run=run, **spec), answer, case_vars or {}, env=env))


def plain_env(**extra: str) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", **extra}


def gone(pid: int, within: float = 3.0) -> bool:
    """True when ``pid`` no longer runs (exited, or a zombie nobody reaped yet)."""
    end = time.monotonic() + within
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        stat = Path(f"/proc/{pid}/stat")
        try:
            if stat.read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return True
        except (OSError, IndexError):
            pass
        if time.monotonic() > end:
            return False
        time.sleep(0.02)


def test_parse_string_is_the_run_snippet():
    assert parse_check("pytest -q", WHERE, FILE) == CheckSpec(run="pytest -q")


def test_parse_mapping():
    spec = parse_check(
        {
            "setup": "pip install x",
            "run": "python answer.txt",
            "timeout_s": 5,
            "memory_mb": 512,
            "files": {"tests/test_a.py": "assert True\n"},
        },
        WHERE,
        FILE,
    )
    assert spec == CheckSpec(
        run="python answer.txt",
        setup="pip install x",
        timeout_s=5.0,
        memory_mb=512,
        files={"tests/test_a.py": "assert True\n"},
    )
    assert isinstance(spec.timeout_s, float)


@pytest.mark.parametrize(
    ("raw", "where", "message"),
    [
        (["echo"], WHERE, "must be a shell snippet or a mapping"),
        ({"run": "x", "timeout": 3}, f"{WHERE}.timeout", "unknown key(s) in check: timeout"),
        ({}, f"{WHERE}.run", "'run' must be a non-empty shell snippet"),
        ("   ", f"{WHERE}.run", "'run' must be a non-empty shell snippet"),
        ({"run": "x", "setup": 3}, f"{WHERE}.setup", "'setup' must be a non-empty"),
        ({"run": "x", "timeout_s": 0}, f"{WHERE}.timeout_s", "above 0"),
        ({"run": "x", "timeout_s": -1}, f"{WHERE}.timeout_s", "above 0"),
        ({"run": "x", "timeout_s": "5"}, f"{WHERE}.timeout_s", "above 0"),
        ({"run": "x", "timeout_s": True}, f"{WHERE}.timeout_s", "above 0"),
        ({"run": "x", "timeout_s": float("inf")}, f"{WHERE}.timeout_s", "above 0"),
        ({"run": "x", "memory_mb": 0}, f"{WHERE}.memory_mb", "whole number of MiB above 0"),
        ({"run": "x", "memory_mb": "2048"}, f"{WHERE}.memory_mb", "whole number of MiB"),
        ({"run": "x", "memory_mb": 2.5}, f"{WHERE}.memory_mb", "whole number of MiB"),
        ({"run": "x", "files": ["a"]}, f"{WHERE}.files", "'files' must be a mapping"),
        ({"run": "x", "files": {"../up.txt": ""}}, f"{WHERE}.files.../up.txt", "relative"),
        ({"run": "x", "files": {"/etc/x": ""}}, f"{WHERE}.files./etc/x", "relative"),
        ({"run": "x", "files": {"answer.txt": ""}}, f"{WHERE}.files.answer.txt", "taken"),
        ({"run": "x", "files": {"a.py": 3}}, f"{WHERE}.files.a.py", "must be a string"),
    ],
)
def test_parse_errors(raw, where, message):
    with pytest.raises(ConfigError) as info:
        parse_check(raw, WHERE, FILE)
    err = info.value
    assert err.where == where
    assert message in err.message
    assert err.file == FILE
    assert err.fix


def test_pass():
    result = check('test "$(cat "$ANSWER")" = 42 && echo ok')
    assert result.passed is True
    assert result.exit_code == 0
    assert result.output == "ok\n"
    assert result.error is None
    assert result.duration_ms > 0


def test_fail_keeps_exit_code_and_combined_output():
    result = check("echo to-stdout; echo to-stderr >&2; exit 3")
    assert (result.passed, result.exit_code, result.error) == (False, 3, None)
    assert result.output == "to-stdout\nto-stderr\n"


def test_command_not_found_is_a_fail():
    result = check("definitely-not-a-command-xyz")
    assert (result.passed, result.exit_code) == (False, 127)
    assert "not found" in result.output


def test_killed_by_signal_gives_a_negative_exit_code():
    result = check("kill -9 $$")
    assert (result.passed, result.exit_code, result.error) == (False, -9, None)


def test_stdin_is_empty():
    assert check("cat").passed  # would hang if stdin were inherited


def test_setup_runs_first_in_the_same_folder():
    result = check("test -f made.txt && cat made.txt", setup="echo from-setup > made.txt")
    assert result.passed
    assert result.output == "from-setup\n"


def test_setup_failure_is_an_error_and_run_does_not_run(tmp_path: Path):
    marker = tmp_path / "ran"
    result = check(
        'touch "$CASE_MARKER"',
        case_vars={"marker": str(marker)},
        setup="echo preparing; echo 'pip: no such package' >&2; exit 2",
    )
    assert result.passed is False
    assert result.exit_code is None
    assert result.error == "setup failed (exit 2): pip: no such package"
    assert result.output == "preparing\npip: no such package\n"
    assert not marker.exists()


def test_timeout_kills_the_snippet():
    result = check("echo started; sleep 5", timeout_s=0.3)
    # the outcome, not the time it took: timed out, and the output stops where it was killed
    assert result.passed is False
    assert result.exit_code is None
    assert result.error == "timed out after 0.3 s"
    assert result.output == "started\n"


def test_setup_timeout():
    result = check("true", setup="sleep 5", timeout_s=0.3)
    assert (result.passed, result.exit_code) == (False, None)
    assert result.error == "setup timed out after 0.3 s"


HUNGRY = "python3 -c 'bytearray(8 << 30)'"


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or shutil.which("python3") is None,
    reason="RLIMIT_DATA is enforced on Linux; the snippet runs python3",
)
def test_an_answer_allocating_8_gib_under_memory_mb_200_is_an_out_of_memory_error():
    # attack: a model's code, run by the check, asks for far more memory than the machine has
    result = check(HUNGRY, memory_mb=200)
    assert (result.passed, result.exit_code) == (False, 1)
    assert result.error == "ran out of memory (memory_mb: 200)"
    assert result.output.rstrip().endswith("MemoryError")
    setup = check("true", setup=HUNGRY, memory_mb=200)
    assert setup.error == "setup failed (ran out of memory (memory_mb: 200)): MemoryError"


def test_a_failing_snippet_that_says_nothing_of_memory_is_a_plain_fail():
    result = check("echo 'no luck'; exit 3", memory_mb=200)
    assert (result.passed, result.exit_code, result.error) == (False, 3, None)


def test_timeout_covers_setup_and_run_together():
    result = check("sleep 0.4", setup="sleep 0.4", timeout_s=0.6)
    assert result.error == "timed out after 0.6 s"


def test_timeout_kills_background_children_too():
    result = check('sleep 30 & echo "bg=$!"; sh -c "sleep 31" & wait', timeout_s=0.3)
    assert result.error == "timed out after 0.3 s"
    pid = int(re.search(r"bg=(\d+)", result.output).group(1))
    assert gone(pid)


def test_background_children_of_a_finished_snippet_are_killed():
    result = check('sleep 30 & echo "bg=$!"; exit 0', timeout_s=10)
    # a check that waited for the child's output pipe would time out (the child outlives
    # timeout_s) instead of passing
    assert result.passed and result.error is None
    pid = int(re.search(r"bg=(\d+)", result.output).group(1))
    assert gone(pid)


def survivors(token: str) -> list[int]:
    """Live (non-zombie) processes whose environment holds ``CASE_TOKEN=<token>``."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if f"CASE_TOKEN={token}".encode() not in (entry / "environ").read_bytes():
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("delay", [0.0, 0.001, 0.005, "started"])
def test_cancelled_check_leaves_no_process(tmp_path: Path, delay):
    if not Path("/proc/self/environ").exists():
        pytest.skip("needs /proc")
    token = uuid.uuid4().hex
    pid_file = tmp_path / "pid"
    snippet = 'sleep 30 & echo $! >> "$CASE_PID_FILE"; sleep 29 & echo $! >> "$CASE_PID_FILE"; wait'

    async def go() -> None:
        task = asyncio.ensure_future(
            run_check(
                CheckSpec(run=snippet, setup="true"),
                "x",
                {"pid_file": str(pid_file), "token": token},
            )
        )
        if delay == "started":
            for _ in range(300):
                if pid_file.exists() and len(pid_file.read_text().split()) == 2:
                    break
                await asyncio.sleep(0.01)
        else:
            await asyncio.sleep(delay)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    end = time.monotonic() + 3
    while survivors(token) and time.monotonic() < end:
        time.sleep(0.02)
    assert survivors(token) == []


ENV_PROBE = 'for v in $(env | cut -d= -f1); do echo "$v"; done | sort'


def test_secrets_never_reach_the_snippet():
    env = plain_env(
        ANTHROPIC_API_KEY=ANTHROPIC,
        OPENAI_API_KEY=OPENAI,
        MY_TOKEN="tok-12345678",
        DB_PASSWORD="hunter2hunter2",
        AWS_SECRET_ACCESS_KEY="abcdefghijklmnop",
        GH_SECRET="shh-shh-shh",
        NOTE=ANTHROPIC + "-copy",  # contains a known secret value
        LOOKS_LIKE_KEY="sk-" + "c" * 30,  # key-shaped value under an innocent name
        HARMLESS="hello",
        HOME="/home/someone",
        PWD="/somewhere/else",
    )
    result = check(ENV_PROBE, env=env)
    names = set(result.output.split())
    assert {"PATH", "LANG", "HOME", "ANSWER", "ANSWER_TEXT"} <= names
    assert "HARMLESS" not in names  # not in the minimal base, and checks name nothing more
    for secret in (
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "MY_TOKEN",
        "DB_PASSWORD",
        "AWS_SECRET_ACCESS_KEY",
        "GH_SECRET",
        "NOTE",
        "LOOKS_LIKE_KEY",
    ):
        assert secret not in names
    probe = '[ -z "${ANTHROPIC_API_KEY+x}${OPENAI_API_KEY+x}${MY_TOKEN+x}" ] && echo "$HOME"'
    assert check(probe, env=env).output == "/home/someone\n"
    assert check("pwd -P", env=env).output != "/somewhere/else\n"


def test_secrets_are_stripped_from_os_environ_by_default(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI)
    monkeypatch.setenv("MY_TOKEN", "tok-12345678")
    result = check(ENV_PROBE)
    names = set(result.output.split())
    assert "PATH" in names
    assert not {"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "MY_TOKEN"} & names


def test_an_exec_check_does_not_see_a_variable_the_user_did_not_pass(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setenv("CORP_CRED", "corp-cred-value-1234")  # a plain name, not secret-shaped
    result = check('echo "[${CORP_CRED-unset}]"; env')
    assert result.output.startswith("[unset]\n")
    assert "corp-cred-value-1234" not in result.output


def test_a_check_sees_what_it_names_in_pass_env_and_its_output_quoting_it_is_redacted(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setattr(secrets, "_loaded", set())
    monkeypatch.setenv("CORP_CRED", "corp-cred-value-1234")
    result = check('echo "cred=$CORP_CRED"', pass_env=("CORP_CRED",))
    assert result.output == "cred=***\n"


def test_a_pass_env_that_is_not_a_list_of_names_is_refused_naming_the_key() -> None:
    error = config_error({"run": "true", "pass_env": "CORP_CRED"})
    assert error.where == f"{WHERE}.pass_env"
    error = config_error({"run": "true", "pass_env": ["NOT A NAME"]})
    assert "list of environment variable names" in error.message


def test_check_environment_reports_the_dropped_values():
    kept, dropped = check_environment({"PATH": "/bin", "X_API_KEY": "k" * 10, "OK": "1"})
    assert kept == {"PATH": "/bin"}  # OK is in no base and no pass_env
    assert dropped == ["k" * 10]


def test_output_is_redacted():
    result = check(
        "cat leak.txt; echo; echo $CASE_NOTE",
        case_vars={"note": "the key is " + OPENAI},
        env=plain_env(SERVICE_TOKEN="plain-secret-value"),
        files={"leak.txt": f"{ANTHROPIC} plain-secret-value"},
    )
    assert ANTHROPIC not in result.output
    assert OPENAI not in result.output
    assert "plain-secret-value" not in result.output
    assert result.output == "*** ***\nthe key is ***\n"


def test_case_vars_become_case_env_vars():
    result = check(
        'echo "$CASE_USER_NAME|$CASE_N|$CASE_FLAG|$CASE_RATE|${CASE_NESTED-unset}|'
        '${CASE_ITEMS-unset}|${CASE_NOTHING-unset}"',
        case_vars={
            "user name": "Ada Lovelace",
            "n": 3,
            "flag": True,
            "rate": 0.5,
            "nested": {"a": 1},
            "items": [1, 2],
            "nothing": None,
        },
    )
    assert result.output == "Ada Lovelace|3|true|0.5|unset|unset|unset\n"
    assert env_name("my-var.x") == "CASE_MY_VAR_X"


def test_answer_file_and_text_are_exact(tmp_path: Path):
    answer = "naïve café — 日本語 🎉\r\n\ttab 'quotes' \"double\" $HOME `x`\n\n"
    copy, text = tmp_path / "copy", tmp_path / "text"
    result = check(
        '[ "$ANSWER" = "$(pwd -P)/answer.txt" ] && cp "$ANSWER" "$CASE_COPY" && '
        'printf %s "$ANSWER_TEXT" > "$CASE_TEXT"',
        answer,
        {"copy": str(copy), "text": str(text)},
    )
    assert result.passed, result.output
    assert copy.read_bytes() == answer.encode("utf-8")
    assert text.read_bytes() == answer.encode("utf-8")


def test_long_answer_text_is_cut_to_100_kb(tmp_path: Path):
    answer = "a" + "é" * 60_000  # 120,001 bytes of UTF-8
    result = check('printf %s "$ANSWER_TEXT" | wc -c; wc -c < "$ANSWER"', answer)
    env_bytes, file_bytes = (int(n) for n in result.output.split())
    assert env_bytes == 99_999  # 100,000 bytes would split a 2-byte character
    assert file_bytes == 120_001


def test_folder_is_fresh_holds_the_files_and_is_removed():
    first = check(
        "pwd -P; ls -A; cat sub/extra.txt; touch leftover",
        files={"sub/extra.txt": "extra\n", "conftest.py": ""},
    )
    folder, *listing = first.output.splitlines()
    assert listing == ["answer.txt", "conftest.py", "sub", "extra"]
    assert Path(folder).is_absolute()
    assert not Path(folder).exists()
    second = check("pwd -P; ls -A")
    assert second.output.splitlines()[1:] == ["answer.txt"]
    assert second.output.splitlines()[0] != folder


def test_concurrent_checks_get_their_own_folders():
    snippet = 'echo "$CASE_I" > mine; sleep 0.2; pwd -P; cat mine; ls -A | tr "\\n" " "'

    async def go() -> list[CheckResult]:
        return await asyncio.gather(
            *(run_check(CheckSpec(run=snippet), f"answer {i}", {"i": i}) for i in range(6))
        )

    results = asyncio.run(go())
    folders = set()
    for i, result in enumerate(results):
        folder, mine, listing = result.output.splitlines()
        folders.add(folder)
        assert mine == str(i)
        assert listing == "answer.txt mine "
    assert len(folders) == 6


def test_long_output_is_truncated_with_a_marker():
    result = check("yes 0123456789 | head -c 1000000")
    assert result.passed
    assert len(result.output) <= MAX_OUTPUT
    assert "output truncated" in result.output
    assert result.output.startswith("0123456789\n0123456789\n")
    assert result.output.endswith("0123456789\n0")  # the end is kept too: 10**6 % 11 == 1


def test_huge_output_is_read_without_keeping_it_all(monkeypatch: pytest.MonkeyPatch):
    kept: list[int] = []
    totals: list[int] = []

    class Watched(checks._Capture):
        def add(self, chunk: bytes) -> None:
            super().add(chunk)
            kept.append(len(self.head) + len(self.tail))
            totals.append(self.total)

    monkeypatch.setattr(checks, "_Capture", Watched)
    result = check("yes abcdefghij | head -c 20000000; echo THE-END")
    # every byte is counted, but no more than a head and a tail of it is ever kept
    assert totals[-1] == 20_000_000 + len("THE-END\n")
    assert max(kept) <= 2 * CAPTURE_BYTES
    assert len(result.output) <= MAX_OUTPUT
    assert result.output.endswith("THE-END\n")


def test_clip_output():
    assert clip_output("short") == "short"
    text = "a" * 3000 + "b" * 3000
    clipped = clip_output(text)
    assert len(clipped) == MAX_OUTPUT
    assert clipped.startswith("a") and clipped.endswith("b")
    assert "[... output truncated: 6000 characters in all ...]" in clipped


def test_no_shell_is_an_error_result(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(checks, "SHELL", "/nonexistent/sh")
    result = check("true")
    assert (result.passed, result.exit_code) == (False, None)
    assert result.error.startswith("could not start /nonexistent/sh")


def test_non_posix_is_an_error_result(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(checks, "POSIX", False)
    result = check("true")
    assert (result.passed, result.exit_code) == (False, None)
    assert "POSIX shell" in result.error


def test_a_process_that_escapes_the_group_does_not_hang_the_check(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setattr(checks, "DRAIN_S", 0.3)
    result = check('setsid sleep 20 & echo "bg=$!"; sleep 0.1; exit 0')
    pid = int(re.search(r"bg=(\d+)", result.output).group(1))
    try:
        assert result.passed
        # the result came back while the escaped process still runs (holding the output
        # pipe): the check did not wait for it to end
        assert not gone(pid, within=0)
    finally:
        os.kill(pid, 9)  # the one process a check cannot reach: its own session


RETRACTED = """Here is a first try:

```python
print(1 / 0)
```

Wait, that divides by zero. Corrected:

```python
print("fixed")
```
"""


def test_each_fenced_block_runs_and_the_last_is_the_verdict() -> None:
    result = check('python3 "$ANSWER"', RETRACTED, env=plain_env())
    assert result.passed and result.exit_code == 0
    head, _, tail = result.output.partition("block 2 of 2 (the verdict):")
    assert "block 1 of 2: fail (exit 1)" in head and "fixed" in tail


def test_a_wrong_last_block_fails_even_after_a_right_one() -> None:
    answer = "```\nexit 0\n```\nno, rather:\n~~~sh\nexit 3\n~~~\n"
    result = check('sh "$ANSWER"', answer, env=plain_env())
    assert not result.passed and result.exit_code == 3
    assert "block 1 of 2: pass" in result.output


def test_each_block_runs_in_a_fresh_folder() -> None:
    answer = "```\ntouch left-behind\n```\n```\ntest ! -e left-behind\n```\n"
    assert check('sh "$ANSWER"', answer, env=plain_env()).passed


def test_one_block_is_checked_without_its_fences_and_no_block_means_the_whole_answer() -> None:
    one = check(
        'test "$(cat "$ANSWER")" = "echo hi"', "Sure:\n```bash\necho hi\n```\n", env=plain_env()
    )
    assert one.passed and "block" not in one.output
    whole = check('grep -q "no fences" "$ANSWER"', "no fences here", env=plain_env())
    assert whole.passed


def test_at_most_max_blocks_run_the_last_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checks, "MAX_BLOCKS", 2)
    answer = "".join(f"```\nexit {code}\n```\n" for code in (5, 6, 0))
    result = check('sh "$ANSWER"', answer, env=plain_env())
    assert result.passed
    assert (
        "blocks 1-1 of 3: not run" in result.output
        and "block 2 of 3: fail (exit 6)" in result.output
    )


def config_error(raw: Any) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_check(raw, WHERE, FILE)
    return info.value


def test_a_check_that_is_neither_text_nor_mapping_names_its_type_and_the_two_forms() -> None:
    error = config_error(["echo"])
    assert error.message == "'check' must be a shell snippet or a mapping, got list"
    assert (error.file, error.where) == (FILE, WHERE)
    assert error.fix == (
        "write `check: <shell command>` or a mapping with `run:` (and optionally "
        "`setup:`, `timeout_s:`, `files:`)"
    )


def test_unknown_check_keys_are_listed_comma_separated_with_the_keys_a_check_takes() -> None:
    error = config_error({"run": "x", "timeout": 3, "env": {}})
    assert error.message == "unknown key(s) in check: env, timeout"
    assert error.where == f"{WHERE}.env"
    assert error.fix == "a check takes: run, setup, timeout_s, memory_mb, files, pass_env"


def test_a_missing_run_says_how_to_write_one_with_the_answer_variable() -> None:
    error = config_error({"setup": "true"})
    assert error.message == "'run' must be a non-empty shell snippet, got None"
    assert error.where == f"{WHERE}.run"
    assert error.fix == 'write e.g. `run: python "$ANSWER"` (exit code 0 = pass)'


def test_an_empty_setup_says_to_write_commands_or_remove_it() -> None:
    error = config_error({"run": "x", "setup": "  "})
    assert error.message == "'setup' must be a non-empty shell snippet, got '  '"
    assert error.where == f"{WHERE}.setup"
    assert error.fix == "write the commands to run before `run`, or remove `setup`"


def test_a_zero_timeout_is_refused_with_an_example_timeout() -> None:
    error = config_error({"run": "x", "timeout_s": 0})
    assert error.message == "'timeout_s' must be a number of seconds above 0, got 0"
    assert error.where == f"{WHERE}.timeout_s"
    assert error.fix == "write e.g. `timeout_s: 30`"


@pytest.mark.parametrize("timeout", [1, 0.5])
def test_a_timeout_of_one_second_or_less_but_above_zero_is_accepted(timeout: float) -> None:
    spec = parse_check({"run": "x", "timeout_s": timeout}, WHERE, FILE)
    assert spec == CheckSpec(run="x", timeout_s=float(timeout))


def test_files_that_are_not_a_mapping_name_their_type_and_how_to_write_files() -> None:
    error = config_error({"run": "x", "files": ["a.py"]})
    assert error.message == "'files' must be a mapping of file name to text, got list"
    assert error.where == f"{WHERE}.files"
    assert error.fix == "write `files:` followed by `name.py: |` and the file's text"


def test_a_file_whose_text_is_not_a_string_names_the_file_and_the_type() -> None:
    error = config_error({"run": "x", "files": {"a.py": 3}})
    assert error.message == "the text of file 'a.py' must be a string, got int"
    assert error.where == f"{WHERE}.files.a.py"
    assert error.fix == (
        "give each extra file a relative name (e.g. tests/test_answer.py) and its text as a string"
    )


def test_booleans_become_lowercase_true_and_false() -> None:
    assert _scalar(True) == "true"
    assert _scalar(False) == "false"


def test_nul_bytes_are_dropped_from_text_and_nothing_is_put_in_their_place() -> None:
    assert _scalar("a\x00b\x00") == "ab"
    assert _scalar(3) == "3"
    assert _scalar([1]) is None


def test_output_one_byte_short_of_the_limit_is_all_head_and_the_next_byte_joins_the_head() -> None:
    capture = _Capture()
    capture.add(b"a" * (CAPTURE_BYTES - 1))
    assert (len(capture.head), len(capture.tail), capture.total) == (
        CAPTURE_BYTES - 1,
        0,
        CAPTURE_BYTES - 1,
    )
    capture.add(b"b")
    assert bytes(capture.head) == b"a" * (CAPTURE_BYTES - 1) + b"b"
    assert (capture.tail, capture.total) == (bytearray(), CAPTURE_BYTES)
    assert capture.text() == "a" * (CAPTURE_BYTES - 1) + "b"


def test_output_of_exactly_the_limit_fills_the_head_and_leaves_the_tail_empty() -> None:
    capture = _Capture()
    capture.add(b"x" * CAPTURE_BYTES)
    assert (len(capture.head), len(capture.tail), capture.total) == (
        CAPTURE_BYTES,
        0,
        CAPTURE_BYTES,
    )


def test_one_byte_over_the_limit_goes_to_the_tail_with_nothing_omitted() -> None:
    capture = _Capture()
    capture.add(b"h" * CAPTURE_BYTES + b"t")
    assert bytes(capture.head) == b"h" * CAPTURE_BYTES
    assert bytes(capture.tail) == b"t"
    assert capture.total == CAPTURE_BYTES + 1
    assert capture.text() == "h" * CAPTURE_BYTES + "t"


def test_a_tail_over_the_limit_keeps_its_last_bytes_and_counts_the_omitted_ones() -> None:
    capture = _Capture()
    capture.add(b"h" * CAPTURE_BYTES)
    capture.add(b"m" * 10)
    capture.add(b"t" * CAPTURE_BYTES)
    assert capture.total == 2 * CAPTURE_BYTES + 10
    assert len(capture.head) == CAPTURE_BYTES
    assert bytes(capture.tail) == b"t" * CAPTURE_BYTES
    assert capture.text() == (
        "h" * CAPTURE_BYTES + "\n[... 10 bytes omitted ...]\n" + "t" * CAPTURE_BYTES
    )


def test_the_total_counts_every_byte_over_several_small_chunks() -> None:
    capture = _Capture()
    for chunk in (b"abc", b"de", b"f"):
        capture.add(chunk)
    assert capture.total == 6
    assert bytes(capture.head) == b"abcdef"
    assert capture.text() == "abcdef"


# --- running a CheckSpec as given (``check_spec``): blocks, early errors, files, pipes --------


ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}


def check_spec(
    spec: CheckSpec,
    answer: str = "42",
    case_vars: dict[str, Any] | None = None,
    *,
    env: dict[str, str] | None = None,
    no_look: bool = False,
) -> CheckResult:
    return asyncio.run(
        run_check(spec, answer, case_vars or {}, env=ENV if env is None else env, no_look=no_look)
    )


def blocks(*bodies: str) -> str:
    return "".join(f"Try:\n```sh\n{body}\n```\n" for body in bodies)


def test_the_report_of_three_blocks_names_each_earlier_one_with_its_first_line_of_output() -> None:
    answer = blocks("echo first-line; echo second; exit 4", "true", "echo verdict")
    result = check_spec(CheckSpec(run='sh "$ANSWER"'), answer)
    assert (result.passed, result.exit_code, result.error) == (True, 0, None)
    assert result.output == (
        "block 1 of 3: fail (exit 4): first-line\n"
        "block 2 of 3: pass\n"
        "block 3 of 3 (the verdict):\n"
        "verdict\n"
    )


def test_a_block_that_times_out_is_reported_as_an_error_and_the_last_ones_error_is_the_result() -> (
    None
):
    answer = blocks("sleep 5", "sleep 5")
    result = check_spec(CheckSpec(run='sh "$ANSWER"', timeout_s=0.3), answer)
    assert (result.passed, result.exit_code) == (False, None)
    assert result.error == "timed out after 0.3 s"
    assert result.output == (
        "block 1 of 2: error: timed out after 0.3 s\nblock 2 of 2 (the verdict):\n"
    )


def test_every_block_gets_the_case_variables_the_environment_given_and_no_look() -> None:
    answer = blocks("true", "true")
    spec = CheckSpec(run='test "$CASE_LANG" = de && test "$TZ" = set && test ! -e answer.txt')
    marked = {**ENV, "TZ": "set"}  # a variable of the minimal base
    seen = check_spec(spec, answer, {"lang": "de"}, env=marked, no_look=True)
    assert seen.passed, seen.output
    assert "block 1 of 2: pass" in seen.output
    written = check_spec(spec, answer, {"lang": "de"}, env=marked, no_look=False)
    assert not written.passed  # answer.txt exists when the run may look


def test_a_check_with_files_in_a_no_look_run_is_a_bad_check_that_says_what_to_do() -> None:
    result = check_spec(CheckSpec(run="true", files={"data.txt": "x"}), no_look=True)
    assert result == CheckResult(
        False,
        None,
        "",
        result.duration_ms,
        "bad check: a no-look run writes no case data to disk, so a check's files cannot be"
        " written (put them in the snippet, or run without no-look)",
    )


def test_a_file_name_with_a_nul_is_a_bad_check_and_nothing_is_written() -> None:
    result = check_spec(CheckSpec(run="true", files={"a\x00b": "x"}))
    assert (result.passed, result.exit_code, result.output) == (False, None, "")
    assert result.error == "bad check: file name 'a\\x00b' may not contain a backslash or NUL"


def test_a_file_that_cannot_be_written_is_an_error_naming_the_folder() -> None:
    # "a" is written as a file first, so "a/b" has no folder to go in
    result = check_spec(CheckSpec(run="true", files={"a": "1", "a/b": "2"}))
    assert (result.passed, result.exit_code, result.output) == (False, None, "")
    assert result.error is not None
    assert result.error.startswith("could not prepare the check folder: ")


@pytest.mark.parametrize("setup", [None, "true"])
def test_a_shell_that_cannot_start_is_an_error_with_no_output(
    monkeypatch: pytest.MonkeyPatch, setup: str | None
) -> None:
    monkeypatch.setattr(checks, "SHELL", "/nonexistent/sh")
    result = check_spec(CheckSpec(run="true", setup=setup))
    assert (result.passed, result.exit_code, result.output) == (False, None, "")
    assert result.error is not None
    assert result.error.startswith("could not start /nonexistent/sh: ")


def test_without_a_posix_shell_the_result_is_an_error_with_no_output(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(checks, "POSIX", False)
    result = check_spec(CheckSpec(run="true"))
    assert (result.passed, result.exit_code, result.output) == (False, None, "")


def test_the_duration_is_the_milliseconds_the_check_took(monkeypatch: pytest.MonkeyPatch) -> None:
    readings = iter([100.0, 100.25])
    clock = types.SimpleNamespace(
        perf_counter=lambda: next(readings, 100.25), monotonic=checks.time.monotonic
    )
    monkeypatch.setattr(checks, "time", clock)
    assert check_spec(CheckSpec(run="true")).duration_ms == 250.0


def test_the_folder_is_named_for_evalwh_and_nested_files_get_their_folders() -> None:
    spec = CheckSpec(run='basename "$PWD"; cat a/b/c.txt', files={"a/b/c.txt": "deep"})
    result = check_spec(spec)
    assert result.passed, result.output
    name, content = result.output.splitlines()
    assert name.startswith("evalwh-check-")
    assert content == "deep"


def test_an_answer_that_swaps_its_folder_for_a_link_ends_as_a_result_not_a_crash(
    tmp_path: Path,
) -> None:
    # Attack: code under check replaces its own folder with a symlink, so that cleaning up
    # fails (rmtree refuses links). The check still returns its result, and the link's
    # target is left alone.
    target = tmp_path / "kept"
    target.mkdir()
    (target / "precious").write_text("x")
    spec = CheckSpec(run=f'd="$PWD"; cd /; rm -rf "$d"; ln -s {target} "$d"; echo "$d"')
    result = check_spec(spec)
    link = Path(result.output.strip())
    try:
        assert result.passed and link.is_symlink()
        assert (target / "precious").read_text() == "x"
    finally:
        with contextlib.suppress(FileNotFoundError):
            link.unlink()


def test_text_that_is_not_valid_unicode_is_written_with_replacement_marks() -> None:
    # a lone surrogate (what a JSON "\\ud800" escape decodes to) cannot be encoded as UTF-8
    spec = CheckSpec(
        run='test "$(cat answer.txt)" = "a?b" && test "$(cat data)" = "c?d"'
        ' && test "$ANSWER_TEXT" = "a?b"',
        files={"data": "c\ud800d"},
    )
    result = check_spec(spec, "a\ud800b")
    assert result.passed, result.output


def test_nul_bytes_are_dropped_from_the_answer_text_variable() -> None:
    result = check_spec(CheckSpec(run='test "$ANSWER_TEXT" = ab'), "a\x00b")
    assert result.passed, result.output


def test_output_that_is_not_utf8_is_decoded_with_replacement_marks_in_head_and_tail() -> None:
    # the head, then more than CAPTURE_BYTES so that the tail is kept apart
    run = f"printf 'A\\377'; head -c {CAPTURE_BYTES + 10} /dev/zero | tr '\\0' x; printf '\\377Z'"
    result = check_spec(CheckSpec(run=run))
    assert result.passed, result.error
    assert result.output.startswith("A\ufffdx")
    assert result.output.endswith("x\ufffdZ")


def test_clip_output_keeps_text_of_exactly_the_limit_whole() -> None:
    assert clip_output("y" * 50, limit=50) == "y" * 50


def test_clip_output_keeps_half_of_what_fits_from_each_end() -> None:
    text = "".join(f"{i:03d}" for i in range(200))  # 600 distinct characters
    marker = "\n[... output truncated: 600 characters in all ...]\n"
    clipped = clip_output(text, limit=len(marker) + 10)
    assert clipped == text[:5] + marker + text[-5:]


def test_clip_output_below_the_markers_length_is_the_marker_alone() -> None:
    assert clip_output("abcdef" * 20, limit=5) == (
        "\n[... output truncated: 120 characters in all ...]\n"
    )


def test_a_check_never_reads_the_stdin_of_evalwh_itself() -> None:
    # Attack: a snippet that reads stdin would swallow what CI pipes into evalwh.
    read_end, write_end = os.pipe()
    os.write(write_end, b"piped into evalwh\n")
    os.close(write_end)
    saved = os.dup(0)
    os.dup2(read_end, 0)
    try:
        result = check_spec(CheckSpec(run="cat; echo end"))
    finally:
        os.dup2(saved, 0)
        os.close(saved)
        os.close(read_end)
    assert result.output == "end\n"


def test_a_process_that_escapes_the_group_leaves_no_pipe_open_in_evalwh(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Attack: code under check starts its own session, which keeps the write end of the
    # output pipe; without closing our end, each such case would cost evalwh a descriptor.
    if not Path("/proc/self/fd").is_dir() or shutil.which("setsid") is None:
        pytest.skip("needs /proc and setsid")
    monkeypatch.setattr(checks, "DRAIN_S", 0.2)

    def links(pid: str) -> set[str]:
        found = set()
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):  # closed meanwhile
                found.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
        return found

    async def check_then_look() -> tuple[str, str, set[str]]:
        result = await run_check(
            CheckSpec(run='setsid sleep 30 & echo "bg=$!"; sleep 0.1'), "x", env=ENV
        )
        await asyncio.sleep(0)  # a closed pipe lets go of its descriptor on the next turn
        pid = re.search(r"bg=(\d+)", result.output).group(1)  # type: ignore[union-attr]
        return pid, os.readlink(f"/proc/{pid}/fd/1"), links("self")

    pid, pipe, ours = asyncio.run(check_then_look())
    os.kill(int(pid), 9)
    assert pipe.startswith("pipe:")  # the escaped process still holds the output pipe
    assert pipe not in ours  # and evalwh has let go of its end


def test_a_process_group_that_cannot_be_signalled_is_left_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(pid: int, sig: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(checks.os, "killpg", refuse)
    checks._kill_group(12345)  # no exception


class _ExitsAfter:
    """A process whose return code is None for its first ``polls`` looks, then 0."""

    def __init__(self, polls: int) -> None:
        self.polls = polls

    @property
    def returncode(self) -> int | None:
        self.polls -= 1
        return None if self.polls >= 0 else 0


def test_the_exit_poll_starts_at_a_millisecond_and_doubles_up_to_its_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pauses: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(seconds: float) -> None:
        pauses.append(seconds)
        await real_sleep(0)

    monkeypatch.setattr(checks.asyncio, "sleep", sleep)
    proc: Any = _ExitsAfter(7)
    assert asyncio.run(checks._exited(proc, 60.0)) is True
    assert pauses == pytest.approx([0.001, 0.002, 0.004, 0.008, 0.016, 0.02, 0.02])


def test_no_time_left_means_the_shell_has_not_exited_even_at_exactly_the_end() -> None:
    loop = asyncio.new_event_loop()
    loop.time = lambda: 100.0  # type: ignore[method-assign]
    try:
        proc: Any = _ExitsAfter(1)  # would exit by the second look
        assert loop.run_until_complete(checks._exited(proc, 0.0)) is False
    finally:
        loop.close()


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        (5, "file names must be non-empty strings, got 5"),
        ("  ", "file names must be non-empty strings, got '  '"),
        ("a\\b", "file name 'a\\\\b' may not contain a backslash or NUL"),
        ("a\x00b", "file name 'a\\x00b' may not contain a backslash or NUL"),
        ("dir/", "file name 'dir/' must be a relative path inside the check folder"),
        (".", "file name '.' is taken: the answer is written to answer.txt"),
        ("tests/test_a.py", None),
    ],
)
def test_extra_file_names_of_a_check_are_refused_with_the_reason(name: Any, problem: Any) -> None:
    from evalwh.scoring.checks import ANSWER_FILE, _file_name_problem

    if problem is not None:
        problem = problem.replace("answer.txt", ANSWER_FILE)
    assert _file_name_problem(name) == problem


def test_a_setup_step_killed_by_a_signal_says_which() -> None:
    from evalwh.scoring.checks import _how

    assert _how(-9) == "killed by signal 9"
    assert _how(2) == "exit 2"


def test_the_last_line_of_setup_output_is_shown_redacted_and_cut_at_200() -> None:
    from evalwh.scoring.checks import _last_line

    assert _last_line("  \n\n", []) == "(no output)"
    assert _last_line("first\nsecond\n\n  last  \n", []) == "last"
    assert _last_line("x" * 200, []) == "x" * 200
    assert _last_line("x" * 201, []) == "x" * 200 + "..."
    assert _last_line("token hunter2-secret-value", ["hunter2-secret-value"]) == "token ***"
