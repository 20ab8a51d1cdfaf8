"""Anthropic's Message Batches (evalwh/providers/batch_anthropic.py) against the fake
Message Batches server (tests/fakes/batches.py): a 500-request batch whose answers equal the
live fake's, part-failed, expired and cancelled batches, a garbage results line, a job picked
up by another process, the documented example replies, the SDK's request and reply types, and
three attacks: a reply echoing the key, a ``results_url`` on another host, a job id that is a
path."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evalwh.config.model import Case, ModelSpec
from evalwh.config.outputs import OutputSpec
from evalwh.providers.anthropic import AnthropicProvider
from evalwh.providers.base import ProviderError, Request
from evalwh.providers.batch_anthropic import AnthropicBatchApi
from evalwh.providers.batching import BatchApi, BatchItem, BatchJob, BatchResult
from evalwh.providers.http import HttpProvider
from tests.builders import materialised
from tests.fakes.batches import FakeAnthropicBatches
from tests.fakes.servers import FakeLLMServer
from tests.providers.test_http import (
    ANTHROPIC_KEY,
    environment,  # noqa: F401  (autouse: keys, proxies, isolated secrets)
)

WIRE = Path(__file__).resolve().parent.parent / "fixtures" / "wire" / "anthropic" / "batches"


@pytest.fixture
def batches() -> Iterator[FakeAnthropicBatches]:
    with FakeAnthropicBatches() as server:
        yield server


def provider(base_url: str, **params: Any) -> AnthropicProvider:
    spec = ModelSpec(
        id="c",
        provider="anthropic",
        model="claude-test",
        params=params,
        options={"base_url": base_url},
        where="models[0]",
    )
    return AnthropicProvider(spec)


def item(prov: HttpProvider, n: int, output: Any = None) -> BatchItem:
    """Request ``n``: its custom id is a request hash's shape (64 hex digits)."""
    messages = [{"role": "user", "content": [{"type": "text", "text": f"Question {n}?"}]}]
    request = Request(prov.spec, messages, Case(id=f"c{n}"), "v", output=output)
    return BatchItem(hashlib.sha256(f"request {n}".encode()).hexdigest(), request)


def run(coro: Any, api: BatchApi | None = None) -> Any:
    """``coro`` to its end, ``api``'s client closed after it (even when it raises)."""

    async def go() -> Any:
        try:
            return await coro
        finally:
            if api is not None:
                await api.provider.aclose()  # type: ignore[attr-defined]

    return asyncio.run(go())


def assert_live_answers(
    make: Callable[[str], HttpProvider], items: list[BatchItem], results: dict[str, BatchResult]
) -> None:
    """Each of ``items`` asked live (the provider ``make`` builds for a base URL) of the live
    fake answers as the batch did: the same text, tokens, finish reason and details."""

    async def live(url: str) -> list[Any]:
        prov = make(url)
        try:
            return await asyncio.gather(*(prov.complete(i.request) for i in items))
        finally:
            await prov.aclose()

    with FakeLLMServer() as server:
        answers = run(live(server.url))
    for one, want in zip(items, answers, strict=True):
        got = results[one.custom_id].completion
        assert got is not None and results[one.custom_id].error is None
        assert (got.text, got.input_tokens, got.output_tokens, got.finish_reason, got.extra) == (
            want.text,
            want.input_tokens,
            want.output_tokens,
            want.finish_reason,
            want.extra,
        )


async def through(
    api: Any, items: list[BatchItem], polls: int = 5
) -> tuple[BatchJob, dict[str, BatchResult]]:
    """Submit ``items``, poll until readable, read every result."""
    job = await api.submit([api.line(i) for i in items], label="run-1")
    for _ in range(polls):
        job = await api.poll(job.id)
        if job.state in ("ended", "cancelled", "expired"):
            break
    requests = {i.custom_id: i.request for i in items}
    results = {r.custom_id: r async for r in api.results(job, requests)}
    await api.provider.aclose()
    return job, results


