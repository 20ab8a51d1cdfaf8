"""Exec checks: shell snippets that test an answer (does the code compile, do the tests pass).

A case may declare ``check:``, either a string (the ``run`` snippet) or a mapping::

    check:
      setup: pip install -q -r requirements.txt   # optional, run first
      run: python answer.txt                       # exit 0 = pass
      timeout_s: 30                                # for setup and run together (default 30)
      memory_mb: 2048                              # memory of each snippet (default 2048 MiB)
      files:                                       # optional extra files, name -> text
        test_answer.py: |
          ...

:func:`run_check` runs the snippets with ``/bin/sh -c`` in a fresh temporary folder (the
working directory, removed afterwards) holding ``answer.txt`` (the answer, UTF-8, exactly as
given) and the ``files``. The environment has:

- ``ANSWER``: the absolute path of ``answer.txt``;
- ``ANSWER_TEXT``: the answer itself - only its first 100 kB (UTF-8 bytes, cut at a character
  boundary) when longer, because the kernel refuses a single environment string over 128 KiB;
  NUL characters are dropped, since the environment cannot hold them (the file has all of it);
- ``CASE_<VAR>`` for each scalar case variable (string, number, boolean; names upper-cased,
  characters other than ``A-Z 0-9 _`` replaced by ``_``; booleans as ``true``/``false``);
- the caller's environment (``os.environ`` unless ``env`` is given) *minus secrets*: every
  variable with a secret-looking name (:func:`evalwh.config.secrets.is_secret_name`: ``*_KEY``,
  ``*_TOKEN``, ``*_SECRET``, ``*_PASSWORD``, ``*_CREDENTIALS``, ...), whose value holds a
  known secret (:func:`evalwh.config.secrets.known_secret_values`; a run loads the keys its config
  uses before it starts, so the environment is the same for a fresh and a cached answer) or
  looks like an API key (:data:`evalwh.config.secrets.KEY_PATTERNS`); of the rest only the
  minimal base stays (:data:`evalwh.config.secrets.BASE_NAMES`: ``PATH``, ``HOME``, ``LANG``,
  ``LC_*``, ``TMPDIR`` and the like), so a variable nobody passed (``CORP_CRED``) is not
  there;
- the variables the check names in ``pass_env``, as they are (their values become known
  secrets, so output quoting them is redacted). The command provider starts its program in
  the same environment (plus its own ``pass_env``).

``setup`` runs first; if it fails (or times out) the check is an *error* - the answer was not
tested - rather than a fail: ``passed`` is false and ``error`` says why. ``run`` exiting 0 is a
pass, any other exit a fail (``error`` None). ``timeout_s`` bounds setup and run together; on
timeout the whole process group is killed. Every process a snippet starts is killed when the
check ends, even when the snippet exited normally and left something running in the
background (a process that moves itself to a new session with ``setsid`` escapes this).
Each snippet, and all it starts, is bounded in memory by ``memory_mb``
(:mod:`evalwh.config.childmemory`); a snippet that fails saying it ran out of memory
(``MemoryError``, "out of memory" ...) is an *error*, like a timeout: "ran out of memory
(memory_mb: 2048)".

The output stored is the combined stdout and stderr of ``run`` (of ``setup`` when setup
failed), decoded as UTF-8, with secrets redacted (:func:`evalwh.config.secrets.redact`), and cut to
:data:`MAX_OUTPUT` characters by keeping its beginning and end around a marker.

An answer that holds fenced code blocks (```` ``` ```` or ``~~~``) is checked block by block:
each block's body is the answer (``answer.txt``, ``ANSWER_TEXT``) of its own run of the check,
in order, each in a fresh folder. The *last* block is the verdict (an answer that retracts a
wrong block and writes a corrected one is judged by the correction); the earlier blocks'
results are recorded beside it, at the top of the stored output (``block 1 of 3: fail (exit
1): ...``). At most :data:`MAX_BLOCKS` blocks run (the last ones). An answer without fences is
checked whole, as written.

Checks need a POSIX shell: on Windows :func:`run_check` returns an error result.
Checks are never cached: every call runs the snippets again.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import re
import signal
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from evalwh.capture import Capture, read_into
from evalwh.config.childmemory import (
    DEFAULT_MEMORY_MB,
    memory_mb_of,
    out_of_memory,
    says_out_of_memory,
    ulimit_line,
)
from evalwh.config.secrets import check_environment, pass_env_names, redact, sanitize
from evalwh.errors import ConfigError

ANSWER_FILE = "answer.txt"
MAX_ANSWER_ENV_BYTES = 100_000
MAX_OUTPUT = 4_000  # characters stored, marker included
CAPTURE_BYTES = 64 * 1024  # bytes kept from each end of the output while reading
DEFAULT_TIMEOUT_S = 30.0
POLL_S = 0.02  # longest pause between looks at whether the shell has exited
DRAIN_S = 2.0  # how long to wait for the output pipe to close once every process is killed
SHELL = "/bin/sh"
POSIX = os.name == "posix"

CHECK_KEYS = ("run", "setup", "timeout_s", "memory_mb", "files", "pass_env")
MAX_BLOCKS = 8  # fenced blocks of one answer that are run (the last ones)
FENCE = re.compile(r"^ {0,3}(```|~~~)[^\n]*\n(.*?)^ {0,3}\1[ \t]*$", re.M | re.S)


@dataclass(frozen=True)
class CheckSpec:
    """What to run for one case. Build it with :func:`parse_check` from config input."""

    run: str  # shell snippet; exit 0 = pass
    setup: str | None = None  # run first in the same folder; its failure = check error
    timeout_s: float = DEFAULT_TIMEOUT_S  # for setup and run together
    memory_mb: int = DEFAULT_MEMORY_MB  # of each snippet and what it starts
    files: dict[str, str] = field(default_factory=dict)  # extra files: relative name -> text
    pass_env: tuple[str, ...] = ()  # variables passed as they are (their values redacted)


@dataclass
class CheckResult:
    passed: bool
    exit_code: int | None  # of `run`; None when it timed out, could not start or never ran
    output: str  # combined stdout + stderr, redacted, at most MAX_OUTPUT characters
    duration_ms: float
    error: str | None  # the check could not judge the answer (timeout, setup failed, ...)


# --- parsing -----------------------------------------------------------------------------


def _bad(message: str, where: str, file: str, fix: str) -> ConfigError:
    return ConfigError(message, file=file, where=where, fix=fix)


def _file_name_problem(name: Any) -> str | None:
    """Why ``name`` cannot be an extra file of a check (None when it can)."""
    if not isinstance(name, str) or not name.strip():
        return f"file names must be non-empty strings, got {name!r}"
    if "\\" in name or "\x00" in name:
        return f"file name {name!r} may not contain a backslash or NUL"
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or name.endswith("/"):
        return f"file name {name!r} must be a relative path inside the check folder"
    if str(path) in (ANSWER_FILE, "."):
        return f"file name {name!r} is taken: the answer is written to {ANSWER_FILE}"
    return None


def parse_check(raw: dict[str, Any] | str, where: str, file: str) -> CheckSpec:
    """A :class:`CheckSpec` from config input: a string (the ``run`` snippet) or a mapping.

    ``where`` is the config path of the ``check`` key (e.g. ``cases[3].check``), ``file`` the
    config file; bad input raises a :class:`ConfigError` that names the key.
    """
    if isinstance(raw, str):
        raw = {"run": raw}
    if not isinstance(raw, dict):
        raise _bad(
            f"'check' must be a shell snippet or a mapping, got {type(raw).__name__}",
            where,
            file,
            "write `check: <shell command>` or a mapping with `run:` (and optionally "
            "`setup:`, `timeout_s:`, `files:`)",
        )
    unknown = sorted(str(k) for k in raw if k not in CHECK_KEYS)
    if unknown:
        raise _bad(
            f"unknown key(s) in check: {', '.join(unknown)}",
            f"{where}.{unknown[0]}",
            file,
            f"a check takes: {', '.join(CHECK_KEYS)}",
        )
    run = raw.get("run")
    if not isinstance(run, str) or not run.strip():
        raise _bad(
            f"'run' must be a non-empty shell snippet, got {run!r}",
            f"{where}.run",
            file,
            'write e.g. `run: python "$ANSWER"` (exit code 0 = pass)',
        )
    setup = raw.get("setup")
    if setup is not None and (not isinstance(setup, str) or not setup.strip()):
        raise _bad(
            f"'setup' must be a non-empty shell snippet, got {setup!r}",
            f"{where}.setup",
            file,
            "write the commands to run before `run`, or remove `setup`",
        )
    timeout = raw.get("timeout_s", DEFAULT_TIMEOUT_S)
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        raise _bad(
            f"'timeout_s' must be a number of seconds above 0, got {timeout!r}",
            f"{where}.timeout_s",
            file,
            "write e.g. `timeout_s: 30`",
        )
    memory_mb = memory_mb_of(raw.get("memory_mb"))
    if memory_mb is None:
        raise _bad(
            f"'memory_mb' must be a whole number of MiB above 0, got {raw.get('memory_mb')!r}",
            f"{where}.memory_mb",
            file,
            "write e.g. `memory_mb: 4096` (the default is 2048)",
        )
    files = raw.get("files") or {}
    if not isinstance(files, dict):
        raise _bad(
            f"'files' must be a mapping of file name to text, got {type(files).__name__}",
            f"{where}.files",
            file,
            "write `files:` followed by `name.py: |` and the file's text",
        )
    for name, text in files.items():
        problem = _file_name_problem(name)
        if problem is None and not isinstance(text, str):
            problem = f"the text of file {name!r} must be a string, got {type(text).__name__}"
        if problem is not None:
            raise _bad(
                problem,
                f"{where}.files.{name}",
                file,
                "give each extra file a relative name (e.g. tests/test_answer.py) and its "
                "text as a string",
            )
    given = raw.get("pass_env")
    pass_env = pass_env_names(given)
    if pass_env is None:
        raise _bad(
            f"'pass_env' must be a list of environment variable names, got {given!r}",
            f"{where}.pass_env",
            file,
            "write e.g. `pass_env: [DATABASE_URL]` (the variables the snippets need)",
        )
    return CheckSpec(
        run=run,
        setup=setup,
        timeout_s=float(timeout),
        memory_mb=memory_mb,
        files=dict(files),
        pass_env=pass_env,
    )


# --- environment -------------------------------------------------------------------------


def env_name(var: str) -> str:
    """``CASE_<VAR>``: upper-cased, every character but A-Z, 0-9 and _ replaced by _."""
    return "CASE_" + re.sub(r"[^A-Z0-9_]", "_", var.upper())


def _scalar(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value).replace("\x00", "")
    return None


def _answer_text(answer: str) -> str:
    """The answer for ``ANSWER_TEXT``: at most MAX_ANSWER_ENV_BYTES of UTF-8, no NULs."""
    data = answer.replace("\x00", "").encode("utf-8", errors="replace")
    if len(data) <= MAX_ANSWER_ENV_BYTES:
        return data.decode("utf-8")
    return data[:MAX_ANSWER_ENV_BYTES].decode("utf-8", errors="ignore")


# --- running -----------------------------------------------------------------------------


class _Capture(Capture):
    """Keeps the first and the last CAPTURE_BYTES of a stream and counts the rest."""

    def __init__(self) -> None:
        super().__init__(CAPTURE_BYTES, CAPTURE_BYTES)


def clip_output(text: str, limit: int = MAX_OUTPUT) -> str:
    """``text`` cut to ``limit`` characters: its start and end around a truncation marker."""
    if len(text) <= limit:
        return text
    marker = f"\n[... output truncated: {len(text)} characters in all ...]\n"
    keep = max(limit - len(marker), 0)
    head = keep // 2
    return text[:head] + marker + text[len(text) - (keep - head) :]


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _close(proc: asyncio.subprocess.Process) -> None:
    """Release the pipe even when an escaped process still holds its other end.

    asyncio's Process does not expose its transport; the transport's close() is idempotent.
    """
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        transport.close()


async def _exited(proc: asyncio.subprocess.Process, timeout: float) -> bool:
    """Wait up to ``timeout`` s for the shell to exit; False if it is still running.

    Polls ``returncode``: ``proc.wait()`` also waits for the output pipe to close, which a
    background child that inherited it would delay until it ends.
    """
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    delay = 0.001
    while proc.returncode is None:
        remaining = end - loop.time()
        if remaining <= 0:
            return False
        await asyncio.sleep(min(delay, remaining))
        delay = min(delay * 2, POLL_S)
    return True


@dataclass
class _Step:
    exit_code: int | None  # None: timed out or did not start
    output: str
    timed_out: bool = False
    start_error: str | None = None


async def _step(
    snippet: str, cwd: Path, env: dict[str, str], timeout: float, memory_mb: int
) -> _Step:
    """Run one snippet in its own process group, bounded by ``memory_mb``; kill the group when
    it ends or times out."""
    spawn = asyncio.ensure_future(
        asyncio.create_subprocess_exec(
            SHELL,
            "-c",
            ulimit_line(memory_mb) + snippet,  # on one line: the snippet's line numbers stay
            cwd=str(cwd),
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
    )
    cancelled: asyncio.CancelledError | None = None
    try:
        proc = await asyncio.shield(spawn)
    except (OSError, ValueError) as exc:
        return _Step(None, "", start_error=f"could not start {SHELL}: {exc}")
    except asyncio.CancelledError as exc:
        # Cancelled while asyncio was still connecting the pipes: the shell may already run
        # (and have started children). Let the start finish, then clean up as below.
        try:
            proc = await spawn
        except Exception:
            raise exc from None
        cancelled = exc
    capture = _Capture()
    assert proc.stdout is not None
    reader = asyncio.ensure_future(read_into(proc.stdout, capture))
    timed_out = False
    try:
        if cancelled is not None:
            raise cancelled
        timed_out = not await _exited(proc, timeout)
    finally:
        # The shell has exited or is out of time: whatever it started goes too. Also runs when
        # the caller cancels us, so a cancelled check leaves nothing behind.
        _kill_group(proc.pid)
        # The pipe closes once every holder of it is dead; a process that escaped the group
        # (setsid) could keep it open, so wait only so long for the rest of the output.
        waiter = asyncio.ensure_future(proc.wait())
        _done, pending = await asyncio.wait({reader, waiter}, timeout=DRAIN_S)
        for task in pending:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        _close(proc)
    return _Step(None if timed_out else proc.returncode, capture.text(), timed_out)


def _seconds(value: float) -> str:
    return f"{value:g} s"


def _last_line(text: str, extra: list[str], limit: int = 200) -> str:
    """The last non-empty line of ``text``, redacted, then cut (:func:`sanitize`)."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return "(no output)"
    return sanitize(lines[-1], limit, extra=extra)


