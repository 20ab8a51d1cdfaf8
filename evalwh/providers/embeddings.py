"""Embedding endpoints: one text in, one vector out, over each provider's own wire format.

The ``semantic`` scorer's ``embedder: {model: ID}`` names a model of ``models:`` whose provider
can embed; the engine (evalwh.engine.embed) sends each text through the same cache, cost cap,
limits and retries as answers. A request carries one user message holding the text; the
:class:`~evalwh.providers.base.Completion` that comes back holds the vector as JSON text
(``[0.1, -0.2, ...]``), the prompt tokens billed as ``input_tokens`` and 0 output tokens.

- ``openai`` and ``openai-compatible``: ``POST {base_url}/embeddings`` with
  ``{"model": ..., "input": [text]}`` (plus the model's ``params.dimensions`` when set); the
  reply's ``data[].embedding`` (ordered by ``index``) and ``usage.prompt_tokens``.
- ``google``: ``POST {base_url}/v1beta/models/{model}:embedContent`` with
  ``{"model": "models/...", "content": {"parts": [{"text": text}]}}`` (plus
  ``outputDimensionality`` from ``params.dimensions``); the reply's ``embedding.values``. The
  Gemini API reports no token count for embeddings, so a Gemini embedding's cost is unknown
  (None) unless the reply carries ``usageMetadata.promptTokenCount``.

- ``mock``: :class:`MockEmbeddings`, offline (``--fake`` too).

Errors are the chat providers' own (status, retryability, redaction: evalwh.providers.http).
"""

from __future__ import annotations

import json
import math
from typing import Any

from evalwh.config.model import ModelSpec
from evalwh.providers.base import Completion, Request, int_or_none
from evalwh.providers.google import GoogleProvider
from evalwh.providers.openai import OpenAICompatibleProvider, OpenAIProvider


def request_text(request: Request) -> str:
    """The one text an embedding request carries (the engine's single user message)."""
    return "".join(p.get("text", "") for m in request.messages for p in m["content"])


def vector_completion(values: Any, tokens: Any) -> Completion:
    """A vector as the engine keeps it: JSON text, its input tokens, 0 output tokens.
    Anything but a non-empty list of finite numbers is a ValueError (a bad response)."""
    if not isinstance(values, list) or not values:
        raise ValueError("the embedding is not a non-empty list")
    floats = []
    for x in values:
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
            raise ValueError(f"the embedding holds {x!r}, not a finite number")
        floats.append(float(x))
    return Completion(text=json.dumps(floats), input_tokens=int_or_none(tokens), output_tokens=0)


def _dimensions(spec: ModelSpec) -> int | None:
    value = spec.params.get("dimensions")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class OpenAIEmbeddings(OpenAIProvider):
    endpoint = "/embeddings"

    def build_body(self, request: Request) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.spec.model, "input": [request_text(request)]}
        if (dimensions := _dimensions(self.spec)) is not None:
            body["dimensions"] = dimensions
        return body

    def parse_body(self, data: Any, request: Request | None = None) -> Completion:
        items = sorted(data["data"], key=lambda item: item.get("index", 0))
        if len(items) != 1:
            raise ValueError(f"{len(items)} embeddings for one input")
        return vector_completion(
            items[0]["embedding"], (data.get("usage") or {}).get("prompt_tokens")
        )


class OpenAICompatibleEmbeddings(OpenAIEmbeddings, OpenAICompatibleProvider):
    pass


class GoogleEmbeddings(GoogleProvider):
    def __init__(self, spec: ModelSpec) -> None:
        super().__init__(spec)
        self.url = self.url.removesuffix(":generateContent") + ":embedContent"

    def build_body(self, request: Request) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": "models/" + self.spec.model.removeprefix("models/"),
            "content": {"parts": [{"text": request_text(request)}]},
        }
        if (dimensions := _dimensions(self.spec)) is not None:
            body["outputDimensionality"] = dimensions
        return body

    def parse_body(self, data: Any, request: Request | None = None) -> Completion:
        usage = data.get("usageMetadata") or {}
        return vector_completion(data["embedding"]["values"], usage.get("promptTokenCount"))


class MockEmbeddings:
    """``provider: mock`` (and every model under ``--fake``): a text's vector is how often each
    letter a-z occurs in it, lower-cased, and its tokens are its characters / 4. No network,
    deterministic: texts sharing letters score high, so a suite runs offline, but it measures
    no meaning."""

    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec

    async def complete(self, request: Request) -> Completion:
        text = request_text(request)
        lower = text.lower()
        letters = [lower.count(chr(c)) for c in range(ord("a"), ord("z") + 1)]
        return vector_completion(letters, max(1, len(text) // 4))

    async def aclose(self) -> None:
        return None


EMBEDDERS: dict[str, type[OpenAIProvider] | type[GoogleProvider] | type[MockEmbeddings]] = {
    "openai": OpenAIEmbeddings,
    "openai-compatible": OpenAICompatibleEmbeddings,
    "google": GoogleEmbeddings,
    "mock": MockEmbeddings,
}


def embedding_provider(spec: ModelSpec) -> Any:
    """The embedding endpoint of ``spec``'s provider (KeyError: the provider cannot embed)."""
    return EMBEDDERS[spec.provider](spec)
