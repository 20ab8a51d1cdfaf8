"""OpenAI's Batch API (evalwh/providers/batch_openai.py) against the fake batch server
(tests/fakes/batch_openai.py): a 500-request job submitted, polled and read back equal to the
live answers; the upload's bytes and the job's body checked against the SDK's request types
and the replies against its response models; part-failed, expired, failed and cancelled jobs;
unreadable result lines; a job read by another client than the one that submitted it; the
documented example replies (tests/fixtures/wire/openai/batch/); and the attacks: a key echoed
by the server, a reply that names a URL as its file id."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from evalwh.providers.base import Completion, ProviderError
from evalwh.providers.batch_openai import OpenAIBatchApi
from evalwh.providers.batching import READABLE_STATES, BatchItem, BatchJob, BatchLimits, BatchResult
from tests.builders import materialised
from tests.fakes.batch_openai import FakeOpenAIBatchServer
from tests.fakes.servers import WIRE, FakeLLMServer
from tests.providers.test_http import (
    OPENAI_KEY,
    compatible,
    environment,  # noqa: F401  (autouse: keys, proxies, isolated secrets)
    make,
    request_for,
)

BATCH_WIRE = WIRE / "openai" / "batch"


def api_for(base_url: str) -> OpenAIBatchApi:
    api = make("openai", base_url).batch_api()
    assert isinstance(api, OpenAIBatchApi)
    return api


def items(api: OpenAIBatchApi, n: int) -> list[BatchItem]:
    return [
        BatchItem(
            f"r{i}",
            request_for(
                api.provider,
                [{"role": "user", "content": [{"type": "text", "text": f"What is {i}+{i}?"}]}],
            ),
        )
        for i in range(n)
    ]


def on(api: OpenAIBatchApi, call: Callable[[OpenAIBatchApi], Awaitable[Any]]) -> Any:
    """``call(api)`` in an event loop of its own, the provider's clients closed after it."""

    async def main() -> Any:
        try:
            return await call(api)
        finally:
            await api.provider.aclose()

    return asyncio.run(main())


async def until_read(api: OpenAIBatchApi, job: BatchJob) -> tuple[list[str], list[BatchResult]]:
    """Poll ``job`` until its results can be read (or it failed), then read them: the states
    seen and the results."""
    states = [job.state]
    for _ in range(20):
        if job.state in (*READABLE_STATES, "failed"):
            break
        job = await api.poll(job.id)
        states.append(job.state)
    results = [r async for r in api.results(job)] if job.state != "failed" else []
    return states, results


def batch_of(api: OpenAIBatchApi, n: int) -> tuple[list[str], list[BatchResult]]:
    """Submit ``n`` requests, poll, read."""

    async def go(api: OpenAIBatchApi) -> tuple[list[str], list[BatchResult]]:
        job = await api.submit([api.line(item) for item in items(api, n)], label="run-1")
        return await until_read(api, job)

    return on(api, go)


def by_id(results: list[BatchResult]) -> dict[str, BatchResult]:
    ids = [r.custom_id for r in results]
    assert len(ids) == len(set(ids)), "a request has two results"
    return {r.custom_id: r for r in results}


# ---- a whole job -------------------------------------------------------------------------------


