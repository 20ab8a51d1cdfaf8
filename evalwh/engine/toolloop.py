"""One cell as a bounded model-tool loop (a variant with ``tools:``; docs/tools.md).

send -> the answer's tool calls -> check each call's arguments against its schema (a call that
does not fit, or names no offered tool, goes back to the model as that tool's error, and is
counted) -> run the calls of one answer concurrently -> send the results back (each provider
maps them onto its native format) -> ... until an answer without tool calls (the cell's final
answer) or a bound of ``loop:``:

=================  ===============================================================
finish_reason      the bound
=================  ===============================================================
``turn_limit``     ``max_turns`` model requests were made and the last still called tools
``tool_call_limit`` the calls of an answer would pass ``max_tool_calls``
``token_limit``    the turns' input + output tokens reached ``max_tokens``
``cost_limit``     the turns' cost reached ``max_cost_usd``
``deadline``       ``deadline_s`` passed (model turns and tool calls included)
=================  ===============================================================

A bound reached is a failed cell with that finish reason and error kind, what it cost kept;
never a crash. Every model request goes through :meth:`Engine.call`: the response cache (its
key covers the transcript so far, so a repeated or resumed cell replays its finished turns
from the cache), the cost cap, rate limits and retries all act per turn.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalwh.engine.answers import CachedAnswer, Call
from evalwh.engine.tools import ToolOutcome

if TYPE_CHECKING:
    from evalwh.config.model import Case, Variant

LOOP_LIMITS = ("turn_limit", "tool_call_limit", "token_limit", "cost_limit", "deadline")


@dataclass
class Turn:
    """One step of a cell's transcript: a model answer (``role`` assistant) or one tool
    call's result (``role`` tool). ``turn`` is the model request it belongs to, ``seq`` its
    place in the cell."""

    seq: int
    turn: int
    role: str
    content: str | None = None
    tool_name: str | None = None
    call_id: str | None = None
    arguments: Any = None
    result: Any = None
    error: str | None = None
    args_valid: bool | None = None
    latency_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    cached: bool | None = None
    finish_reason: str | None = None


@dataclass
class _Totals:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read: int = 0
    cache_write: int = 0
    latency_ms: float = 0.0
    cost_usd: float = 0.0
    attempts: int = 0
    all_cached: bool = True


async def tool_loop(
    engine: Any,  # the evalwh.engine.runner.Engine running the cell (which imports this module)
    endpoint: Any,  # ... and the model's Endpoint
    messages: list[dict[str, Any]],
    case: Case,
    variant: Variant,
    repeat: int,
) -> tuple[Call, list[Turn]]:
    """Run the loop; the cell's Call (its final answer with the turns' tokens, latency and
    attempts summed, or the failed turn's error) and its transcript."""
    use = variant.tools
    limits = use.limits
    model = endpoint.model
    began = time.monotonic()
    transcript = list(messages)
    turns: list[Turn] = []
    totals = _Totals()
    calls_made = 0
    first_key = ""
    last: CachedAnswer | None = None
    limit: tuple[str, str] | None = None
    for turn in range(limits.max_turns):
        if limits.deadline_s is not None and time.monotonic() - began >= limits.deadline_s:
            limit = ("deadline", f"the cell's deadline_s of {limits.deadline_s:g} s passed")
            break
        call = await engine.call(
            endpoint, transcript, case, variant.id, repeat, variant.output, tools=use
        )
        first_key = first_key or call.key
        totals.attempts += call.attempts
        totals.all_cached = totals.all_cached and call.cached
        if call.answer is None:
            call.key, call.attempts = first_key, totals.attempts
            return call, turns
        last = answer = call.answer
        wire = answer.wire or {}
        cost = call.cost(model)
        _add(totals, answer, cost)
        requested = [
            {**c, "id": c.get("id") or f"call_{turn}_{i}"}
            for i, c in enumerate(wire.get("tool_calls") or ())
            if isinstance(c, dict)
        ]
        turns.append(
            Turn(
                seq=len(turns),
                turn=turn,
                role="assistant",
                content=answer.output,
                arguments=requested or None,
                latency_ms=answer.latency_ms,
                input_tokens=answer.input_tokens,
                output_tokens=answer.output_tokens,
                cost_usd=cost,
                cached=call.cached,
                finish_reason=wire.get("finish_reason"),
            )
        )
        if not requested:
            break  # the final answer
        limit = _bound(limits, totals, calls_made + len(requested))
        if limit is None and turn == limits.max_turns - 1:
            limit = (
                "turn_limit",
                f"the model still called tools after max_turns ({limits.max_turns}) requests",
            )
        if limit is not None:
            break
        calls_made += len(requested)
        outcomes = await asyncio.gather(
            *(engine.toolbox.run(use, c.get("name"), c.get("arguments")) for c in requested)
        )
        text = [{"type": "text", "text": answer.output}] if answer.output else []
        transcript.append({"role": "assistant", "content": text, "tool_calls": requested})
        for c, outcome in zip(requested, outcomes, strict=True):
            engine.stats.tool_calls += 1
            engine.stats.tool_errors += outcome.error is not None
            transcript.append(_result_message(c, outcome))
            turns.append(
                Turn(
                    seq=len(turns),
                    turn=turn,
                    role="tool",
                    content=outcome.text(),
                    tool_name=c.get("name") if isinstance(c.get("name"), str) else None,
                    call_id=c["id"],
                    arguments=c.get("arguments"),
                    result=outcome.result,
                    error=outcome.error,
                    args_valid=outcome.args_valid,
                    latency_ms=round(outcome.latency_ms, 3),
                )
            )
            totals.latency_ms += outcome.latency_ms
    assert last is not None or limit is not None
    wire = dict((last.wire if last is not None else None) or {})
    if limit is not None:
        wire["finish_reason"] = limit[0]
        wire["extra"] = {**(wire.get("extra") or {}), "loop_limit": limit[1]}
    if totals.cache_read:
        wire["cache_read_tokens"] = totals.cache_read
    if totals.cache_write:
        wire["cache_write_tokens"] = totals.cache_write
    final = CachedAnswer(
        last.output if last is not None else "",
        totals.input_tokens,
        totals.output_tokens,
        round(totals.latency_ms, 3),
        wire or None,
    )
    return Call(first_key, final, None, totals.all_cached, totals.attempts), turns


