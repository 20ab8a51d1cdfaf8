"""The ``semantic`` scorer with ``embedder: {model: ID}``: a run embeds the output and the
reference through the model's embeddings endpoint (fake servers on loopback speaking OpenAI's
``POST /v1/embeddings`` and Gemini's ``:embedContent``), through the response cache, the cost
cap and the stored scoring cost; a failed embedding is the criterion's stored error."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

import evalwh
from evalwh.errors import CostRefusedError
from tests.builders import stored
from tests.conftest import write
from tests.fakes.servers import FakeLLMServer, error, letter_vector, raw, reply

ANSWERS = {"capital": "Paris is the capital", "colour": "green grass"}


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(name, "test-key")


def cosine(a: str, b: str) -> float:
    x, y = letter_vector(a), letter_vector(b)
    dot = sum(p * q for p, q in zip(x, y, strict=True))
    return dot / (math.sqrt(sum(p * p for p in x)) * math.sqrt(sum(q * q for q in y)))


def config(tmp_path: Path, embed_model: str, threshold: float = 0.8, extra: str = "") -> Path:
    """A mock model answering from ANSWERS and a semantic criterion embedding with
    ``embed_model`` (an entry of models:, given whole)."""
    return write(
        tmp_path / "eval.yaml",
        f"""\
models:
  - id: answerer
    provider: mock
    mock: {{default: "{{{{ answer }}}}"}}
  - {embed_model}
variants:
  - {{id: v, messages: [{{role: user, content: "{{{{ q }}}}"}}]}}
cases:
  - {{id: capital, vars: {{q: capital, answer: "{ANSWERS["capital"]}"}}, expected: "The capital is Paris"}}
  - {{id: colour, vars: {{q: colour, answer: "{ANSWERS["colour"]}"}}, expected: "Snow is white"}}
