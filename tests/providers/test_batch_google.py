"""The Gemini API's batch mode (evalwh/providers/batch_google.py) against the fake batch
server (tests/fakes/batches.py): a 500-request batch whose answers equal the live fake's,
part-failed, expired, cancelled and failed jobs, answers in a responses file, garbage
answers, a job picked up by another process, the documented example replies, and three
attacks: an error echoing the key, a batch name that is a path, a responses file that is a
path or another host."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from evalwh.config.model import ModelSpec
from evalwh.providers.base import ProviderError
from evalwh.providers.batch_google import GoogleBatchApi
from evalwh.providers.batching import BatchJob, BatchResult
from evalwh.providers.google import GoogleProvider
from tests.fakes.batches import FakeGeminiBatches
from tests.providers.test_batch_anthropic import assert_live_answers, item, run, through
from tests.providers.test_google import GEMINI_KEY, keys  # noqa: F401  (autouse: the key)

WIRE = Path(__file__).resolve().parent.parent / "fixtures" / "wire" / "gemini" / "batches"


@pytest.fixture
def batches() -> Iterator[FakeGeminiBatches]:
    with FakeGeminiBatches() as server:
        yield server


def gemini_api(base_url: str, **params: Any) -> GoogleBatchApi:
    spec = ModelSpec(
        id="g",
        provider="google",
        model="models/gemini-2.5-flash",
        params=params,
        options={"base_url": base_url},
        where="models[0]",
    )
    api = GoogleProvider(spec).batch_api()
    assert api.model == "gemini-2.5-flash"
    return api


@pytest.mark.parametrize("asked_live", [20, pytest.param(500, marks=pytest.mark.slow)])
def test_a_500_request_batch_answers_as_the_live_api_does(
    batches: FakeGeminiBatches, asked_live: int
) -> None:
    """Every answer of the batch equals the live fake's for the same request (by default the
    first 20 are also asked live; under slow all 500)."""
    batches.polls_to_end = 2
    api = gemini_api(batches.url)
    items = [item(api.provider, n) for n in range(500)]
    job, results = run(through(api, items))
    assert (job.state, job.provider_state) == ("ended", "BATCH_STATE_SUCCEEDED")
    assert job.counts == {"total": 500, "succeeded": 500, "errored": 0, "processing": 0}
    assert job.id.startswith("batches/") and job.extra["displayName"] == "run-1"
    # the answers came inline with the poll that saw the job done: no other request
    assert [batches.hits(r) for r in ("create", "retrieve", "results")] == [1, 2, 0]

    assert len(results) == 500
    assert_live_answers(
        lambda url: GoogleProvider(replace(api.provider.spec, options={"base_url": url})),
        items[:asked_live],
        results,
    )


def test_the_batch_carries_the_live_body_and_the_key_on_every_route(
    batches: FakeGeminiBatches,
) -> None:
    batches.output = "file"
    api = gemini_api(batches.url, temperature=0.5, max_tokens=64)
    items = [item(api.provider, n) for n in range(2)]
    run(through(api, items))
    create = batches.requests[0]
    assert create.path == "/v1beta/models/gemini-2.5-flash:batchGenerateContent"
    assert create.body["batch"]["displayName"] == "run-1"
    assert create.body["batch"]["inputConfig"]["requests"]["requests"][1] == {
        "request": api.provider.build_body(items[1].request),
        "metadata": {"key": items[1].custom_id},
    }
    assert [r.route for r in batches.requests] == ["create", "retrieve", "results"]
    for recorded in batches.requests:
        assert recorded.header("x-goog-api-key") == GEMINI_KEY


def test_answers_in_a_responses_file_are_read_as_they_stream(
    batches: FakeGeminiBatches,
) -> None:
    batches.output = "file"
    api = gemini_api(batches.url)
    items = [item(api.provider, n) for n in range(3)]
    batches.fail = {items[2].custom_id: (8, "Resource has been exhausted (e.g. check quota).")}
    job, results = run(through(api, items))
    assert job.extra["responses_file"] == f"files/{job.id.split('/')[1]}"
    assert batches.requests[-1].path.endswith(":download?alt=media")
    assert results[items[0].custom_id].completion.text == "Question 0?"  # type: ignore[union-attr]
    error = results[items[2].custom_id].error
    assert error is not None and (error.kind, error.retryable, error.status) == (
        "rate_limit",
        True,
        429,
    )


def test_a_part_failed_batch_gives_each_failed_request_its_error(
    batches: FakeGeminiBatches,
) -> None:
    api = gemini_api(batches.url)
    items = [item(api.provider, n) for n in range(4)]
    batches.fail = {
        items[1].custom_id: (3, "Request contains an invalid argument."),
        items[2].custom_id: (14, "The service is currently unavailable."),
    }
    job, results = run(through(api, items))
    assert job.state == "ended"
    assert (job.counts["succeeded"], job.counts["errored"]) == (2, 2)
    bad, down = results[items[1].custom_id].error, results[items[2].custom_id].error
    assert bad is not None and down is not None
    assert (bad.kind, bad.retryable, bad.status) == ("http", False, 400)
    assert str(bad) == "google: batch request failed: Request contains an invalid argument."
    assert (down.kind, down.retryable, down.status) == ("server", True, 503)
    assert results[items[3].custom_id].completion is not None


def test_an_expired_job_has_no_answers(batches: FakeGeminiBatches) -> None:
    batches.expire_job = True
    api = gemini_api(batches.url)
    job, results = run(through(api, [item(api.provider, n) for n in range(2)]))
    assert (job.state, job.provider_state) == ("expired", "BATCH_STATE_EXPIRED")
    assert results == {}  # the engine stores the requests as batch_missing


def test_a_failed_job_says_why(batches: FakeGeminiBatches) -> None:
    batches.fail_job = "The input could not be read."
    api = gemini_api(batches.url)

    async def go() -> BatchJob:
        job = await api.submit([api.line(item(api.provider, 1))], label="run-1")
        return await api.poll(job.id)

    job = run(go(), api)
    assert (job.state, job.provider_state) == ("failed", "BATCH_STATE_FAILED")
    assert job.extra["error"] == "The input could not be read."


def test_a_cancelled_job_keeps_what_finished(batches: FakeGeminiBatches) -> None:
    batches.polls_to_end = 99
    batches.done_on_cancel = 1
    api = gemini_api(batches.url)
    items = [item(api.provider, n) for n in range(3)]

    async def go() -> tuple[BatchJob, dict[str, BatchResult]]:
        job = await api.submit([api.line(i) for i in items], label="run-1")
        asked = await api.cancel(job.id)
        return asked, {r.custom_id: r async for r in api.results(asked)}

    asked, results = run(go(), api)
    assert (asked.state, asked.provider_state) == ("cancelled", "BATCH_STATE_CANCELLED")
    assert list(results) == [items[0].custom_id]
    assert results[items[0].custom_id].completion is not None
    assert [r.route for r in batches.requests] == ["create", "cancel", "retrieve"]


def test_garbage_answers_are_each_one_requests_bad_response_not_an_exception(
    batches: FakeGeminiBatches,
) -> None:
    api = gemini_api(batches.url)
    items = [item(api.provider, n) for n in range(4)]
    empty, odd, lost = (i.custom_id for i in items[:3])
    batches.garbage = {
        empty: json.dumps({"metadata": {"key": empty}, "response": {"candidates": "x"}}).encode(),
        odd: json.dumps({"metadata": {"key": odd}}).encode(),
        lost: b"not json",
    }
    _, results = run(through(api, items))
    for key in (empty, odd):
        error = results[key].error
        assert error is not None and (error.kind, error.retryable) == ("bad_response", False)
    assert "neither a response nor an error" in str(results[odd].error)
    assert lost not in results  # no key to give it to: the engine stores it as batch_missing
    assert results[items[3].custom_id].completion is not None


def test_a_garbage_line_of_a_responses_file_is_its_requests_bad_response(
    batches: FakeGeminiBatches,
) -> None:
    batches.output = "file"
    api = gemini_api(batches.url)
    items = [item(api.provider, n) for n in range(2)]
    cut = items[0].custom_id
    batches.garbage = {cut: b'{"key": "' + cut.encode() + b'", "response": {"candi'}
    _, results = run(through(api, items))
    error = results[cut].error
    assert error is not None and error.kind == "bad_response"
    assert results[items[1].custom_id].completion is not None


def test_another_process_picks_up_the_job_from_its_name(batches: FakeGeminiBatches) -> None:
    batches.polls_to_end = 2
    first = gemini_api(batches.url)
    items = [item(first.provider, n) for n in range(3)]

    async def submit() -> str:
        job = await first.submit([first.line(i) for i in items], label="run-1")
        await first.poll(job.id)
        return job.id

    job_id = run(submit(), first)
    second = gemini_api(batches.url)

    async def resume() -> dict[str, BatchResult]:
        job = await second.poll(job_id)
        fresh = gemini_api(batches.url)  # a third, given only the stored job
        fresh.provider = second.provider
        return {r.custom_id: r async for r in fresh.results(job)}

    results = run(resume(), second)
    assert sorted(results) == sorted(i.custom_id for i in items)
    assert batches.hits("create") == 1
    assert batches.hits("retrieve") == 3  # the third fetched the job again for its answers


def test_a_job_known_only_by_its_name_finds_its_responses_file(
    batches: FakeGeminiBatches,
) -> None:
    """A process given only the stored job (no responses file in it) fetches the job again
    and reads the file it names."""
    batches.output = "file"
    first = gemini_api(batches.url)
    items = [item(first.provider, n) for n in range(2)]
    job, _ = run(through(first, items))
    second = gemini_api(batches.url)

    async def read() -> list[BatchResult]:
        return [r async for r in second.results(BatchJob(job.id, "ended", "BATCH_STATE_SUCCEEDED"))]

    results = run(read(), second)
    assert sorted(r.custom_id for r in results) == sorted(i.custom_id for i in items)
    assert batches.hits("results") == 2


def test_the_documented_example_replies_are_read(batches: FakeGeminiBatches) -> None:
    """tests/fixtures/wire/gemini/batches/: a pending job, the same job done with its inline
    answers, and a responses file."""
    path = "/v1beta/batches/123456"
    api = gemini_api(batches.url)

    async def go() -> tuple[BatchJob, BatchJob, list[BatchResult], list[BatchResult]]:
        batches.bodies[("GET", path)] = json.loads((WIRE / "pending.json").read_text())
        pending = await api.poll("batches/123456")
        batches.bodies[("GET", path)] = json.loads((WIRE / "succeeded.json").read_text())
        done = await api.poll("batches/123456")
        inline = [r async for r in api.results(done)]
        batches.bodies[("GET", "/download/v1beta/files/abc:download?alt=media")] = (
            WIRE / "responses.jsonl"
        ).read_bytes()
        in_file = BatchJob("batches/123456", "ended", "BATCH_STATE_SUCCEEDED")
        in_file.extra["responses_file"] = "files/abc"
        return pending, done, inline, [r async for r in api.results(in_file)]

    pending, done, inline, in_file = run(go(), api)
    assert (pending.state, pending.counts) == (
        "running",
        {"total": 3, "succeeded": 0, "errored": 0, "processing": 3},
    )
    assert (done.state, done.counts["succeeded"], done.counts["errored"]) == ("ended", 2, 1)
    assert [r.custom_id for r in inline] == ["request-1", "request-2", "request-3"]
    first = inline[0].completion
    assert first is not None and (first.text, first.input_tokens, first.output_tokens) == (
        "AI learns patterns from data to make predictions.",
        8,
        9,
    )
    assert inline[2].error is not None and inline[2].error.kind == "http"
    assert [r.custom_id for r in in_file] == ["request-1", "request-2"]
    assert in_file[1].error is not None and in_file[1].error.kind == "rate_limit"


# ---- attacks ------------------------------------------------------------------------------------


def test_attack_an_error_that_echoes_the_key_is_redacted(batches: FakeGeminiBatches) -> None:
    """A provider's reply is untrusted: an error message quoting the key stores no key."""
    api = gemini_api(batches.url)
    one = item(api.provider, 1)
    batches.fail = {one.custom_id: (16, f"API key not valid: {GEMINI_KEY}")}
    _, results = run(through(api, [one]))
    error = results[one.custom_id].error
    assert error is not None and error.kind == "auth"
    assert GEMINI_KEY not in str(error) and GEMINI_KEY[:20] not in str(error)
    assert "***" in str(error)