def test_a_500_request_batch_gives_the_500_live_answers_and_token_counts() -> None:
    # every answer equals the live path's for the same body (the live fake's reply, parsed as
    # a live answer is); every 25th is also asked of a live fake over HTTP (500 live requests
    # would take over a second)
    with FakeOpenAIBatchServer(polls=2) as server, FakeLLMServer() as live:
        api = api_for(server.url)
        states, results = batch_of(api, 500)
        live_api = api_for(live.openai_url)

        async def answers(api: OpenAIBatchApi) -> list[Completion]:
            return [await api.provider.complete(i.request) for i in items(api, 500)[::25]]

        over_http = on(live_api, answers)
    assert states == ["running", "running", "running", "ended"]  # validating, 2 polls in progress
    got = by_id(results)
    assert len(got) == 500 and all(r.error is None for r in results)
    for n, item in enumerate(items(api, 500)):
        body = api.provider.build_body(item.request)
        want = api.provider.parse_body(server.live_answer(body))
        if n % 25 == 0:
            assert seen(over_http[n // 25]) == seen(want)
        answer = got[item.custom_id].completion
        assert answer is not None and seen(answer) == seen(want)
        assert answer.text == f"What is {n}+{n}?"
    assert server.counts == {
        "POST /files": 1,
        "POST /batches": 1,
        "GET /batches/{id}": 3,
        "GET /files/{id}/content": 1,  # the output file; no error file
    }


def seen(answer: Completion) -> tuple[Any, ...]:
    """What is stored of an answer, but its time."""
    return (answer.text, answer.input_tokens, answer.output_tokens, answer.finish_reason)


def test_the_upload_is_jsonl_of_the_sdks_request_type_and_the_replies_are_its_models() -> None:
    from openai.types import Batch, FileObject
    from openai.types.batch_create_params import BatchCreateParams
    from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
    from pydantic import TypeAdapter

    with FakeOpenAIBatchServer() as server:
        api = api_for(server.url)
        asked = items(api, 3)
        job = on(api, lambda api: api.submit([api.line(i) for i in asked], label="run-7"))
        upload, create = server.requests[0], server.requests[1]
        data = server.files[job.extra["input_file_id"]]
    assert upload.headers["content-type"].startswith("multipart/form-data")
    assert b'name="purpose"\r\n\r\nbatch\r\n' in upload.body
    assert b'filename="evalwh-run-7.jsonl"' in upload.body
    assert data.endswith(b"\n") and data.count(b"\n") == 3
    requests = TypeAdapter(CompletionCreateParamsNonStreaming)
    for item, raw in zip(asked, data.splitlines(), strict=True):
        line = json.loads(raw)
        assert line == {
            "custom_id": item.custom_id,
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": api.provider.build_body(item.request),  # the live request's body
        }
        assert materialised(requests.validate_python(line["body"])) == line["body"]
    created = json.loads(create.body)
    assert created == {
        "input_file_id": job.extra["input_file_id"],
        "endpoint": "/v1/chat/completions",
        "completion_window": "24h",
        "metadata": {"evalwh_run": "run-7"},
    }
    assert materialised(TypeAdapter(BatchCreateParams).validate_python(created)) == created
    # the fake answers in the API's own models
    for answered in server.batches.values():
        Batch.model_validate(answered.data)
    FileObject.model_validate(server._file_object("file-1", "x.jsonl", b"", "batch"))


def test_a_job_submitted_by_one_client_is_polled_and_read_by_another() -> None:
    # the client that submitted it died: the job's state is the server's, its id the warehouse's
    with FakeOpenAIBatchServer(polls=1) as server:
        first = api_for(server.url)
        job = on(first, lambda api: api.submit([api.line(i) for i in items(api, 4)], label="r"))
        second = api_for(server.url)

        async def read_two(api: OpenAIBatchApi) -> list[str]:
            assert (await api.poll(job.id)).state == "running"  # in progress
            ended = await api.poll(job.id)
            got = []
            async for result in api.results(ended):
                got.append(result.custom_id)
                if len(got) == 2:
                    break  # this client dies too, mid-file
            return got

        assert on(second, read_two) == ["r0", "r1"]
        third = api_for(server.url)
        states, results = on(third, lambda api: until_read(api, BatchJob(job.id, "running", "")))
    assert states == ["running", "ended"]
    assert sorted(r.custom_id for r in results if r.completion) == ["r0", "r1", "r2", "r3"]
    assert server.counts["POST /files"] == 1 and server.counts["POST /batches"] == 1
    assert server.counts["GET /files/{id}/content"] == 2  # the output file, read twice


def test_a_create_whose_reply_is_lost_is_found_by_its_input_file_not_submitted_again() -> None:
    # OpenAI made the job, then the connection dropped before its reply: a second create
    # would run (and bill) the requests twice
    with FakeOpenAIBatchServer() as server:
        other = api_for(server.url)  # another run's job, listed beside ours
        on(other, lambda api: api.submit([api.line(i) for i in items(api, 2)], label="x"))
        server.lose_creates = 1
        states, results = batch_of(api_for(server.url), 3)
    assert server.counts["POST /batches"] == 2 and server.counts["GET /batches"] == 1
    ours = [b for b in server.batches.values() if b.data["metadata"] == {"evalwh_run": "run-1"}]
    assert len(ours) == 1  # submitted once
    assert states == ["running", "running", "ended"]
    assert sorted(r.custom_id for r in results if r.completion) == ["r0", "r1", "r2"]


def test_a_create_that_failed_without_a_job_raises_its_error() -> None:
    # the reply is lost and no job lists the uploaded file: the create did not happen
    with FakeOpenAIBatchServer(lose_creates=1) as server:
        server.on_create = lambda _: server.batches.clear()
        api = api_for(server.url)
        with pytest.raises(ProviderError) as failed:
            on(api, lambda api: api.submit([api.line(i) for i in items(api, 2)], label="r"))
    assert failed.value.kind == "connection" and failed.value.retryable
    assert server.counts["GET /batches"] == 1 and server.counts["POST /batches"] == 1


# ---- jobs that did not simply complete --------------------------------------------------------


def test_a_part_failed_job_gives_each_failed_request_its_live_status_error() -> None:
    with FakeOpenAIBatchServer(failing={"r1", "r3"}) as server:
        _, results = batch_of(api_for(server.url), 5)
        job = server.batches["batch_000001"].data
    got = by_id(results)
    assert sorted(got) == ["r0", "r1", "r2", "r3", "r4"]
    for failed in ("r1", "r3"):
        error = got[failed].error
        assert error is not None and got[failed].completion is None
        assert (error.kind, error.status, error.retryable) == ("http", 400, False)
        assert str(error) == f"openai: HTTP 400: invalid_request_error: Invalid request {failed}"
    assert all(got[ok].completion is not None for ok in ("r0", "r2", "r4"))
    assert job["request_counts"] == {"total": 5, "completed": 3, "failed": 2}


@pytest.mark.parametrize("lines", [True, False], ids=["error lines", "no lines"])
def test_an_expired_job_gives_its_answers_and_batch_expired_for_the_rest(lines: bool) -> None:
    with FakeOpenAIBatchServer(expire=2, expired_lines=lines) as server:
        states, results = batch_of(api_for(server.url), 5)
    assert states[-1] == "expired"
    got = by_id(results)
    assert [k for k in sorted(got) if got[k].completion] == ["r0", "r1"]
    for late in ("r2", "r3", "r4"):
        error = got[late].error
        assert error is not None and (error.kind, error.retryable) == ("batch_expired", True)
    # with lines: output and error files; without: output and the input file (what was asked)
    assert server.counts["GET /files/{id}/content"] == 2


def test_a_job_that_fails_whole_gives_its_errors_and_no_results() -> None:
    with FakeOpenAIBatchServer(fail="Enqueued token limit reached for gpt-4o") as server:
        api = api_for(server.url)
        states, results = batch_of(api, 3)
        job = on(api, lambda api: api.poll("batch_000001"))
    assert states == ["failed"] and results == []
    assert (job.state, job.provider_state) == ("failed", "failed")
    assert job.extra["errors"] == [
        {"code": "batch_failed", "message": "Enqueued token limit reached for gpt-4o"}
    ]


def test_an_input_the_api_refuses_fails_the_job_naming_the_line() -> None:
    with FakeOpenAIBatchServer() as server:
        api = api_for(server.url)
        lines = [api.line(i) for i in items(api, 3)]
        lines[1]["url"] = "/v1/embeddings"
        job = on(api, lambda api: api.submit(lines, label="r"))
    assert job.state == "failed"
    assert job.extra["errors"][0]["line"] == 2


def test_a_cancelled_job_gives_its_answers_and_batch_cancelled_for_the_rest() -> None:
    with FakeOpenAIBatchServer(polls=5, answered_before_cancel=1) as server:
        api = api_for(server.url)

        async def go(api: OpenAIBatchApi) -> tuple[list[str], list[BatchResult]]:
            job = await api.submit([api.line(i) for i in items(api, 3)], label="r")
            job = await api.poll(job.id)
            cancelling = await api.cancel(job.id)
            states, results = await until_read(api, cancelling)
            return [job.state, *states], results

        states, results = on(api, go)
    assert states == ["running", "cancelling", "cancelled"]
    got = by_id(results)
    assert got["r0"].completion is not None
    for cancelled in ("r1", "r2"):
        error = got[cancelled].error
        assert error is not None and (error.kind, error.retryable) == ("batch_cancelled", True)
        assert str(error) == "openai: batch batch_000001 cancelled before this request ran"
    assert server.counts["POST /batches/{id}/cancel"] == 1


def test_a_garbage_results_line_is_its_requests_bad_response_not_the_jobs_exception() -> None:
    with FakeOpenAIBatchServer(garbage={"r2"}) as server:
        _, results = batch_of(api_for(server.url), 4)
    got = by_id(results)
    error = got["r2"].error
    assert error is not None and (error.kind, error.status, error.retryable) == (
        "bad_response",
        200,
        False,
    )
    assert str(error).startswith("openai: not a JSON object: {")
    assert all(got[ok].completion is not None for ok in ("r0", "r1", "r3"))


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ({"custom_id": "a", "response": {"status_code": 200, "body": {"choices": "no"}}},
         "unexpected response (TypeError"),
        ({"custom_id": "a", "response": {"body": {}}}, "no status_code"),
        ({"custom_id": "a", "response": None, "error": None}, "neither response nor error"),
        ('{"custom_id": "a\\"b", "respo', "not a JSON object"),
    ],
)  # fmt: skip
def test_each_unreadable_line_is_a_bad_response_for_the_request_it_names(
    line: Any, said: str
) -> None:
    api = api_for("http://127.0.0.1:9/v1")
    raw = line.encode() if isinstance(line, str) else json.dumps(line).encode()
    result = api._result(raw)
    assert result is not None and result.error is not None and result.completion is None
    assert result.custom_id in ("a", 'a"b')
    assert result.error.kind == "bad_response" and said in str(result.error)


