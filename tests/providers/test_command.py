"""The command provider (evalwh/providers/command.py), with real subprocesses (small Python
scripts in tmp_path): the command parsed from a string or a list, the JSON payload on
stdin, the reply read from stdout as JSON or plain text, errors, exit codes, signals and
stderr quoted, timeouts and cancellation killing the process and its children, and the
checks of a command entry."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import signal
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import pytest

from evalwh import providers
from evalwh.capture import Capture
from evalwh.config import attachments
from evalwh.config import secrets as command_secrets
from evalwh.config.model import Case, ModelSpec
from evalwh.errors import ConfigError
from evalwh.providers import command
from evalwh.providers.base import Completion, ProviderError, Request
from evalwh.providers.command import CommandProvider, _kill
from evalwh.providers.command import argv_of as _argv

MESSAGES = [
    {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
    {"role": "user", "content": [{"type": "text", "text": "Say hi"}]},
]


def script(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def spec_for(
    command: Any,
    *,
    timeout_s: float = 20.0,
    params: dict[str, Any] | None = None,
    pass_env: list[str] | None = None,
) -> ModelSpec:
    options: dict[str, Any] = {} if command is None else {"command": command}
    if pass_env:
        options["pass_env"] = pass_env
    return ModelSpec(
        id="cmd",
        provider="command",
        model="my-model",
        params=params or {},
        timeout_s=timeout_s,
        options=options,
        where="models[2]",
    )


def run(
    spec: ModelSpec, *, case_id: str = "c1", variant: str = "v1", repeat: int = 0
) -> Completion:
    prov = providers.create(spec)
    assert isinstance(prov, CommandProvider)
    request = Request(
        model=spec, messages=MESSAGES, case=Case(id=case_id), variant=variant, repeat=repeat
    )

    async def go() -> Completion:
        try:
            return await prov.complete(request)
        finally:
            await prov.aclose()

    return asyncio.run(go())


def failure(spec: ModelSpec) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        run(spec)
    return info.value


# ---- a run of the program ---------------------------------------------------------------------


def test_json_reply_and_request_payload(tmp_path: Path) -> None:
    record = tmp_path / "stdin.json"
    path = script(
        tmp_path,
        "model.py",
        f"""
        import json, sys
        data = json.load(sys.stdin)
        open({str(record)!r}, "w").write(json.dumps(data))
        last = data["messages"][-1]["content"][0]["text"]
        print(json.dumps({{"text": "echo: " + last, "input_tokens": 12, "output_tokens": 3}}))
    """,
    )
    result = run(spec_for([sys.executable, str(path)], params={"temperature": 0.5}), repeat=2)
    assert result.text == "echo: Say hi"
    assert (result.input_tokens, result.output_tokens) == (12, 3)
    assert json.loads(record.read_text()) == {
        "model": "my-model",
        "messages": MESSAGES,
        "params": {"temperature": 0.5},
        "case_id": "c1",
        "variant": "v1",
        "repeat": 2,
    }


def test_output_key_and_no_token_counts(tmp_path: Path) -> None:
    path = script(
        tmp_path,
        "model.py",
        """
        import json, sys
        sys.stdin.read()
        print(json.dumps({"output": "from output"}))
    """,
    )
    result = run(spec_for([sys.executable, str(path)]))
    assert result.text == "from output"
    assert result.input_tokens is None and result.output_tokens is None


def test_plain_text_reply_with_string_command(tmp_path: Path) -> None:
    path = script(
        tmp_path,
        "plain model.py",
        """
        import sys
        sys.stdin.read()
        sys.stdout.write("line one\\nline two\\n\\n")
    """,
    )
    command = shlex.join([sys.executable, str(path)])  # a string, split like a shell would
    result = run(spec_for(command))
    assert result.text == "line one\nline two"


def test_json_without_text_key_is_plain_text(tmp_path: Path) -> None:
    path = script(
        tmp_path,
        "model.py",
        """
        import sys
        sys.stdin.read()
        print('{"answer": 42}')
    """,
    )
    assert run(spec_for([sys.executable, str(path)])).text == '{"answer": 42}'


def test_json_error_reply(tmp_path: Path) -> None:
    path = script(
        tmp_path,
        "model.py",
        """
        import json, sys
        sys.stdin.read()
        print(json.dumps({"error": "upstream busy", "retryable": True}))
    """,
    )
    err = failure(spec_for([sys.executable, str(path)]))
    assert err.retryable
    assert "upstream busy" in str(err)


def test_non_string_text_is_bad_response(tmp_path: Path) -> None:
    path = script(
        tmp_path,
        "model.py",
        """
        import sys
        sys.stdin.read()
        print('{"text": 42}')
    """,
    )
    err = failure(spec_for([sys.executable, str(path)]))
    assert err.kind == "bad_response" and not err.retryable


def test_non_zero_exit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEMO_API_KEY", "super-secret-demo-key")
    path = script(
        tmp_path,
        "model.py",
        """
        import os, sys
        sys.stdin.read()
        sys.stderr.write("x" * 2000 + "\\n")
        sys.stderr.write("failed with key " + os.environ["DEMO_API_KEY"] + "\\n")
        sys.stderr.write("Traceback: the real reason\\n")
        sys.exit(3)
    """,
    )
    err = failure(spec_for([sys.executable, str(path)], pass_env=["DEMO_API_KEY"]))
    assert not err.retryable
    assert err.kind == "exit" and err.status is None  # status is for HTTP codes
    message = str(err)
    assert "exited with code 3" in message
    assert "the real reason" in message
    assert "super-secret-demo-key" not in message and "***" in message
    assert message.count("x") < 600  # only the tail of stderr


def test_a_command_printing_a_pass_env_variable_with_a_plain_name_to_stderr_stores_it_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(command_secrets, "_loaded", set())
    monkeypatch.setenv("CORP_CRED", "corp-cred-value-1234")  # no secret-looking name
    path = script(
        tmp_path,
        "model.py",
        """
        import os, sys
        sys.stdin.read()
        sys.stderr.write("env: CORP_CRED=" + os.environ["CORP_CRED"] + "\\n")
        sys.exit(1)
    """,
    )
    err = failure(spec_for([sys.executable, str(path)], pass_env=["CORP_CRED"]))
    assert "corp-cred-value-1234" not in str(err)
    assert "CORP_CRED=***" in str(err)


def test_a_command_does_not_see_a_variable_it_did_not_name_in_pass_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CORP_CRED", "corp-cred-value-1234")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    path = script(
        tmp_path,
        "model.py",
        """
        import json, os, sys
        sys.stdin.read()
        print(json.dumps({"text": " ".join(sorted(os.environ))}))
    """,
    )
    names = set(run(spec_for([sys.executable, str(path)])).text.split())
    assert "CORP_CRED" not in names
    assert {"PATH", "LC_ALL"} <= names  # the minimal base


def test_timeout_kills_the_process(tmp_path: Path) -> None:
    marker = tmp_path / "finished"
    pid_file = tmp_path / "pid"
    path = script(
        tmp_path,
        "model.py",
        f"""
        import os, sys, time
        open({str(pid_file) + ".part"!r}, "w").write(str(os.getpid()))
        os.replace({str(pid_file) + ".part"!r}, {str(pid_file)!r})
        sys.stdin.read()
        time.sleep(5)
        open({str(marker)!r}, "w").write("done")
    """,
    )
    err = failure(spec_for([sys.executable, str(path)], timeout_s=0.5))
    assert err.retryable and err.kind == "timeout"
    assert "0.5s" in str(err)
    # the outcome, not how long it took: the process is gone (killed and reaped) once the
    # failure is reported, so it never writes its marker
    if os.name == "posix" and pid_file.exists():
        with pytest.raises(ProcessLookupError):
            os.kill(int(pid_file.read_text()), 0)
    assert not marker.exists()


@pytest.mark.skipif(os.name != "posix", reason="process groups are POSIX")
def test_timeout_kills_children_too(tmp_path: Path) -> None:
    marker = tmp_path / "child-finished"
    child = script(
        tmp_path,
        "child.py",
        f"""
        import time
        time.sleep(1.5)
        open({str(marker)!r}, "w").write("done")
    """,
    )
    parent = script(
        tmp_path,
        "parent.py",
        f"""
        import subprocess, sys
        sys.stdin.read()
        subprocess.run([sys.executable, {str(child)!r}])
    """,
    )
    err = failure(spec_for([sys.executable, str(parent)], timeout_s=0.5))
    assert err.kind == "timeout"
    time.sleep(1.6)
    assert not marker.exists()


def test_cancellation_kills_the_process(tmp_path: Path) -> None:
    marker = tmp_path / "finished"
    path = script(
        tmp_path,
        "model.py",
        f"""
        import sys, time
        sys.stdin.read()
        time.sleep(1.0)
        open({str(marker)!r}, "w").write("done")
    """,
    )
    spec = spec_for([sys.executable, str(path)])
    prov = providers.create(spec)
    request = Request(model=spec, messages=MESSAGES, case=Case(id="c1"), variant="v1")

    async def go() -> None:
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(prov.complete(request), timeout=0.3)

    asyncio.run(go())
    time.sleep(1.2)
    assert not marker.exists()


def test_program_that_ignores_stdin(tmp_path: Path) -> None:
    path = script(tmp_path, "model.py", "print('no input needed')\n")
    assert run(spec_for([sys.executable, str(path)])).text == "no input needed"


def test_program_not_found(tmp_path: Path) -> None:
    err = failure(spec_for([str(tmp_path / "does-not-exist")]))
    assert not err.retryable
    assert "not found" in str(err)


def test_relative_command_resolves_against_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "proj"
    folder.mkdir()
    script(folder, "model.py", "print('relative ok')\n")
    monkeypatch.chdir(folder)
    assert run(spec_for([sys.executable, "model.py"])).text == "relative ok"


def test_concurrent_requests(tmp_path: Path) -> None:
    path = script(
        tmp_path,
        "model.py",
        """
        import json, sys
        data = json.load(sys.stdin)
        print(json.dumps({"text": data["case_id"]}))
    """,
    )
    spec = spec_for([sys.executable, str(path)])
    prov = providers.create(spec)

    async def go() -> list[str]:
        requests = [
            Request(model=spec, messages=MESSAGES, case=Case(id=f"case{i}"), variant="v1")
            for i in range(8)
        ]
        results = await asyncio.gather(*(prov.complete(r) for r in requests))
        return [r.text for r in results]

    assert asyncio.run(go()) == [f"case{i}" for i in range(8)]


@pytest.mark.skipif(os.name != "posix", reason="process groups are POSIX")
@pytest.mark.parametrize("posix", [True, False])
def test_killing_a_command_that_has_already_exited_is_harmless(posix: bool) -> None:
    # the race where a command exits just as its timeout fires: its process (group) is gone
    # by the time it is killed, and that must not turn into an error
    async def go() -> int | None:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", "pass", start_new_session=True
        )
        await proc.wait()
        await _kill(proc, posix)
        return proc.returncode

    assert asyncio.run(go()) == 0


@pytest.mark.skipif(os.name != "posix", reason="process groups are POSIX")
@pytest.mark.parametrize("error", [ProcessLookupError, PermissionError])
def test_a_timeout_is_reported_as_such_when_the_group_kill_complains(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: type[OSError]
) -> None:
    # killpg kills the group but then reports ESRCH (the group went away meanwhile) or EPERM
    # (what macOS says for a group already down to zombies): the user still gets the
    # ordinary timeout error, and the command and its child are gone
    real_killpg = os.killpg
    calls: list[int] = []

    def killpg(pgid: int, sig: int) -> None:
        calls.append(sig)
        real_killpg(pgid, sig)
        raise error(1, "simulated")

    monkeypatch.setattr(os, "killpg", killpg)
    marker = tmp_path / "child-finished"
    child = script(
        tmp_path,
        "child.py",
        f"""
        import time
        time.sleep(1.0)
        open({str(marker)!r}, "w").write("done")
        """,
    )
    parent = script(
        tmp_path,
        "parent.py",
        f"""
        import subprocess, sys
        sys.stdin.read()
        subprocess.run([sys.executable, {str(child)!r}])
        """,
    )
    spec = ModelSpec(
        id="cmd",
        provider="command",
        model="m",
        timeout_s=0.4,
        options={"command": [sys.executable, str(parent)]},
        where="models[0]",
    )
    prov = providers.create(spec)
    messages = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    request = Request(model=spec, messages=messages, case=Case(id="c1"), variant="v1")

    async def go() -> None:
        try:
            await prov.complete(request)
        finally:
            await prov.aclose()

    with pytest.raises(ProviderError) as info:
        asyncio.run(go())
    assert info.value.kind == "timeout" and info.value.retryable
    assert "did not finish within 0.4s (killed)" in str(info.value)
    assert calls and set(calls) == {signal.SIGKILL}
    time.sleep(1.3)  # past the child's own 1.0 s: had it survived, its marker would be there
    assert not marker.exists()  # the child was killed with its parent


# ---- argv, stdin payload, paths and errors ----------------------------------------------------


ECHO = """\
    import json, sys
    raw = sys.stdin.buffer.read()
    sys.stdout.write(json.dumps({"text": json.dumps({"raw": raw.decode("latin-1"), "argv": sys.argv[1:]})}))
