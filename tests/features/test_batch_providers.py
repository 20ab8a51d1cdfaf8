"""Batch mode end to end through `evalwh run`, against each provider's fake batch API on
loopback (OpenAI: tests/fakes/batch_openai.py; Anthropic and Gemini: tests/fakes/batches.py):
the real adapters (evalwh/providers/batch_*.py) under the real engine.

Each fake answers a request as the live fake (tests/fakes/servers.py) answers the same body:
here the text asked, or ``{"answer": <text asked>}`` for a variant with ``output_schema``,
with the live fake's token counts. Jobs end after a number of polls, never wall time, and
live in the server: a killed client leaves them for another process to resume.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import evalwh
from tests.builders import killed_when, stored
from tests.conftest import run_cli, write
from tests.fakes.batch_openai import FakeOpenAIBatchServer
from tests.fakes.batches import BatchFake, FakeAnthropicBatches, FakeGeminiBatches
from tests.fakes.servers import FakeLLMServer, RecordedRequest, _gemini_messages, _text_of

PROVIDERS = ("openai", "anthropic", "google")
MODELS = {"openai": "gpt-4o", "anthropic": "claude-sonnet-4-5", "google": "gemini-2.5-flash"}
# USD per million tokens: a fake's answer is a few tokens, so a cell costs cents
PRICE = "{input_per_mtok: 30000, output_per_mtok: 60000}"
SCHEMA = "{type: object, properties: {answer: {type: string}}, required: [answer]}"

Fake = FakeOpenAIBatchServer | BatchFake


def one_by_default(provider: str) -> list[Any]:
    """The providers to parametrize a test with: ``provider`` in the default run, the
    others under ``slow`` (the default run stays cheap; CI runs all three)."""
    return [pytest.param(p, marks=() if p == provider else pytest.mark.slow) for p in PROVIDERS]


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(name, "test-key")
    monkeypatch.setenv("EVALWH_BATCH_POLL_S", "0")


def asked(body: dict[str, Any]) -> str:
    """The text of a request body's last user message (any of the three wire formats)."""
    messages = _gemini_messages(body) if "contents" in body else body.get("messages") or []
    users = [m for m in messages if m.get("role") == "user"]
    return _text_of(users[-1].get("content")) if users else ""


def json_answer(request: RecordedRequest) -> str:
    return json.dumps({"answer": asked(request.body)})


def batch_fake(provider: str, *, json_replies: bool = False) -> Fake:
    reply_text = json_answer if json_replies else None
    if provider == "openai":
        return FakeOpenAIBatchServer(reply_text=reply_text)
    if provider == "anthropic":
        return FakeAnthropicBatches(reply_text=reply_text)
    return FakeGeminiBatches(reply_text=reply_text)


@pytest.fixture
def serving() -> Iterator[list[Any]]:
    """Servers a test starts; each stopped at its end."""
    started: list[Any] = []
    yield started
    for server in started:
        server.__exit__(None, None, None)


def start(serving: list[Any], server: Any) -> Any:
    serving.append(server.__enter__())
    return server


def config(
    folder: Path,
    provider: str,
    url: str,
    n: int,
    *,
    batch: bool = True,
    schema: bool = False,
) -> Path:
    """eval.yaml in ``folder``: one model of ``provider`` at ``url`` (in batch mode unless
    ``batch`` is False), ``n`` cases c0.. asking their own number, each expected back; with
    ``schema`` the variant asks for JSON by schema and the scorecard checks it."""
    cases = "\n".join(f"  - {{id: c{i}, vars: {{q: '{i}'}}, expected: '{i}'}}" for i in range(n))
    output = f"\n    output_schema: {{schema: {SCHEMA}}}" if schema else ""
    exact = "{name: exact, type: exact}"
    scorer = f"{{name: json, type: json-schema, schema: {SCHEMA}}}" if schema else exact
    return write(
        folder / "eval.yaml",
        f"""\
settings: {{concurrency: 8, max_cost_usd: 1000000}}
models:
  - id: m
    provider: {provider}
    model: {MODELS[provider]}
    base_url: '{url}'
    max_retries: 0
    batch: {str(batch).lower()}
    price: {PRICE}
variants:
  - id: v
    messages: [{{role: user, content: "{{{{ q }}}}"}}]{output}
cases:
{cases}
scorecard:
  - {scorer}
""",
    )


def creates(server: Fake) -> int:
    """Jobs the fake has accepted."""
    if isinstance(server, FakeOpenAIBatchServer):
        return len(server.batches)
    return len(server.jobs)


def create_calls(server: Fake) -> int:
    """Create requests the fake has been sent."""
    if isinstance(server, FakeOpenAIBatchServer):
        return server.counts["POST /batches"]
    return server.hits("create")


