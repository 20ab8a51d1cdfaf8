"""Parse a model's output as JSON, optionally digging the JSON out of surrounding prose.

:func:`parse_json` never raises: it returns ``(True, value, info)`` or ``(False, None, details)``
where ``details`` says why (the parse error and its position, or that no JSON was found).
"""

from __future__ import annotations

import json
import re
from typing import Any

# A fenced block: ```json ... ``` (the language tag is optional).
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)```", re.DOTALL)
_OPENERS = re.compile(r"[{\[]")
_DECODER = json.JSONDecoder()
MAX_CANDIDATES = 200  # start positions tried when scanning prose for {...} / [...]


def _position(text: str, pos: int) -> dict[str, int]:
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return {"line": line, "column": column, "position": pos}


def _failure(
    text: str, exc: json.JSONDecodeError, offset: int = 0, prefix: str = ""
) -> dict[str, Any]:
    return {"error": f"{prefix}invalid JSON: {exc.msg}", **_position(text, offset + exc.pos)}


def parse_json(text: str, extract: bool = False) -> tuple[bool, Any, dict[str, Any] | None]:
    """Parse ``text`` as JSON.

    With ``extract``, when the whole text is not JSON, take the first ```json fenced block
    (then any other fenced block) that parses, else the first balanced ``{...}`` or ``[...]``
    that parses. On success the third item is ``None`` (whole text) or ``{"extracted": how}``.
    """
    try:
        return True, json.loads(text), None
    except json.JSONDecodeError as exc:
        whole_error = exc
    except (TypeError, ValueError) as exc:  # not a str, or unusable text
        return False, None, {"error": f"invalid JSON: {exc}"}
    if not extract:
        return False, None, _failure(text, whole_error)

    first_failure: dict[str, Any] | None = None
    if "```" in text:
        blocks = list(_FENCE.finditer(text))
        # Blocks tagged json first, then the others, each group in order of appearance.
        blocks.sort(key=lambda m: m.group(1).lower() != "json")
        for block in blocks:
            body = block.group(2)
            try:
                return True, json.loads(body), {"extracted": "fenced block"}
            except json.JSONDecodeError as exc:
                if first_failure is None:
                    first_failure = _failure(text, exc, block.start(2), prefix="fenced block: ")

    for n, opener in enumerate(_OPENERS.finditer(text)):
        if n >= MAX_CANDIDATES:
            break
        try:
            value, _end = _DECODER.raw_decode(text, opener.start())
        except json.JSONDecodeError as exc:
            if first_failure is None:
                first_failure = _failure(text, exc)
            continue
        return True, value, {"extracted": "embedded"}

    if first_failure is not None:
        return False, None, first_failure
    return (
        False,
        None,
        {
            "error": "no JSON found in the output (no fenced block, no {...} or [...])",
            **_position(text, whole_error.pos),
        },
    )
