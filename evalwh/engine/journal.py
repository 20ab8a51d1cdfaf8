"""The answer journal: every answer on disk the moment it arrives, so a kill never pays twice.

A run appends one framed record per answer (a cell's own answer and its judges' replies) to
``journal/<run_id>.journal`` beside the warehouse before the answer is scored: a 4-byte length, the
payload's CRC-32 and the payload (the response-cache row of the answer, redacted as the
warehouse stores answers, with its cell, attempts and queue time). Records are written with
one ``write`` each (a killed process loses none the kernel has) and fsync'd in groups on a
short timer (``sync_every_s``). When the writer has flushed a batch, the records of its cells
are durable in the warehouse: the journal is truncated once none is left, and rewritten with
only the outstanding ones when it grows.

``--resume`` reads the run's journal before planning: answers of cells the warehouse does not
hold are replayed (scored and stored as answered, never asked again); a torn last record
(a kill mid-write) fails its checksum and is dropped; a file that is not this run's journal
(another run, another config hash, a foreign file) is refused and left as it is. A plain
rerun with the cache reads the journals of earlier runs of the same config as cached answers.
A no-look run keeps no journal (docs/troubleshooting.md says why).
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
import threading
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalwh.config.model import ModelSpec
from evalwh.engine.answers import CachedAnswer, Call
from evalwh.engine.plan import Cell
from evalwh.engine.runner import CELL
from evalwh.errors import UsageError

MAGIC = b"EVALWH-JOURNAL 1\n"
SUFFIX = ".journal"
FRAME = struct.Struct(">II")  # payload length, CRC-32 of the payload
MAX_RECORD = 256 * 1024 * 1024  # a length beyond this is a torn or foreign frame
ROTATE_AT = 16 * 1024 * 1024  # rewrite the file once it is this big and half of it is flushed
SYNC_EVERY_S = 0.1

Schedule = Callable[[float, Callable[[], None]], Any]


class JournalRefused(UsageError):
    """A file where the run's journal should be that is not its journal: left untouched."""


def journal_dir(local_dir: Path) -> Path:
    """Where journals live: ``journal/`` beside the warehouse file (``local_dir``, the
    warehouse's folder); for a lake, on this machine in the output folder."""
    return local_dir / "journal"


def journal_path(folder: Path, run_id: str, shard: tuple[int, int] | None = None) -> Path:
    tail = f".shard-{shard[0]}-of-{shard[1]}" if shard else ""
    return folder / f"{run_id}{tail}{SUFFIX}"


@dataclass
class Record:
    cell: Cell
    payload: dict[str, Any]
    frame: bytes

    def call(self) -> Call:
        """The answer as the engine's call returns it: not cached, the attempts it took."""
        p = self.payload
        wire = json.loads(p["wire"]) if p.get("wire") else None
        answer = CachedAnswer(
            p["output"], p["input_tokens"], p["output_tokens"], p["latency_ms"], wire
        )
        return Call(
            p["request_hash"], answer, None, False, int(p["attempts"]), p["queued_ms"], True
        )


@dataclass
class Loaded:
    """A journal read back: its header, the records that passed their checksum, and how
    many bytes at the end were dropped (a torn last record)."""

    path: Path
    header: dict[str, Any]
    records: list[Record] = field(default_factory=list)
    torn_bytes: int = 0


def frame(payload: dict[str, Any]) -> bytes:
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
    return FRAME.pack(len(data), zlib.crc32(data)) + data


def _header_bytes(header: Mapping[str, Any]) -> bytes:
    return MAGIC + json.dumps(dict(header), sort_keys=True).encode() + b"\n"


