"""Cases streamed from datasources into the runner, so memory stays bounded by concurrency
and page size, not by the source's size.

A plan with datasources (``Plan.streaming``) is not expanded up front: :class:`SourceRead`
pulls a source's pages, maps them onto cases and keeps what the run records about it (rows
read, pages, whether it was read to the end, a content digest). :class:`CaseFeed` reads the
case batches in a worker thread (one page ahead) and fans each case's cells out to one small
queue per model, which that model's workers drain. A full queue makes the feed wait: at most
two pages and ``2 × workers`` cells per model are held at once.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalwh.config.model import Case, SourceSpec

if TYPE_CHECKING:
    from evalwh.engine.plan import Plan

STATIC_BATCH = 1000  # the config's own cases go to the feed in batches of this many
CACHE_ENTRIES = 10_000  # answers a streaming run keeps in memory for identical requests


def restart_hint(config_path: str) -> str:
    """What to do with an unfinished run that reads a datasource: ``--resume`` refuses it
    (api.run), and the response cache holds none of its datasource cases' answers (they are
    looked up by the plan's hashes, which a datasource's rows are not part of)."""
    return (
        "a datasource run cannot be resumed: start it again with "
        f"`evalwh run {config_path}` (every datasource case is asked again: the response cache "
        "does not hold them), or export the source to a file and run that, which can be resumed"
    )


@dataclass
class SourceRead:
    """One datasource as a run reads it, with what the run records about it."""

    spec: SourceSpec
    source: Any
    quiet: bool = False  # no-look: errors quote no value
    rows: int = 0
    pages: int = 0
    complete: bool = False
    _hash: Any = field(default_factory=hashlib.sha256, repr=False)
    known_cases = None  # a datasource's rows are unknown until read

    def batches(self) -> Iterator[list[Case]]:
        from evalwh.config.datasets import datasource_cases
        from evalwh.datasources import iter_pages

        own_digest = callable(getattr(self.source, "digest", None))
        for rows in _guarded(iter_pages(self.source), self):
            self.pages += 1
            self.rows += len(rows)
            if not own_digest:
                for row in rows:
                    self._hash.update(json.dumps(row, sort_keys=True, default=str).encode() + b"\n")
            yield datasource_cases(
                self.spec, rows, self.pages, checked=self.pages > 1, quiet=self.quiet
            )
        self.complete = True

    def record(self) -> dict[str, Any]:
        """What runs.datasources holds: name, parameters, rows read and a digest of them."""
        from evalwh.datasources import source_digest

        digest = source_digest(self.source) or "sha256:" + self._hash.hexdigest()
        return {
            **self.spec.record(),
            "rows_read": self.rows,
            "pages": self.pages,
            "complete": self.complete,
            "digest": digest,
        }


def _guarded(pages: Iterator[list[Any]], read: SourceRead) -> Iterator[list[Any]]:
    """A datasource's own failure as a ConfigError naming it; in no-look mode its message,
    which may quote a row, is reduced to the exception's class."""
    from evalwh.errors import ConfigError

    try:
        yield from pages
    except ConfigError:
        raise
    except Exception as exc:
        detail = "details withheld (no-look)" if read.quiet else str(exc)
        raise ConfigError(
            f"datasource '{read.spec.name}' failed after {read.pages} page(s): "
            f"{type(exc).__name__}: {detail}",
            where=read.spec.where,
            fix="check the datasource's params and that what it reads is reachable; "
            "a datasource run cannot be resumed, start it again",
        ) from None


@dataclass
class FileRead:
    """A case file too large to hold, read again in batches (evalwh.config.streamed), with
    what the run records about it as about a datasource."""

    spec: SourceSpec
    root: Path
    file: str  # the config's path, for errors
    quiet: bool = False
    rows: int = 0
    pages: int = 0
    complete: bool = False

    @property
    def known_cases(self) -> int:
        return int(self.spec.params["cases"])  # counted by the loader's first pass

    def batches(self) -> Iterator[list[Case]]:
        from evalwh.config.streamed import file_batches

        for batch in file_batches(self.spec, self.root, self.file, STATIC_BATCH, quiet=self.quiet):
            self.pages += 1
            self.rows += len(batch)
            yield batch
        self.complete = True

    def record(self) -> dict[str, Any]:
        return {
            **self.spec.record(),
            "rows_read": self.rows,
            "pages": self.pages,
            "complete": self.complete,
            "digest": self.spec.params["sha256"],
        }


def open_sources(
    specs: list[SourceSpec], root: Path, file: str, quiet: bool
) -> list[SourceRead | FileRead]:
    from evalwh.config.datasets import open_datasource

    return [
        FileRead(s, root, file, quiet)
        if s.case_file
        else SourceRead(s, open_datasource(s, root, file), quiet)
        for s in specs
    ]