@pytest.mark.parametrize("asked_live", [20, pytest.param(500, marks=pytest.mark.slow)])
def test_a_500_request_batch_answers_as_the_live_api_does(
    batches: FakeAnthropicBatches, asked_live: int
) -> None:
    """Every answer of the batch equals the live fake's for the same request (by default the
    first 20 are also asked live; under slow all 500)."""
    batches.polls_to_end = 2
    api = AnthropicBatchApi(provider(batches.url))
    items = [item(api.provider, n) for n in range(500)]
    job, results = run(through(api, items))
    assert job.state == "ended" and job.provider_state == "ended"
    assert job.counts["succeeded"] == job.counts["total"] == 500
    assert job.id.startswith("msgbatch_")
    assert [batches.hits(r) for r in ("create", "retrieve", "results")] == [1, 2, 1]

    assert len(results) == 500
    assert_live_answers(lambda url: provider(url), items[:asked_live], results)
    assert results[items[7].custom_id].completion.text == "Question 7?"  # type: ignore[union-attr]


def test_the_batch_carries_the_live_body_and_the_live_headers_on_every_route(
    batches: FakeAnthropicBatches,
) -> None:
    api = AnthropicBatchApi(provider(batches.url, temperature=0.5, max_tokens=64))
    items = [item(api.provider, n) for n in range(2)]
    run(through(api, items))
    create = batches.requests[0]
    assert create.body["requests"][1] == {
        "custom_id": items[1].custom_id,
        "params": api.provider.build_body(items[1].request),
    }
    assert create.body["requests"][1]["params"]["max_tokens"] == 64
    for recorded in batches.requests:  # create, retrieve, results
        assert recorded.header("x-api-key") == ANTHROPIC_KEY
        assert recorded.header("anthropic-version") == "2023-06-01"


@pytest.mark.slow  # building the SDK's request type takes seconds
def test_the_batch_bodies_are_the_sdks_request_type() -> None:
    """The create body validates as the SDK's BatchCreateParams and loses nothing doing so
    (by default, each ``params`` equals the live body, which tests/providers/test_anthropic.py
    checks against the SDK's MessageCreateParamsNonStreaming)."""
    from anthropic.types.messages.batch_create_params import BatchCreateParams
    from pydantic import TypeAdapter

    api = AnthropicBatchApi(provider("http://127.0.0.1:9"))
    output = OutputSpec(schema={"type": "object", "properties": {"a": {"type": "string"}}})
    body = {"requests": [api.line(item(api.provider, 1)), api.line(item(api.provider, 2, output))]}
    assert materialised(TypeAdapter(BatchCreateParams).validate_python(body)) == body


@pytest.mark.slow  # importing the SDK takes seconds
def test_the_fakes_replies_and_the_documented_ones_are_the_sdks_reply_types(
    batches: FakeAnthropicBatches,
) -> None:
    """The fake's MessageBatch in progress and ended, its results lines, and the documented
    examples of tests/fixtures/wire/anthropic/batches/ validate as the SDK's types and lose
    nothing doing so."""
    from anthropic.types.messages import MessageBatch, MessageBatchIndividualResponse

    def same(model: Any, body: dict[str, Any]) -> bool:
        dumped = model.model_validate(body).model_dump(mode="json", exclude_unset=True)
        return bool(dumped == json.loads(json.dumps(body)))

    api = AnthropicBatchApi(provider(batches.url))
    items = [item(api.provider, n) for n in range(3)]
    batches.fail = {items[1].custom_id: ("api_error", "Internal server error")}
    batches.expire = {items[2].custom_id}
    job = run(api.submit([api.line(i) for i in items], label="run-1"), api)
    running = batches.batch(batches.jobs[job.id])
    run(api.poll(job.id), api)
    ended = batches.batch(batches.jobs[job.id])
    lines = [json.loads(line) for line in batches.jobs[job.id].results]
    documented = [json.loads((WIRE / f).read_text()) for f in ("in_progress.json", "ended.json")]
    for body in [running, ended, *documented]:
        assert same(MessageBatch, body), body
    results = [json.loads(x) for x in (WIRE / "results.jsonl").read_text().splitlines()]
    for line in [*lines, *results]:
        assert same(MessageBatchIndividualResponse, line), line
    assert [line["result"]["type"] for line in lines] == ["succeeded", "errored", "expired"]