@pytest.mark.parametrize(
    "line", [b"not json", b'{"id": "batch_req_1"}', b"[1, 2]", b'{"custom_id": 7}']
)
def test_a_line_that_names_no_request_is_left_to_the_engine_as_missing(line: bytes) -> None:
    assert api_for("http://127.0.0.1:9/v1")._result(line) is None


# ---- the documented replies ---------------------------------------------------------------------


def test_the_documented_batch_object_is_a_job_ended_with_its_counts_and_files() -> None:
    from openai.types import Batch

    data = json.loads((BATCH_WIRE / "batch_completed.json").read_text())
    Batch.model_validate(data)
    job = api_for("http://127.0.0.1:9/v1")._job(data)
    assert job == BatchJob(
        "batch_abc123",
        "ended",
        "completed",
        {"total": 100, "succeeded": 95, "errored": 5},
        {
            "input_file_id": "file-abc123",
            "output_file_id": "file-cvaTdG",
            "error_file_id": "file-HOWS94",
        },
    )


@pytest.mark.parametrize(
    ("status", "state"),
    [("validating", "running"), ("in_progress", "running"), ("finalizing", "running"),
     ("completed", "ended"), ("cancelling", "cancelling"), ("cancelled", "cancelled"),
     ("expired", "expired"), ("failed", "failed")],
)  # fmt: skip
def test_each_status_of_the_sdks_batch_is_a_job_state(status: str, state: str) -> None:
    data = json.loads((BATCH_WIRE / "batch_completed.json").read_text())
    data["status"], data["request_counts"] = status, {"total": 10, "completed": 3, "failed": 1}
    job = api_for("http://127.0.0.1:9/v1")._job(data)
    assert (job.state, job.provider_state) == (state, status)
    running = state in ("running", "cancelling")
    assert job.counts.get("processing") == (6 if running else None)


