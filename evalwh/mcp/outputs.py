"""The ``outputSchema`` of every MCP tool: the JSON Schema its ``structuredContent`` matches
on success (an error result, ``isError: true``, carries the error's data instead; see
evalwh/mcp/server.py). Each schema names the keys an answer always has and their types; the
nested rows (matrix cells, criteria, judging) are objects whose keys docs/mcp.md lists.
"""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]


def _of(*kinds: str) -> Schema:
    """One JSON type, or ``anyOf`` branches of one type each (a nullable key): a ``type`` list
    is valid JSON Schema, but clients that map tools onto a one-type dialect (Gemini's
    function declarations) drop or refuse it; MCP Inspector's --strict warns of it."""
    if len(kinds) == 1:
        return {"type": kinds[0]}
    return {"anyOf": [{"type": kind} for kind in kinds]}


STR, INT, NUM, BOOL, OBJ = (
    _of("string"),
    _of("integer"),
    _of("number"),
    _of("boolean"),
    _of("object"),
)
NSTR, NINT, NNUM, NOBJ = (
    _of("string", "null"),
    _of("integer", "null"),
    _of("number", "null"),
    _of("object", "null"),
)
ANY: Schema = {}
NBOOL = _of("boolean", "null")


def arr(items: Schema) -> Schema:
    return {"type": "array", "items": items}


def obj(
    properties: dict[str, Schema], *, optional: tuple[str, ...] = (), description: str = ""
) -> Schema:
    """An object with these keys, all required but ``optional``; further keys allowed."""
    out: Schema = {
        "type": "object",
        "properties": properties,
        "required": [k for k in properties if k not in optional],
    }
    if description:
        out["description"] = description
    return out


CI95 = {"type": "array", "items": NNUM, "minItems": 2, "maxItems": 2}
CELL = obj(
    {"variant": STR, "model": STR, "n": INT, "passed": INT, "pass_rate": NNUM, "errors": NINT},
    description="One variant × model cell: pass rate with n and ci95, score, errors, cost, latency.",
)
TOTALS = obj(
    {"n": INT, "passed": INT, "failed": INT, "pass_rate": NNUM, "cost_usd": NNUM},
    description="The whole run: n, n_cases, passed, failed, pass_rate, ci95, score, errors, cached, cost and tokens.",
)
GATE = obj({"passed": BOOL, "rules": INT, "failed": arr(ANY)})
ERRORS = arr(obj({"error": STR, "n": INT}))
JUDGING = {
    **NOBJ,
    "description": "For configs with judges or pairwise: calibration, comparisons, pointwise, flags.",
}
RUN_HEAD = obj(
    {
        "run_id": STR,
        "label": NSTR,
        "suite": NSTR,
        "status": NSTR,
        "started_at": NSTR,
        "finished_at": NSTR,
        "n_planned": NINT,
        "no_look": BOOL,
    }
)
FLAGS = arr(STR)
# what a run's summary says, after run_eval and in get_run(detail='summary')
RESULTS: dict[str, Schema] = {
    "matrix": arr(CELL),
    "endings": arr(OBJ),
    "totals": TOTALS,
    "errors": ERRORS,
    "gate": GATE,
    "headline_eligible": BOOL,
    "flags": FLAGS,
    "judging": JUDGING,
    "next": arr(STR),
}

RUN_EVAL = obj(
    {
        "run_id": STR,
        "status": STR,
        "stop_reason": NSTR,
        "suite": NSTR,
        "label": NSTR,
        **RESULTS,
        "failures": INT,
        "cost_usd": NNUM,
        "estimate_usd": NNUM,
        "cap_usd": NNUM,
        "requests": NINT,
        "cache_hits": NINT,
        "notes": arr(STR),
        "no_look": BOOL,
    }
)

RUN_SUMMARY = obj(
    {
        "run": RUN_HEAD,
        **RESULTS,
        "criteria": arr(obj({"criterion": STR, "n": INT, "passed": INT, "pass_rate": NNUM})),
        "notice": STR,
    },
    optional=("notice",),
    description="detail='summary'",
)

# one case of one cell (a page row, get_case_result): where it is and its verdict
CASE_KEYS: dict[str, Schema] = {
    "variant": STR,
    "model": STR,
    "case_id": STR,
    "repeat": INT,
    "passed": NBOOL,
    "score": NNUM,
    "error": NSTR,
}
CASE_ROW = obj(
    {
        **CASE_KEYS,
        "failed": arr(obj({"criterion": STR, "score": NNUM, "required": NBOOL})),
        "output": NSTR,
        "output_chars": INT,
        "expected": ANY,
    },
    optional=("output", "output_chars", "expected"),
)