def _how(code: int) -> str:
    return f"killed by signal {-code}" if code < 0 else f"exit {code}"


def code_blocks(answer: str) -> list[str]:
    """The bodies of an answer's fenced code blocks, in order (empty: no fences)."""
    return [m.group(2) for m in FENCE.finditer(answer)]


async def run_check(
    spec: CheckSpec,
    answer: str,
    case_vars: Mapping[str, Any] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    no_look: bool = False,
) -> CheckResult:
    """Run ``spec`` against ``answer``: the whole answer, or each fenced block in order (the
    last one the verdict, the earlier ones recorded in the output); see the module docstring."""
    blocks = code_blocks(answer)
    if not blocks:
        return await _run_one(spec, answer, case_vars, env=env, no_look=no_look)
    skipped = max(0, len(blocks) - MAX_BLOCKS)
    results = [
        await _run_one(spec, b, case_vars, env=env, no_look=no_look) for b in blocks[skipped:]
    ]
    last = results[-1]
    if len(blocks) == 1:
        return last
    lines = (
        [f"blocks 1-{skipped} of {len(blocks)}: not run (at most {MAX_BLOCKS})"] if skipped else []
    )
    for i, r in enumerate(results[:-1], start=skipped + 1):
        how = (
            "error: " + r.error
            if r.error
            else ("pass" if r.passed else f"fail (exit {r.exit_code})")
        )
        first = next((ln for ln in r.output.splitlines() if ln.strip()), "")
        lines.append(f"block {i} of {len(blocks)}: {how}" + (f": {first}" if first else ""))
    lines.append(f"block {len(blocks)} of {len(blocks)} (the verdict):")
    output = clip_output("\n".join(lines) + "\n" + last.output)
    duration = sum(r.duration_ms for r in results)
    return CheckResult(last.passed, last.exit_code, output, duration, last.error)