def test_json_by_schema_is_read_from_the_forced_tool_call_as_live(
    batches: FakeAnthropicBatches,
) -> None:
    batches.reply_text = '{"a": "b"}'
    api = AnthropicBatchApi(provider(batches.url))
    output = OutputSpec(schema={"type": "object", "properties": {"a": {"type": "string"}}})
    one = item(api.provider, 1, output)
    _, results = run(through(api, [one]))
    completion = results[one.custom_id].completion
    assert completion is not None
    assert (completion.text, completion.tool_calls) == ('{"a": "b"}', None)


def test_a_process_that_resumes_a_job_reads_json_by_schema_with_the_requests_it_is_given(
    batches: FakeAnthropicBatches,
) -> None:
    """The process that reads a job need not be the one that made its lines (a resumed run
    rebuilds its requests from the plan): the answer is read with the request it is given."""
    batches.reply_text = '{"a": "b"}'
    batches.polls_to_end = 1
    first = AnthropicBatchApi(provider(batches.url))
    output = OutputSpec(schema={"type": "object", "properties": {"a": {"type": "string"}}})
    one = item(first.provider, 1, output)
    job = run(first.submit([first.line(one)], label="run-1"), first)
    second = AnthropicBatchApi(provider(batches.url))

    async def read() -> dict[str, BatchResult]:
        ended = await second.poll(job.id)
        found = {r.custom_id: r async for r in second.results(ended, {one.custom_id: one.request})}
        await second.provider.aclose()
        return found

    completion = run(read())[one.custom_id].completion
    assert completion is not None
    assert (completion.text, completion.tool_calls) == ('{"a": "b"}', None)


def test_a_part_failed_batch_gives_each_failed_request_its_error(
    batches: FakeAnthropicBatches,
) -> None:
    api = AnthropicBatchApi(provider(batches.url))
    items = [item(api.provider, n) for n in range(4)]
    batches.fail = {
        items[1].custom_id: ("invalid_request_error", "messages: at least one message is required"),
        items[2].custom_id: ("overloaded_error", "Overloaded"),
    }
    job, results = run(through(api, items))
    assert job.state == "ended"
    assert (job.counts["succeeded"], job.counts["errored"]) == (2, 2)
    bad, busy = results[items[1].custom_id].error, results[items[2].custom_id].error
    assert bad is not None and busy is not None
    assert (bad.kind, bad.retryable, bad.status) == ("http", False, 400)
    assert "invalid_request_error: messages: at least one message is required" in str(bad)
    assert str(bad).startswith("anthropic: ")
    assert (busy.kind, busy.retryable, busy.status) == ("server", True, 529)
    assert results[items[0].custom_id].completion is not None
    assert results[items[3].custom_id].completion is not None


def test_an_expired_batch_reads_its_finished_requests_and_expires_the_rest(
    batches: FakeAnthropicBatches,
) -> None:
    api = AnthropicBatchApi(provider(batches.url))
    items = [item(api.provider, n) for n in range(3)]
    batches.expire = {items[0].custom_id, items[2].custom_id}
    job, results = run(through(api, items))
    assert (job.state, job.counts["expired"], job.counts["succeeded"]) == ("expired", 2, 1)
    expired = results[items[0].custom_id].error
    assert expired is not None and (expired.kind, expired.retryable) == ("batch_expired", True)
    assert results[items[1].custom_id].completion is not None


