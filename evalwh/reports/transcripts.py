"""A tool loop's transcript shaped for a page: the run page's case drill-down (the file report
and the viewer's run page, drawn by ``report.js``) and the viewer's case page (drawn by
``templates/transcript.html.j2``, server-side). Both draw what this module gives them, with no
logic of their own: the summary line, each step's heading and its figures are written here.

The steps come from sql/transcripts.sql, one query for all the cells a page shows. What a
model, a tool or a case said is untrusted: it reaches the page as text only (the report's
script sets ``textContent``, the viewer's templates autoescape), never as HTML or markdown.

A page's size stays bounded: a cell shows its first :data:`MAX_STEPS` steps, a report page
embeds at most :data:`STEP_BUDGET` steps in all (later cells show their summary line and say
why), and each text is cut to fit :data:`TEXT_BUDGET`, its full length said beside it::

    >>> summary(3, 2, 1)
    'Transcript — 3 turns, 2 tool calls (1 error)'
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from evalwh.reports import fmt
from evalwh.reports.fmt import MAX_TEXT, cut, json_value

if TYPE_CHECKING:
    from evalwh.warehouse.store import Warehouse

Key = tuple[str, str, str, str, int]  # run, variant, model, case, repeat
MAX_STEPS = 50  # steps of one cell a page shows (its first); the rest are counted
STEP_BUDGET = 20_000  # steps a report page embeds in all; later cells show their summary only
TEXT_BUDGET = 4_000_000  # characters of transcript text a page embeds, about
MIN_TEXT = 200  # characters of each text kept however many steps a page holds
MORE = "evalwh sql over the turns table has them all"


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def summary(n_turns: int, n_calls: int, n_errors: int) -> str:
    """The line a collapsed transcript shows."""
    return (
        f"Transcript — {_plural(n_turns, 'turn')}, {_plural(n_calls, 'tool call')} "
        f"({_plural(n_errors, 'error')})"
    )


def text_limit(n_steps: int) -> int:
    """Characters kept of each text of a step when a page holds ``n_steps`` steps."""
    return max(MIN_TEXT, min(MAX_TEXT, TEXT_BUDGET // max(n_steps, 1)))


def fetch(
    store: Warehouse,
    run_ids: list[str],
    case_ids: list[str] | None = None,
    *,
    first_repeat: bool = False,
) -> dict[Key, list[dict[str, Any]]]:
    """The first MAX_STEPS steps of every cell of ``run_ids`` (of ``case_ids`` only, and of
    each cell's first repeat only when ``first_repeat``) that ran a tool loop, per cell."""
    rows = store.query(
        "transcripts",
        run_ids=run_ids,
        case_ids=case_ids,
        first_repeat=first_repeat,
        max_steps=MAX_STEPS,
    ).to_pylist()
    cells: dict[Key, list[dict[str, Any]]] = {}
    for r in rows:
        key = (r["run_id"], r["variant"], r["model"], r["case_id"], r["repeat"])
        cells.setdefault(key, []).append(r)
    return cells


def _text(value: Any, limit: int) -> dict[str, Any] | None:
    """A text (or a JSON value, pretty-printed) cut to ``limit``, with a note of its full
    length when cut; None when there is nothing to show."""
    if value is None:
        return None
    full = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
    if full == "":
        return None
    shown = cut(full, limit) or ""
    if len(shown) == len(full):
        return {"t": shown}
    return {"t": shown, "note": f"({len(full):,} characters; the first {len(shown):,} shown)"}


def _figures(row: dict[str, Any]) -> str:
    """A step's stored figures in words: its time, tokens, cost, cache and finish reason."""
    said = []
    if row["latency_ms"] is not None:
        said.append(f"{row['latency_ms']:,.1f} ms")
    if row["input_tokens"] is not None or row["output_tokens"] is not None:
        said.append(
            f"tokens {fmt.num(row['input_tokens'], 0)} in / {fmt.num(row['output_tokens'], 0)} out"
        )
    if row["cost_usd"] is not None:
        said.append(f"cost {fmt.usd(row['cost_usd'])}")
    if row["cached"]:
        said.append("from the cache")
    if row["finish_reason"]:
        said.append(f"finish {row['finish_reason']}")
    return " · ".join(said)


def step(row: dict[str, Any], limit: int = MAX_TEXT) -> dict[str, Any]:
    """One step for a page: ``role``; ``head`` (who spoke, in words); ``figures``; an
    answer's ``text`` and ``calls`` (name, id and pretty-printed arguments); a call's
    ``args``, ``bad_args`` (the arguments did not fit the tool's schema), ``result`` or
    ``error``. Each text is ``{"t": shown, "note": "(n characters; the first m shown)"}``."""
    out: dict[str, Any] = {"role": row["role"], "figures": _figures(row)}
    if row["role"] == "assistant":
        out["head"] = f"model · turn {row['turn'] + 1}"
        out["text"] = _text(row["content"], limit)
        calls = json_value(row["arguments"])
        out["calls"] = [
            {
                "name": str(c.get("name", "?")),
                "id": str(c.get("id") or ""),
                "args": _text(json_value(c.get("arguments")), limit),
            }
            for c in (calls if isinstance(calls, list) else [])
            if isinstance(c, dict)
        ]
        return {k: v for k, v in out.items() if v is not None}
    call = f" ({row['call_id']})" if row["call_id"] else ""
    out["head"] = f"tool {row['tool_name'] or '?'}{call} · turn {row['turn'] + 1}"
    out["args"] = _text(json_value(row["arguments"]), limit)
    out["bad_args"] = row["args_valid"] is False
    if row["error"] is not None:
        out["error"] = _text(row["error"], limit)
    else:
        result = json_value(row["result"])
        out["result"] = _text(result if result is not None else row["content"], limit)
    return {k: v for k, v in out.items() if v is not None}


def shape(
    rows: list[dict[str, Any]], limit: int = MAX_TEXT, room: int = MAX_STEPS
) -> dict[str, Any]:
    """A cell's transcript (its rows of sql/transcripts.sql, in order): the ``summary`` line,
    its first ``room`` ``steps`` and, when some are left out, ``more`` saying how many."""
    first = rows[0]
    shown = [step(r, limit) for r in rows[:room]]
    out: dict[str, Any] = {
        "summary": summary(first["n_turns"], first["n_calls"], first["n_errors"]),
        "steps": shown,
    }
    left = first["n_steps"] - len(shown)
    if left:
        why = "" if len(shown) else "; this page holds no more transcript steps"
        out["more"] = f"{_plural(left, 'more step')} not shown{why} ({MORE})"
    return out


def page_key(key: Key) -> str:
    """A cell's key in a run page's data: variant, model, case and repeat joined by NUL."""
    return "\u0000".join((key[1], key[2], key[3], str(key[4])))


def for_run_page(
    store: Warehouse, run_id: str, cells: Iterable[dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """The transcripts of ``cells`` (case rows: variant, model, case_id, repeat) in run
    ``run_id``, by :func:`page_key`, in one query: the cells in the order given share
    STEP_BUDGET steps, each text cut to fit TEXT_BUDGET."""
    wanted = [(run_id, c["variant"], c["model"], c["case_id"], c["repeat"]) for c in cells]
    if not wanted:
        return {}
    found = fetch(store, [run_id], sorted({k[3] for k in wanted}))
    keys = [k for k in wanted if k in found]
    limit = text_limit(min(STEP_BUDGET, sum(len(found[k]) for k in keys)))
    out, spent = {}, 0
    for k in keys:
        room = min(MAX_STEPS, STEP_BUDGET - spent)
        out[page_key(k)] = shape(found[k], limit, room)
        spent += min(room, len(found[k]))
    return out