def polled(server: Fake) -> int:
    if isinstance(server, FakeOpenAIBatchServer):
        return server.counts["GET /batches/{id}"]
    return server.hits("retrieve")


def job_sizes(server: Fake) -> list[int]:
    """Requests of each job the fake accepted, in order."""
    if isinstance(server, FakeOpenAIBatchServer):
        return [len(b.lines) for b in server.batches.values()]
    return [len(j.requests) for j in server.jobs.values()]


def run(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = run_cli("run", str(folder / "eval.yaml"), "-q", *args, cwd=folder)
    assert done.returncode == 0, done.stderr
    return done


def rows(folder: Path, columns: str = "*") -> list[dict[str, Any]]:
    return stored(folder / ".evalwh", f"SELECT {columns} FROM cases ORDER BY case_id")


def run_id(folder: Path) -> str:
    (last,) = evalwh.open_warehouse(folder / ".evalwh" / "warehouse.duckdb").runs(limit=1)
    return str(last["run_id"])


# ---- 1. a batch lands one row a request ---------------------------------------------------


def lands_every_row(folder: Path, provider: str, server: Fake, n: int) -> None:
    config(folder, provider, server.url, n)
    run(folder)
    got = rows(folder, "case_id, output, input_tokens, output_tokens, latency_ms, passed, extra")
    assert len(got) == n
    (job,) = stored(folder / ".evalwh", "SELECT DISTINCT job_id FROM batches")
    for row in got:  # the fake echoes the text asked: its number, 1 token in and out
        assert row["output"] == row["case_id"][1:] and row["passed"]
        assert (row["input_tokens"], row["output_tokens"]) == (1, 1)
        assert row["latency_ms"] is None
        assert json.loads(row["extra"])["batch_job"] == job["job_id"]
    ended = stored(
        folder / ".evalwh",
        "SELECT state, requests FROM batches QUALIFY seq = max(seq) OVER (PARTITION BY job_id)",
    )
    assert ended == [{"state": "ended", "requests": n}]
    assert job_sizes(server) == [n]


@pytest.mark.parametrize("provider", one_by_default("anthropic"))
def test_a_500_request_batch_lands_500_rows_with_the_fakes_answers(
    tmp_path: Path, provider: str, serving: list[Any]
) -> None:
    lands_every_row(tmp_path, provider, start(serving, batch_fake(provider)), 500)


# ---- 2. a kill after submission, then --resume: nothing submitted again -----------------


def killed_then_resumed(folder: Path, provider: str, server: Fake) -> None:
    """A run killed (SIGKILL) while it waits on its job; the job ends while nobody waits;
    `--resume` in another process reads it, JSON-by-schema answers included."""
    hold(server, True)  # the job never ends by itself
    config(folder, provider, server.url, 30, schema=True)
    # a job is polled only once it is recorded in the warehouse: the run waits on it
    killed_when(["run", "eval.yaml", "-q"], folder, lambda: polled(server) >= 1)
    assert create_calls(server) == 1 and rows(folder) == []
    hold(server, False)
    run(folder, "--resume", run_id(folder))
    assert create_calls(server) == 1  # nothing submitted again
    got = rows(folder, "case_id, output, passed, error, extra")
    assert len(got) == 30
    (job,) = server.batches if isinstance(server, FakeOpenAIBatchServer) else server.jobs
    for row in got:
        assert row["error"] is None and row["passed"]
        assert json.loads(row["output"]) == {"answer": row["case_id"][1:]}
        assert json.loads(row["extra"])["batch_job"].endswith(job)


def hold(server: Fake, held: bool) -> None:
    """Keep the fake's jobs running (True), or end each at its next poll (False)."""
    if isinstance(server, FakeOpenAIBatchServer):
        server.polls = 10**9 if held else 0
    else:
        server.polls_to_end = 10**9 if held else 0


@pytest.mark.parametrize("provider", one_by_default("anthropic"))
def test_a_run_killed_after_submitting_resumes_on_its_job_and_submits_nothing_new(
    tmp_path: Path, provider: str, serving: list[Any]
) -> None:
    server = start(serving, batch_fake(provider, json_replies=True))
    killed_then_resumed(tmp_path, provider, server)


@pytest.mark.slow
def test_a_run_whose_create_reply_is_lost_submits_its_requests_once(
    tmp_path: Path, serving: list[Any]
) -> None:
    server = start(serving, FakeOpenAIBatchServer(lose_creates=1))
    config(tmp_path, "openai", server.url, 10)
    run(tmp_path)
    assert create_calls(server) == 1 and job_sizes(server) == [10]
    assert [r["error"] for r in rows(tmp_path, "error")] == [None] * 10


# ---- 3. failed and expired requests are errors; --retry-errors resubmits only them --------

# what a failed request says at each fake, and the error kind evalwh stores for it
FAILURES = {
    "openai": (None, "http"),  # the fake answers a failing request 400 invalid_request_error
    "anthropic": (("overloaded_error", "Overloaded"), "server"),
    "google": ((8, "Resource has been exhausted"), "rate_limit"),
}


def script(server: Fake, failed: set[str], expired: set[str]) -> None:
    """The fake's next jobs fail the requests asking ``failed`` and expire those asking
    ``expired`` (OpenAI: the job expires with them last; Gemini: a job holding any of them
    expires whole, with no output)."""

    def on_create(requests: dict[str, Any]) -> None:
        texts = {custom_id: asked(body) for custom_id, body in requests.items()}
        late = [c for c, text in texts.items() if text in expired]
        if isinstance(server, FakeOpenAIBatchServer):
            server.failing = {c for c, text in texts.items() if text in failed}
            answered = len(texts) - len(late)
            assert set(list(texts)[answered:]) == set(late), "expired requests come last"
            server.expire = answered if late else None
            return
        error = FAILURES["anthropic" if isinstance(server, FakeAnthropicBatches) else "google"]
        server.fail = {c: error[0] for c, text in texts.items() if text in failed}
        if isinstance(server, FakeGeminiBatches):
            server.expire_job = bool(late)
        else:
            server.expire = set(late)

    server.on_create = on_create


def errors_of(folder: Path, run: str) -> dict[str, str | None]:
    got = stored(
        folder / ".evalwh",
        f"SELECT case_id, error_kind FROM cases WHERE run_id = '{run}' ORDER BY case_id",
    )
    return {r["case_id"]: r["error_kind"] for r in got}


def fails_then_retries(folder: Path, provider: str, server: Fake) -> None:
    config(folder, provider, server.url, 6)
    # Gemini expires a job whole: its expiry is checked on the retry's job (below)
    expired = set() if provider == "google" else {"4", "5"}
    script(server, failed={"1", "2"}, expired=expired)
    run(folder)
    first = run_id(folder)
    kind = FAILURES[provider][1]
    want = {f"c{i}": None for i in range(6)} | {"c1": kind, "c2": kind}
    want |= {f"c{q}": "batch_expired" for q in expired}
    assert errors_of(folder, first) == want
    if provider == "google":  # the retry's job expires: its requests are batch_expired
        script(server, failed=set(), expired={"1", "2"})
        run(folder, "--retry-errors", first)
        assert job_sizes(server) == [6, 2]
        assert errors_of(folder, first) == want | {"c1": "batch_expired", "c2": "batch_expired"}
    script(server, failed=set(), expired=set())
    run(folder, "--retry-errors", first)
    # the new job holds exactly the failed and expired requests
    assert job_sizes(server)[-1] == 2 + len(expired)
    assert errors_of(folder, first) == {f"c{i}": None for i in range(6)}
    assert all(r["passed"] for r in rows(folder, "passed"))


@pytest.mark.parametrize("provider", one_by_default("openai"))
def test_failed_and_expired_requests_are_errors_and_retry_errors_resubmits_only_them(
    tmp_path: Path, provider: str, serving: list[Any]
) -> None:
    fails_then_retries(tmp_path, provider, start(serving, batch_fake(provider)))


# ---- 4 and 5. half the live cost, and JSON by schema read as live ---------------------------


def live_and_batch(folder: Path, provider: str, serving: list[Any]) -> None:
    live = start(serving, FakeLLMServer(reply_text=json_answer))
    url = live.openai_url if provider == "openai" else live.url
    config(folder / "live", provider, url, 4, batch=False, schema=True)
    run(folder / "live")
    batch = start(serving, batch_fake(provider, json_replies=True))
    config(folder / "batch", provider, batch.url, 4, schema=True)
    run(folder / "batch")
    columns = "case_id, output, input_tokens, output_tokens, cost_usd, passed, error"
    asked_live, asked_batch = rows(folder / "live", columns), rows(folder / "batch", columns)
    assert len(asked_batch) == 4 and creates(batch) == 1
    for one, other in zip(asked_live, asked_batch, strict=True):
        assert other["error"] is None and other["passed"]
        assert json.loads(other["output"]) == {"answer": other["case_id"][1:]}
        assert other["output"] == one["output"]  # the same answer, read as the live one
        tokens = ("input_tokens", "output_tokens")
        assert [other[t] for t in tokens] == [one[t] for t in tokens]
        assert one["cost_usd"] > 0.01  # cents to compare
        assert round(other["cost_usd"], 2) == round(one["cost_usd"] / 2, 2)
        assert other["cost_usd"] == pytest.approx(one["cost_usd"] / 2)


@pytest.mark.parametrize("provider", one_by_default("google"))
def test_a_batch_costs_half_the_live_run_and_reads_json_by_schema_as_live(
    tmp_path: Path, provider: str, serving: list[Any]
) -> None:
    live_and_batch(tmp_path, provider, serving)