def read_journal(path: Path) -> Loaded:
    """Read a journal; raise JournalRefused when the file is not one (the file is left as
    it is). Records are read up to the first frame that is short or fails its checksum."""
    data = path.read_bytes()
    end = data.find(b"\n", len(MAGIC))
    header: Any = None
    if data.startswith(MAGIC) and end > 0:
        with contextlib.suppress(ValueError):
            header = json.loads(data[len(MAGIC) : end])
    if not isinstance(header, dict) or not isinstance(header.get("run_id"), str):
        raise JournalRefused(
            f"{path} is not an evalwh answer journal (no journal header); it was left "
            "untouched: move it out of the journal folder to go on"
        )
    loaded = Loaded(path, header)
    at = end + 1
    while at < len(data):
        if len(data) - at < FRAME.size:
            break
        size, crc = FRAME.unpack_from(data, at)
        body = data[at + FRAME.size : at + FRAME.size + size]
        if size > MAX_RECORD or len(body) < size or zlib.crc32(body) != crc:
            break
        try:
            payload = json.loads(body)
            cell = tuple(payload["cell"])
        except (ValueError, KeyError, TypeError):
            break
        loaded.records.append(Record(cell, payload, data[at : at + FRAME.size + size]))
        at += FRAME.size + size
    loaded.torn_bytes = len(data) - at
    return loaded


def load_for_resume(path: Path, run_id: str, config_hash: str) -> Loaded | None:
    """The run's own journal, or None when it has none; refused (JournalRefused, the file
    untouched) when the file belongs to another run or another config."""
    if not path.exists():
        return None
    loaded = read_journal(path)
    owner, digest = loaded.header.get("run_id"), loaded.header.get("config_hash")
    if owner != run_id:
        raise JournalRefused(
            f"{path} is the answer journal of run {owner}, not of run {run_id}; it was left "
            "untouched: move it back where it came from, or out of the journal folder"
        )
    if digest != config_hash:
        raise JournalRefused(
            f"{path} was written by run {run_id} under another config (config hash "
            f"{str(digest)[:12]}, now {config_hash[:12]}); its answers were not replayed and "
            "the file was left untouched: restore the config, or move the file away to re-ask"
        )
    return loaded


def earlier_answers(
    folder: Path, config_hash: str, hashes: Iterable[str]
) -> dict[str, CachedAnswer]:
    """The planned requests answered in the journals of earlier runs of this config (a
    killed run rerun with the cache): request hash -> its answer, as a cache hit. Files that
    are not journals, or belong to another config, are skipped and left as they are."""
    if not folder.is_dir():
        return {}
    wanted = set(hashes)
    out: dict[str, CachedAnswer] = {}
    for path in sorted(folder.glob(f"*{SUFFIX}")):
        try:
            loaded = read_journal(path)
        except (JournalRefused, OSError):
            continue
        if loaded.header.get("config_hash") != config_hash:
            continue
        for record in loaded.records:
            key = record.payload.get("request_hash")
            answer = record.call().answer
            if key in wanted and answer is not None:
                out[key] = answer
    return out


@dataclass
class Carried:
    """What a continued run takes from its journal: the records of cells the warehouse does
    not hold (kept in the journal) and, of those, the planned ones' answers to replay
    (request hash -> answer)."""

    kept: list[Record] = field(default_factory=list)
    replay: dict[str, Call] = field(default_factory=dict)
    torn_bytes: int = 0


def carry_over(
    path: Path, run_id: str, config_hash: str, stored: set[Cell], planned: Iterable[Cell]
) -> Carried:
    """Read a continued run's journal (:func:`load_for_resume`): records of stored cells are
    done with; the rest are kept, and replayed when their cells are planned."""
    loaded = load_for_resume(path, run_id, config_hash)
    if loaded is None:
        return Carried()
    kept = [r for r in loaded.records if r.cell not in stored]
    cells = set(planned)
    replay = {r.payload["request_hash"]: r.call() for r in kept if r.cell in cells}
    return Carried(kept, replay, loaded.torn_bytes)


