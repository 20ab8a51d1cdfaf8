"""The answer journal's file: frames, checksums, the sync timer, truncation and rotation."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evalwh.config.model import ModelSpec
from evalwh.engine.answers import CachedAnswer
from evalwh.engine.journal import (
    MAGIC,
    Journal,
    JournalRefused,
    carry_over,
    earlier_answers,
    load_for_resume,
    read_journal,
)
from evalwh.engine.records import RowSink
from evalwh.engine.runner import CELL

RUN = "2026-12-06T0500-a1b2"
HASH = "c" * 64
MODEL = ModelSpec(id="m", provider="mock", model="mock-1")


class Timer:
    """An injected timer: records what the journal schedules; the test fires it."""

    def __init__(self) -> None:
        self.due: list[tuple[float, Callable[[], None]]] = []

    def __call__(self, delay: float, fn: Callable[[], None]) -> None:
        self.due.append((delay, fn))

    def fire(self) -> None:
        due, self.due = self.due, []
        for _, fn in due:
            fn()


def _record(key: str, model: ModelSpec, answer: CachedAnswer) -> dict[str, Any]:
    return {
        "request_hash": key,
        "output": answer.output,
        "input_tokens": answer.input_tokens,
        "output_tokens": answer.output_tokens,
        "latency_ms": answer.latency_ms,
        "wire": None,
    }


def _journal(path: Path, timer: Timer | None = None, **kwargs: Any) -> Journal:
    header = {"run_id": RUN, "config_hash": HASH, "shard": None}
    return Journal(path, header, _record, schedule=timer or Timer(), **kwargs)


def _answer(journal: Journal, case_id: str, text: str = "an answer") -> None:
    token = CELL.set(("v", "m", case_id, 0))
    try:
        journal.answered(f"h-{case_id}", MODEL, CachedAnswer(text, 3, 4, 5.0), 2, 1.5)
    finally:
        CELL.reset(token)


def _row(case_id: str) -> list[Any]:
    return ["run", "v", "m", case_id, 0]


def test_records_read_back_as_answered_with_their_attempts(tmp_path: Path) -> None:
    path = tmp_path / f"{RUN}.journal"
    journal = _journal(path)
    for i in range(3):
        _answer(journal, f"c{i}", f"answer {i}")
    loaded = read_journal(path)
    assert loaded.header == {"run_id": RUN, "config_hash": HASH, "shard": None}
    assert [r.cell for r in loaded.records] == [("v", "m", f"c{i}", 0) for i in range(3)]
    call = loaded.records[1].call()
    assert call.answer is not None and call.answer.output == "answer 1"
    assert (call.cached, call.replayed, call.attempts, call.queued_ms) == (False, True, 2, 1.5)
    assert loaded.torn_bytes == 0


def test_a_pairwise_reply_outside_any_cell_is_not_journaled(tmp_path: Path) -> None:
    path = tmp_path / "j.journal"
    journal = _journal(path)
    journal.answered("h", MODEL, CachedAnswer("x", 1, 1, 1.0), 1, None)
    assert read_journal(path).records == [] and journal.appended == 0


@pytest.mark.parametrize("cut", [1, 7, 8, 20])
def test_a_record_cut_anywhere_is_dropped_and_the_ones_before_it_kept(
    tmp_path: Path, cut: int
) -> None:
    """A kill mid-write leaves part of a frame: short header, short body, or a body whose
    checksum fails; the whole records before it read back."""
    path = tmp_path / "j.journal"
    journal = _journal(path)
    for i in range(3):
        _answer(journal, f"c{i}")
    data = path.read_bytes()
    last = read_journal(path).records[-1].frame
    path.write_bytes(data[: len(data) - len(last) + cut])
    loaded = read_journal(path)
    assert [r.cell[2] for r in loaded.records] == ["c0", "c1"]
    assert loaded.torn_bytes == cut


def test_a_flipped_byte_fails_the_checksum(tmp_path: Path) -> None:
    path = tmp_path / "j.journal"
    journal = _journal(path)
    for i in range(2):
        _answer(journal, f"c{i}", "abcdefgh")
    data = bytearray(path.read_bytes())
    data[-3] ^= 0x01  # inside the last record's payload
    path.write_bytes(bytes(data))
    assert [r.cell[2] for r in read_journal(path).records] == ["c0"]


def test_appends_are_fsynced_in_groups_on_the_timer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One timer per group of answers, not one fsync per answer."""
    import evalwh.engine.journal as module

    synced: list[int] = []
    monkeypatch.setattr(module.os, "fsync", lambda fd: synced.append(fd))
    timer = Timer()
    journal = _journal(tmp_path / "j.journal", timer, sync_every_s=0.1)
    synced.clear()  # the file's creation is synced once
    for i in range(5):
        _answer(journal, f"c{i}")
    assert [d for d, _ in timer.due] == [0.1] and synced == []
    timer.fire()
    assert len(synced) == 1 and journal.syncs == 1
    _answer(journal, "c5")
    assert len(timer.due) == 1  # the next group has its own timer


