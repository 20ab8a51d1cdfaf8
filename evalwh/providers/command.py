"""The command provider (``provider: command``): any program is a model.

::

    - id: my-agent
      provider: command
      command: ["python", "agent.py", "--fast"]   # or a string, split like a shell would

For each request the program is started (no shell), gets one JSON object on stdin::

    {"model": ..., "messages": [...], "params": {...}, "case_id": ..., "variant": ..., "repeat": 0}

A binary part (image, file, audio, video) carries its file as a *path*, not base64, so a
large video never goes through the pipe: ``{"type": "image", "name": "photo", "sha256":
..., "media_type": "image/png", "bytes": 1234, "path": "/abs/.../artifacts/ab/cdef..."}``
(during a run, the copy in the artifact store; read it, do not change it).

The program answers on stdout, either with a JSON object ``{"text": ..., "input_tokens": 12,
"output_tokens": 3}`` (``"output"`` works as well as ``"text"``; the token counts are
optional, and so are how the answer ended, as the HTTP providers store it: ``finish_reason``
(one of :data:`evalwh.providers.base.FINISH_REASONS`), ``refusal``, ``tool_calls``,
``reasoning``, ``reasoning_tokens``, ``cache_read_tokens``, ``cache_write_tokens``;
``{"error": "...", "retryable": true}`` reports a failure), or with plain text: the
whole of stdout, trailing newlines removed. A non-zero exit is a non-retryable failure that
quotes the end of stderr; running longer than ``timeout_s`` kills the program (and its
children) and is a retryable timeout. Its memory (and its children's) is bounded by
``memory_mb`` (default 2048, :mod:`evalwh.config.childmemory`); a program that fails saying it
ran out of memory (``MemoryError``, "out of memory", ``std::bad_alloc`` ...) is a
non-retryable error of kind ``out_of_memory``: "ran out of memory (memory_mb: 2048)".

The program runs in the config file's folder, so a relative path such as ``./agent.py`` or
``python agent.py`` resolves next to ``eval.yaml`` wherever evalwh is started; a bare name is
looked up on ``PATH``. It gets a minimal environment (``PATH``, ``HOME``, ``LANG``, ``LC_*``
...) *without secrets*, exactly as exec checks do
(:func:`evalwh.config.secrets.check_environment`); a program that needs more names it on purpose::

    pass_env: [OPENAI_API_KEY, CORP_CRED]   # these variables are passed as they are

and the values of those variables become known secrets: printed back, they are stored as ``***``.

Its stdout is read as it comes and only its first ``max_output_bytes`` (default 1 MiB) are
kept: the rest is counted, not held, and the answer is stored cut, with ``extra.output_truncated``
= ``{"kept_bytes": ..., "total_bytes": ...}``. Only stderr's last 64 KiB are kept.

Everything the program prints that evalwh stores (its answer, stderr in an error) goes
through :func:`evalwh.config.secrets.sanitize`: known secrets and key shapes become ``***``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import signal
from typing import Any

from evalwh.capture import Capture, read_into
from evalwh.config.childmemory import (
    DEFAULT_MEMORY_MB,
    exec_failure,
    limited,
    memory_mb_of,
    out_of_memory,
    says_out_of_memory,
)
from evalwh.config.model import ModelSpec
from evalwh.config.secrets import check_environment, redact, remember_passed, sanitize
from evalwh.errors import ConfigError
from evalwh.providers.base import (
    FINISH_REASONS,
    MAX_OUTPUT_BYTES,
    Completion,
    ProviderError,
    Request,
    int_or_none,
    truncated,
)

STDERR_TAIL = 500  # characters of stderr quoted in an error
STDERR_CAPTURE_BYTES = 64 * 1024  # bytes kept from stderr's end while reading it


async def run_program(
    argv: list[str],
    payload: bytes,
    *,
    cwd: Any,
    env: dict[str, str],
    timeout_s: float,
    max_output_bytes: int,
    memory_mb: int = DEFAULT_MEMORY_MB,
) -> Capture:
    """Run ``argv`` (no shell, its own process group, its memory bounded by ``memory_mb``)
    with ``payload`` on stdin; its stdout, of which the first ``max_output_bytes`` are kept.
    Not starting, running past ``timeout_s`` (killed, with its children: retryable, kind
    ``timeout``) and a non-zero exit (kind ``exit``, quoting the end of stderr, sanitized;
    kind ``out_of_memory`` when stderr says it ran out of memory) raise ProviderError. The
    command provider and command tools (evalwh.engine.tools) run their programs with it."""
    posix = os.name == "posix"
    if posix:  # where it is started through /bin/sh (Windows finds programs its own way)
        _startable(argv[0], cwd, env)
    try:
        proc = await asyncio.create_subprocess_exec(
            *limited(argv, memory_mb),  # through /bin/sh, which bounds it and execs it
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=env,
            start_new_session=posix,  # its own process group, so a kill reaches children
        )
    except FileNotFoundError:
        raise ProviderError(f"program not found: {argv[0]}") from None
    except PermissionError:
        raise ProviderError(f"program is not executable: {argv[0]}") from None
    except OSError as exc:
        raise ProviderError(f"cannot start {argv[0]}: {exc}") from None
    out = Capture(max_output_bytes, 0)  # the answer's start
    err = Capture(0, STDERR_CAPTURE_BYTES)  # stderr's end, where the error is
    try:
        await asyncio.wait_for(_exchange(proc, payload, out, err), timeout=timeout_s)
    except asyncio.TimeoutError:
        await _kill(proc, posix)
        raise ProviderError(
            f"{argv[0]} did not finish within {timeout_s:g}s (killed)",
            retryable=True,
            kind="timeout",
        ) from None
    finally:
        if proc.returncode is None:  # cancelled (or timed out): never leave it running
            await _kill(proc, posix)
    if proc.returncode != 0:
        said = err.text()
        why = exec_failure(proc.returncode, said) if not out.total else None
        if why is not None:  # as Python says it when it starts the program itself
            raise ProviderError(f"cannot start {argv[0]}: {why}")
        tail = sanitize(said.strip(), STDERR_TAIL, tail=True)
        code = proc.returncode or 0
        how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
        kind = "exit"
        if says_out_of_memory(said):
            how, kind = out_of_memory(memory_mb), "out_of_memory"
        raise ProviderError(
            f"{argv[0]} {how}" + (f": {tail}" if tail else " (no stderr)"), kind=kind
        )
    return out


def _startable(program: str, cwd: Any, env: dict[str, str]) -> None:
    """Refuse, as starting it directly would, a program that is not there or not executable:
    it is started through /bin/sh (:func:`~evalwh.config.childmemory.limited`), whose own
    words for these would otherwise be the error. A name without a slash is looked up on the
    ``PATH`` of ``env``, a path with one from ``cwd``."""
    if "/" in program:
        candidates = [os.path.join(str(cwd or "."), program)]
    else:
        candidates = [os.path.join(d, program) for d in os.get_exec_path(env)]
    found = [c for c in candidates if os.path.isfile(c)]
    if not found:
        raise ProviderError(f"program not found: {program}")
    if not any(os.access(c, os.X_OK) for c in found):
        raise ProviderError(f"program is not executable: {program}")


def argv_of(command: Any) -> list[str]:
    """The argument vector of a ``command`` option; ValueError if it is unusable."""
    if isinstance(command, str):
        argv = shlex.split(command, posix=os.name != "nt")
    elif isinstance(command, (list, tuple)) and all(isinstance(a, str) for a in command):
        argv = list(command)
    else:
        raise ValueError("command must be a string or a list of strings")
    if not argv or not argv[0]:
        raise ValueError("command is empty")
    return argv


def _with_paths(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages with each binary part's absolute file path added."""
    from evalwh.config.attachments import path_of

    if all(p.get("type") == "text" for m in messages for p in m["content"]):
        return messages
    out = []
    for message in messages:
        parts = []
        for part in message["content"]:
            found = path_of(part["sha256"]) if "sha256" in part else None
            parts.append({**part, "path": str(found.resolve())} if found is not None else part)
        out.append({**message, "content": parts})
    return out


