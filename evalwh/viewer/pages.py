"""The data of each viewer page, gathered from the named queries in ``sql/`` (through the
core's analysis and report functions); the routes render it as HTML or return it as JSON.

No page accepts SQL: filters become parameters of a named query, never text of one.
"""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from evalwh.errors import UsageError

if TYPE_CHECKING:
    from evalwh.warehouse.store import Warehouse

RUNS_LIMIT = 200  # runs the list shows
HISTORY_RUNS = 100  # runs a case's history goes back
STATUSES = ("running", "exporting", "completed", "interrupted", "stopped", "failed")
LIVE = ("running", "exporting")
ARTIFACT_URL = "/artifacts/"  # + an attachment's SHA-256: the image, from the artifact store


def _day(value: str | None, name: str) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.combine(date.fromisoformat(value), datetime.min.time(), timezone.utc)
    except ValueError:
        raise UsageError(f"{name} must be a date like 2026-11-30, not {value[:40]!r}") from None


def runs_page(
    store: Warehouse,
    *,
    suite: str | None = None,
    label: str | None = None,
    status: str | None = None,
    since: str | None = None,
    until: str | None = None,
) -> dict[str, Any]:
    """The runs list, newest first; ``since``/``until`` are days (``until`` included)."""
    from evalwh.warehouse.lease import effective_status

    if status and status not in STATUSES:
        raise UsageError(f"status must be one of {', '.join(STATUSES)}, not {status[:40]!r}")
    end = _day(until, "until")
    filters = {
        "suite": suite or None,
        "label": label or None,
        "status": status or None,
        "since": since or None,
        "until": until or None,
    }
    rows: list[dict[str, Any]] = []
    if store.exists:
        # a stale "running" run reads as interrupted: filter on the stored status, then
        # keep the rows whose effective status is the one asked for
        stored = "running" if status == "interrupted" else status
        for s in [stored, "interrupted"] if status == "interrupted" else [stored]:
            rows += store.query(
                "runs",
                limit=RUNS_LIMIT,
                suite=filters["suite"],
                label=filters["label"],
                status=s or None,
                since=_day(since, "since"),
                until=end + timedelta(days=1) if end else None,
            ).to_pylist()
    for row in rows:
        row["status"] = effective_status(row, store.stale_after_s)
        row["live"] = row["status"] in LIVE
    if status:
        rows = [r for r in rows if r["status"] == status]
    rows.sort(key=lambda r: r["run_id"], reverse=True)
    return {"runs": rows[:RUNS_LIMIT], "filters": filters, "statuses": STATUSES}


def progress(store: Warehouse, run_id: str) -> dict[str, Any]:
    """How far a run is: answers stored of planned, passes, errors, its status."""
    row = store.run_row(run_id)
    totals = store.query("run_totals", run_id=run_id).to_pylist()[0]
    return {
        "run_id": run_id,
        "status": row["status"],
        "live": row["status"] in LIVE,
        "n": totals["n"],
        "n_planned": row["n_planned"],
        "n_passed": totals["n_passed"],
        "n_errors": totals["n_errors"],
    }


def cursor(after: dict[str, Any] | None) -> dict[str, Any]:
    """sql/rows_since.sql's cursor parameters: the sort key of answer ``after`` (None: all)."""
    row = after or {}
    return {
        "after": row.get("created_at"),
        "after_variant": row.get("variant"),
        "after_model": row.get("model"),
        "after_case": row.get("case_id"),
        "after_repeat": row.get("repeat"),
    }


def new_rows(
    store: Warehouse, run_id: str, after: dict[str, Any] | None, limit: int = 500
) -> list[dict[str, Any]]:
    """The answers stored after answer ``after`` (a row of this list; None: from the
    start), oldest first, at most ``limit``."""
    rows: list[dict[str, Any]] = store.query(
        "rows_since", run_id=run_id, limit=limit, **cursor(after)
    ).to_pylist()
    return rows


def latest_rows(store: Warehouse, run_id: str, limit: int) -> list[dict[str, Any]]:
    """The ``limit`` answers stored last, oldest first (where a live tail starts)."""
    rows: list[dict[str, Any]] = store.query("rows_latest", run_id=run_id, limit=limit).to_pylist()
    return rows


def case_history(store: Warehouse, case_id: str) -> dict[str, Any]:
    """Case ``case_id`` in every run that holds it (newest first), per variant × model. A
    no-look run's rows have no ``output`` key at all, and the page says why (``notice``); a
    row whose first answer ran a tool loop has its ``transcript`` (:func:`transcripts`)."""
    from evalwh.analysis.nolook import NOTICE, is_no_look, minimal

    rows = store.query("case_history", case_id=case_id, limit=HISTORY_RUNS).to_pylist()
    if not rows:
        raise UsageError(f"no run holds a case '{case_id[:80]}'")
    rows = [minimal(r) if is_no_look(r) else r for r in rows]
    notice = NOTICE if any(is_no_look(r) for r in rows) else None
    transcripts(store, case_id, rows)
    return {
        "case_id": case_id,
        "rows": rows,
        "notice": notice,
        "context": case_context(store, case_id),
    }


