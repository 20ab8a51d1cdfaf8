"""OpenAI Chat Completions providers, over plain httpx.

``provider: openai`` posts to ``{base_url}/chat/completions`` (default base URL
``https://api.openai.com/v1``) with ``Authorization: Bearer $OPENAI_API_KEY`` (or the
secret named by ``api_key_env``) and sends ``max_tokens`` as ``max_completion_tokens``,
the field every current OpenAI model accepts. Only the parameters a config sets are sent;
``reasoning_effort`` goes as it is (reasoning models, which refuse ``temperature`` and
``top_p``: :func:`evalwh.providers.capabilities.sampling_problem`).

``provider: openai-compatible`` is the same wire format for other servers (vLLM, llama.cpp,
Ollama, LM Studio, gateways): ``base_url`` is required, the key is optional (only sent when
``api_key_env`` names one) and ``max_tokens`` is sent as ``max_tokens``.

A request that asks for JSON by schema natively gets ``response_format: {type: json_schema,
json_schema: {name, schema, strict}}`` (OpenAI's Structured Outputs); ``openai-compatible``
asks by prompt, since servers differ. ``params.system`` replaces the system messages; ``stop`` goes as given; ``params.extra`` is
merged into the body as-is. Text-only messages are sent as plain strings; messages with
files as content arrays: ``image`` as an ``image_url`` part (a base64 data URL, or the URL),
``audio`` as ``input_audio`` ``{data, format: wav|mp3}``, ``file`` as a ``file`` part
``{filename, file_data: data URL}``. Video is refused when the run is planned.

``provider: openai`` has OpenAI's Batch API (``batch_api()``: evalwh.providers.batch_openai,
the same bodies in a JSONL file, answered within 24 hours at half the price);
``openai-compatible`` has none.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from evalwh.config.attachments import filename_for
from evalwh.providers.base import Completion, Request, int_or_none, message_text
from evalwh.providers.batch_openai import OpenAIBatchApi
from evalwh.providers.batching import BatchApi
from evalwh.providers.http import HttpProvider, merge_extra
from evalwh.providers.parts import data_url, part_base64, unsupported_part

AUDIO_FORMATS = {"audio/wav": "wav", "audio/mpeg": "mp3"}
# finish_reason -> the finish reason evalwh stores (a message with a refusal is ``refusal``
# whatever finish_reason says); the raw value is kept in extra.finish_reason
FINISH_REASONS = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}


class OpenAIProvider(HttpProvider):
    name = "openai"
    structured_output = True  # response_format: {type: json_schema, json_schema: {...}}
    tool_use = True  # tools: [{type: function, function}], tool_calls and tool messages
    default_base_url: str | None = "https://api.openai.com/v1"
    default_key_env: str | None = "OPENAI_API_KEY"
    endpoint = "/chat/completions"
    max_tokens_field = "max_completion_tokens"

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"authorization": f"Bearer {key}"}

    def batch_api(self) -> BatchApi | None:
        """OpenAI's Batch API (evalwh.providers.batch_openai)."""
        return OpenAIBatchApi(self)

    def _content(self, message: dict[str, Any]) -> str | list[dict[str, Any]]:
        parts = message["content"]
        if all(p.get("type") == "text" for p in parts):
            return message_text(message)
        out: list[dict[str, Any]] = []
        for part in parts:
            kind = part.get("type")
            if kind == "text":
                out.append({"type": "text", "text": part.get("text") or ""})
            elif kind == "image":
                url = part["url"] if "url" in part else data_url(self.name, part)
                out.append({"type": "image_url", "image_url": {"url": url}})
            elif kind == "audio" and part.get("media_type") in AUDIO_FORMATS and "url" not in part:
                audio = {
                    "data": part_base64(self.name, part),
                    "format": AUDIO_FORMATS[part["media_type"]],
                }
                out.append({"type": "input_audio", "input_audio": audio})
            elif kind == "file" and "url" not in part:
                file = {
                    "filename": filename_for(part["name"], part["media_type"]),
                    "file_data": data_url(self.name, part),
                }
                out.append({"type": "file", "file": file})
            else:
                raise unsupported_part(self.name, part)
        return out

    def _message(self, message: dict[str, Any]) -> dict[str, Any]:
        """One message on the wire: a tool loop's assistant turn carries ``tool_calls``
        (arguments as a JSON string), a tool result is a ``tool`` message naming its call."""
        role = message["role"]
        if role == "tool":
            return {
                "role": "tool",
                "tool_call_id": message["tool_call_id"],
                "content": message_text(message),
            }
        out: dict[str, Any] = {"role": role, "content": self._content(message)}
        if message.get("tool_calls"):
            out["content"] = out["content"] or None
            out["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {
                        "name": c["name"],
                        "arguments": json.dumps(c["arguments"], ensure_ascii=False),
                    },
                }
                for c in message["tool_calls"]
            ]
        return out

    def build_body(self, request: Request) -> dict[str, Any]:
        params = request.params
        system = params.get("system")
        messages: list[dict[str, Any]] = []
        if system is not None:
            messages.append({"role": "system", "content": system})
        for message in request.messages:
            if message["role"] == "system" and system is not None:
                continue  # replaced by params.system
            messages.append(self._message(message))
        body: dict[str, Any] = {"model": self.spec.model, "messages": messages}
        if params.get("max_tokens") is not None:
            body[self.max_tokens_field] = int(params["max_tokens"])
        for key in ("temperature", "top_p", "stop", "reasoning_effort"):
            if params.get(key) is not None:
                body[key] = params[key]
        if request.tools is not None:
            body["tools"] = [
                {"type": "function", "function": t.definition()} for t in request.tools.tools
            ]
            choice = request.tools.choice
            body["tool_choice"] = (
                {"type": "function", "function": {"name": choice["name"]}}
                if isinstance(choice, dict)
                else choice
            )
        if request.output is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": request.output.name,
                    "schema": request.output.schema,
                    "strict": request.output.strict,
                },
            }
        return merge_extra(body, params)

    def parse_body(self, data: Any, request: Request | None = None) -> Completion:
        choice = data["choices"][0]
        message = choice["message"]
        content = message["content"]
        if content is None:  # a refusal, or tool calls only
            content = ""
        elif isinstance(content, list):  # some compatible servers answer with parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        elif not isinstance(content, str):
            raise TypeError("'content' is not a string")
        raw = choice.get("finish_reason")
        finish = FINISH_REASONS.get(raw) if isinstance(raw, str) else None
        refusal = message.get("refusal") if isinstance(message.get("refusal"), str) else None
        if refusal:
            finish = "refusal"
        calls = [_call(c) for c in message.get("tool_calls") or [] if isinstance(c, dict)]
        legacy = message.get("function_call")  # the deprecated single-function form
        if isinstance(legacy, dict):
            calls.append(_call({"function": legacy}))
        # reasoning text: OpenAI keeps it server-side; vLLM, DeepSeek and gateways return it
        reasoning = next(
            (
                message[k]
                for k in ("reasoning_content", "reasoning")
                if isinstance(message.get(k), str)
            ),
            None,
        )
        usage = data.get("usage") or {}
        prompt = usage.get("prompt_tokens_details") or {}
        completion = usage.get("completion_tokens_details") or {}
        return Completion(
            text=content,
            input_tokens=int_or_none(usage.get("prompt_tokens")),
            output_tokens=int_or_none(usage.get("completion_tokens")),
            extra={"finish_reason": raw} if raw is not None else {},
            finish_reason=finish,
            refusal=refusal or None,
            tool_calls=calls or None,
            reasoning=reasoning or None,
            reasoning_tokens=int_or_none(completion.get("reasoning_tokens")) or None,
            cache_read_tokens=int_or_none(prompt.get("cached_tokens")) or None,
        )


def _call(call: dict[str, Any]) -> dict[str, Any]:
    """A tool call as stored: its id, its function's name and arguments (parsed when they are
    JSON, else the string the model wrote)."""
    function = call.get("function") or {}
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError):
            arguments = json.loads(arguments)
    out = {"name": function.get("name"), "arguments": arguments}
    if isinstance(call.get("id"), str):
        out["id"] = call["id"]
    return out


class OpenAICompatibleProvider(OpenAIProvider):
    name = "openai-compatible"
    structured_output = False  # servers differ: the schema is asked for by prompt
    default_base_url = None  # required: check() insists on base_url
    default_key_env = None  # optional: local servers need none
    max_tokens_field = "max_tokens"

    def batch_api(self) -> BatchApi | None:
        """None: OpenAI's files and batches endpoints are not part of the chat wire format
        that vLLM, llama.cpp, Ollama and gateways share (a local server answers live, free)."""
        return None
