"""The mock provider's batch API: jobs as files, answers as live, scripted endings."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from evalwh.config.model import Case, ModelSpec
from evalwh.providers.base import ProviderError, Request
from evalwh.providers.batch_mock import MockBatchApi, default_batch_dir, submitted_jobs
from evalwh.providers.batching import BatchItem, BatchResult
from evalwh.providers.mock import MockProvider


def api(folder: Path, **batch: Any) -> MockBatchApi:
    options = {"mock": {"default": "ans {{ case.id }}", "batch": batch}, "batch_dir": str(folder)}
    found = MockProvider(ModelSpec("m", "mock", "mock", options=options)).batch_api()
    assert isinstance(found, MockBatchApi)
    return found


def item(mock: MockBatchApi, case_id: str) -> BatchItem:
    messages = [{"role": "user", "content": [{"type": "text", "text": f"q {case_id}"}]}]
    request = Request(mock.provider.spec, messages, Case(case_id), "v")
    return BatchItem(f"id-{case_id}", request)


def submit(mock: MockBatchApi, *cases: str) -> str:
    lines = [mock.line(item(mock, c)) for c in cases]
    return asyncio.run(mock.submit(lines, label="run-1")).id


def results(mock: MockBatchApi, job_id: str) -> list[BatchResult]:
    async def read() -> list[BatchResult]:
        job = await mock.poll(job_id)
        return [r async for r in mock.results(job)]

    return asyncio.run(read())


def test_a_job_is_a_file_another_process_reads_and_ends_after_its_polls(tmp_path: Path) -> None:
    first = api(tmp_path, polls=2)
    job_id = submit(first, "a", "b")
    again = api(tmp_path, polls=2)  # a new process: only the folder is shared
    assert asyncio.run(again.poll(job_id)).state == "running"
    job = asyncio.run(again.poll(job_id))
    assert (job.state, job.counts["succeeded"]) == ("ended", 2)
    assert [len(j["lines"]) for j in submitted_jobs(tmp_path)] == [2]


def test_answers_are_what_the_mock_answers_live(tmp_path: Path) -> None:
    mock = api(tmp_path)
    got = results(mock, submit(mock, "a"))
    live = asyncio.run(mock.provider.complete(item(mock, "a").request))
    assert got[0].completion is not None
    assert (got[0].completion.text, got[0].completion.output_tokens) == (
        live.text,
        live.output_tokens,
    )


def test_scripted_errors_and_expiries_hit_a_requests_first_submission_only(
    tmp_path: Path,
) -> None:
    mock = api(tmp_path, errored=["b"], expired=["c"])
    job_id = submit(mock, "a", "b", "c")
    job = asyncio.run(mock.poll(job_id))
    assert (job.state, job.counts["errored"], job.counts["expired"]) == ("expired", 1, 1)
    got = results(mock, job_id)
    assert [r.custom_id for r in got] == ["id-a", "id-b"]  # c never ran: no result
    assert got[1].error is not None and got[1].completion is None
    retried = results(mock, submit(mock, "b", "c"))
    assert all(r.completion is not None for r in retried) and len(retried) == 2


def test_a_cancelled_job_has_no_results(tmp_path: Path) -> None:
    mock = api(tmp_path, polls=5)
    job_id = submit(mock, "a")
    assert asyncio.run(mock.cancel(job_id)).state == "cancelled"
    assert results(mock, job_id) == []


def test_limits_come_from_the_script_and_the_folder_defaults_under_temp(tmp_path: Path) -> None:
    assert api(tmp_path, max_requests=3, max_bytes=99).limits.max_requests == 3
    bare = MockProvider(ModelSpec("m", "mock", "mock")).batch_api()
    assert bare.folder == default_batch_dir()


def test_a_job_id_that_is_a_path_is_refused(tmp_path: Path) -> None:
    """Attack: a job id read back from a tampered warehouse names a file outside the folder."""
    mock = api(tmp_path)
    with pytest.raises(ProviderError, match="no batch job"):
        asyncio.run(mock.poll("mockbatch_../../etc/passwd"))