scorecard:
  - name: meaning
    type: semantic
    embedder: {{model: embed}}
    threshold: {threshold}
{extra}""",
    )


def openai_embedder(server: FakeLLMServer, price: str = "") -> str:
    return (
        f"{{id: embed, provider: openai, model: text-embedding-3-small, "
        f"base_url: '{server.openai_url}', max_retries: 0{price}}}"
    )


def scores(out: Path) -> dict[str, dict[str, Any]]:
    rows = stored(
        out,
        "SELECT case_id, s.score, s.passed, s.error, s.cost_usd, s.judge_model, "
        "c.judge_cost_usd, model FROM scores s JOIN cases c "
        "USING (run_id, variant, model, case_id, repeat) "
        "WHERE run_id = (SELECT run_id FROM runs ORDER BY started_at DESC LIMIT 1)",
    )
    return {r["case_id"]: r for r in rows}


def test_the_openai_embeddings_endpoint_scores_the_cosine_and_costs_what_it_billed(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    server.default = reply(input_tokens=5)  # each embedding bills 5 tokens
    cfg = config(tmp_path, openai_embedder(server))
    result = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    got = scores(tmp_path / "out")
    # the embedding model answers no prompt: only the mock is in the matrix
    assert {r["model"] for r in got.values()} == {"answerer"}
    assert server.count == 4  # two texts per case, one request each
    assert result.stats["requests"] == 6  # and the two answers
    for case, reference in (("capital", "The capital is Paris"), ("colour", "Snow is white")):
        assert got[case]["score"] == pytest.approx(cosine(ANSWERS[case], reference))
        assert got[case]["judge_model"] == "text-embedding-3-small"
    assert got["capital"]["passed"] and not got["colour"]["passed"]
    bodies = [r.body for r in server.requests]
    assert all(r.path == "/v1/embeddings" for r in server.requests)
    assert {b["model"] for b in bodies} == {"text-embedding-3-small"}
    assert sorted(b["input"][0] for b in bodies) == sorted(
        [*ANSWERS.values(), "The capital is Paris", "Snow is white"]
    )
    # the shipped price, $0.02 per million tokens, of the 2 x 5 tokens the replies billed
    assert got["capital"]["cost_usd"] == pytest.approx(10 * 0.02 / 1e6)
    assert got["capital"]["judge_cost_usd"] == pytest.approx(10 * 0.02 / 1e6)


def test_a_rerun_takes_every_embedding_from_the_cache(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    cfg = config(tmp_path, openai_embedder(server))
    evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    first = scores(tmp_path / "out")
    server.reset()
    again = evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    assert server.count == 0
    assert again.stats["requests"] == 0  # the answers came from the cache too
    second = scores(tmp_path / "out")
    assert {k: r["score"] for k, r in second.items()} == {k: r["score"] for k, r in first.items()}
    assert all(r["cost_usd"] is None for r in second.values())  # nothing was paid this time


def test_a_reference_shared_by_cases_is_embedded_once(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    cfg = config(
        tmp_path,
        openai_embedder(server),
        extra='    reference: "Paris"\n',
    )
    evalwh.run_eval(cfg, output_dir=tmp_path / "out", concurrency=1)
    texts = [r.body["input"][0] for r in server.requests]
    assert sorted(texts) == sorted([*ANSWERS.values(), "Paris"])


def test_the_cost_cap_counts_embeddings(tmp_path: Path, server: FakeLLMServer) -> None:
    # $1 per million tokens and a cap of 12 tokens' worth. The estimate counts each answer's
    # embedding at max_tokens (512 unset: refused before anything is called) ...
    price = ", price: {input_per_mtok: 1.0, output_per_mtok: 0}"
    cfg = config(tmp_path, openai_embedder(server, price))
    with pytest.raises(CostRefusedError, match="for 6 call"):
        evalwh.run_eval(cfg, output_dir=tmp_path / "out", max_cost=12e-6)
    assert server.count == 0
    # ... at max_tokens 1 it passes (2 answers + 5 + 3 tokens of references); then each
    # embedding bills 5 tokens: the first case's two are sent ($10e-6), the next would pass
    server.default = reply(input_tokens=5)
    cfg.write_text(cfg.read_text().replace("mock\n", "mock\n    params: {max_tokens: 1}\n"))
    evalwh.run_eval(cfg, output_dir=tmp_path / "out", max_cost=12e-6, concurrency=1)
    assert server.count == 2
    got = scores(tmp_path / "out")
    assert got["capital"]["cost_usd"] == pytest.approx(10e-6)
    assert "not sent: cost cap $0.0000 reached" in got["colour"]["error"]


@pytest.mark.parametrize(
    ("behavior", "says"),
    [
        (error(401, "Incorrect API key provided"), "openai: HTTP 401"),
        # Attack: a provider (or a man in the middle) answers with strings or NaN
        (
            raw(200, '{"object": "list", "data": [{"index": 0, "embedding": ["1", NaN]}]}'),
            "not a finite number",
        ),
    ],
    ids=["http-401", "no-vector"],
)
def test_a_failed_embedding_is_the_criterions_error_not_the_runs(
    tmp_path: Path, server: FakeLLMServer, behavior: Any, says: str
) -> None:
    server.default = behavior
    cfg = config(tmp_path, openai_embedder(server))
    evalwh.run_eval(cfg, output_dir=tmp_path / "out")
    got = scores(tmp_path / "out")
    assert set(got) == {"capital", "colour"}
    for row in got.values():
        assert row["score"] == 0 and not row["passed"]
        assert row["error"].startswith("embedder model 'embed' failed: ")
        assert says in row["error"]


def test_gemini_embeds_through_embed_content(tmp_path: Path, server: FakeLLMServer) -> None:
    model = (
        f"{{id: embed, provider: google, model: gemini-embedding-001, "
        f"base_url: '{server.url}', max_retries: 0}}"
    )
    evalwh.run_eval(config(tmp_path, model), output_dir=tmp_path / "out")
    got = scores(tmp_path / "out")
    assert got["capital"]["score"] == pytest.approx(
        cosine(ANSWERS["capital"], "The capital is Paris")
    )
    paths = {r.path for r in server.requests}
    assert paths == {"/v1beta/models/gemini-embedding-001:embedContent"}
    body = server.requests[0].body
    assert body["model"] == "models/gemini-embedding-001"
    assert set(body) == {"model", "content"}
    # the Gemini API reports no tokens for an embedding: its cost is unknown, not $0
    assert got["capital"]["cost_usd"] is None