def transcript_of(turns: list[Turn] | None) -> list[dict[str, Any]]:
    """A cell's steps as scorers get them (evalwh.scoring.transcript): the ``turns`` table's
    columns that say what was said and done, in order; empty without a loop."""
    return [
        {
            "turn": t.turn,
            "role": t.role,
            "content": t.content,
            "tool_name": t.tool_name,
            "arguments": t.arguments,
            "result": t.result,
            "error": t.error,
            "args_valid": t.args_valid,
        }
        for t in turns or ()
    ]


def _add(totals: _Totals, answer: Any, cost: float | None) -> None:
    wire = answer.wire or {}
    totals.input_tokens += answer.input_tokens or 0
    totals.output_tokens += answer.output_tokens or 0
    totals.cache_read += wire.get("cache_read_tokens") or 0
    totals.cache_write += wire.get("cache_write_tokens") or 0
    totals.latency_ms += answer.latency_ms or 0.0
    totals.cost_usd += cost or 0.0


def _bound(limits: Any, totals: _Totals, calls: int) -> tuple[str, str] | None:
    """The bound (finish reason, why) the loop reached before running ``calls`` calls."""
    if calls > limits.max_tool_calls:
        return (
            "tool_call_limit",
            f"the model asked for more than max_tool_calls ({limits.max_tool_calls}) calls",
        )
    used = totals.input_tokens + totals.output_tokens
    if limits.max_tokens is not None and used >= limits.max_tokens:
        return "token_limit", f"the turns used {used} tokens (max_tokens {limits.max_tokens})"
    if limits.max_cost_usd is not None and totals.cost_usd >= limits.max_cost_usd:
        return (
            "cost_limit",
            f"the turns cost ${totals.cost_usd:.6f} (max_cost_usd {limits.max_cost_usd:g})",
        )
    return None


def _result_message(call: dict[str, Any], outcome: ToolOutcome) -> dict[str, Any]:
    """A tool call's result as the transcript carries it to the next request."""
    return {
        "role": "tool",
        "content": [{"type": "text", "text": outcome.text()}],
        "tool_call_id": call["id"],
        "name": call.get("name") if isinstance(call.get("name"), str) else "",
        "is_error": outcome.error is not None,
    }