class Journal:
    """One run's journal, open for appending (thread-safe: answers arrive on the event
    loop, flushes end in the writer's thread).

    ``record``: CachedAnswer -> the payload's answer fields (evalwh.engine.records.cache_row,
    redacted as stored). ``schedule(delay, fn)`` runs ``fn`` after ``delay`` seconds (the
    event loop's ``call_later`` by default; tests pass their own timer).
    """

    def __init__(
        self,
        path: Path,
        header: Mapping[str, Any],
        record: Callable[[str, ModelSpec, CachedAnswer], dict[str, Any]],
        *,
        kept: Sequence[Record] = (),
        sync_every_s: float = SYNC_EVERY_S,
        schedule: Schedule | None = None,
        rotate_at: int = ROTATE_AT,
    ) -> None:
        self.path = path
        self._header = _header_bytes(header)
        self._record = record
        self.sync_every_s = sync_every_s
        self._schedule = schedule
        self.rotate_at = rotate_at
        self._lock = threading.Lock()
        self._open: dict[Cell, list[bytes]] = {}
        self._open_bytes = 0
        self._timer = False
        self._size = 0
        self.appended = 0
        self.syncs = 0
        self.rotations = 0
        path.parent.mkdir(parents=True, exist_ok=True)
        for r in kept:
            self._keep(r.cell, r.frame)
        self._fd = self._rewrite()  # the header and the kept records (a torn tail dropped)

    # -- writing

    def answered(
        self, key: str, model: ModelSpec, answer: CachedAnswer, attempts: int, queued_ms: Any
    ) -> None:
        """Journal an answer that just arrived (the engine's hook); a pairwise judge's reply
        (no cell) is not journaled."""
        cell = CELL.get()
        if cell is None:
            return
        payload = {
            "cell": list(cell),
            **self._record(key, model, answer),
            "attempts": attempts,
            "queued_ms": queued_ms,
        }
        data = frame(payload)
        with self._lock:
            os.write(self._fd, data)
            self._size += len(data)
            self._keep(cell, data)
            self.appended += 1
            if self._timer:
                return
            self._timer = True
        schedule = self._schedule or _call_later
        schedule(self.sync_every_s, self.sync)

    def _keep(self, cell: Cell, data: bytes) -> None:
        self._open.setdefault(cell, []).append(data)
        self._open_bytes += len(data)

    def sync(self) -> None:
        """fsync what was appended since the last sync (the timer's group)."""
        with self._lock:
            self._timer = False
            if self._fd >= 0:
                os.fsync(self._fd)
                self.syncs += 1

    def durable(self, case_rows: Iterable[Sequence[Any]]) -> None:
        """The writer stored these case rows (RunWriter's flushed hook): their cells'
        records are no longer needed. Truncated when none is left; rewritten with the
        outstanding ones when the file is big and mostly flushed."""
        with self._lock:
            for row in case_rows:
                frames = self._open.pop((row[1], row[2], row[3], row[4]), None)
                if frames:
                    self._open_bytes -= sum(map(len, frames))
            if self._fd < 0:
                return
            if not self._open:
                if self._size > len(self._header):
                    os.ftruncate(self._fd, len(self._header))
                    os.fsync(self._fd)
                    self._size = len(self._header)
            elif self._size >= self.rotate_at and self._open_bytes * 2 <= self._size:
                os.close(self._fd)
                self._fd = self._rewrite()
                self.rotations += 1

    def _rewrite(self) -> int:
        """Write the header and the outstanding records to a new file, fsync it and put it
        in place (a kill leaves the old file or the new one, never half of one)."""
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        body = self._header + b"".join(f for frames in self._open.values() for f in frames)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, body)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
        _sync_dir(self.path.parent)
        self._size = len(body)
        return os.open(self.path, os.O_WRONLY | os.O_APPEND)

    def close(self) -> None:
        """Sync and close; a journal with nothing outstanding is removed."""
        with self._lock:
            if self._fd < 0:
                return
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = -1
            if not self._open:
                self.path.unlink(missing_ok=True)
                _sync_dir(self.path.parent)

    @property
    def outstanding(self) -> int:
        """Records whose cells the warehouse does not hold yet."""
        with self._lock:
            return sum(map(len, self._open.values()))


def _call_later(delay: float, fn: Callable[[], None]) -> None:
    """Run ``fn`` in a worker thread after ``delay`` s (an fsync never blocks the event loop)."""
    import asyncio

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # no loop (a caller outside a run): sync now
        fn()
        return
    loop.call_later(delay, loop.run_in_executor, None, fn)


def _sync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