class CommandProvider:
    """Runs ``command`` once per request; see the module docstring."""

    name = "command"
    tool_use = True  # the tools and the transcript's tool calls/results go in its JSON

    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec
        self.argv = argv_of(spec.options.get("command"))
        self._env: dict[str, str] | None = None
        self.max_output_bytes = int(spec.options.get("max_output_bytes") or MAX_OUTPUT_BYTES)
        self.pass_env = [str(name) for name in spec.options.get("pass_env") or ()]
        self.memory_mb = memory_mb_of(spec.options.get("memory_mb")) or DEFAULT_MEMORY_MB
        # what it is handed is redacted in what it prints, fresh answer or cached
        remember_passed(os.environ, self.pass_env)

    def environment(self) -> dict[str, str]:
        """The program's environment: a minimal base without secrets, plus ``pass_env``."""
        if self._env is None:
            self._env, _dropped = check_environment(pass_env=self.pass_env)
        return self._env

    @classmethod
    def check(cls, spec: ModelSpec, file: str | None = None) -> None:
        command = spec.options.get("command")
        if command is None:
            raise ConfigError(
                "provider 'command' needs a command",
                file=file,
                where=f"{spec.where}.command",
                fix='add command: the program to run, e.g. command: "python my_model.py"',
            )
        try:
            argv_of(command)
        except ValueError as exc:
            raise ConfigError(
                f"bad command: {exc}",
                file=file,
                where=f"{spec.where}.command",
                fix='write the program and its arguments, e.g. "python my_model.py --flag" '
                '(or a list: ["python", "my_model.py"])',
            ) from None
        if memory_mb_of(spec.options.get("memory_mb")) is None:
            raise ConfigError(
                "memory_mb must be a whole number of MiB above 0, got "
                f"{spec.options.get('memory_mb')!r}",
                file=file,
                where=f"{spec.where}.memory_mb",
                fix="write e.g. memory_mb: 4096 (the default is 2048)",
            )

    def _payload(self, request: Request) -> bytes:
        payload = {
            "model": self.spec.model,
            "messages": _with_paths(request.messages),
            "params": request.params,
            "case_id": request.case.id,
            "variant": request.variant,
            "repeat": request.repeat,
        }
        if request.tools is not None:
            payload["tools"] = [t.definition() for t in request.tools.tools]
            payload["tool_choice"] = request.tools.choice
        return json.dumps(payload, ensure_ascii=False).encode("utf-8")

    def _fail(self, message: str, *, retryable: bool, kind: str = "provider") -> ProviderError:
        """The error of a failed call, redacted; whether to retry is always the caller's call."""
        return ProviderError(redact(f"command: {message}"), retryable=retryable, kind=kind)

    async def complete(self, request: Request) -> Completion:
        try:
            out = await run_program(
                self.argv,
                self._payload(request),
                cwd=self.spec.root,  # the config's folder: `python agent.py` finds agent.py there
                env=self.environment(),
                timeout_s=self.spec.timeout_s,
                max_output_bytes=self.max_output_bytes,
                memory_mb=self.memory_mb,
            )
        except ProviderError as exc:
            raise self._fail(str(exc), retryable=exc.retryable, kind=exc.kind) from None
        completion = self._parse(sanitize(out.text()))
        if out.truncated:  # stored cut, and said so beside the answer
            return truncated(completion, len(out.head), out.total)
        return completion

    def _parse(self, out: str) -> Completion:
        stripped = out.strip()
        if stripped.startswith("{"):
            try:
                data = json.loads(stripped)
            except ValueError:
                data = None
            if isinstance(data, dict):
                key = "text" if "text" in data else "output" if "output" in data else None
                if key is not None:
                    text = data[key]
                    if not isinstance(text, str):
                        raise self._fail(
                            f'"{key}" must be a string, got {type(text).__name__}',
                            retryable=False,
                            kind="bad_response",
                        )
                    extra = data.get("extra")
                    return Completion(
                        text=text,
                        input_tokens=int_or_none(data.get("input_tokens")),
                        output_tokens=int_or_none(data.get("output_tokens")),
                        extra=extra if isinstance(extra, dict) else {},
                        **_ending(data),
                    )
                if "error" in data:
                    raise self._fail(
                        str(data["error"]), retryable=bool(data.get("retryable", False))
                    )
        return Completion(text=out.rstrip("\r\n"))

    async def aclose(self) -> None:
        return None