CASE_PAGE = obj(
    {
        "run_id": STR,
        "detail": {"enum": ["failures", "full"]},
        "page": INT,
        "page_size": INT,
        "total": INT,
        "pages": INT,
        "next_page": NINT,
        "cases": arr(CASE_ROW),
        "next": STR,
        "no_look": BOOL,
        "notice": STR,
    },
    optional=("no_look", "notice"),
    description="detail='failures' or 'full': one page of cases",
)

GET_RUN: Schema = {"type": "object", "anyOf": [RUN_SUMMARY, CASE_PAGE]}

_CELL_KEYS: dict[str, Schema] = {
    "run_id": STR,
    **CASE_KEYS,
    "vars": ANY,
    "expected": ANY,
    "metadata": ANY,
    "criteria": arr(OBJ),
    "latency_ms": NNUM,
    "input_tokens": NINT,
    "output_tokens": NINT,
    "cost_usd": NNUM,
    "cached": NBOOL,
    "attempts": NINT,
}
GET_CASE_RESULT: Schema = {
    "type": "object",
    "anyOf": [
        obj(
            {
                **_CELL_KEYS,
                "output": NSTR,
                "messages": ANY,
                "truncated": {**OBJ, "additionalProperties": INT},
            },
            description="One cell in full; truncated maps each cut field to its full length.",
        ),
        obj(
            {
                "run_id": STR,
                "variant": STR,
                "model": STR,
                "case_id": STR,
                "no_look": {"const": True},
                "notice": STR,
            },
            description="A no-look run's cell: what it stores, without outputs.",
        ),
    ],
}

DELTA = {**NOBJ, "properties": {"a": NNUM, "b": NNUM, "delta": NNUM, "ci95": CI95, "p": NNUM}}
DELTA_ROW = obj({"target": NSTR, "n": NINT, "verdict": NSTR, "pass_rate": DELTA, "score": DELTA})
COMPARE_RUNS = obj(
    {
        "a": RUN_HEAD,
        "b": RUN_HEAD,
        "overall": obj({**DELTA_ROW["properties"], "cost_usd": DELTA}),
        "cells": arr(obj({"variant": STR, "model": STR, **DELTA_ROW["properties"]})),
        "criteria": arr(DELTA_ROW),
        "slices": arr(DELTA_ROW),
        "slices_total": INT,
        "movers": arr(obj({"movement": STR, "case_id": STR})),
        "notes": arr(STR),
        "no_look": BOOL,
        "calibration": OBJ,
    },
    optional=("calibration",),
)

WRITE_REPORT = obj({"path": STR, "run_id": STR, "against": NSTR, "bytes": INT})

LIST_RUNS = obj(
    {
        "runs": arr(
            obj(
                {
                    "run_id": STR,
                    "label": NSTR,
                    "suite": NSTR,
                    "status": NSTR,
                    "started_at": NSTR,
                    "n": NINT,
                    "passed": NINT,
                    "pass_rate": NNUM,
                    "errors": NINT,
                    "cost_usd": NNUM,
                    "baselines": arr(STR),
                    "no_look": BOOL,
                }
            )
        ),
        "more": BOOL,
        "baselines": {**OBJ, "additionalProperties": STR},
    }
)

SET_BASELINE = obj(
    {"name": STR, "run_id": STR, "label": NSTR, "status": NSTR, "previous_run_id": NSTR},
    optional=("label", "status"),
)

RENDER_PROMPT = obj(
    {
        "config": STR,
        "variant": STR,
        "case_id": STR,
        "messages": arr(obj({"role": STR})),
        "vars": ANY,
        "expected": ANY,
        "metadata": ANY,
        "truncated": {**OBJ, "additionalProperties": INT},
    }
)

QUERY = obj({"columns": arr(STR), "rows": arr(arr(ANY)), "row_count": INT, "truncated": BOOL})

OUTPUT_SCHEMAS: dict[str, Schema] = {
    "run_eval": RUN_EVAL,
    "get_run": GET_RUN,
    "get_case_result": GET_CASE_RESULT,
    "compare_runs": COMPARE_RUNS,
    "list_runs": LIST_RUNS,
    "set_baseline": SET_BASELINE,
    "render_prompt": RENDER_PROMPT,
    "query": QUERY,
    "write_report": WRITE_REPORT,
}