def transcripts(store: Warehouse, case_id: str, rows: list[dict[str, Any]]) -> None:
    """Give each row (a run × cell of sql/case_history.sql) the transcript of its first
    repeat as ``transcript`` when it ran a tool loop: all of them in one query
    (sql/transcripts.sql), shaped by :mod:`evalwh.reports.transcripts`. A no-look run
    stores no transcript, and its rows get none."""
    from evalwh.reports.transcripts import fetch, shape, text_limit

    run_ids = sorted({r["run_id"] for r in rows if not r.get("no_look")})
    found = fetch(store, run_ids, [case_id], first_repeat=True) if run_ids else {}
    by_cell = {key[:3]: steps for key, steps in found.items()}
    limit = text_limit(sum(len(steps) for steps in found.values()))
    for row in rows:
        steps = by_cell.get((row["run_id"], row["variant"], row["model"]))
        if steps and not row.get("no_look"):
            row["transcript"] = shape(steps, limit)


def _parsed(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _text(content: Any) -> str:
    """A message's content as text: its text parts, each other part named in brackets."""
    if not isinstance(content, list):
        return "" if content is None else str(content)
    out = []
    for part in content:
        if isinstance(part, dict) and part.get("type") == "text":
            out.append(str(part.get("text", "")))
        elif isinstance(part, dict):
            out.append(f"[{part.get('type', 'part')}]")
        else:
            out.append(str(part))
    return "\n".join(out)


def case_context(store: Warehouse, case_id: str) -> dict[str, Any] | None:
    """What case ``case_id`` asked in its newest run (sql/case_latest_context.sql): its vars, the
    expected answer, its attachments (images with the URL that serves them) and the prompt
    its first answer was sent; None when no run holds it."""
    from evalwh.viewer.attachments import listed

    found = store.query("case_latest_context", case_id=case_id, limit=HISTORY_RUNS).to_pylist()
    if not found:
        return None
    row = found[0]
    messages = _parsed(row["messages"]) or []
    return {
        "run_id": row["run_id"],
        "cell": f"{row['variant']} × {row['model']}",
        "repeat": row["repeat"],
        "vars": _parsed(row["vars"]),
        "expected": _parsed(row["expected"]),
        "attachments": listed(_parsed(row["attachments"]), ARTIFACT_URL),
        "prompt": [
            {"role": m.get("role", ""), "text": _text(m.get("content"))}
            for m in messages
            if isinstance(m, dict)
        ],
        "stored": row["vars"] is not None or row["messages"] is not None,
    }


def calibration_page(store: Warehouse, run_id: str) -> dict[str, Any]:
    """The judge calibration of a run (sql/pairwise.sql, calibration*.sql) and its flags."""
    from evalwh.analysis.judging import report
    from evalwh.analysis.runinfo import snapshot_of
    from evalwh.reports.html import uncalibrated

    row = store.run_row(run_id)
    config = snapshot_of(row)
    if not (config.get("pairwise") or config.get("judges")):
        return {"run_id": run_id, "suite": row["suite"], "judging": None, "flags": {}}
    judging = report(store, run_id, config)
    return {
        "run_id": run_id,
        "suite": row["suite"],
        "judging": judging,
        "flags": uncalibrated(judging),
    }


def slices_page(
    store: Warehouse, run_id: str, by: str | None, criterion: str | None
) -> dict[str, Any]:
    """Run ``run_id`` cut by metadata key ``by`` (sql/slice.sql: the whole scorecard's pass
    rate per slice and per cell), and one criterion per slice (sql/slice_criterion.sql)."""
    from evalwh.analysis.slices import check_keys, metadata_keys, slice_run

    keys = metadata_keys(store, [run_id])
    criteria = [r["criterion"] for r in store.query("criteria", run_id=run_id).to_pylist()]
    rows: list[dict[str, Any]] = []
    if by:
        check_keys(store, [run_id], [by])
        rows = slice_run(store, run_id, [by]).to_pylist()
    if criterion and criterion not in criteria:
        raise UsageError(f"run {run_id} has no criterion '{criterion[:80]}'")
    by_criterion = (
        store.query("slice_criterion", run_id=run_id, key=by, criterion=criterion).to_pylist()
        if criterion
        else []
    )
    return {
        "run_id": run_id,
        "keys": keys,
        "by": by,
        "criteria": criteria,
        "criterion": criterion,
        "rows": [r for r in rows if r["variant"] is None],
        "cells": [r for r in rows if r["variant"] is not None],
        "by_criterion": by_criterion,
    }


def baselines_page(store: Warehouse) -> dict[str, Any]:
    from evalwh.analysis.baselines import list_baselines

    return {"baselines": list_baselines(store) if store.exists else []}
