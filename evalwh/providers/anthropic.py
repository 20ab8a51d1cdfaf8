"""Anthropic Messages API provider (``provider: anthropic``), over plain httpx.

``POST {base_url}/v1/messages`` (default base URL ``https://api.anthropic.com``) with the
``x-api-key`` (from ``ANTHROPIC_API_KEY``, or the secret named by ``api_key_env``) and
``anthropic-version: 2023-06-01`` headers. System messages (or ``params.system``) go to the
top-level ``system`` field; ``max_tokens`` is required by the API and defaults to 1024;
``stop`` becomes ``stop_sequences``; ``params.extra`` is merged into the body as-is.
Parts: text; ``image`` as an image block (base64 source, or a URL source); ``file`` as a
document block (a PDF as a base64 source, text/plain as a text source). Audio and video
are refused when the run is planned (:mod:`evalwh.providers.capabilities`).
"""

from __future__ import annotations

from typing import Any

from evalwh.providers.base import Completion, Request
from evalwh.providers.http import HttpProvider, merge_extra, stop_list
from evalwh.providers.parts import part_base64, part_bytes, unsupported_part

ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 1024


class AnthropicProvider(HttpProvider):
    name = "anthropic"
    default_base_url = "https://api.anthropic.com"
    default_key_env = "ANTHROPIC_API_KEY"
    endpoint = "/v1/messages"

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"x-api-key": key}

    def base_headers(self) -> dict[str, str]:
        return {"anthropic-version": ANTHROPIC_VERSION}

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
            blocks = [self._part(p) for p in message["content"]]
            # The API rejects empty text blocks; drop them unless nothing else is left.
            kept = [b for b in blocks if b["type"] != "text" or b["text"]]
            messages.append({"role": message["role"], "content": kept or blocks})
        body: dict[str, Any] = {
            "model": self.spec.model,
            "max_tokens": int(params.get("max_tokens") or DEFAULT_MAX_TOKENS),
            "messages": messages,
        }
        system = params["system"] if params.get("system") is not None else "\n\n".join(system_parts)
        if system:
            body["system"] = system
        for key in ("temperature", "top_p"):
            if params.get(key) is not None:
                body[key] = params[key]
        stops = stop_list(params.get("stop"))
        if stops:
            body["stop_sequences"] = stops
        return merge_extra(body, params)

    def parse_body(self, data: Any) -> Completion:
        content = data["content"]
        if not isinstance(content, list):
            raise TypeError("'content' is not a list")
        text = "".join(
            block["text"]
            for block in content
            if isinstance(block, dict) and block.get("type") == "text"
        )
        usage = data.get("usage") or {}
        extra: dict[str, Any] = {}
        if data.get("stop_reason") is not None:
            extra["stop_reason"] = data["stop_reason"]
        for key in ("cache_creation_input_tokens", "cache_read_input_tokens"):
            if usage.get(key):
                extra[key] = usage[key]
        return Completion(
            text=text,
            input_tokens=_int_or_none(usage.get("input_tokens")),
            output_tokens=_int_or_none(usage.get("output_tokens")),
            extra=extra,
        )


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