async def _exchange(
    proc: asyncio.subprocess.Process, payload: bytes, out: Capture, err: Capture
) -> None:
    """Send ``payload`` on stdin while reading stdout and stderr into their bounded captures,
    until the program exits (a program that does not read its stdin is fine)."""
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    stdin = proc.stdin

    async def send() -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            stdin.write(payload)
            await stdin.drain()
        stdin.close()

    await asyncio.gather(send(), read_into(proc.stdout, out), read_into(proc.stderr, err))
    await proc.wait()


async def _kill(proc: asyncio.subprocess.Process, posix: bool) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if posix:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    with contextlib.suppress(Exception):
        await asyncio.shield(proc.wait())


def _ending(data: dict[str, Any]) -> dict[str, Any]:
    """How the program says its answer ended: the Completion fields it gave, of the right type
    (a finish reason evalwh does not know, or a field of another type, is left out)."""
    finish = data.get("finish_reason")
    calls = data.get("tool_calls")
    if isinstance(calls, list):
        calls = [c for c in calls if isinstance(c, dict)] or None
    texts = {k: data[k] for k in ("refusal", "reasoning") if isinstance(data.get(k), str)}
    counts = ("reasoning_tokens", "cache_read_tokens", "cache_write_tokens")
    return {
        "finish_reason": finish if finish in FINISH_REASONS else None,
        "tool_calls": calls if isinstance(calls, list) else None,
        **texts,
        **{k: int_or_none(data.get(k)) for k in counts},
    }