def test_a_cancelled_batch_keeps_what_finished_and_cancels_the_rest(
    batches: FakeAnthropicBatches,
) -> None:
    batches.polls_to_end = 99
    batches.done_on_cancel = 1
    api = AnthropicBatchApi(provider(batches.url))
    items = [item(api.provider, n) for n in range(3)]

    async def go() -> tuple[BatchJob, BatchJob, dict[str, BatchResult]]:
        job = await api.submit([api.line(i) for i in items], label="run-1")
        asked = await api.cancel(job.id)
        ended = await api.poll(job.id)
        results = {r.custom_id: r async for r in api.results(ended)}
        await api.provider.aclose()
        return asked, ended, results

    asked, ended, results = run(go())
    assert (asked.state, asked.provider_state) == ("cancelling", "canceling")
    assert (ended.state, ended.counts["cancelled"], ended.counts["succeeded"]) == (
        "cancelled",
        2,
        1,
    )
    assert results[items[0].custom_id].completion is not None
    cancelled = results[items[1].custom_id].error
    assert cancelled is not None and (cancelled.kind, cancelled.retryable) == (
        "batch_cancelled",
        True,
    )
    assert batches.hits("cancel") == 1


def test_a_garbage_results_line_is_one_requests_bad_response_not_an_exception(
    batches: FakeAnthropicBatches,
) -> None:
    api = AnthropicBatchApi(provider(batches.url))
    items = [item(api.provider, n) for n in range(5)]
    cut, empty, odd, lost = (i.custom_id for i in items[:4])
    batches.garbage = {
        cut: b'{"custom_id": "' + cut.encode() + b'", "result": {"type": "succ',  # cut short
        empty: json.dumps({"custom_id": empty, "result": {"type": "succeeded"}}).encode(),
        odd: json.dumps({"custom_id": odd, "result": {"type": "paused"}}).encode(),
        lost: b"\x00\xff not json and no id",
    }
    _, results = run(through(api, items))
    for custom_id in (cut, empty, odd):
        error = results[custom_id].error
        assert error is not None and (error.kind, error.retryable) == ("bad_response", False)
    assert "unknown type 'paused'" in str(results[odd].error)
    assert lost not in results  # no id to give it to: the engine stores it as batch_missing
    assert results[items[4].custom_id].completion is not None


def test_another_process_picks_up_the_job_from_its_id(batches: FakeAnthropicBatches) -> None:
    """A process dies after submitting; another one, with only the stored id, reads it all."""
    batches.polls_to_end = 3
    first = AnthropicBatchApi(provider(batches.url))
    items = [item(first.provider, n) for n in range(3)]

    async def submit() -> str:
        job = await first.submit([first.line(i) for i in items], label="run-1")
        await first.poll(job.id)
        await first.provider.aclose()
        return job.id

    job_id = run(submit())
    second = AnthropicBatchApi(provider(batches.url))

    async def resume() -> dict[str, BatchResult]:
        job = await second.poll(job_id)
        assert job.state == "running"
        job = await second.poll(job_id)
        results = {r.custom_id: r async for r in second.results(job)}
        await second.provider.aclose()
        return results

    results = run(resume())
    assert sorted(results) == sorted(i.custom_id for i in items)
    assert batches.hits("create") == 1


def test_a_refused_batch_is_the_apis_error() -> None:
    with FakeAnthropicBatches() as batches:
        batches.refuse = (413, "Batch exceeds the 256 MB limit")
        api = AnthropicBatchApi(provider(batches.url))
        with pytest.raises(ProviderError) as caught:
            run(api.submit([api.line(item(api.provider, 1))], label="run-1"), api)
    assert (caught.value.kind, caught.value.status) == ("http", 413)
    assert "Batch exceeds the 256 MB limit" in str(caught.value)


def test_a_custom_id_anthropic_would_refuse_is_refused_before_sending() -> None:
    api = AnthropicBatchApi(provider("http://127.0.0.1:9"))
    one = item(api.provider, 1)
    for bad in ("a" * 65, "has space", "", "slash/id"):
        with pytest.raises(ValueError, match="1-64 letters"):
            api.line(BatchItem(bad, one.request))


