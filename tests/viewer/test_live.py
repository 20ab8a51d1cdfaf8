"""The live tail (evalwh/viewer/live.py): a run written by another process while `evalwh serve`
watches shows as live and its rows arrive by server-sent events before it ends."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.viewer.serving import serving, slow_quickstart, start_run


# -- the live tail, across processes -----------------------------------------------------------
def events(response: httpx.Response) -> Any:
    name = None
    for line in response.iter_lines():
        if line.startswith("event: "):
            name = line[len("event: ") :]
        elif line.startswith("data: ") and name:
            yield name, json.loads(line[len("data: ") :])


@pytest.mark.e2e
def test_a_running_runs_rows_arrive_by_events_before_it_ends(tmp_path: Path) -> None:
    output = tmp_path / "out"
    config = slow_quickstart(tmp_path)
    with serving(output) as server:
        run = start_run(config, output)
        try:
            c = server.client()
            # poll while the run lives (no wall-clock limit: pytest-timeout bounds the test)
            live: list[dict[str, Any]] = []
            while not live and run.poll() is None:
                live = [r for r in c.get("/runs.json").json()["runs"] if r["live"]]
                time.sleep(0.1)
            assert live, "the run never showed as live"
            run_id = live[0]["run_id"]
            assert "LIVE</span>" in c.get("/").text
            page = c.get(f"/runs/{run_id}").text
            assert 'id="live"' in page
            seen_rows_while_running = 0
            last: dict[str, Any] = {}
            names: list[str] = []
            keys: set[tuple[str, str, str, int]] = set()
            with c.stream("GET", f"/runs/{run_id}/events", timeout=60) as response:
                assert response.headers["content-type"].startswith("text/event-stream")
                for name, data in events(response):
                    names.append(name)
                    if name == "rows":
                        keys |= {
                            (r["variant"], r["model"], r["case_id"], r["repeat"]) for r in data
                        }
                    if name == "rows" and last.get("status") == "running":
                        seen_rows_while_running += len(data)
                    if name == "rows":  # the latency and, apart, the time waited to be sent
                        assert all("latency_ms" in r and "queued_ms" in r for r in data)
                    if name == "progress":
                        last = data
            assert run.wait(timeout=60) in (0, 1), run.communicate()
            c.close()
        finally:
            if run.poll() is None:
                run.kill()
    assert seen_rows_while_running > 0, "no row arrived while the run was running"
    assert last["status"] == "completed" and last["n"] == last["n_planned"] == 48
    # every answer arrived, before the final progress; then `end`, and the stream closed
    assert len(keys) == 48
    assert names[-2:] == ["progress", "end"] and "rows" not in names[names.index("end") :]


# -- the shared feed ----------------------------------------------------------------------------
def test_a_reader_that_never_reads_is_dropped_and_the_poll_stops_with_the_last_one() -> None:
    """A subscriber that falls BACKLOG events behind is dropped instead of holding memory;
    once no subscriber is left the run's poll stops (counted ticks, no clock)."""
    import asyncio

    from evalwh.viewer.live import BACKLOG, Hub

    polls: list[Any] = []

    def poll(run_id: str, after: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        polls.append(after)
        return {"live": True, "n": len(polls)}, []

    async def tick(_: float) -> None:
        await asyncio.sleep(0)

    async def main() -> tuple[bool, bool]:
        hub = Hub(poll, sleep=tick)
        stalled = hub.subscribe("r")
        assert stalled is not None
        task = hub.feeds["r"].task
        assert task is not None
        await task  # it ends once its only subscriber is dropped
        return stalled.closed, "r" in hub.feeds

    closed, still_fed = asyncio.run(main())
    assert closed and not still_fed
    assert len(polls) == BACKLOG + 1  # the poll that overflowed it was the last


def test_every_row_comes_before_the_progress_that_ends_the_run_then_end() -> None:
    """The last poll finds the run over and 450 rows not yet sent: those rows go out, then
    the final progress, then `end`; no row after the progress that says the run is over, each
    row once and in order (counted, no clock)."""
    import asyncio

    from evalwh.viewer.live import Hub

    stored: list[dict[str, Any]] = []

    def answer(i: int) -> dict[str, Any]:
        return {"variant": "v", "model": "m", "case_id": f"c{i:03d}", "repeat": 0}

    def poll(run_id: str, after: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        # each poll stores 150 more answers; the fourth finds the run completed with 600
        for _ in range(150):
            stored.append(answer(len(stored)))
        live = len(stored) < 600
        start = 0 if after is None else stored.index(after) + 1
        state = {"live": live, "status": "running" if live else "completed", "n": len(stored)}
        return state, stored[start:]

    async def tick(_: float) -> None:
        await asyncio.sleep(0)

    async def read(hub: Hub) -> list[tuple[str, Any]]:
        subscriber = hub.subscribe("r")
        assert subscriber is not None
        got = []
        async for text in hub.stream("r", subscriber):
            name, data = text.split("\n")[0][len("event: ") :], text.split("\n")[1][6:]
            got.append((name, json.loads(data)))
        return got

    async def main() -> list[tuple[str, Any]]:
        return await read(Hub(poll, sleep=tick))

    got = asyncio.run(main())
    names = [name for name, _ in got]
    assert names[-2:] == ["progress", "end"] and names.count("end") == 1
    assert got[-1][1]["status"] == "completed"
    rows = [r["case_id"] for name, data in got if name == "rows" for r in data]
    assert rows == [f"c{i:03d}" for i in range(600)]  # each once, in order
    final = names.index("end") - 1
    assert all(name != "rows" for name in names[final:])
