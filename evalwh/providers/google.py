"""Google Gemini API provider (``provider: google``), over plain httpx.

``POST {base_url}/v1beta/models/{model}:generateContent`` (default base URL
``https://generativelanguage.googleapis.com``) with the ``x-goog-api-key`` header, the key
from ``GEMINI_API_KEY``, else ``GOOGLE_API_KEY`` (or the secret named by ``api_key_env``)::

    - id: flash
      provider: google
      model: gemini-2.5-flash
      params: {temperature: 0, max_tokens: 256}

The request is the API's ``GenerateContentRequest``: ``contents`` (roles ``user`` and
``model``), each message's parts as ``{"text": ...}`` or ``{"inlineData": {"mimeType": ...,
"data": <base64>}}`` (images, PDFs and other documents, audio), system messages (or
``params.system``) as ``systemInstruction``, and ``generationConfig`` from ``temperature``,
``top_p`` (``topP``), ``max_tokens`` (``maxOutputTokens``), ``stop`` (``stopSequences``)
and ``thinking_budget`` (``thinkingConfig: {thinkingBudget, includeThoughts}``), only those
set; ``params.extra`` is merged into the body as-is (``safetySettings``,
``generationConfig`` keys of its own...). The answer is the first candidate's text parts;
thought summaries are the ``reasoning``, ``functionCall`` parts the ``tool_calls``;
``usageMetadata`` gives the tokens (thinking tokens count as output, as they are billed, and
as ``reasoning_tokens``; ``cachedContentTokenCount`` as ``cache_read_tokens``).
``finishReason`` maps onto the finish reasons of :mod:`evalwh.providers.base` (MAX_TOKENS
``length``; SAFETY, RECITATION and the other blocks ``content_filter``); a prompt the API
blocks (``promptFeedback.blockReason``, no candidate) is ``content_filter`` too, a failed
cell, never an empty answer. Video parts and URL parts are refused when the run is planned
(:mod:`evalwh.providers.capabilities`).

JSON by schema, asked for natively, is ``generationConfig.responseMimeType:
application/json`` with the schema as ``generationConfig.responseSchema``, translated to the
API's ``Schema`` object (:mod:`evalwh.providers.gemini_schema`); the answer is the JSON text.

Batch mode: ``batch_api()`` is the API's batch mode (:mod:`evalwh.providers.batch_google`).
"""

from __future__ import annotations

import re
from typing import Any

from evalwh.config.model import ModelSpec
from evalwh.errors import ConfigError
from evalwh.providers.base import Completion, Request, int_or_none, message_text
from evalwh.providers.batch_google import GoogleBatchApi
from evalwh.providers.gemini_schema import response_schema
from evalwh.providers.http import HttpProvider, merge_extra, stop_list
from evalwh.providers.parts import part_base64, unsupported_part

KEY_NAMES = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
ROLES = {"user": "user", "assistant": "model"}
# tool_choice -> functionCallingConfig.mode ({name: X} is ANY with allowedFunctionNames [X])
FUNCTION_MODES = {"auto": "AUTO", "required": "ANY", "none": "NONE"}
# finishReason -> the finish reason evalwh stores (the raw value is kept in extra.finish_reason);
# a prompt the API blocks (promptFeedback.blockReason, no candidate) is content_filter too
FINISH_REASONS = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "LANGUAGE": "error",
    "MALFORMED_FUNCTION_CALL": "error",
    "UNEXPECTED_TOOL_CALL": "error",
    "OTHER": "error",
}