def test_the_documented_example_replies_are_read(batches: FakeAnthropicBatches) -> None:
    """tests/fixtures/wire/anthropic/batches/: the guide's batch, in progress then ended, and
    its results file; results_url names api.anthropic.com, so the documented path under
    base_url is read instead."""
    job_id = "msgbatch_01HkcTjaV5uDC8jWR4ZsDV8d"
    path = f"/v1/messages/batches/{job_id}"
    api = AnthropicBatchApi(provider(batches.url))

    async def go() -> tuple[BatchJob, BatchJob, list[BatchResult]]:
        batches.bodies[("GET", path)] = json.loads((WIRE / "in_progress.json").read_text())
        running = await api.poll(job_id)
        batches.bodies[("GET", path)] = json.loads((WIRE / "ended.json").read_text())
        ended = await api.poll(job_id)
        batches.bodies[("GET", path + "/results")] = (WIRE / "results.jsonl").read_bytes()
        results = [r async for r in api.results(ended)]
        await api.provider.aclose()
        return running, ended, results

    running, ended, results = run(go())
    assert (running.state, running.counts) == (
        "running",
        {"processing": 2, "succeeded": 0, "errored": 0, "cancelled": 0, "expired": 0, "total": 2},
    )
    assert (ended.state, ended.counts["succeeded"], ended.counts["errored"]) == ("ended", 2, 1)
    assert ended.extra["expires_at"] == "2024-09-25T18:37:24.100435Z"
    assert [r.custom_id for r in results] == [
        "my-second-request",
        "my-first-request",
        "my-third-request",
    ]
    first = results[1].completion
    assert first is not None and (first.input_tokens, first.output_tokens) == (10, 34)
    assert first.text.startswith("Hello! How can I assist you today?")
    assert results[2].error is not None and results[2].error.kind == "http"


# ---- attacks ------------------------------------------------------------------------------------


def test_attack_an_errored_result_that_echoes_the_key_is_redacted(
    batches: FakeAnthropicBatches,
) -> None:
    """A provider's reply is untrusted: an error message quoting the key stores no key."""
    api = AnthropicBatchApi(provider(batches.url))
    one = item(api.provider, 1)
    batches.fail = {one.custom_id: ("authentication_error", f"invalid x-api-key {ANTHROPIC_KEY}")}
    _, results = run(through(api, [one]))
    error = results[one.custom_id].error
    assert error is not None and error.kind == "auth"
    assert ANTHROPIC_KEY not in str(error) and ANTHROPIC_KEY[:20] not in str(error)
    assert "***" in str(error)


def test_attack_a_results_url_on_another_host_never_receives_the_key(
    batches: FakeAnthropicBatches,
) -> None:
    """A reply naming another host as its results_url (a tampered reply, a hostile gateway)
    would have the key sent there: evalwh reads the documented path under base_url."""
    with FakeAnthropicBatches() as elsewhere:
        batches.results_base = elsewhere.url
        api = AnthropicBatchApi(provider(batches.url))
        one = item(api.provider, 1)
        job, results = run(through(api, [one]))
        assert job.extra["results_url"].startswith(elsewhere.url)
        assert elsewhere.requests == []
    assert results[one.custom_id].completion is not None
    assert batches.hits("results") == 1


def test_attack_a_job_id_that_is_a_path_never_reaches_a_url(batches: FakeAnthropicBatches) -> None:
    """A job id from a reply (or a stored one) that walks out of /v1/messages/batches is refused
    before any request is made with it."""
    api = AnthropicBatchApi(provider(batches.url))
    batches.bodies[("POST", "/v1/messages/batches")] = {
        "id": "../../v1/messages",
        "type": "message_batch",
        "processing_status": "in_progress",
    }
    with pytest.raises(ProviderError) as caught:
        run(api.submit([api.line(item(api.provider, 1))], label="run-1"), api)
    assert caught.value.kind == "bad_response"
    for bad in ("msgbatch_1/../../x", "msgbatch_1?x=1", "msgbatch_1#x"):
        with pytest.raises(ProviderError):
            run(api.poll(bad), api)
    assert len(batches.requests) == 1  # the create; no poll went out
