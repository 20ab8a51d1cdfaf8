"""Judges in a second batch (judges_batch: true) on the mock's batch API: the judge requests
go in jobs and none is sent live, the verdicts are the live ones, a resume waits on the
stored jobs, errored requests are judge errors that --retry-errors asks again, the batch
price."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from evalwh import api
from evalwh.providers.batch_mock import submitted_jobs
from evalwh.providers.mock import MockProvider
from tests.builders import eval_config, no_pause, stop_at_first_wait, stored


def judged(result: Any) -> list[dict[str, Any]]:
    """The run's judged criterion, per case: score, pass, error and cost."""
    sql = (
        "SELECT case_id, score, passed, error, cost_usd FROM scores "
        f"WHERE criterion = 'judged' AND run_id = '{result.run_id}' ORDER BY 1"
    )
    return stored(Path(result.warehouse).parent, sql)


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALWH_BATCH_POLL_S", "0")


@pytest.fixture
def live_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The model id of every request the mock answers live (never one of a batch job)."""
    calls: list[str] = []
    real = MockProvider.complete

    async def counted(self: MockProvider, request: Any) -> Any:
        calls.append(request.model.id)
        return await real(self, request)

    monkeypatch.setattr(MockProvider, "complete", counted)
    return calls


def judged_config(
    tmp_path: Path, *, batch: bool = True, n_cases: int = 6, script: str = "", answers: str = ""
) -> Path:
    """Mock model m answers each case right (live, or in batch jobs with ``answers``); judge
    j (model jm, its jobs in ``tmp_path/jobs``) scores c1 0 and the others 1, at a price of
    cents a verdict; ``judges_batch`` is ``batch``."""
    models = f"  - {{id: m, provider: mock, mock: {{default: '{{{{ expected }}}}'}}{answers}}}"
    config = eval_config(tmp_path, models, n_cases=n_cases)
    text = config.read_text().replace(
        "scorecard:\n  - {name: exact, type: exact}\n",
        f"""\
judges_batch: {str(batch).lower()}
judges:
  - id: j
    model:
      id: jm
      provider: mock
      batch_dir: '{tmp_path / "jobs"}'
      price: {{input_per_mtok: 30000, output_per_mtok: 60000}}
      mock:
        rules:
          - when: {{case: c1}}
            reply: '{{"score": 0}}'
        default: '{{"score": 1}}'
        batch: {{{script}}}
scorecard:
  - {{name: exact, type: exact}}
  - {{name: judged, type: llm-judge, judge: j}}