def test_a_reply_that_is_not_a_batch_is_a_bad_response() -> None:
    api = api_for("http://127.0.0.1:9/v1")
    for data in ({"id": "batch_1", "status": "dreaming"}, {"status": "completed"}, ["x"]):
        with pytest.raises(ProviderError) as info:
            api._job(data)
        assert info.value.kind == "bad_response"


def test_the_documented_output_lines_are_their_answers() -> None:
    from openai.types.chat import ChatCompletion

    api = api_for("http://127.0.0.1:9/v1")
    lines = (BATCH_WIRE / "output_lines.jsonl").read_bytes().splitlines()
    for raw in lines:
        ChatCompletion.model_validate(json.loads(raw)["response"]["body"])
    got = [api._result(raw) for raw in lines]
    assert [(r.custom_id, r.completion.text, r.completion.input_tokens, r.completion.output_tokens)
            for r in got if r and r.completion] == [
        ("request-2", "Hello.", 22, 2),
        ("request-1", "Hello! How can I assist you today?", 20, 9),
    ]  # fmt: skip


def test_the_documented_error_lines_are_a_live_400_and_an_expired_request() -> None:
    api = api_for("http://127.0.0.1:9/v1")
    lines = (BATCH_WIRE / "error_lines.jsonl").read_bytes().splitlines()
    refused, expired = (api._result(raw) for raw in lines)
    assert refused is not None and refused.error is not None
    assert (refused.custom_id, refused.error.kind, refused.error.status) == (
        "request-3",
        "http",
        400,
    )
    assert "invalid_request_error: Invalid value for 'max_completion_tokens'" in str(refused.error)
    assert expired is not None and expired.error is not None
    assert (expired.custom_id, expired.error.kind, expired.error.retryable) == (
        "request-4",
        "batch_expired",
        True,
    )


