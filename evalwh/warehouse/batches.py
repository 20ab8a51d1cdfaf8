"""Batch mode's rows: each job's states (``batches``) and the requests it holds
(``batch_requests``), only ever appended (migration 0014, docs/storage.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from evalwh.warehouse.connect import register_stream, write_transaction
from evalwh.warehouse.lake import Location

COUNTS = ("succeeded", "errored", "expired", "cancelled", "processing")
COLUMNS = (
    "run_id",
    "model",
    "provider",
    "job_id",
    "seq",
    "state",
    "provider_state",
    "requests",
    "bytes",
    *COUNTS,
    "submitted_at",
    "ended_at",
    "polled_at",
    "extra",
)


@dataclass
class JobRow:
    """One state of a job, as a ``batches`` row holds it."""

    run_id: str
    model: str
    provider: str
    job_id: str
    seq: int
    state: str
    provider_state: str | None
    requests: int
    bytes: int
    counts: dict[str, int] = field(default_factory=dict)
    submitted_at: datetime | None = None
    ended_at: datetime | None = None
    polled_at: datetime | None = None
    extra: dict[str, Any] | None = None

    def values(self) -> list[Any]:
        from evalwh.warehouse.writer import to_json

        counts = [self.counts.get(name) for name in COUNTS]
        return [
            self.run_id,
            self.model,
            self.provider,
            self.job_id,
            self.seq,
            self.state,
            self.provider_state,
            self.requests,
            self.bytes,
            *counts,
            self.submitted_at,
            self.ended_at,
            self.polled_at,
            to_json(self.extra) if self.extra else None,
        ]

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> JobRow:
        import json

        extra = row.get("extra")
        return cls(
            row["run_id"],
            row["model"],
            row["provider"],
            row["job_id"],
            row["seq"],
            row["state"],
            row["provider_state"],
            row["requests"],
            row["bytes"],
            {name: row[name] for name in COUNTS if row.get(name) is not None},
            row["submitted_at"],
            row["ended_at"],
            row["polled_at"],
            json.loads(extra) if isinstance(extra, str) else extra,
        )


INSERT = f"INSERT INTO batches ({', '.join(COLUMNS)}) VALUES ({', '.join('?' for _ in COLUMNS)})"


def record_states(path: Location, rows: Sequence[JobRow]) -> None:
    """Append job states (one transaction)."""
    if rows:
        write_transaction(
            path,
            lambda con: con.executemany(INSERT, [r.values() for r in rows]),
            what="record batch job states",
        )


def record_submission(path: Location, row: JobRow, custom_ids: Sequence[str]) -> None:
    """A job just accepted: its first state row and the custom ids it holds, together."""
    import pyarrow as pa

    ids = pa.table(
        {
            "run_id": pa.array([row.run_id] * len(custom_ids), pa.string()),
            "job_id": pa.array([row.job_id] * len(custom_ids), pa.string()),
            "custom_id": pa.array(list(custom_ids), pa.string()),
        }
    )

    def body(con: Any) -> None:
        con.execute(INSERT, row.values())
        register_stream(con, "new_batch_requests", ids)
        con.execute("INSERT INTO batch_requests SELECT * FROM new_batch_requests")
        con.unregister("new_batch_requests")

    write_transaction(path, body, what=f"record batch job {row.job_id}")


def latest_states(store: Any, run_id: str) -> list[JobRow]:
    """Each job of a run as it stands now (sql/batches_latest.sql); none on a warehouse
    without the table yet (a run never batched)."""
    if not store.exists:
        return []
    return [JobRow.from_row(r) for r in store.query("batches_latest", run_id=run_id).to_pylist()]


def job_requests(store: Any, run_id: str) -> dict[str, list[str]]:
    """job id -> the custom ids it holds (sql/batch_requests.sql)."""
    out: dict[str, list[str]] = {}
    if not store.exists:
        return out
    cols = store.query("batch_requests", run_id=run_id).to_pydict()
    for job_id, custom_id in zip(cols["job_id"], cols["custom_id"], strict=True):
        out.setdefault(job_id, []).append(custom_id)
    return out
