"""Embedding endpoints (evalwh/providers/embeddings.py) against the fake server: OpenAI's
``POST /v1/embeddings`` and Gemini's ``:embedContent`` request bodies, the documented replies
(tests/fixtures/wire/*/embeddings/) parsed into a vector and its tokens, and replies that are
no vector refused as bad responses."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from evalwh.config.model import Case, ModelSpec
from evalwh.providers.base import Completion, ProviderError, Request
from evalwh.providers.embeddings import EMBEDDERS, embedding_provider
from tests.fakes.servers import WIRE, Behavior, FakeLLMServer, letter_vector, raw, reply
from tests.providers.test_http import environment  # noqa: F401  (autouse: keys, proxies)


@pytest.fixture(autouse=True)
def gemini_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "test-gemini-key")


def embed(spec: ModelSpec, text: str) -> Completion:
    provider = embedding_provider(spec)

    async def go() -> Completion:
        try:
            messages = [{"role": "user", "content": [{"type": "text", "text": text}]}]
            return await provider.complete(
                Request(model=spec, messages=messages, case=Case(id="c"), variant="embed")
            )
        finally:
            await provider.aclose()

    return asyncio.run(go())


def embedding_model(provider: str, model: str, base_url: str, **params: Any) -> ModelSpec:
    return ModelSpec(
        id="embed", provider=provider, model=model, params=params, options={"base_url": base_url}
    )


def openai(server: FakeLLMServer, **params: Any) -> ModelSpec:
    return embedding_model("openai", "text-embedding-3-small", server.openai_url, **params)


def gemini(server: FakeLLMServer, **params: Any) -> ModelSpec:
    return embedding_model("google", "gemini-embedding-001", server.url, **params)


def documented(provider: str, name: str) -> Behavior:
    body = json.loads((WIRE / provider / "embeddings" / f"{name}.json").read_text("utf-8"))
    return raw(200, body)


def test_openai_posts_the_text_as_input_and_reads_the_vector_and_its_tokens(
    server: FakeLLMServer,
) -> None:
    server.default = reply(input_tokens=3)
    got = embed(openai(server, dimensions=256), "Paris")
    assert server.last.path == "/v1/embeddings"
    assert server.last.body == {
        "model": "text-embedding-3-small",
        "input": ["Paris"],
        "dimensions": 256,
    }
    assert server.last.header("authorization") is not None
    assert json.loads(got.text) == letter_vector("Paris")
    assert (got.input_tokens, got.output_tokens) == (3, 0)


def test_the_documented_openai_reply_is_its_vector_and_prompt_tokens(
    server: FakeLLMServer,
) -> None:
    server.script(documented("openai", "create"))
    got = embed(openai(server), "The food was delicious and the waiter...")
    assert json.loads(got.text) == [0.0023064255, -0.009327292, -0.0028842222]
    assert (got.input_tokens, got.output_tokens) == (8, 0)


def test_the_documented_openai_reply_is_the_sdks_shape() -> None:
    from openai.types import CreateEmbeddingResponse

    body = json.loads((WIRE / "openai" / "embeddings" / "create.json").read_text())
    assert CreateEmbeddingResponse.model_validate(body).model_dump(exclude_unset=True) == body


def test_an_openai_compatible_server_is_asked_at_its_base_url(server: FakeLLMServer) -> None:
    spec = embedding_model("openai-compatible", "nomic-embed-text", f"{server.url}/api/v1/")
    got = embed(spec, "grass")
    assert server.last.path == "/api/v1/embeddings"
    assert json.loads(got.text) == letter_vector("grass")


def test_gemini_posts_embed_content_and_reads_the_values(server: FakeLLMServer) -> None:
    got = embed(gemini(server, dimensions=768), "Paris")
    assert server.last.path == "/v1beta/models/gemini-embedding-001:embedContent"
    assert server.last.body == {
        "model": "models/gemini-embedding-001",
        "content": {"parts": [{"text": "Paris"}]},
        "outputDimensionality": 768,
    }
    assert server.last.header("x-goog-api-key") is not None
    assert json.loads(got.text) == letter_vector("Paris")
    assert got.input_tokens is None  # the API reports no token count for an embedding


def test_the_documented_gemini_reply_is_its_values(server: FakeLLMServer) -> None:
    server.script(documented("gemini", "embed_content"))
    got = embed(gemini(server), "What is the meaning of life?")
    assert json.loads(got.text) == [0.013168523, -0.008711934, -0.046782676]


@pytest.mark.parametrize(
    "body",
    [
        '{"data": [{"index": 0, "embedding": ["0.1", 0.2]}]}',
        '{"data": [{"index": 0, "embedding": [NaN, 0.2]}]}',
        '{"data": [{"index": 0, "embedding": [true, 0.2]}]}',
        '{"data": [{"index": 0, "embedding": []}]}',
        '{"data": []}',
        '{"data": [{"index": 0, "embedding": [1]}, {"index": 1, "embedding": [2]}]}',
        '{"object": "list"}',
    ],
    ids=["strings", "nan", "bools", "empty", "no-data", "two-vectors", "no-field"],
)
def test_a_reply_that_is_not_one_vector_of_finite_numbers_is_a_bad_response(
    server: FakeLLMServer, body: str
) -> None:
    """Attack: a server answers with text, NaN, booleans or the wrong number of vectors."""
    server.script(raw(200, body))
    with pytest.raises(ProviderError) as info:
        embed(openai(server), "Paris")
    assert info.value.kind == "bad_response"
    assert not info.value.retryable


def test_only_providers_with_an_embeddings_endpoint_embed() -> None:
    assert set(EMBEDDERS) == {"openai", "openai-compatible", "google", "mock"}


def test_the_mock_embeds_offline_as_the_counts_of_each_letter() -> None:
    got = embed(ModelSpec(id="embed", provider="mock", model="embed"), "Paris, France!")
    vector = json.loads(got.text)
    assert len(vector) == 26
    assert vector == letter_vector("Paris, France!")  # a 2, c 1, e 1, f 1, i 1, n 1, p 1 ...
    assert (got.input_tokens, got.output_tokens) == (3, 0)
