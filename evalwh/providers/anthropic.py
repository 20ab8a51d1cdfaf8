"""Anthropic Messages API provider (``provider: anthropic``), over plain httpx.

``POST {base_url}/v1/messages`` (default base URL ``https://api.anthropic.com``) with the
``x-api-key`` (from ``ANTHROPIC_API_KEY``, or the secret named by ``api_key_env``) and
``anthropic-version: 2023-06-01`` headers. Only the parameters a config sets are sent, plus
``max_tokens``, which the API requires (default 1024, or the thinking budget + 1024).
System messages (or ``params.system``) go to the top-level ``system`` field;
``thinking_budget`` becomes ``thinking: {type: enabled, budget_tokens}`` (extended thinking);
``stop`` becomes ``stop_sequences``; ``params.extra`` is merged into the body as-is.
Parts: text; ``image`` as an image block (base64 source, or a URL source); ``file`` as a
document block (a PDF as a base64 source, text/plain as a text source). Audio and video
are refused when the run is planned (:mod:`evalwh.providers.capabilities`).

JSON by schema, asked for natively, is a forced tool call: one tool named after the schema
with it as ``input_schema`` and ``tool_choice: {type: tool, name}``; the ``tool_use`` block's
``input`` is the answer (serialised as JSON text).

The reply: the answer is the text blocks joined; any other ``tool_use`` block is a tool call
(``tool_calls``: name and input), ``thinking`` blocks are the ``reasoning``; ``stop_reason``
maps onto the finish reasons of :mod:`evalwh.providers.base` (``max_tokens`` is ``length``,
``refusal`` a refusal whose text is ``stop_details.explanation`` or the partial answer).

Batch mode: ``batch_api()`` is Message Batches (:mod:`evalwh.providers.batch_anthropic`).
"""

from __future__ import annotations

import json
from typing import Any

from evalwh.providers.base import Completion, Request, int_or_none, message_text
from evalwh.providers.batch_anthropic import AnthropicBatchApi
from evalwh.providers.http import HttpProvider, merge_extra, stop_list
from evalwh.providers.parts import part_base64, part_bytes, unsupported_part

ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 1024
# stop_reason -> the finish reason evalwh stores (evalwh.providers.base.FINISH_REASONS); the raw
# value is kept in extra.stop_reason
STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "refusal",
}


