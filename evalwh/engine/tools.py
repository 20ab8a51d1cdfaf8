"""Running a model's tool calls: check the arguments, call the implementation, bound it.

A call is checked against its tool's ``parameters`` schema first; a call to an unknown tool or
with arguments that do not fit never runs: it is answered with an error the model sees (and
may correct). Implementations:

- ``mock``: rules tried in order; the first whose ``when.args`` are all equal in the call's
  arguments gives its ``result`` (or fails with its ``error``); none matching is an error.
- ``python: module:function``: ``fn(**arguments)`` in a worker process
  (evalwh.scoring.pyworker), one per tool; past ``timeout_s`` it is killed, past
  ``memory_mb`` (evalwh.config.childmemory) the call fails and the worker is restarted.
- ``command: [argv]``: the program gets ``{"name", "arguments"}`` as JSON on stdin and
  answers ``{"result": ...}`` or ``{"error": "..."}`` (plain text is the result), under the
  command provider's rules (evalwh.providers.command.run_program: no shell, a minimal
  environment plus ``pass_env``, stdout bounded, killed at ``timeout_s``, memory bounded by
  ``memory_mb``).

Whatever the implementation does (raises, hangs, exits, prints garbage) is the call's error,
never the run's.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalwh.config.model import Criterion
from evalwh.config.tools import ToolSpec, ToolUse
from evalwh.providers.base import MAX_OUTPUT_BYTES, ProviderError


@dataclass
class ToolOutcome:
    """One call's end: its result (JSON-able) or its error; ``args_valid`` False when the
    call never ran because its tool is unknown or its arguments do not fit."""

    result: Any
    error: str | None
    args_valid: bool
    latency_ms: float

    def text(self) -> str:
        """What the model is sent: the error, or the result (a string as it is, else JSON)."""
        if self.error is not None:
            return self.error
        if isinstance(self.result, str):
            return self.result
        return json.dumps(self.result, ensure_ascii=False, sort_keys=True)


class ToolBox:
    """The tools of one run, each implementation started once (python workers lazily)."""

    def __init__(self) -> None:
        self._validators: dict[int, Any] = {}
        self._workers: dict[int, Any] = {}

    def _validator(self, tool: ToolSpec) -> Any:
        found = self._validators.get(id(tool))
        if found is None:
            from jsonschema import Draft202012Validator

            found = self._validators[id(tool)] = Draft202012Validator(tool.parameters)
        return found

    def problem(self, tool: ToolSpec, arguments: Any) -> str | None:
        """Why ``arguments`` do not fit the tool's schema, else None."""
        if not isinstance(arguments, dict):
            return f"arguments must be a JSON object, got {json.dumps(arguments)[:200]}"
        from jsonschema.exceptions import best_match

        error = best_match(self._validator(tool).iter_errors(arguments))
        if error is None:
            return None
        at = "/".join(str(p) for p in error.absolute_path)
        return f"{error.message}" + (f" (at {at})" if at else "")

    async def run(self, tools: ToolUse, name: Any, arguments: Any) -> ToolOutcome:
        started = time.perf_counter()

        def done(result: Any, error: str | None, valid: bool = True) -> ToolOutcome:
            return ToolOutcome(result, error, valid, (time.perf_counter() - started) * 1000)

        tool = tools.by_name().get(name) if isinstance(name, str) else None
        if tool is None:
            offered = ", ".join(t.name for t in tools.tools)
            return done(None, f"unknown tool '{name}' (offered: {offered})", False)
        problem = self.problem(tool, arguments)
        if problem is not None:
            return done(None, f"invalid arguments for {tool.name}: {problem}", False)
        try:
            if tool.kind == "mock":
                result, error = _mock(tool, arguments)
            elif tool.kind == "python":
                result, error = await asyncio.to_thread(self._worker(tool).call_tool, arguments)
            else:
                result, error = await _command(tool, arguments)
        except Exception as exc:  # an implementation's failure is the call's, not the run's
            result, error = None, f"{type(exc).__name__}: {exc}"
        if error is None:
            try:
                json.dumps(result)
            except (TypeError, ValueError):
                result, error = None, f"its result is not JSON: {type(result).__name__}"
        return done(result, None if error is None else f"{tool.name} failed: {error}")

    def _worker(self, tool: ToolSpec) -> Any:
        found = self._workers.get(id(tool))
        if found is None:
            from evalwh.scoring.pyworker import ScorerWorker

            criterion = Criterion(
                tool.name, "python", options={"function": tool.impl}, where=tool.where
            )
            found = self._workers[id(tool)] = ScorerWorker(
                criterion,
                tool.root or Path("."),
                "",
                timeout_s=tool.timeout_s,
                memory_mb=tool.memory_mb,
            )
        return found

    def close(self) -> None:
        for worker in self._workers.values():
            worker.close()
        self._workers.clear()


def _mock(tool: ToolSpec, arguments: dict[str, Any]) -> tuple[Any, str | None]:
    for rule in tool.impl:
        wanted = (rule.get("when") or {}).get("args") or {}
        if all(k in arguments and arguments[k] == v for k, v in wanted.items()):
            if "error" in rule:
                return None, str(rule["error"])
            return rule.get("result"), None
    return None, "no mock rule matches these arguments"


async def _command(tool: ToolSpec, arguments: dict[str, Any]) -> tuple[Any, str | None]:
    from evalwh.config.secrets import check_environment, remember_passed, sanitize
    from evalwh.providers.command import argv_of, run_program

    remember_passed(os.environ, list(tool.pass_env))
    env, _dropped = check_environment(pass_env=list(tool.pass_env))
    payload = json.dumps({"name": tool.name, "arguments": arguments}, ensure_ascii=False)
    try:
        out = await run_program(
            argv_of(tool.impl),
            payload.encode("utf-8"),
            cwd=tool.root,
            env=env,
            timeout_s=tool.timeout_s,
            max_output_bytes=tool.max_output_bytes or MAX_OUTPUT_BYTES,
            memory_mb=tool.memory_mb,
        )
    except ProviderError as exc:
        return None, str(exc)
    if out.truncated:
        return None, f"its output exceeded {len(out.head)} bytes ({out.total} written)"
    text = sanitize(out.text()).strip()
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict) and "error" in data:
            return None, str(data["error"])
        if isinstance(data, dict) and "result" in data:
            return data["result"], None
    return text, None