"""


def _complete(spec: Any, messages: list[dict[str, Any]]) -> Any:
    prov = CommandProvider(spec)
    request = Request(model=spec, messages=messages, case=Case(id="c1"), variant="v1", repeat=0)
    return asyncio.run(prov.complete(request))


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


# ---- the program's stdout ---------------------------------------------------------------------


def parse(stdout: str) -> Completion:
    return CommandProvider(spec_for(["my-model-program"]))._parse(stdout)


def parse_failure(stdout: str) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        parse(stdout)
    return info.value


def test_json_reply_keeps_its_text_token_counts_and_extra() -> None:
    got = parse(
        '{"text": "hi", "input_tokens": 12, "output_tokens": 3, '
        '"extra": {"finish_reason": "stop", "cost_usd": 0.25}}\n'
    )
    assert got == Completion(
        text="hi",
        input_tokens=12,
        output_tokens=3,
        extra={"finish_reason": "stop", "cost_usd": 0.25},
    )


def test_json_reply_says_how_the_answer_ended_as_the_http_providers_do() -> None:
    got = parse(
        '{"text": "Once upon", "finish_reason": "length", "reasoning": "plan", '
        '"tool_calls": [{"name": "f", "arguments": {"a": 1}}, "junk"], "reasoning_tokens": 7, '
        '"cache_read_tokens": 100, "cache_write_tokens": "9", "refusal": 3}'
    )
    assert (got.finish_reason, got.reasoning, got.tool_calls) == (
        "length",
        "plan",
        [{"name": "f", "arguments": {"a": 1}}],
    )
    assert (got.reasoning_tokens, got.cache_read_tokens, got.cache_write_tokens) == (7, 100, None)
    assert got.refusal is None  # not a string
    assert parse('{"text": "x", "finish_reason": "done"}').finish_reason is None  # unknown word


def test_output_key_works_like_text_and_a_non_object_extra_is_dropped() -> None:
    got = parse('{"output": "hello", "extra": ["not", "a", "dict"]}')
    assert got == Completion(text="hello", input_tokens=None, output_tokens=None, extra={})


def test_token_counts_that_are_not_integers_are_not_recorded() -> None:
    """A string or a boolean is no token count: stored as unknown (None), not as "12" or True."""
    got = parse('{"text": "hi", "input_tokens": "12", "output_tokens": true}')
    assert (got.input_tokens, got.output_tokens) == (None, None)
    got = parse('{"text": "hi", "input_tokens": 1.5, "output_tokens": false}')
    assert (got.input_tokens, got.output_tokens) == (None, None)


def test_non_string_text_names_the_key_and_the_type_it_got() -> None:
    err = parse_failure('{"text": 42}')
    assert str(err) == 'command: "text" must be a string, got int'
    assert err.kind == "bad_response" and err.retryable is False
    err = parse_failure('{"output": ["a", "b"]}')
    assert str(err) == 'command: "output" must be a string, got list'


def test_an_error_reply_without_retryable_is_not_retried() -> None:
    err = parse_failure('{"error": "model crashed"}')
    assert str(err) == "command: model crashed"
    assert err.retryable is False


def test_an_error_reply_says_whether_it_is_retryable() -> None:
    assert parse_failure('{"error": "busy", "retryable": true}').retryable is True
    assert parse_failure('{"error": "bad", "retryable": false}').retryable is False


def test_plain_text_loses_only_its_trailing_newlines() -> None:
    """Trailing spaces and tabs are part of the answer; only line ends are removed."""
    assert parse("hello  \t\n\r\n").text == "hello  \t"
    assert parse("  indented\n").text == "  indented"


def test_plain_text_ending_in_capital_x_keeps_it() -> None:
    assert parse("RELAX\n").text == "RELAX"
    assert parse("XX\r\n").text == "XX"


def test_invalid_json_is_taken_as_plain_text() -> None:
    assert parse('{"text": "unfinished\n').text == '{"text": "unfinished'


# ---- check ------------------------------------------------------------------------------------


def test_check_requires_command() -> None:
    with pytest.raises(ConfigError) as info:
        providers.check(spec_for(None), "eval.yaml")
    assert info.value.where == "models[2].command"
    assert info.value.file == "eval.yaml"
    assert info.value.fix


@pytest.mark.parametrize("bad", ["", "   ", [], ["python", 3], "python 'unclosed", 42])
def test_check_rejects_bad_commands(bad: Any) -> None:
    with pytest.raises(ConfigError) as info:
        providers.check(spec_for(bad))
    assert info.value.where == "models[2].command"


def test_check_accepts_string_and_list() -> None:
    assert providers.check(spec_for("python model.py --fast")) is None
    assert providers.check(spec_for(["python", "model.py"])) is None
    # the string is split as a shell would; the list is taken as it is
    assert providers.create(spec_for("python 'my model.py' --fast")).argv == [
        "python",
        "my model.py",
        "--fast",
    ]
    assert providers.create(spec_for(["python", "my model.py"])).argv == ["python", "my model.py"]
    for bad in ("", [], ["python", 3]):
        with pytest.raises(ConfigError):
            providers.check(spec_for(bad))


MISSING_FIX = 'add command: the program to run, e.g. command: "python my_model.py"'


BAD_FIX = (
    'write the program and its arguments, e.g. "python my_model.py --flag" '
    '(or a list: ["python", "my_model.py"])'
)


def config_error(command: Any) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        CommandProvider.check(spec_for(command), file="eval.yaml")
    return info.value


def test_a_missing_command_says_what_to_add_and_where() -> None:
    err = config_error(None)
    assert (err.message, err.file, err.where, err.fix) == (
        "provider 'command' needs a command",
        "eval.yaml",
        "models[2].command",
        MISSING_FIX,
    )
    assert str(err) == (
        f"eval.yaml: models[2].command: provider 'command' needs a command\n  fix: {MISSING_FIX}"
    )


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        (42, "command must be a string or a list of strings"),
        (["python", 3], "command must be a string or a list of strings"),
        ("", "command is empty"),
        ([], "command is empty"),
    ],
)
def test_an_unusable_command_names_the_file_place_and_fix(command: Any, reason: str) -> None:
    err = config_error(command)
    assert (err.message, err.file, err.where, err.fix) == (
        f"bad command: {reason}",
        "eval.yaml",
        "models[2].command",
        BAD_FIX,
    )
    assert str(err) == f"eval.yaml: models[2].command: bad command: {reason}\n  fix: {BAD_FIX}"


def test_a_usable_command_passes_the_check() -> None:
    CommandProvider.check(spec_for("python my_model.py --flag"), file="eval.yaml")
    CommandProvider.check(spec_for(["python", "my_model.py"]), file="eval.yaml")


# ---- bounds: stdout and stderr are capped while they are read (issue 46) ----


class Watched(Capture):
    """A Capture that records how many bytes it held after each chunk it was given."""

    held: ClassVar[list[int]] = []

    def add(self, chunk: bytes) -> None:
        super().add(chunk)
        Watched.held.append(len(self.head) + len(self.tail))


def bounded(spec: ModelSpec, max_output_bytes: int) -> ModelSpec:
    return replace(spec, options={**spec.options, "max_output_bytes": max_output_bytes})


@pytest.fixture
def watched(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    Watched.held = []
    monkeypatch.setattr(command, "Capture", Watched)
    return Watched.held


def flood(tmp_path: Path, stream: str, byte: str, then: str = "") -> Path:
    """A program that reads its request, then writes 20 MiB of ``byte`` to ``stream``."""
    body = (
        "import sys\nsys.stdin.read()\n"
        f"for _ in range(20):\n    sys.{stream}.buffer.write(b'{byte}' * (1 << 20))\n{then}\n"
    )
    return script(tmp_path, "model.py", body)


def test_command_provider_printing_20_mb_stores_1_mib_marked_truncated(
    tmp_path: Path, watched: list[int]
) -> None:
    answer = run(spec_for([sys.executable, str(flood(tmp_path, "stdout", "y"))]))
    assert answer.text == "y" * command.MAX_OUTPUT_BYTES
    assert answer.extra == {
        "output_truncated": {"kept_bytes": command.MAX_OUTPUT_BYTES, "total_bytes": 20 << 20}
    }
    assert max(watched) <= command.MAX_OUTPUT_BYTES  # never more held while reading


def test_command_provider_output_bound_is_set_by_max_output_bytes(tmp_path: Path) -> None:
    path = script(tmp_path, "model.py", "import sys\nsys.stdout.write('abcdefghij' * 3)\n")
    answer = run(bounded(spec_for([sys.executable, str(path)]), 4))
    assert answer.text == "abcd"
    assert answer.extra["output_truncated"] == {"kept_bytes": 4, "total_bytes": 30}


def test_command_provider_output_at_the_bound_is_not_marked(tmp_path: Path) -> None:
    path = script(tmp_path, "model.py", "import sys\nsys.stdout.write('abcd')\n")
    answer = run(bounded(spec_for([sys.executable, str(path)]), 4))
    assert (answer.text, answer.extra) == ("abcd", {})


def test_command_provider_printing_20_mb_of_stderr_keeps_only_its_end(
    tmp_path: Path, watched: list[int]
) -> None:
    path = flood(tmp_path, "stderr", "e", then="sys.stderr.write('the real reason')\nsys.exit(2)")
    err = failure(spec_for([sys.executable, str(path)]))
    assert "exited with code 2" in str(err) and "the real reason" in str(err)
    assert max(watched) <= command.STDERR_CAPTURE_BYTES


# ---- bounds: memory (evalwh/config/childmemory.py) ----


def with_memory(spec: ModelSpec, memory_mb: Any) -> ModelSpec:
    return replace(spec, options={**spec.options, "memory_mb": memory_mb})


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_DATA is enforced on Linux")
def test_command_provider_allocating_8_gib_under_memory_mb_200_is_an_out_of_memory_error(
    tmp_path: Path,
) -> None:
    # attack: a request (an untrusted case) drives the program to ask for far more memory
    # than the machine should give it; the bound holds for what it starts, too
    path = script(
        tmp_path,
        "model.py",
        """
        import subprocess, sys
        sys.stdin.read()
        sys.exit(subprocess.call([sys.executable, "-c", "bytearray(8 << 30)"]))
    """,
    )
    err = failure(with_memory(spec_for([sys.executable, str(path)]), 200))
    assert (err.kind, err.retryable) == ("out_of_memory", False)
    assert str(err).startswith(f"command: {sys.executable} ran out of memory (memory_mb: 200): ")
    assert str(err).endswith("MemoryError")


def test_a_command_provider_is_bounded_by_2048_mib_unless_it_names_more() -> None:
    assert CommandProvider(spec_for("python m.py")).memory_mb == 2048
    assert CommandProvider(with_memory(spec_for("python m.py"), 8192)).memory_mb == 8192


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2048", True])
def test_a_memory_mb_that_is_no_whole_number_above_0_is_refused_at_its_place(bad: Any) -> None:
    with pytest.raises(ConfigError) as info:
        CommandProvider.check(with_memory(spec_for("python m.py"), bad), file="eval.yaml")
    err = info.value
    assert (err.message, err.where, err.fix) == (
        f"memory_mb must be a whole number of MiB above 0, got {bad!r}",
        "models[2].memory_mb",
        "write e.g. memory_mb: 4096 (the default is 2048)",
    )


def test_a_failure_that_says_nothing_of_memory_stays_an_exit(tmp_path: Path) -> None:
    path = script(tmp_path, "model.py", "import sys\nsys.stderr.write('no luck')\nsys.exit(4)\n")
    err = failure(with_memory(spec_for([sys.executable, str(path)]), 200))
    assert err.kind == "exit" and str(err).endswith("exited with code 4: no luck")
