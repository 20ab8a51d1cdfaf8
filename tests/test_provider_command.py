"""The command provider with real subprocesses (small Python scripts in tmp_path)."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from evalwh import providers
from evalwh.config.model import Case, ModelSpec
from evalwh.errors import ConfigError
from evalwh.providers.base import Completion, ProviderError, Request
from evalwh.providers.command import CommandProvider

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


def test_timeout_kills_the_process(tmp_path: Path) -> None:
    marker = tmp_path / "finished"
    path = script(
        tmp_path,
        "model.py",
        f"""
        import sys, time
        sys.stdin.read()
        time.sleep(5)
        open({str(marker)!r}, "w").write("done")
    """,
    )
    started = time.monotonic()
    err = failure(spec_for([sys.executable, str(path)], timeout_s=0.5))
    assert time.monotonic() - started < 4
    assert err.retryable and err.kind == "timeout"
    assert "0.5s" in str(err)
    time.sleep(0.2)
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


# ---- check ---------------------------------------------------------------------------------


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
