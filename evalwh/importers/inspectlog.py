"""inspect_ai eval logs (``.eval`` and ``.json``) as evalwh runs, one run per log.

Read with inspect_ai's documented log format (``inspect_ai.log.EvalLog``; checked on
0.3.285), without importing inspect_ai: a ``.json`` log is one ``EvalLog`` object with its
``samples``; an ``.eval`` log is a zip holding ``header.json`` (the EvalLog without samples;
``_journal/start.json`` when the run never finished) and ``samples/<id>_epoch_<n>.json``, one
``EvalSample`` each.

A ``.json`` log's samples are parsed one at a time
(:func:`~evalwh.importers.common.read_json_streaming`), as an ``.eval`` log's members are.

Mapping: variant = the task's name, model = ``eval.model``, case id = the sample's id,
repeat = epoch - 1; every scorer's value is a score row (a dict value gives one row per key,
``scorer.key``), converted as inspect's ``value_to_float`` does (C = 1, P = 0.5, I and N = 0,
true/yes = 1, false/no = 0, numbers as they are, clamped to [0, 1] with the tool's value kept
in ``raw_score``); a score passes at full marks; a case passes when every score passes and the
sample has no error. The log's status: success = completed, error = failed, cancelled or
started = interrupted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalwh.importers.common import (
    ImportedCase,
    ImportedRun,
    ImportedScore,
    check_size,
    duration,
    integer,
    number,
    obj,
    parse_time,
    read_json_streaming,
    shape_error,
)

STATUS = {"success": "completed", "error": "failed", "cancelled": "interrupted"}
LETTERS = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}
WORDS = {"yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}
SAMPLE_FILE = re.compile(r"^samples/.+_epoch_\d+\.json$")
KNOWN_SAMPLE = {
    "id",
    "epoch",
    "input",
    "target",
    "output",
    "scores",
    "metadata",
    "model_usage",
    "total_time",
    "error",
    "messages",
    "events",  # the transcript: large, and already summed up in the fields above
    "attachments",
    "events_data",
}
if TYPE_CHECKING:
    from evalwh.importers.evalzip import EvalZip

FIX = "pass a log written by inspect_ai (an .eval or .json file from its logs folder)"


def read_inspect(path: Path) -> list[ImportedRun]:
    if path.suffix == ".eval":
        from evalwh.importers.evalzip import EvalZip

        check_size(path)
        with EvalZip(path) as z:
            # one sample parsed at a time, each dropped once it is a case
            return [_run(path, _eval_header(path, z), _eval_samples(z))]
    if path.suffix == ".json":
        # the samples read one at a time, each dropped once it is a case
        with read_json_streaming(path, ("samples",)) as (header, streamed):
            if not isinstance(header, dict):
                raise shape_error(path, "(top)", "not an inspect_ai log", FIX)
            samples = (header.get("samples") or []) if streamed is None else streamed
            if not isinstance(samples, (list, Iterator)):
                raise shape_error(path, "samples", "expected a list of samples", FIX)
            return [_run(path, header, ((f"samples[{i}]", s) for i, s in enumerate(samples)))]
    raise shape_error(path, "(file)", "an inspect_ai log ends in .eval or .json", FIX)


def _run(path: Path, header: dict[str, Any], samples: Iterable[tuple[str, Any]]) -> ImportedRun:
    spec = header.get("eval")
    if not isinstance(spec, dict) or not spec.get("task") or not spec.get("model"):
        raise shape_error(path, "eval", "not an inspect_ai log (no eval.task/eval.model)", FIX)
    stats = obj(header.get("stats"))
    started = parse_time(stats.get("started_at")) or parse_time(spec.get("created"))
    if started is None:
        raise shape_error(path, "eval.created", "no start time in the log", FIX)
    packages = obj(spec.get("packages"))
    variant, model = str(spec["task"]), str(spec["model"])
    cases = [_case(s, i, where, variant, model, path) for i, (where, s) in enumerate(samples)]
    extra = {k: v for k, v in header.items() if k != "samples"}
    return ImportedRun(
        tool="inspect",
        version=str(packages["inspect_ai"]) if packages.get("inspect_ai") else None,
        suite=str(spec.get("task_display_name") or spec["task"]),
        status=STATUS.get(str(header.get("status")), "interrupted"),
        started_at=started,
        finished_at=parse_time(stats.get("completed_at")),
        cases=cases,
        extra=extra,
    )


def _eval_header(path: Path, z: EvalZip) -> dict[str, Any]:
    if "header.json" in z.names:
        header = z.json("header.json")
    elif "_journal/start.json" in z.names:
        header = z.json("_journal/start.json")
        header = {**header, "status": "started"} if isinstance(header, dict) else header
    else:
        raise shape_error(path, "header.json", "the archive has no header", FIX)
    if not isinstance(header, dict):
        raise shape_error(path, "header.json", "expected an object", FIX)
    return header


def _eval_samples(z: EvalZip) -> Iterator[tuple[str, Any]]:
    for name in z.names:
        if SAMPLE_FILE.match(name):
            yield f"member {name}", z.json(name)


def _field(where: str, name: str) -> str:
    """The place of a sample's field: ``samples[3].output.time`` in a .json log, ``member
    samples/3_epoch_1.json, $.output.time`` in an .eval one."""
    return f"{where}, $.{name}" if where.startswith("member ") else f"{where}.{name}"


def _case(sample: Any, i: int, where: str, variant: str, model: str, path: Path) -> ImportedCase:
    if not isinstance(sample, dict) or "id" not in sample:
        raise shape_error(path, f"{where} (sample {i})", "expected a sample with an id", FIX)
    output = obj(sample.get("output"))
    usage = obj(output.get("usage"))
    model_usage = obj(sample.get("model_usage"))
    costs = [number(u.get("total_cost")) for u in model_usage.values() if isinstance(u, dict)]
    known_costs = [c for c in costs if c is not None]
    error = sample.get("error")
    message = error.get("message") if isinstance(error, dict) else error
    scores = _scores(sample.get("scores"))
    latency = duration(output.get("time"), 1000.0, path, _field(where, "output.time"))
    if latency is None:
        latency = duration(sample.get("total_time"), 1000.0, path, _field(where, "total_time"))
    prompt = sample.get("input")
    epoch = integer(sample.get("epoch")) or 1
    return ImportedCase(
        variant=variant,
        model=model,
        tool_id=str(sample["id"]),
        index=i,
        vars={"input": prompt},
        metadata=obj(sample.get("metadata")),
        expected=sample.get("target"),
        messages=[{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt,
        output=output.get("completion") if isinstance(output.get("completion"), str) else None,
        passed=bool(scores) and all(s.passed for s in scores),
        score=sum(s.score for s in scores) / len(scores) if scores else None,
        error=str(message) if message else None,
        error_kind="error" if message else None,
        latency_ms=latency,
        input_tokens=integer(usage.get("input_tokens")),
        output_tokens=integer(usage.get("output_tokens")),
        cost_usd=sum(known_costs) if known_costs else None,
        repeat=epoch - 1,
        extra={k: v for k, v in sample.items() if k not in KNOWN_SAMPLE},
        scores=scores,
    )


def to_float(value: Any) -> float | None:
    """inspect's ``value_to_float``: letters, words, booleans and numbers; else None."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    n = number(value)
    if n is not None:
        return n
    if isinstance(value, str):
        text = value.strip()
        if text in LETTERS:
            return LETTERS[text]
        if text.lower() in WORDS:
            return WORDS[text.lower()]
        try:
            return float(text)
        except ValueError:
            return None
    return None


def _scores(scores: Any) -> list[ImportedScore]:
    out: list[ImportedScore] = []
    for name, result in (scores or {}).items() if isinstance(scores, dict) else []:
        if not isinstance(result, dict):
            continue
        value = result.get("value")
        parts = value.items() if isinstance(value, dict) else [(None, value)]
        for key, part in parts:
            raw = to_float(part)
            if raw is None:
                continue  # a value inspect itself cannot turn into a number
            score = min(1.0, max(0.0, raw))
            out.append(
                ImportedScore(
                    criterion=str(name) if key is None else f"{name}.{key}",
                    scorer=f"inspect:{name}",
                    score=score,
                    passed=score >= 1.0,
                    details={"value": part, "answer": result.get("answer")},
                    rationale=result.get("explanation")
                    if isinstance(result.get("explanation"), str)
                    else None,
                    raw_score=raw,
                )
            )
    return out