class AnthropicProvider(HttpProvider):
    name = "anthropic"
    structured_output = True  # a forced tool call whose input_schema is the schema
    tool_use = True  # tools: [{name, description, input_schema}], tool_use / tool_result blocks
    default_base_url = "https://api.anthropic.com"
    default_key_env = "ANTHROPIC_API_KEY"
    endpoint = "/v1/messages"

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"x-api-key": key}

    def base_headers(self) -> dict[str, str]:
        return {"anthropic-version": ANTHROPIC_VERSION}

    def batch_api(self) -> AnthropicBatchApi:
        """Message Batches (evalwh.providers.batch_anthropic)."""
        return AnthropicBatchApi(self)

    def _part(self, part: dict[str, Any]) -> dict[str, Any]:
        kind = part.get("type")
        if kind == "text":
            return {"type": "text", "text": part.get("text") or ""}
        if kind == "image" and "url" in part:
            return {"type": "image", "source": {"type": "url", "url": part["url"]}}
        if kind == "image":
            return {"type": "image", "source": self._base64(part)}
        if kind == "file" and part.get("media_type") == "text/plain":
            text = part_bytes(self.name, part).decode("utf-8", errors="replace")
            return {
                "type": "document",
                "source": {"type": "text", "media_type": "text/plain", "data": text},
            }
        if kind == "file" and "sha256" in part:
            return {"type": "document", "source": self._base64(part)}
        raise unsupported_part(self.name, part)

    def _base64(self, part: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "base64",
            "media_type": part["media_type"],
            "data": part_base64(self.name, part),
        }

    def build_body(self, request: Request) -> dict[str, Any]:
        params = request.params
        system_parts: list[str] = []
        messages: list[dict[str, Any]] = []
        for message in request.messages:
            if message["role"] == "system":
                for part in message["content"]:
                    if part.get("type") != "text":
                        raise unsupported_part(self.name, part)
                    system_parts.append(part.get("text") or "")
                continue
            if message["role"] == "tool":  # a tool's result: a user turn of tool_result blocks
                result: dict[str, Any] = {
                    "type": "tool_result",
                    "tool_use_id": message["tool_call_id"],
                    "content": message_text(message),
                }
                if message.get("is_error"):
                    result["is_error"] = True
                last = messages[-1] if messages else None
                if last is not None and last.get("results"):  # one turn answers every call
                    last["content"].append(result)
                else:
                    messages.append({"role": "user", "content": [result], "results": True})
                continue
            blocks = [self._part(p) for p in message["content"]]
            # The API rejects empty text blocks; drop them unless nothing else is left.
            # a tool loop's assistant turn: its tool_use blocks follow its text
            kept = [b for b in blocks if b["type"] != "text" or b["text"]] + [
                {"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["arguments"]}
                for c in message.get("tool_calls") or ()
            ]
            messages.append({"role": message["role"], "content": kept or blocks})
        for message in messages:
            message.pop("results", None)
        budget = params.get("thinking_budget")
        # max_tokens is required; with thinking it counts the thinking too, so its default
        # leaves the answer DEFAULT_MAX_TOKENS above the budget
        room = DEFAULT_MAX_TOKENS + (int(budget) if budget else 0)
        body: dict[str, Any] = {
            "model": self.spec.model,
            "max_tokens": int(params.get("max_tokens") or room),
            "messages": messages,
        }
        if budget:
            body["thinking"] = {"type": "enabled", "budget_tokens": int(budget)}
        system = params["system"] if params.get("system") is not None else "\n\n".join(system_parts)
        if system:
            body["system"] = system
        for key in ("temperature", "top_p"):
            if params.get(key) is not None:
                body[key] = params[key]
        stops = stop_list(params.get("stop"))
        if stops:
            body["stop_sequences"] = stops
        if request.tools is not None:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in request.tools.tools
            ]
            choice = request.tools.choice
            body["tool_choice"] = (
                {"type": "tool", "name": choice["name"]}
                if isinstance(choice, dict)
                else {"type": {"required": "any"}.get(choice, choice)}
            )
        if request.output is not None:  # JSON by schema: one tool, and the model must call it
            body["tools"] = [
                {
                    "name": request.output.name,
                    "description": "Give the answer by calling this tool; its input is the answer.",
                    "input_schema": request.output.schema,
                }
            ]
            body["tool_choice"] = {"type": "tool", "name": request.output.name}
        return merge_extra(body, params)

    def parse_body(self, data: Any, request: Request | None = None) -> Completion:
        content = data["content"]
        if not isinstance(content, list):
            raise TypeError("'content' is not a list")
        # JSON by schema is a forced call of the tool named after the schema: its input is the
        # answer. Any other tool_use block is a tool call the model made; the text beside it
        # is the answer.
        forced = request.output.name if request is not None and request.output else None
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        thinking: list[str] = []
        answer: str | None = None
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                texts.append(block["text"])
            elif kind == "tool_use" and answer is None and block.get("name") == forced:
                answer = json.dumps(block.get("input"), ensure_ascii=False, sort_keys=True)
            elif kind == "tool_use":
                call = {"name": block.get("name"), "arguments": block.get("input")}
                if isinstance(block.get("id"), str):
                    call["id"] = block["id"]
                calls.append(call)
            elif kind == "thinking" and isinstance(block.get("thinking"), str):
                thinking.append(block["thinking"])
        raw = data.get("stop_reason")
        finish = STOP_REASONS.get(raw) if isinstance(raw, str) else None
        if answer is not None and finish == "tool_calls":
            finish = "stop"  # the forced call is the answer, not a call to act on
        text = answer if answer is not None else "".join(texts)
        extra: dict[str, Any] = {}
        if raw is not None:
            extra["stop_reason"] = raw
        details = data.get("stop_details")
        if isinstance(details, dict):
            extra["stop_details"] = details
        refusal = None
        if finish == "refusal":
            explained = details.get("explanation") if isinstance(details, dict) else None
            refusal = explained or text or f"refused (stop_reason: {raw})"
        usage = data.get("usage") or {}
        written = int_or_none(usage.get("cache_creation_input_tokens"))
        read = int_or_none(usage.get("cache_read_input_tokens"))
        given = int_or_none(usage.get("input_tokens"))
        # the API counts uncached input apart from cache writes and reads; input_tokens here is
        # every prompt token, as OpenAI and Gemini count it
        total_in = None if given is None else given + (written or 0) + (read or 0)
        return Completion(
            text=text,
            input_tokens=total_in,
            output_tokens=int_or_none(usage.get("output_tokens")),
            extra=extra,
            finish_reason=finish,
            refusal=refusal,
            tool_calls=calls or None,
            reasoning="\n\n".join(thinking) if thinking else None,
            cache_read_tokens=read,
            cache_write_tokens=written,
        )
