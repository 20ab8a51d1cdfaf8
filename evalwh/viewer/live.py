"""The live tail of a run, as server-sent events: ``rows`` (the answers stored since the last
event), ``progress`` (answers stored of planned, passes, errors, status) and, once the run is no
longer live, ``end`` (its final progress), after which the server closes the stream.

Each tick sends the rows before the progress read with them, so a progress that says the run
is over comes after every row of the run: its last tick reads the progress first and then
every row stored after the last one sent (page by page, on one read connection), sends those
rows, then the final progress, then ``end``. A client closes its stream on ``end`` only.

One :class:`Feed` per run polls the warehouse and hands each event to every subscriber of
that run, however many there are: one poll per tick, not one per client. Each poll reads
the progress and the new rows on one read connection and closes it (waiting, with retries,
while the run's writer holds the file for a flush), so the writer is never blocked for longer
than one poll's few small queries. A feed starts at the run's last :data:`RECENT` answers and
follows them by their whole sort key (sql/rows_since.sql), so no answer is skipped or sent
twice. A run takes at most :attr:`Hub.per_run` subscribers (the next gets 503 with
``Retry-After``); a subscriber that falls :data:`BACKLOG` events behind is dropped rather than
slowing the others. A new subscriber gets the last :data:`RECENT` rows and the latest
``progress`` at once. The feed stops when its last subscriber leaves or after ``end``.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalwh.warehouse.store import Warehouse

POLL_S = 0.5  # between two polls of a live run: rows show within 2 s
KEEPALIVE_S = 15.0  # a comment line this often keeps proxies from closing the stream
PER_RUN = 20  # subscribers of one run
RETRY_AFTER_S = 30  # what a subscriber over the cap is told
BACKLOG = 100  # events a subscriber may fall behind before it is dropped
RECENT = 1000  # rows a feed starts with and a new subscriber gets (the page's table keeps 1000)
PAGE_ROWS = 500  # rows one query of a poll reads; a poll reads pages until one is short

# run id, the last row sent (None: start at the latest RECENT) -> (progress, every newer row)
Poll = Callable[[str, Any], tuple[dict[str, Any], list[dict[str, Any]]]]


def _json(value: Any) -> str:
    def encode(v: Any) -> Any:
        return v.isoformat() if isinstance(v, (datetime, date)) else str(v)

    return json.dumps(value, default=encode, separators=(",", ":"))


def event(name: str, data: Any) -> str:
    return f"event: {name}\ndata: {_json(data)}\n\n"


def warehouse_poll(store: Warehouse) -> Poll:
    """The poll of ``store``: a run's progress, then every row stored after the one given
    (or its latest :data:`RECENT`), on one read: rows read after the progress include every
    row the progress counts."""

    def poll(run_id: str, after: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        from evalwh.viewer.pages import latest_rows, new_rows, progress

        with store.reading():
            state = progress(store, run_id)
            if after is None:
                return state, latest_rows(store, run_id, RECENT)
            rows: list[dict[str, Any]] = []
            while True:
                page = new_rows(store, run_id, after, PAGE_ROWS)
                rows += page
                if len(page) < PAGE_ROWS:
                    return state, rows
                after = page[-1]

    return poll


class Subscriber:
    """One client's queue of events."""

    def __init__(self) -> None:
        self.pending: deque[str] = deque()
        self.ready = asyncio.Event()
        self.closed = False

    def push(self, text: str) -> None:
        if len(self.pending) >= BACKLOG:
            self.close()  # too slow a reader: dropped, the others go on
            return
        self.pending.append(text)
        self.ready.set()

    def close(self) -> None:
        self.closed = True
        self.ready.set()

    async def events(self, keepalive_s: float = KEEPALIVE_S) -> AsyncIterator[str]:
        while True:
            if self.pending:
                yield self.pending.popleft()
                continue
            if self.closed:
                return
            self.ready.clear()
            try:
                await asyncio.wait_for(self.ready.wait(), keepalive_s)
            except asyncio.TimeoutError:
                yield ": keepalive\n\n"


class Feed:
    """The one poll of a run and its subscribers."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.subscribers: set[Subscriber] = set()
        self.progress: str | None = None  # the latest progress event
        self.recent: deque[dict[str, Any]] = deque(maxlen=RECENT)
        self.task: asyncio.Task[None] | None = None


class Hub:
    """The feeds of one server: at most one per run, polled every ``poll_s``."""

    def __init__(
        self,
        poll: Poll,
        *,
        per_run: int = PER_RUN,
        poll_s: float = POLL_S,
        keepalive_s: float = KEEPALIVE_S,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        self.poll, self.per_run, self.poll_s, self.keepalive_s = poll, per_run, poll_s, keepalive_s
        self.sleep = sleep
        self.feeds: dict[str, Feed] = {}

    def subscribe(self, run_id: str) -> Subscriber | None:
        """A new subscriber of ``run_id``'s feed (started if none), or None when the run has
        ``per_run`` already."""
        feed = self.feeds.get(run_id)
        if feed is None:
            feed = self.feeds[run_id] = Feed(run_id)
        if len(feed.subscribers) >= self.per_run:
            return None
        subscriber = Subscriber()
        if feed.recent:
            subscriber.push(event("rows", list(feed.recent)))
        if feed.progress is not None:
            subscriber.push(feed.progress)
        feed.subscribers.add(subscriber)
        if feed.task is None:
            feed.task = asyncio.get_running_loop().create_task(self._run(feed))
        return subscriber

    def leave(self, run_id: str, subscriber: Subscriber) -> None:
        feed = self.feeds.get(run_id)
        if feed is not None:
            feed.subscribers.discard(subscriber)

    async def stream(self, run_id: str, subscriber: Subscriber) -> AsyncIterator[str]:
        """``subscriber``'s events until the run ends or the client goes away."""
        try:
            async for text in subscriber.events(self.keepalive_s):
                yield text
        finally:
            self.leave(run_id, subscriber)

    async def _run(self, feed: Feed) -> None:
        import anyio

        after: Any = None
        try:
            while feed.subscribers:
                state, rows = await anyio.to_thread.run_sync(self.poll, feed.run_id, after)
                texts = []
                if rows:  # first: a progress after them counts every one
                    after = rows[-1]
                    feed.recent.extend(rows)
                    texts.append(event("rows", rows))
                feed.progress = event("progress", state)
                texts.append(feed.progress)
                if not state["live"]:
                    texts.append(event("end", state))
                for subscriber in list(feed.subscribers):
                    for text in texts:
                        subscriber.push(text)
                    if subscriber.closed:
                        feed.subscribers.discard(subscriber)
                if not state["live"]:
                    break
                await self.sleep(self.poll_s)
        finally:
            if self.feeds.get(feed.run_id) is feed:  # no await between the check and here
                del self.feeds[feed.run_id]
            for subscriber in feed.subscribers:
                subscriber.close()
