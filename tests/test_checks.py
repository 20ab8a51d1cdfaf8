"""Exec checks: parsing, and real /bin/sh subprocesses (pass, fail, setup, timeout, env)."""

from __future__ import annotations

import asyncio
import os
import re
import time
import uuid
from pathlib import Path

import pytest

from evalwh.errors import ConfigError
from evalwh.scoring import checks
from evalwh.scoring.checks import (
    MAX_OUTPUT,
    CheckResult,
    CheckSpec,
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


# --- parse_check -------------------------------------------------------------------------


def test_parse_string_is_the_run_snippet():
    assert parse_check("pytest -q", WHERE, FILE) == CheckSpec(run="pytest -q")


def test_parse_mapping():
    spec = parse_check(
        {
            "setup": "pip install x",
            "run": "python answer.txt",
            "timeout_s": 5,
            "files": {"tests/test_a.py": "assert True\n"},
        },
        WHERE,
        FILE,
    )
    assert spec == CheckSpec(
        run="python answer.txt",
        setup="pip install x",
        timeout_s=5.0,
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


# --- pass / fail / setup -----------------------------------------------------------------


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


# --- timeouts and leftover processes -----------------------------------------------------


def test_timeout_kills_the_snippet():
    started = time.monotonic()
    result = check("echo started; sleep 5", timeout_s=0.3)
    assert time.monotonic() - started < 3
    assert result.passed is False
    assert result.exit_code is None
    assert result.error == "timed out after 0.3 s"
    assert result.output == "started\n"


def test_setup_timeout():
    result = check("true", setup="sleep 5", timeout_s=0.3)
    assert (result.passed, result.exit_code) == (False, None)
    assert result.error == "setup timed out after 0.3 s"


def test_timeout_covers_setup_and_run_together():
    result = check("sleep 0.4", setup="sleep 0.4", timeout_s=0.6)
    assert result.error == "timed out after 0.6 s"


def test_timeout_kills_background_children_too():
    result = check('sleep 30 & echo "bg=$!"; sh -c "sleep 31" & wait', timeout_s=0.3)
    assert result.error == "timed out after 0.3 s"
    pid = int(re.search(r"bg=(\d+)", result.output).group(1))
    assert gone(pid)


def test_background_children_of_a_finished_snippet_are_killed():
    started = time.monotonic()
    result = check('sleep 30 & echo "bg=$!"; exit 0', timeout_s=10)
    assert time.monotonic() - started < 5  # did not wait for the child's output pipe
    assert result.passed
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


# --- environment -------------------------------------------------------------------------

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
    assert {"PATH", "LANG", "HOME", "HARMLESS", "ANSWER", "ANSWER_TEXT"} <= names
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
    probe = '[ -z "${ANTHROPIC_API_KEY+x}${OPENAI_API_KEY+x}${MY_TOKEN+x}" ] && echo "$HARMLESS"'
    assert check(probe, env=env).output == "hello\n"
    assert check("pwd -P", env=env).output != "/somewhere/else\n"


def test_secrets_are_stripped_from_os_environ_by_default(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI)
    monkeypatch.setenv("MY_TOKEN", "tok-12345678")
    monkeypatch.setenv("EVALWH_CHECK_PROBE", "visible")
    result = check(ENV_PROBE)
    names = set(result.output.split())
    assert "EVALWH_CHECK_PROBE" in names
    assert not {"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "MY_TOKEN"} & names


def test_check_environment_reports_the_dropped_values():
    kept, dropped = check_environment({"PATH": "/bin", "X_API_KEY": "k" * 10, "OK": "1"})
    assert kept == {"PATH": "/bin", "OK": "1"}
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


# --- the answer and the folder -----------------------------------------------------------


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


# --- output ------------------------------------------------------------------------------


def test_long_output_is_truncated_with_a_marker():
    result = check("yes 0123456789 | head -c 1000000")
    assert result.passed
    assert len(result.output) <= MAX_OUTPUT
    assert "output truncated" in result.output
    assert result.output.startswith("0123456789\n0123456789\n")
    assert result.output.endswith("0123456789\n0")  # the end is kept too: 10**6 % 11 == 1


def test_huge_output_is_read_without_keeping_it_all():
    started = time.monotonic()
    result = check("yes abcdefghij | head -c 20000000; echo THE-END")
    assert time.monotonic() - started < 5
    assert len(result.output) <= MAX_OUTPUT
    assert result.output.endswith("THE-END\n")


def test_clip_output():
    assert clip_output("short") == "short"
    text = "a" * 3000 + "b" * 3000
    clipped = clip_output(text)
    assert len(clipped) == MAX_OUTPUT
    assert clipped.startswith("a") and clipped.endswith("b")
    assert "[... output truncated: 6000 characters in all ...]" in clipped


# --- cannot run --------------------------------------------------------------------------


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
    started = time.monotonic()
    result = check('setsid sleep 20 & echo "bg=$!"; sleep 0.1; exit 0')
    pid = int(re.search(r"bg=(\d+)", result.output).group(1))
    try:
        assert result.passed
        assert time.monotonic() - started < 3
    finally:
        os.kill(pid, 9)  # the one process a check cannot reach: its own session


# --- fenced code blocks: each run in order, the last one is the verdict ----------------------

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