async def _run_one(
    spec: CheckSpec,
    answer: str,
    case_vars: Mapping[str, Any] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    no_look: bool = False,
) -> CheckResult:
    """Run ``spec`` against ``answer`` in a fresh temporary folder; see the module docstring.

    ``no_look`` (docs/no-look.md): nothing case-derived is written to disk, so the folder stays
    empty (no ``answer.txt``, ``ANSWER`` unset: the answer is in ``ANSWER_TEXT`` only) and a
    check with ``files`` is an error; what the snippets themselves write is their author's.

    ``env`` is the environment to start from (default ``os.environ``); only its minimal base
    without secrets is kept either way. Never raises for anything the snippets do.
    """
    started = time.perf_counter()

    def elapsed_ms() -> float:
        return (time.perf_counter() - started) * 1000.0

    if not POSIX:
        return CheckResult(
            False,
            None,
            "",
            elapsed_ms(),
            f"checks need a POSIX shell ({SHELL}); they are not supported on this system "
            f"({os.name})",
        )
    child_env, dropped = check_environment(env, spec.pass_env)
    extra_secrets = [value for value in dropped if value]

    def clean(text: str) -> str:
        return clip_output(redact(text, extra_secrets))

    deadline = time.monotonic() + spec.timeout_s
    with tempfile.TemporaryDirectory(prefix="evalwh-check-", ignore_cleanup_errors=True) as tmp:
        folder = Path(tmp).resolve()
        if no_look and spec.files:
            return CheckResult(
                False,
                None,
                "",
                elapsed_ms(),
                "bad check: a no-look run writes no case data to disk, so a check's files "
                "cannot be written (put them in the snippet, or run without no-look)",
            )
        try:
            for name, text in ({} if no_look else spec.files).items():
                problem = _file_name_problem(name)
                if problem is not None:
                    return CheckResult(False, None, "", elapsed_ms(), f"bad check: {problem}")
                target = folder / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(text.encode("utf-8", errors="replace"))
            answer_path = folder / ANSWER_FILE
            if not no_look:
                answer_path.write_bytes(answer.encode("utf-8", errors="replace"))
        except OSError as exc:
            return CheckResult(
                False, None, "", elapsed_ms(), f"could not prepare the check folder: {exc}"
            )

        for var, value in (case_vars or {}).items():
            scalar = _scalar(value)
            if scalar is not None:
                child_env[env_name(str(var))] = scalar
        if not no_look:
            child_env["ANSWER"] = str(answer_path)
        child_env["ANSWER_TEXT"] = _answer_text(answer)

        if spec.setup is not None:
            step = await _step(
                spec.setup, folder, child_env, deadline - time.monotonic(), spec.memory_mb
            )
            if step.start_error is not None:
                return CheckResult(False, None, "", elapsed_ms(), step.start_error)
            if step.timed_out:
                return CheckResult(
                    False,
                    None,
                    clean(step.output),
                    elapsed_ms(),
                    f"setup timed out after {_seconds(spec.timeout_s)}",
                )
            if step.exit_code != 0:
                assert step.exit_code is not None
                output = clean(step.output)
                how = (
                    out_of_memory(spec.memory_mb)
                    if says_out_of_memory(step.output)
                    else _how(step.exit_code)
                )
                return CheckResult(
                    False,
                    None,
                    output,
                    elapsed_ms(),
                    f"setup failed ({how}): " + _last_line(step.output, extra_secrets),
                )

        step = await _step(spec.run, folder, child_env, deadline - time.monotonic(), spec.memory_mb)
        if step.start_error is not None:
            return CheckResult(False, None, "", elapsed_ms(), step.start_error)
        output = clean(step.output)
        if step.timed_out:
            return CheckResult(
                False, None, output, elapsed_ms(), f"timed out after {_seconds(spec.timeout_s)}"
            )
        assert step.exit_code is not None
        if step.exit_code != 0 and says_out_of_memory(step.output):  # not judged: an error
            return CheckResult(
                False, step.exit_code, output, elapsed_ms(), out_of_memory(spec.memory_mb)
            )
        return CheckResult(step.exit_code == 0, step.exit_code, output, elapsed_ms(), None)