class GoogleProvider(HttpProvider):
    name = "google"
    default_base_url = "https://generativelanguage.googleapis.com"
    default_key_env = KEY_NAMES[0]
    other_key_envs = KEY_NAMES[1:]  # GEMINI_API_KEY, else GOOGLE_API_KEY (the SDK's order)
    structured_output = True  # responseMimeType application/json + responseSchema
    tool_use = True  # tools: [{functionDeclarations}], functionCall / functionResponse parts

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__(spec)
        model = spec.model.removeprefix("models/")
        self.url = f"{self.url}/v1beta/models/{model}:generateContent"

    def batch_api(self) -> GoogleBatchApi:
        """The Gemini API's batch mode (evalwh.providers.batch_google)."""
        return GoogleBatchApi(self, self.spec.model.removeprefix("models/"))

    @classmethod
    def check(cls, spec: ModelSpec, file: str | None = None) -> None:
        super().check(spec, file)
        if not MODEL_NAME.match(spec.model.removeprefix("models/")):
            raise ConfigError(
                f"'{spec.model}' is not a Gemini model name",
                file=file,
                where=f"{spec.where}.model",
                fix="write the model's name as the API lists it, e.g. gemini-2.5-flash",
            )

    @classmethod
    def check_output(cls, output: Any, *, file: str | None, where: str) -> None:
        """A schema the API's ``Schema`` cannot carry is refused at validation."""
        response_schema(output.schema, file=file, where=where)

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"x-goog-api-key": key}

    def _part(self, part: dict[str, Any]) -> dict[str, Any]:
        kind = part.get("type")
        if kind == "text":
            return {"text": part.get("text") or ""}
        if kind in ("image", "file", "audio") and "sha256" in part:
            return {
                "inlineData": {
                    "mimeType": part["media_type"],
                    "data": part_base64(self.name, part),
                }
            }
        raise unsupported_part(self.name, part)

    def build_body(self, request: Request) -> dict[str, Any]:
        params = request.params
        system: list[str] = []
        contents: list[dict[str, Any]] = []
        for message in request.messages:
            if message["role"] == "system":
                for part in message["content"]:
                    if part.get("type") != "text":
                        raise unsupported_part(self.name, part)
                    system.append(part.get("text") or "")
                continue
            if message["role"] == "tool":  # a function's result: a user turn of functionResponse
                key = "error" if message.get("is_error") else "result"
                answer = {
                    "functionResponse": {
                        "name": message["name"],
                        "response": {key: _result_value(message_text(message))},
                    }
                }
                last = contents[-1] if contents else None
                if last is not None and "functionResponse" in last["parts"][-1]:
                    last["parts"].append(answer)  # one turn answers every call
                else:
                    contents.append({"role": "user", "parts": [answer]})
                continue
            parts = [self._part(p) for p in message["content"]]
            kept = [p for p in parts if p.get("text") != ""]  # the API refuses empty text parts
            kept += [
                {"functionCall": {"name": c["name"], "args": c["arguments"]}}
                for c in message.get("tool_calls") or ()
            ]
            contents.append({"role": ROLES[message["role"]], "parts": kept or parts})
        body: dict[str, Any] = {"contents": contents}
        text = params["system"] if params.get("system") is not None else "\n\n".join(system)
        if text:
            body["systemInstruction"] = {"parts": [{"text": text}]}
        config: dict[str, Any] = {}
        for key, field in (("temperature", "temperature"), ("top_p", "topP")):
            if params.get(key) is not None:
                config[field] = params[key]
        if params.get("max_tokens") is not None:
            config["maxOutputTokens"] = int(params["max_tokens"])
        budget = params.get("thinking_budget")
        if budget is not None:  # 0 off, -1 dynamic; the thought summaries are kept (reasoning)
            thinking: dict[str, Any] = {"thinkingBudget": int(budget)}
            if budget != 0:
                thinking["includeThoughts"] = True
            config["thinkingConfig"] = thinking
        stops = stop_list(params.get("stop"))
        if stops:
            config["stopSequences"] = stops
        if request.tools is not None:
            body["tools"] = [
                {
                    "functionDeclarations": [
                        {
                            "name": t.name,
                            "description": t.description,
                            "parametersJsonSchema": t.parameters,
                        }
                        for t in request.tools.tools
                    ]
                }
            ]
            choice = request.tools.choice
            calling: dict[str, Any] = {
                "mode": "ANY" if isinstance(choice, dict) else FUNCTION_MODES[choice]
            }
            if isinstance(choice, dict):
                calling["allowedFunctionNames"] = [choice["name"]]
            body["toolConfig"] = {"functionCallingConfig": calling}
        if request.output is not None:  # JSON by schema, natively
            config["responseMimeType"] = "application/json"
            config["responseSchema"] = response_schema(request.output.schema)
        if config:
            body["generationConfig"] = config
        return merge_extra(body, params)

    def parse_body(self, data: Any, request: Request | None = None) -> Completion:
        usage = data.get("usageMetadata") or {}
        extra: dict[str, Any] = {}
        candidates = data.get("candidates")
        thoughts: list[str] = []
        calls: list[dict[str, Any]] = []
        finish: str | None = None
        if not candidates:
            feedback = data.get("promptFeedback") or {}
            if not feedback.get("blockReason"):
                raise KeyError("candidates")
            extra["block_reason"] = feedback["blockReason"]  # the prompt itself was blocked
            text, finish = "", "content_filter"
        else:
            first = candidates[0]
            parts = (first.get("content") or {}).get("parts") or []
            if not isinstance(parts, list):
                raise TypeError("'parts' is not a list")
            texts: list[str] = []
            for p in (p for p in parts if isinstance(p, dict)):
                if isinstance(p.get("text"), str):
                    (thoughts if p.get("thought") else texts).append(p["text"])
                elif isinstance(p.get("functionCall"), dict):
                    call = p["functionCall"]
                    found = {"name": call.get("name"), "arguments": call.get("args")}
                    if isinstance(call.get("id"), str):
                        found["id"] = call["id"]
                    calls.append(found)
            text = "".join(texts)
            raw = first.get("finishReason")
            if isinstance(raw, str):
                finish = FINISH_REASONS.get(raw)
            if calls and finish == "stop":  # the API says STOP after a function call
                finish = "tool_calls"
            if raw is not None:
                extra["finish_reason"] = raw
        output = int_or_none(usage.get("candidatesTokenCount"))
        thinking = int_or_none(usage.get("thoughtsTokenCount"))
        if thinking:  # billed as output, counted apart by the API
            output = (output or 0) + thinking
        if data.get("modelVersion"):
            extra["model_version"] = data["modelVersion"]
        return Completion(
            text=text,
            input_tokens=int_or_none(usage.get("promptTokenCount")),
            output_tokens=output,
            extra=extra,
            finish_reason=finish,
            tool_calls=calls or None,
            reasoning="\n\n".join(thoughts) if thoughts else None,
            reasoning_tokens=thinking or None,
            cache_read_tokens=int_or_none(usage.get("cachedContentTokenCount")) or None,
        )

    def error_detail(self, data: Any) -> str | None:
        """Google's errors: ``{"error": {"code": 400, "message": ..., "status": ...}}``."""
        err = data.get("error") if isinstance(data, dict) else None
        if isinstance(err, dict) and err.get("message"):
            status = err.get("status")
            return f"{status}: {err['message']}" if status else str(err["message"])
        return super().error_detail(data)


def _result_value(text: str) -> Any:
    """A tool's result as a functionResponse carries it: the JSON value its text holds, else
    the text."""
    import json

    try:
        return json.loads(text)
    except ValueError:
        return text
