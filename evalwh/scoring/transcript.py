"""A cell's transcript as scorers see it: the steps of its tool loop (docs/tools.md).

A python scorer whose function has a ``transcript`` parameter gets the steps as a list of
dicts, one per row of the ``turns`` table: ``{"turn", "role", "content", "tool_name",
"arguments", "result", "error", "args_valid"}`` (an ``assistant`` step's ``arguments`` are its
calls, ``[{"id", "name", "arguments"}]``; a ``tool`` step's are the call's). A cell without a
loop has an empty transcript.

An LLM judge gets :func:`render_transcript`: one block per step, a model answer with the calls
it made, a call with its arguments and its result or error::

    assistant (turn 0):
    I will look it up.
    -> get_weather {"city": "Paris"}

    tool get_weather {"city": "Paris"}:
    {"temp_c": 18}

Each block is cut to :data:`STEP_MAX_CHARS`, the whole to :data:`TRANSCRIPT_MAX_CHARS` (its
start and its end kept around a marker, as an exec check's output is), so a tool that returns
a whole web page cannot blow up the judge's prompt.
"""

from __future__ import annotations

import json
from typing import Any

from evalwh.scoring.checks import clip_output

STEP_MAX_CHARS = 2_000
TRANSCRIPT_MAX_CHARS = 20_000


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _step(step: dict[str, Any]) -> str:
    if step.get("role") == "tool":
        head = f"tool {step.get('tool_name') or '?'} {_json(step.get('arguments'))}"
        if step.get("error") is not None:
            return f"{head} failed:\n{step['error']}"
        result = step.get("result")
        return f"{head}:\n{result if isinstance(result, str) else _json(result)}"
    lines = [f"{step.get('role') or 'assistant'} (turn {step.get('turn', 0)}):"]
    if step.get("content"):
        lines.append(str(step["content"]))
    for call in step.get("arguments") or ():
        if isinstance(call, dict):
            lines.append(f"-> {call.get('name')} {_json(call.get('arguments'))}")
    return "\n".join(lines)


def render_transcript(transcript: list[dict[str, Any]] | None) -> str:
    """The transcript as a judge reads it (empty text for a cell without a loop)."""
    blocks = [clip_output(_step(step), STEP_MAX_CHARS) for step in transcript or ()]
    return clip_output("\n\n".join(blocks), TRANSCRIPT_MAX_CHARS)