# ---- limits, and which providers have it ---------------------------------------------------------


def test_a_job_over_the_limits_is_refused_before_anything_is_sent() -> None:
    assert OpenAIBatchApi.limits == BatchLimits(max_requests=50_000, max_bytes=200 * 1024 * 1024)
    with FakeOpenAIBatchServer() as server:
        api = api_for(server.url)
        api.limits = BatchLimits(max_requests=2, max_bytes=10**6)
        with pytest.raises(ProviderError) as info:
            on(api, lambda api: api.submit([api.line(i) for i in items(api, 3)], label="r"))
        assert server.requests == []
    assert "over the Batch API's 2 requests" in str(info.value)


def test_openai_has_a_batch_api_and_a_compatible_server_has_none() -> None:
    assert isinstance(make("openai", None).batch_api(), OpenAIBatchApi)
    assert compatible("http://127.0.0.1:9/v1").batch_api() is None


# ---- attacks ----------------------------------------------------------------------------------------


def test_a_key_the_batch_server_echoes_never_shows_in_an_error() -> None:
    # Attack: a files or batches endpoint (or a proxy before it) that repeats the
    # Authorization header it got in its error message, which evalwh stores and prints.
    with FakeOpenAIBatchServer(echo_auth=True) as server:
        api = api_for(server.url)
        with pytest.raises(ProviderError) as info:
            on(api, lambda api: api.poll("batch_unknown"))
    assert "received 'Bearer ***'" in str(info.value)
    assert OPENAI_KEY not in str(info.value) and OPENAI_KEY[:20] not in str(info.value)


def test_a_key_a_results_line_echoes_never_shows_in_its_error() -> None:
    # Attack: a per-request error in a results file whose message repeats the key (a proxy's
    # error page, a provider bug).
    api = api_for("http://127.0.0.1:9/v1")
    api.provider._resolve_headers()  # the key as a request that sent it has noted it
    for line in (
        {
            "custom_id": "a",
            "response": {"status_code": 401, "body": {"error": {"message": OPENAI_KEY}}},
        },
        {
            "custom_id": "a",
            "response": None,
            "error": {"code": "x", "message": f"key {OPENAI_KEY}"},
        },
        {"custom_id": "a", "response": {"status_code": 200, "body": {"key": OPENAI_KEY}}},
    ):
        result = api._result(json.dumps(line).encode())
        assert result is not None and result.error is not None
        assert OPENAI_KEY not in str(result.error) and OPENAI_KEY[:20] not in str(result.error)
    # ... or a failed job's errors, kept in the job's extra (which the engine stores)
    data = json.loads((BATCH_WIRE / "batch_completed.json").read_text())
    data.update(status="failed", errors={"data": [{"code": OPENAI_KEY, "message": OPENAI_KEY}]})
    kept = json.dumps(api._job(data).extra)
    assert OPENAI_KEY[:20] not in kept and "***" in kept


@pytest.mark.parametrize(
    "file_id", ["https://attacker.example/steal", "//attacker.example/x", "../../v1/batches", "a/b"]
)
def test_a_file_id_that_is_a_url_or_a_path_is_refused_before_the_key_is_sent(file_id: str) -> None:
    # Attack: a batch reply (or a tampered warehouse row) naming a URL or another path as its
    # output file, so that the results request carries the bearer key to another host or
    # another endpoint. The id is refused and nothing is sent.
    with FakeOpenAIBatchServer() as server:
        api = api_for(server.url)
        data = json.loads((BATCH_WIRE / "batch_completed.json").read_text())
        data["output_file_id"] = file_id
        with pytest.raises(ProviderError) as refused:
            api._job(data)
        job = BatchJob("batch_1", "ended", "completed", extra={"output_file_id": file_id})
        with pytest.raises(ProviderError) as reading:
            on(api, lambda api: until_read(api, job))
        with pytest.raises(ProviderError):
            on(api, lambda api: api.poll(file_id))
        assert server.requests == []
    for info in (refused, reading):
        assert info.value.kind == "bad_response" and "is not a batch or file id" in str(info.value)
