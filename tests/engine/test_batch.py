"""Batch mode on the mock's batch API: jobs submitted and recorded, answers stored as live
ones, resume after a stop, retries of the errored cells, the batch price."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from evalwh import api
from evalwh.providers.batch_mock import submitted_jobs
from tests.builders import batch_config, eval_config, no_pause, stop_at_first_wait, stored


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Polls without waiting; the waits asked for are counted, never timed."""
    waits: list[float] = []
    monkeypatch.setenv("EVALWH_BATCH_POLL_S", "0")
    return waits


def polls(folder: Path) -> list[int]:
    return [job["polls"] for job in submitted_jobs(folder)]


@pytest.mark.parametrize(
    "n", [pytest.param(100, id="100"), pytest.param(500, id="500", marks=pytest.mark.slow)]
)
def test_requests_in_jobs_within_the_limit_land_one_row_each(tmp_path: Path, n: int) -> None:
    per_job = n * 2 // 5  # jobs of 40% of the requests: two full ones and the rest
    script = f"max_requests: {per_job}, polls: 2"
    result = api.run_eval(batch_config(tmp_path, n_cases=n, script=script))
    assert result.totals["n"] == n and result.totals["n_passed"] == n
    assert result.stats["requests"] == n
    jobs = submitted_jobs(tmp_path / "jobs")
    assert [len(j["lines"]) for j in jobs] == [per_job, per_job, n - 2 * per_job]
    assert polls(tmp_path / "jobs") == [2, 2, 2]  # every job polled until it ended, no more
    out = Path(result.warehouse).parent
    states = stored(out, "SELECT seq, state, requests FROM batches ORDER BY job_id, seq")
    assert [(s["seq"], s["state"]) for s in states] == [(0, "running"), (1, "ended")] * 3
    held = stored(out, "SELECT count(DISTINCT custom_id) AS n FROM batch_requests")
    assert held[0]["n"] == n
    rows = stored(out, "SELECT latency_ms, extra FROM cases")
    assert all(r["latency_ms"] is None and "batch_job" in r["extra"] for r in rows)


