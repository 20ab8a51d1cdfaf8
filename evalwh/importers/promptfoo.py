"""promptfoo's ``promptfoo eval -o results.json`` as one evalwh run.

The file (results format version 3, written by promptfoo 0.1xx; checked on 0.123.1) holds
``results.results``: one entry per prompt x provider x test, with the rendered prompt, the
provider's reply, the grading result and its per-assertion ``componentResults``. Each entry
becomes a case row (variant = the prompt's label, model = the provider's label or id, case id
= the test's ``description``, ``vars.id`` or ``metadata.id``, else ``test-<index>``); each
assertion becomes a score row named by its ``metric`` or its type. An entry whose
``failureReason`` is 2 (promptfoo's ERROR) is a failed request with its error; 1 (FAIL) is a
graded answer that failed its assertions. The entries are parsed one at a time
(:func:`~evalwh.importers.common.read_json_streaming`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalwh.importers.common import (
    ImportedCase,
    ImportedRun,
    ImportedScore,
    check_tree,
    duration,
    int_or_long,
    integer,
    number,
    obj,
    parse_time,
    read_json_streaming,
    shape_error,
)

KNOWN = {
    "cost",
    "error",
    "gradingResult",
    "latencyMs",
    "prompt",
    "promptIdx",
    "provider",
    "response",
    "score",
    "success",
    "testCase",
    "testIdx",
    "vars",
    "failureReason",
    "tokenUsage",
}
FAILURE_ERROR = 2  # promptfoo's ResultFailureReason.ERROR


def read_promptfoo(path: Path) -> list[ImportedRun]:
    # the entries read one at a time, each dropped once it is a case
    with read_json_streaming(path, ("results", "results")) as (data, streamed):
        return _run(path, data, streamed)


def _run(path: Path, data: Any, streamed: Iterator[Any] | None) -> list[ImportedRun]:
    fix = "pass the file written by `promptfoo eval -o results.json`"
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        raise shape_error(path, "results", "not a promptfoo results file (no results object)", fix)
    body = data["results"]
    entries = body.get("results") if streamed is None else streamed
    if not isinstance(entries, (list, Iterator)):
        raise shape_error(path, "results.results", "expected a list of results", fix)
    meta = obj(data.get("metadata"))
    config = obj(data.get("config"))
    started = (
        parse_time(body.get("timestamp"))
        or parse_time(meta.get("evaluationCreatedAt"))
        or parse_time(meta.get("exportedAt"))
    )
    if started is None:
        raise shape_error(path, "results.timestamp", "no timestamp for the run", fix)
    stats = obj(body.get("stats"))
    finished = None
    took = duration(stats.get("durationMs"), 1.0, path, "results.stats.durationMs")
    if took is not None:
        from datetime import timedelta

        try:
            finished = started + timedelta(milliseconds=took)
        except OverflowError:
            raise shape_error(
                path, "results.stats.durationMs", "the run would end after the year 9999", fix
            ) from None
    cases = [_case(entry, i, path) for i, entry in enumerate(entries)]
    extra = {k: v for k, v in data.items() if k != "results"}
    extra["results"] = {k: v for k, v in body.items() if k != "results"}
    return [
        ImportedRun(
            tool="promptfoo",
            version=str(meta["promptfooVersion"]) if meta.get("promptfooVersion") else None,
            suite=str(config.get("description") or data.get("evalId") or path.stem),
            status="completed",
            started_at=started,
            finished_at=finished,
            cases=cases,
            extra=extra,
        )
    ]


def _case(entry: Any, i: int, path: Path) -> ImportedCase:
    where = f"results.results[{i}]"
    if not isinstance(entry, dict):
        raise shape_error(path, where, "expected an object", "pass an unedited results file")
    prompt = obj(entry.get("prompt"))
    provider = entry.get("provider")
    if isinstance(provider, dict):
        model = str(provider.get("label") or provider.get("id") or "unknown")
    else:
        model = str(provider or "unknown")
    test = obj(entry.get("testCase"))
    case_vars = obj(entry.get("vars"))
    metadata = obj(test.get("metadata"))
    index = integer(entry.get("testIdx"))
    index = i if index is None else index
    tool_id = test.get("description") or case_vars.get("id") or metadata.get("id")
    response = obj(entry.get("response"))
    output = response.get("output")
    if output is not None and not isinstance(output, str):
        output = json.dumps(output, ensure_ascii=False)
    usage = response.get("tokenUsage") or entry.get("tokenUsage") or {}
    failed_request = entry.get("failureReason") == FAILURE_ERROR
    error = entry.get("error") or response.get("error") if failed_request else None
    grading = obj(entry.get("gradingResult"))
    extra = {k: v for k, v in entry.items() if k not in KNOWN}
    if test.get("assert") is not None:
        extra["assert"] = test["assert"]
    return ImportedCase(
        variant=str(prompt.get("label") or prompt.get("raw") or f"prompt-{entry.get('promptIdx')}"),
        model=model,
        tool_id=str(tool_id) if tool_id else f"test-{index}",
        index=index,
        vars=case_vars,
        metadata=metadata,
        output=output,
        passed=bool(entry.get("success")),
        score=number(entry.get("score")),
        messages=_messages(prompt.get("raw"), path, f"{where}.prompt.raw"),
        error=str(error) if failed_request else None,
        error_kind="provider" if failed_request else None,
        latency_ms=duration(entry.get("latencyMs"), 1.0, path, f"{where}.latencyMs"),
        input_tokens=integer(usage.get("prompt")) if isinstance(usage, dict) else None,
        output_tokens=integer(usage.get("completion")) if isinstance(usage, dict) else None,
        cost_usd=number(entry.get("cost")),
        cached=bool(response.get("cached")),
        extra=extra,
        scores=_scores(grading.get("componentResults")),
    )


def _messages(raw: Any, path: Path, where: str) -> Any:
    """The rendered prompt: a chat list when promptfoo rendered JSON messages, else one user
    message."""
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw, parse_int=int_or_long)
        except (ValueError, RecursionError):
            parsed = None  # plain text (or JSON too deep to be messages)
        if isinstance(parsed, list):
            check_tree(parsed, path, where)
            return parsed
        return [{"role": "user", "content": raw}]
    return raw


def _scores(components: Any) -> list[ImportedScore]:
    out: list[ImportedScore] = []
    used: dict[str, int] = {}
    for comp in components if isinstance(components, list) else []:
        if not isinstance(comp, dict):
            continue
        assertion = obj(comp.get("assertion"))
        kind = str(assertion.get("type") or "assertion")
        name = str(assertion.get("metric") or kind)
        used[name] = used.get(name, 0) + 1
        if used[name] > 1:
            name = f"{name}#{used[name]}"
        raw = number(comp.get("score"))
        passed = bool(comp.get("pass"))
        score = (1.0 if passed else 0.0) if raw is None else min(1.0, max(0.0, raw))
        weight = number(assertion.get("weight"))
        out.append(
            ImportedScore(
                criterion=name,
                scorer=f"promptfoo:{kind}",
                score=score,
                passed=passed,
                weight=1.0 if weight is None else weight,
                details={"value": assertion.get("value")} if "value" in assertion else None,
                rationale=str(comp["reason"]) if comp.get("reason") else None,
                raw_score=raw,
            )
        )
    return out