def test_attack_a_batch_name_that_is_a_path_never_reaches_a_url(
    batches: FakeGeminiBatches,
) -> None:
    """A batch name from a reply (or a stored one) that walks out of /v1beta/batches is
    refused before any request is made with it."""
    api = gemini_api(batches.url)
    batches.bodies[("POST", "/v1beta/models/gemini-2.5-flash:batchGenerateContent")] = {
        "name": "batches/../models/gemini-2.5-flash:generateContent",
    }
    with pytest.raises(ProviderError) as caught:
        run(api.submit([api.line(item(api.provider, 1))], label="run-1"), api)
    assert caught.value.kind == "bad_response"
    for bad in ("batches/x/../../y", "batches/x:cancel", "batches/x?alt=media", "files/x"):
        with pytest.raises(ProviderError):
            run(api.poll(bad), api)
    assert len(batches.requests) == 1  # the create; nothing else went out


def test_attack_a_responses_file_elsewhere_never_receives_the_key(
    batches: FakeGeminiBatches,
) -> None:
    """A reply naming a responses file that is a path or a URL of another host would have the
    key sent there: only ``files/<id>`` is read, under base_url."""
    api = gemini_api(batches.url)
    with FakeGeminiBatches() as elsewhere:
        for name in (f"{elsewhere.url}/x", "files/../../v1beta/models", "files/a?b"):
            job = BatchJob(
                "batches/1", "ended", "BATCH_STATE_SUCCEEDED", extra={"responses_file": name}
            )

            async def read(job: BatchJob = job) -> list[BatchResult]:
                return [r async for r in api.results(job)]

            with pytest.raises(ProviderError) as caught:
                run(read(), api)
            assert caught.value.kind == "bad_response"
        assert elsewhere.requests == []
    assert batches.requests == []