def case_batches(
    plan: Plan, prepare: Callable[[list[Case]], list[Case]] | None = None
) -> Iterator[list[Case]]:
    """The plan's cases in batches: its own first, then each datasource's pages, filtered by
    ``--case`` and passed through ``prepare`` (exec checks parsed, ...)."""
    import fnmatch

    wanted = plan.case_patterns

    def keep(batch: list[Case]) -> list[Case]:
        if wanted:
            batch = [c for c in batch if any(fnmatch.fnmatchcase(c.id, w) for w in wanted)]
        return prepare(batch) if prepare is not None and batch else batch

    for start in range(0, len(plan.cases), STATIC_BATCH):
        yield plan.cases[start : start + STATIC_BATCH]  # already filtered and prepared
    for read in plan.sources:
        for batch in read.batches():
            batch = keep(batch)
            if batch:
                yield batch


class BoundedCache(OrderedDict[str, Any]):
    """The in-memory answers of a streaming run: the newest ``limit`` only."""

    default_limit = CACHE_ENTRIES

    def __init__(self, limit: int = CACHE_ENTRIES) -> None:
        super().__init__()
        self.limit = limit

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        if len(self) > self.limit:
            self.popitem(last=False)


_END = None


class _Drain:
    """A queue as an async iterator that several workers may wait on at once (an async
    generator may not be entered twice), ending at the feed's end marker."""

    def __init__(self, queue: asyncio.Queue[Any]) -> None:
        self.queue = queue

    def __aiter__(self) -> _Drain:
        return self

    async def __anext__(self) -> Any:
        cell = await self.queue.get()
        if cell is _END:
            raise StopAsyncIteration
        return cell


class CaseFeed:
    """Fans streamed cases out to per-model queues of (variant, case, repeat) cells."""

    def __init__(self, plan: Plan, batches: Iterator[list[Case]], workers: dict[str, int]):
        self.plan = plan
        self.batches = batches
        self.workers = workers
        self.queues: dict[str, asyncio.Queue[Any]] = {
            model_id: asyncio.Queue(maxsize=2 * n) for model_id, n in workers.items()
        }
        self.error: BaseException | None = None
        self.cases = 0  # cases handed out so far
        self.queued = 0  # cells handed out so far (the run's planned size, once it ends)
        # a batch -> its cells already done (the engine's bulk replay of cache hits): not queued
        self.replay: Callable[[list[Case]], Awaitable[set[Any]]] | None = None

    def cells(self, model_id: str) -> _Drain:
        """One model's cells, as an async iterator its workers share."""
        return _Drain(self.queues[model_id])

    async def produce(self, stopped: Callable[[], bool]) -> None:
        """Read batches (one ahead, in a thread) and queue their cells until the end."""
        plan, queues = self.plan, self.queues
        it = iter(self.batches)
        pending: asyncio.Future[Any] | None = None
        try:
            pending = _fetch(it)
            while True:
                batch = await pending
                if batch is None or stopped():
                    break
                pending = _fetch(it)
                done = await self.replay(batch) if self.replay is not None else set()
                for case in batch:
                    self.cases += 1
                    for variant in plan.variants:
                        for repeat in range(plan.repeats):
                            for model in plan.models:
                                cell = (variant.variant.id, model.id, case.id, repeat)
                                if plan.wanted(cell):
                                    self.queued += 1
                                    if cell not in done:
                                        await queues[model.id].put((variant, case, repeat))
                    if stopped():
                        break
        except Exception as exc:  # a datasource's failure ends the run with its error
            self.error = exc
            for model_id, queue in queues.items():  # wake every worker: the run ends
                while not queue.empty():
                    queue.get_nowait()
                for _ in range(self.workers[model_id]):
                    queue.put_nowait(_END)
            return
        finally:
            if pending is not None and not pending.done():
                pending.cancel()  # a run that stopped early: the page ahead is not wanted
        for model_id, queue in queues.items():
            for _ in range(self.workers[model_id]):
                await queue.put(_END)


def _fetch(it: Iterator[list[Case]]) -> asyncio.Future[Any]:
    """The next batch, read in a worker thread. Its failure is always retrieved (by the feed,
    or here once nobody waits for it), so asyncio never logs it: a datasource's message may
    quote a row, and a no-look run writes none to the terminal."""
    future = asyncio.ensure_future(asyncio.to_thread(next, it, None))
    future.add_done_callback(lambda f: f.cancelled() or f.exception())
    return future


def with_checks(file: str) -> Callable[[list[Case]], list[Case]]:
    """A batch's exec checks parsed (as check_config does for the config's own cases)."""

    def prepare(batch: list[Case]) -> list[Case]:
        if not any(c.check is not None for c in batch):
            return batch
        from evalwh.scoring.checks import parse_check

        return [
            replace(c, check=parse_check(c.check, f"{c.source} check", file))
            if c.check is not None
            else c
            for c in batch
        ]

    return prepare