def test_a_stopped_batch_run_resumes_on_its_jobs_and_submits_nothing_new(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalwh.engine.signals import RunInterrupted

    config = batch_config(tmp_path, n_cases=40, script="max_requests: 25")
    stop_at_first_wait(monkeypatch)
    with pytest.raises(RunInterrupted) as stopped:
        api.run_eval(config)
    run_id = stopped.value.run_id
    assert polls(tmp_path / "jobs") == [0, 0]  # submitted, never polled: left running
    monkeypatch.setattr("evalwh.engine.batch.pause", no_pause)
    result = api.run_eval(config, resume=run_id)
    assert result.totals["n"] == 40 and result.totals["n_passed"] == 40
    assert len(submitted_jobs(tmp_path / "jobs")) == 2  # nothing submitted again
    out = Path(result.warehouse).parent
    states = stored(out, "SELECT job_id, max(seq) AS seq FROM batches GROUP BY ALL ORDER BY 1")
    assert [s["seq"] for s in states] == [1, 1]  # the resume appended each job's end


def test_failed_and_expired_requests_are_errors_and_retry_errors_resubmits_only_them(
    tmp_path: Path,
) -> None:
    config = batch_config(tmp_path, n_cases=6, script="errored: [c1], expired: [c2, c3]")
    first = api.run_eval(config)
    out = Path(first.warehouse).parent
    errors = stored(out, "SELECT case_id, error_kind FROM cases WHERE error IS NOT NULL ORDER BY 1")
    assert errors == [
        {"case_id": "c1", "error_kind": "provider"},
        {"case_id": "c2", "error_kind": "batch_expired"},
        {"case_id": "c3", "error_kind": "batch_expired"},
    ]
    state = stored(out, "SELECT state, expired, errored FROM batches WHERE seq = 1")
    assert state == [{"state": "expired", "expired": 2, "errored": 1}]
    again = api.run_eval(config, retry_errors=first.run_id)
    jobs = submitted_jobs(tmp_path / "jobs")
    assert [sorted(line["case"] for line in j["lines"]) for j in jobs] == [
        [f"c{i}" for i in range(6)],
        ["c1", "c2", "c3"],
    ]
    assert again.totals["n"] == 6 and again.totals["n_passed"] == 6


def test_a_batch_answer_costs_half_the_live_answer_to_the_cent(tmp_path: Path) -> None:
    from evalwh.config.model import Price

    price = Price(30000, 60000)  # per million tokens: a few cents an answer
    extra = ", price: {input_per_mtok: 30000, output_per_mtok: 60000}"
    batch = api.run_eval(batch_config(tmp_path, n_cases=4, extra=extra))
    sql = "SELECT input_tokens, output_tokens, cost_usd FROM cases"
    rows = stored(Path(batch.warehouse).parent, sql)
    assert len(rows) == 4
    for row in rows:  # the live price of the same tokens (the mock counts what it answers)
        live = price.cost(row["input_tokens"], row["output_tokens"])
        assert live > 0.01 and round(row["cost_usd"], 2) == round(live / 2, 2)
        assert row["cost_usd"] == pytest.approx(live / 2)
    total = sum(price.cost(r["input_tokens"], r["output_tokens"]) for r in rows)
    assert round(batch.totals["cost_usd"], 2) == round(total / 2, 2)


def test_the_estimate_prices_batched_requests_at_half_and_says_the_live_cost(
    tmp_path: Path,
) -> None:
    from evalwh.cli.render import estimate_line, usd

    price = ", price: {input_per_mtok: 10, output_per_mtok: 20}"
    plan = api.validate(batch_config(tmp_path, n_cases=10, extra=price))
    estimate = plan.estimate
    assert estimate["cost_usd"] == pytest.approx(estimate["live_cost_usd"] / 2)
    line = estimate_line(estimate)
    half, whole = estimate["cost_usd"], estimate["live_cost_usd"]
    assert f"batch: about {usd(half)} (live {usd(whole)})" in line and half > 0
    assert estimate["batch"] == {"models": ["m"], "live": []}


def test_batch_true_on_a_provider_without_a_batch_api_is_a_config_error(tmp_path: Path) -> None:
    from evalwh.errors import ConfigError

    config = eval_config(
        tmp_path,
        "  - {id: local, provider: openai-compatible, base_url: 'http://127.0.0.1:9/v1', "
        "price: 0, batch: true}",
        n_cases=1,
    )
    with pytest.raises(ConfigError, match="has no batch API") as refused:
        api.validate(config)
    assert "models[0].batch" in str(refused.value)


def test_a_bad_first_poll_wait_is_refused(tmp_path: Path) -> None:
    from evalwh.engine.batch import first_poll_s
    from evalwh.errors import UsageError

    with pytest.raises(UsageError, match="EVALWH_BATCH_POLL_S"):
        first_poll_s({"EVALWH_BATCH_POLL_S": "soon"})
    assert first_poll_s({}) == 10.0


class ForeignResults:
    """A batch API whose results name requests the job never held, and one twice."""

    def __init__(self, held: list[str]) -> None:
        self.held = held

    async def results(self, job: Any, requests: Any = None) -> Any:
        from evalwh.providers.base import Completion
        from evalwh.providers.batching import BatchResult

        yield BatchResult("someone-elses", completion=Completion("injected", 1, 1))
        yield BatchResult(self.held[0], completion=Completion("mine", 1, 1))
        yield BatchResult(self.held[0], completion=Completion("again", 1, 1))


def test_a_result_for_a_request_the_job_does_not_hold_answers_no_cell() -> None:
    """Attack: a provider's results file (untrusted) carries a custom id of another request,
    or one twice, to plant an answer in a cell it was not asked for."""
    from evalwh.config.model import Case, ModelSpec
    from evalwh.engine.batch import BatchFeed, OpenJob
    from evalwh.providers.batching import BatchJob
    from evalwh.warehouse.batches import JobRow

    async def scenario() -> list[Any]:
        feed = BatchFeed("r", None, {}, first_wait=0)
        feed.queues["m"] = asyncio.Queue()
        feed.outstanding["m"] = 2
        for key in ("a", "b"):
            feed.held[key] = [(None, Case(key), 0)]  # type: ignore[list-item]
            feed.model_of[key] = "m"
        row = JobRow("r", "m", "mock", "j", 0, "running", None, 2, 10)
        job = OpenJob(row, ForeignResults(["a"]), ModelSpec("m", "mock", "m"), ["a", "b"])  # type: ignore[arg-type]
        feed.jobs["j"] = job
        await feed._read(job, BatchJob("j", "ended", "ended"))
        return [feed.take("a"), feed.take("b"), feed.take("someone-elses")]

    mine, missing, foreign = asyncio.run(scenario())
    assert mine.completion.text == "mine"
    assert missing.error.kind == "batch_missing"
    assert foreign is None


def test_the_cost_cap_takes_the_batch_price_before_and_during_the_run(tmp_path: Path) -> None:
    from evalwh.errors import CostRefusedError

    price = "price: {input_per_mtok: 10, output_per_mtok: 20}"
    config = batch_config(tmp_path / "b", n_cases=10, extra=f", {price}")
    estimate = api.validate(config).estimate
    cap = (estimate["cost_usd"] + estimate["live_cost_usd"]) / 2  # over batch, under live
    live = eval_config(tmp_path / "l", f"  - {{id: m, provider: mock, {price}}}", n_cases=10)
    with pytest.raises(CostRefusedError):
        api.validate(live, max_cost=cap)
    result = api.run_eval(config, max_cost=cap)  # each job reserves its cost at batch price
    assert result.status == "completed" and result.totals["n"] == 10
    assert 0 < result.totals["cost_usd"] <= cap


@pytest.mark.slow
def test_a_job_the_provider_no_longer_knows_ends_as_errors_after_three_polls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A resumed run whose job the provider answers 404 for stores its requests as errors
    (for --retry-errors) instead of polling it for ever."""
    from evalwh.engine.signals import RunInterrupted

    config = batch_config(tmp_path, n_cases=3)
    stop_at_first_wait(monkeypatch)
    with pytest.raises(RunInterrupted) as stopped:
        api.run_eval(config)
    for path in (tmp_path / "jobs").glob("*.json"):
        path.unlink()  # gone at the provider
    rounds: list[float] = []

    async def counted(seconds: float) -> None:
        rounds.append(seconds)

    monkeypatch.setattr("evalwh.engine.batch.pause", counted)
    result = api.run_eval(config, resume=stopped.value.run_id)
    assert len(rounds) == 3 and result.totals["n"] == 3
    kinds = stored(Path(result.warehouse).parent, "SELECT DISTINCT error_kind FROM cases")
    assert kinds == [{"error_kind": "http"}]


def test_a_judges_model_cannot_ask_for_batch_and_a_datasource_run_refuses_batch_mode(
    tmp_path: Path,
) -> None:
    from evalwh.errors import ConfigError, UsageError

    config = batch_config(tmp_path / "j", n_cases=1)
    judged = config.read_text() + (
        "judges:\n  - {id: j, model: {id: jm, provider: mock, batch: true}}\n"
    )
    config.write_text(judged)
    with pytest.raises(ConfigError, match="judges are asked live") as refused:
        api.validate(config)
    assert "judges[0].model.batch" in str(refused.value)
    source = eval_config(tmp_path / "d", "  - {id: m, provider: mock}", n_cases=1)
    (tmp_path / "d" / "s").mkdir()
    (tmp_path / "d" / "s" / "a.jsonl").write_text('{"id": "r1", "q": "1"}\n')
    text = source.read_text().replace(
        "cases:\n", "cases:\n  - {source: jsonl-glob, params: {pattern: 's/*.jsonl'}}\n"
    )
    source.write_text(text)
    with pytest.raises(UsageError, match=r"batch mode .* needs every case before the run"):
        api.validate(source, batch=True)