def test_the_journal_is_truncated_once_the_writer_stored_every_cell(tmp_path: Path) -> None:
    path = tmp_path / "j.journal"
    journal = _journal(path)
    for i in range(3):
        _answer(journal, f"c{i}")
    journal.durable([_row("c0"), _row("c1")])
    assert len(read_journal(path).records) == 3  # c2 is not stored yet: nothing is cut
    assert journal.outstanding == 1
    journal.durable([_row("c2")])
    assert read_journal(path).records == [] and path.read_bytes().startswith(MAGIC)
    journal.close()
    assert not path.exists()  # nothing outstanding: the file goes


def test_a_big_mostly_flushed_journal_is_rewritten_with_the_outstanding_records(
    tmp_path: Path,
) -> None:
    path = tmp_path / "j.journal"
    journal = _journal(path, rotate_at=2000)
    for i in range(40):
        _answer(journal, f"c{i:02d}", "x" * 40)
    journal.durable([_row(f"c{i:02d}") for i in range(38)])
    assert journal.rotations == 1
    assert [r.cell[2] for r in read_journal(path).records] == ["c38", "c39"]
    _answer(journal, "c40")  # appends go on in the new file
    assert [r.cell[2] for r in read_journal(path).records] == ["c38", "c39", "c40"]
    journal.close()
    assert path.exists()  # outstanding records stay for a resume


def test_a_continued_run_keeps_only_records_of_cells_not_stored(tmp_path: Path) -> None:
    path = tmp_path / f"{RUN}.journal"
    journal = _journal(path)
    for i in range(4):
        _answer(journal, f"c{i}")
    journal.close()
    stored = {("v", "m", "c0", 0)}
    planned = [("v", "m", "c1", 0), ("v", "m", "c2", 0)]  # c3: not stored, not planned
    carried = carry_over(path, RUN, HASH, stored, planned)
    assert sorted(carried.replay) == ["h-c1", "h-c2"]
    assert [r.cell[2] for r in carried.kept] == ["c1", "c2", "c3"]
    reopened = _journal(path, kept=carried.kept)
    assert [r.cell[2] for r in read_journal(path).records] == ["c1", "c2", "c3"]
    assert reopened.outstanding == 3


def test_a_foreign_file_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / f"{RUN}.journal"
    path.write_bytes(b"SQLite format 3\x00" + bytes(range(256)))
    before = path.read_bytes()
    with pytest.raises(JournalRefused, match="is not an evalwh answer journal"):
        load_for_resume(path, RUN, HASH)
    assert path.read_bytes() == before


def test_another_runs_or_configs_journal_is_refused(tmp_path: Path) -> None:
    path = tmp_path / f"{RUN}.journal"
    _journal(path)
    _answer(_journal(path), "c0")
    before = path.read_bytes()
    with pytest.raises(JournalRefused, match=f"answer journal of run {RUN}, not of run other"):
        load_for_resume(path, "other", HASH)
    with pytest.raises(JournalRefused, match="under another config"):
        load_for_resume(path, RUN, "d" * 64)
    assert path.read_bytes() == before
    assert load_for_resume(tmp_path / "none.journal", RUN, HASH) is None


def test_a_rerun_with_the_cache_reads_earlier_journals_of_the_same_config(tmp_path: Path) -> None:
    _answer(_journal(tmp_path / f"{RUN}.journal"), "c0")
    (tmp_path / "junk.journal").write_bytes(b"not a journal")
    other = Journal(
        tmp_path / "other.journal",
        {"run_id": "other", "config_hash": "e" * 64},
        _record,
        schedule=Timer(),
    )
    _answer(other, "c1")
    found = earlier_answers(tmp_path, HASH, ["h-c0", "h-c1"])
    assert list(found) == ["h-c0"] and found["h-c0"].output == "an answer"


def test_the_journal_holds_answers_redacted_as_the_warehouse_stores_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The journal is a file on disk: a known secret echoed in an answer is *** there too,
    unless privacy.redact_outputs is false."""
    secret = "corp-token-0123456789abcdef"
    monkeypatch.setenv("CORP_API_TOKEN", secret)
    answer = CachedAnswer(f"the key is {secret}", 1, 1, 1.0, {"reasoning": f"saw {secret}"})
    kept = RowSink(None, RUN).journal_record("h", MODEL, answer)  # type: ignore[arg-type]
    assert secret not in str(kept) and "***" in kept["output"] and "***" in kept["wire"]
    plain = RowSink(None, RUN, redact_outputs=False).journal_record("h", MODEL, answer)  # type: ignore[arg-type]
    assert plain["output"] == answer.output