""",
    )
    config.write_text(text)
    return config


def test_judge_requests_go_in_one_job_none_live_and_give_the_live_verdicts_at_half_price(
    tmp_path: Path, live_calls: list[str]
) -> None:
    answers = f", batch: true, batch_dir: '{tmp_path / 'answers'}'"  # answered in a job too
    batched = api.run_eval(judged_config(tmp_path / "b", answers=answers))
    assert live_calls == []  # nothing asked live: the answers in one job, the verdicts in another
    cases = [f"c{i}" for i in range(6)]
    for folder in (tmp_path / "answers", tmp_path / "b" / "jobs"):
        assert [sorted(line["case"] for line in j["lines"]) for j in submitted_jobs(folder)] == [
            cases
        ]
    out, run = Path(batched.warehouse).parent, f"run_id = '{batched.run_id}'"
    sql = f"SELECT model, state, requests FROM batches WHERE {run} ORDER BY model, seq"
    assert stored(out, sql) == [
        {"model": model, "state": state, "requests": 6}
        for model in ("jm", "m")
        for state in ("running", "ended")
    ]
    keys = stored(out, f"SELECT custom_id FROM batch_requests WHERE {run}")
    assert len(keys) == 12
    live = api.run_eval(judged_config(tmp_path / "l", batch=False), no_cache=True)
    assert live_calls.count("jm") == 6 and live_calls.count("m") == 6
    strip = [{k: v for k, v in r.items() if k != "cost_usd"} for r in judged(batched)]
    assert strip == [{k: v for k, v in r.items() if k != "cost_usd"} for r in judged(live)]
    assert [r["passed"] for r in judged(batched)] == [True, False, True, True, True, True]
    for half, whole in zip(judged(batched), judged(live), strict=True):  # the same tokens
        assert whole["cost_usd"] > 0.01
        assert round(half["cost_usd"], 2) == round(whole["cost_usd"] / 2, 2)
        assert half["cost_usd"] == pytest.approx(whole["cost_usd"] / 2)


def test_the_estimate_prices_batched_verdicts_at_half_and_says_the_live_cost(
    tmp_path: Path,
) -> None:
    from evalwh.cli.render import estimate_line, usd

    estimate = api.validate(judged_config(tmp_path)).estimate  # the answers have no price
    half, whole = estimate["cost_usd"], estimate["live_cost_usd"]
    assert half > 0 and half == pytest.approx(whole / 2)
    assert f"batch: about {usd(half)} (live {usd(whole)})" in estimate_line(estimate)
    live = ["m: asked live (no batch: true, no --batch)"]
    assert estimate["batch"] == {"models": [], "live": live, "judges": ["jm"]}


def test_a_run_stopped_while_its_judge_jobs_run_resumes_on_them_and_submits_nothing_new(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, live_calls: list[str]
) -> None:
    from evalwh.engine.signals import RunInterrupted

    config = judged_config(tmp_path, script="max_requests: 4")
    stop_at_first_wait(monkeypatch)
    with pytest.raises(RunInterrupted) as stopped:
        api.run_eval(config)
    jobs = submitted_jobs(tmp_path / "jobs")
    assert [len(j["lines"]) for j in jobs] == [4, 2] and [j["polls"] for j in jobs] == [0, 0]
    monkeypatch.setattr("evalwh.engine.batch.pause", no_pause)
    result = api.run_eval(config, resume=stopped.value.run_id)
    assert len(submitted_jobs(tmp_path / "jobs")) == 2  # nothing submitted again
    assert live_calls == ["m"] * 6  # the answers were journaled: not asked again either
    assert [r["passed"] for r in judged(result)] == [True, False, True, True, True, True]


def test_batch_wait_reaches_a_stopped_runs_judge_jobs_through_the_judges_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = judged_config(tmp_path, script="polls: 2")
    stop_at_first_wait(monkeypatch)
    from evalwh.api import batches
    from evalwh.engine.signals import RunInterrupted

    with pytest.raises(RunInterrupted) as stopped:
        api.run_eval(config)
    monkeypatch.setattr("evalwh.engine.batch.pause", no_pause)
    waited = batches.wait(stopped.value.run_id, config=config)
    assert [j["state"] for j in waited["jobs"]] == ["ended"]
    assert [j["polls"] for j in submitted_jobs(tmp_path / "jobs")] == [2]


@pytest.mark.slow  # two runs; which cells --retry-errors runs: tests/sql/test_run_cells.py
def test_errored_and_expired_judge_requests_are_judge_errors_retry_errors_asks_them_again(
    tmp_path: Path,
) -> None:
    config = judged_config(tmp_path, script="errored: [c2], expired: [c3]")
    first = api.run_eval(config)
    errors = {r["case_id"]: r["error"] for r in judged(first) if r["error"]}
    assert sorted(errors) == ["c2", "c3"]
    assert errors["c3"].startswith("judge 'j' failed:") and "expired" in errors["c3"]
    again = api.run_eval(config, retry_errors=first.run_id)
    jobs = submitted_jobs(tmp_path / "jobs")
    assert [sorted(line["case"] for line in j["lines"]) for j in jobs] == [
        [f"c{i}" for i in range(6)],
        ["c2", "c3"],
    ]
    rows = judged(again)
    assert [r["error"] for r in rows] == [None] * 6
    assert [r["passed"] for r in rows] == [True, False, True, True, True, True]


def test_judges_batch_with_a_judge_provider_without_a_batch_api_is_a_config_error(
    tmp_path: Path,
) -> None:
    from evalwh.errors import ConfigError

    config = judged_config(tmp_path)
    text = config.read_text().replace(
        "      provider: mock\n      batch_dir",
        "      provider: openai-compatible\n      base_url: http://127.0.0.1:9/v1\n      batch_dir",
    )
    config.write_text(text)
    with pytest.raises(ConfigError, match="has no batch API") as refused:
        api.validate(config)
    assert "judges[0].model.provider" in str(refused.value)


class Answers:
    """A batch API whose ended job gives a verdict per request, and one for a request it
    never held."""

    async def results(self, job: Any, requests: Any = None) -> Any:
        from evalwh.providers.base import Completion
        from evalwh.providers.batching import BatchResult

        for key in ("a", "b", "planted"):
            yield BatchResult(key, completion=Completion(f'{{"score": "{key}"}}', 1, 1))


def test_a_resumed_job_keeps_verdicts_until_asked_and_a_late_request_never_waits() -> None:
    """A stored judge job is read when its first request is asked: the verdicts of the others
    wait for their cells (none is submitted again); a result for a request the job does not
    hold (a provider's reply is untrusted) answers nothing; a request asked after the feed
    ended is an error at once, never a wait without end."""
    from evalwh.config.model import Case, ModelSpec
    from evalwh.engine.judge_batch import JudgeFeed
    from evalwh.providers.base import Request
    from evalwh.providers.batching import BatchJob
    from evalwh.warehouse.batches import JobRow

    spec = ModelSpec("jm", "mock", "jm")
    row = JobRow("r", "jm", "mock", "j", 0, "running", None, 2, 10)

    async def scenario() -> list[Any]:
        feed = JudgeFeed("r", None, {"jm": Answers()}, {"j": (row, ["a", "b"])}, first_wait=0)  # type: ignore[dict-item]
        request = Request(model=spec, messages=[], case=Case("x"), variant="judge:j")
        first = feed.ask("a", request, spec)
        assert list(feed.jobs) == ["j"] and not feed.submissions  # waits on the stored job
        await feed._read(feed.jobs["j"], BatchJob("j", "ended", "ended"))
        second = feed.ask("b", request, spec)
        planted = "planted" in feed.answered and feed.answered["planted"]
        feed.closed = True
        late = feed.ask("c", request, spec)
        return [first.result(), second.result(), planted, late.result(), feed.submissions]

    first, second, planted, late, submissions = asyncio.run(scenario())
    assert first.completion.text == '{"score": "a"}' and second.completion.text == '{"score": "b"}'
    assert planted is False
    assert late.error.kind == "batch_missing" and submissions == {}
