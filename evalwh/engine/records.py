"""Turn a finished cell into warehouse rows (column order of evalwh.warehouse.writer)."""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any

from evalwh.config.model import ModelSpec
from evalwh.config.secrets import known_secret_values, redact, redact_tree
from evalwh.engine.answers import CachedAnswer
from evalwh.engine.runner import CellResult
from evalwh.warehouse.writer import CACHE_COLUMNS, RunWriter, to_json


def _clean(text: str | None) -> str | None:
    """An error as stored: redacted again here, whatever produced it (provider, scorer,
    check), so the warehouse and everything read from it (Parquet, exports, --json, MCP)
    never holds a known secret."""
    return None if text is None else redact(text)


KNOWN_EVERY_S = 0.1  # how stale the list of known secrets the rows are redacted with may be


class RowSink:
    """The engine's sink: converts results to rows and buffers them in a RunWriter.

    Case fields that repeat for every variant x model (vars, expected, metadata) are
    serialised once per case (remembered for the last ``CASE_MEMO`` cases, so memory does
    not grow with the dataset).
    """

    CASE_MEMO = 4096

    def __init__(
        self, writer: RunWriter, run_id: str, *, no_look: bool = False, redact_outputs: bool = True
    ) -> None:
        self.writer = writer
        self.run_id = run_id
        # privacy.redact_outputs (default on): what a model answered (its text, refusal,
        # reasoning, tool calls, raw values, a judge's rationale) is stored redacted like an
        # error is: known secrets and key shapes become ***
        self.redact_outputs = redact_outputs
        # no-look (docs/no-look.md): ids, metadata, scores, pass/fail, tokens, cost, latency
        # and error classes only; vars, expected, labels, messages, outputs, rationales,
        # details and check output are never stored
        self.no_look = no_look
        # oldest first: a dict's first key is found by skipping the slots of the keys deleted
        # before it (~8 us a case once full), an OrderedDict pops it at once (~1 us)
        self._case_json: OrderedDict[str, tuple[str | None, ...]] = OrderedDict()
        self.passed = 0
        self.errors = 0
        self.seen = 0
        self._known_values: list[str] | None = None
        self._known_at = 0.0

    def _case_fields(self, result: CellResult) -> tuple[str | None, ...]:
        case = result.case
        fields = self._case_json.get(case.id)
        if fields is None:
            fields = (
                (None, None, to_json(case.metadata), None, None)
                if self.no_look
                else (
                    to_json(case.vars),
                    to_json(case.expected),
                    to_json(case.metadata),
                    to_json(case.human_label),
                    to_json(attachment_fields(case.files)) if case.files else None,
                )
            )
            memo = self._case_json
            if len(memo) >= self.CASE_MEMO:
                memo.popitem(last=False)  # the oldest
            memo[case.id] = fields
        return fields

    def __call__(self, result: CellResult) -> None:
        now = time.time_ns() // 1000  # created_at: microseconds since the epoch (UTC)
        scored = result.scored
        self.seen += 1
        self.passed += scored.passed
        self.errors += result.error is not None
        run_id, variant, model, case_id, repeat = (
            self.run_id,
            result.variant,
            result.model.id,
            result.case.id,
            result.repeat,
        )
        vars_json, expected, metadata, human_label, attachments = self._case_fields(result)
        check, hide = result.check, self.no_look
        known = self._known() if self.redact_outputs and not hide else None
        if hide:  # the engine already reduced a no-look error to its status and class
            messages, output, error = None, None, result.error
        else:
            messages, error = to_json(result.messages), _clean(result.error)
            output = result.output if known is None else redact_tree(result.output, known)
        self.writer.add_case(
            [
                run_id,
                variant,
                model,
                case_id,
                repeat,
                vars_json,
                expected,
                metadata,
                human_label,
                messages,
                output,
                error,
                result.error_kind,
                result.latency_ms,
                result.input_tokens,
                result.output_tokens,
                result.cost_usd,
                result.cached,
                result.request_hash,
                result.attempts,
                scored.score,
                scored.passed,
                now,
                result.judge_cost_usd,
                *((None, None, None, None) if check is None else _check_fields(check, hide)),
                attachments,
                result.queued_ms,
                *_wire_fields(result.wire, hide, known),
            ]
        )
        if result.turns and not hide:  # a no-look run stores no transcript
            self._turns(result, now, known)
        add_score = self.writer.add_score
        for c in scored.criteria:
            details = c.details
            add_score(
                [
                    run_id,
                    variant,
                    model,
                    case_id,
                    repeat,
                    c.name,
                    c.scorer,
                    c.score,
                    c.passed,
                    c.weight,
                    c.required,
                    None if details is None or hide else to_json(details),
                    None if hide else _answer(c.rationale, known),
                    ("error" if c.error else None) if hide else _clean(c.error),
                    c.judge_model,
                    c.raw_score,
                    c.cost_usd,
                ]
            )

    def _known(self) -> list[str]:
        """The known secrets, taken again at most every KNOWN_EVERY_S: reading them scans the
        environment (~50 us): once per answer it was a third of the journal's cost per cell
        and half the CPU of a cached rerun's rows."""
        now = time.monotonic()
        if self._known_values is None or now - self._known_at >= KNOWN_EVERY_S:
            self._known_values, self._known_at = known_secret_values(), now
        return self._known_values

    def _turns(self, result: CellResult, now: int, known: list[str] | None) -> None:
        """A tool loop's steps (evalwh.engine.toolloop.Turn): what the model and the tools
        said is stored redacted as answers are (unless ``redact_outputs: false``), the tools'
        errors cleaned as errors are."""
        key = (self.run_id, result.variant, result.model.id, result.case.id, result.repeat)
        add = self.writer.add_turn
        for t in result.turns or ():
            add(
                [
                    *key,
                    t.seq,
                    t.turn,
                    t.role,
                    _answer(t.content, known),
                    t.tool_name,
                    t.call_id,
                    to_json(_answer(t.arguments, known)),
                    to_json(_answer(t.result, known)),
                    _clean(t.error),
                    t.args_valid,
                    t.latency_ms,
                    t.input_tokens,
                    t.output_tokens,
                    t.cost_usd,
                    t.cached,
                    t.finish_reason,
                    now,
                ]
            )

    def remember(self, key: str, model: ModelSpec, answer: CachedAnswer) -> None:
        """A new successful answer (or judge reply) for the response cache."""
        self.writer.add_cache(cache_row(key, model, answer, self.run_id))

    def journal_record(self, key: str, model: ModelSpec, answer: CachedAnswer) -> dict[str, Any]:
        """An answer as the journal keeps it (evalwh.engine.journal): its response-cache row
        by column name, the answer redacted as the cases table stores it (unless
        ``redact_outputs`` is off): the journal is a file on disk too."""
        known = self._known() if self.redact_outputs else None
        row = cache_row(key, model, answer, self.run_id, known)
        return dict(zip((name for name, _ in CACHE_COLUMNS), row, strict=True))


def cache_row(
    key: str, model: ModelSpec, answer: CachedAnswer, run_id: str, known: list[str] | None = None
) -> list[Any]:
    """An answer's response-cache row (CACHE_COLUMNS); its text and wire values redacted
    against ``known`` unless it is None."""
    return [
        key,
        model.provider,
        model.model,
        _answer(answer.output, known),
        answer.input_tokens,
        answer.output_tokens,
        answer.latency_ms,
        time.time_ns() // 1000,
        run_id,
        to_json(_answer(answer.wire, known)),
    ]


def attachment_fields(files: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A case's files as stored: name -> hash, media type and size (the bytes are in the
    artifact store, evalwh.warehouse.artifacts)."""
    return {
        name: {"sha256": f.sha256, "media_type": f.media_type, "bytes": f.size}
        for name, f in files.items()
    }


NO_WIRE = (None,) * 8


def _answer(value: Any, known: list[str] | None) -> Any:
    """Model output as stored: redacted against ``known``, as it is when ``known`` is None
    (``redact_outputs: false``)."""
    return value if known is None or value is None else redact_tree(value, known)


def _wire_fields(
    wire: dict[str, Any] | None, hide: bool, known: list[str] | None = None
) -> tuple[Any, ...]:
    """The columns of how an answer ended (finish_reason ... extra). A no-look run keeps the
    finish reason and the token counts: the refusal, tool calls, reasoning and the raw values
    (which may quote the answer) are model output, redacted against ``known`` unless it is
    None (``redact_outputs: false``; a refusal is then still cleaned like an error)."""
    if not wire:
        return NO_WIRE
    get = wire.get
    if hide:
        return (get("finish_reason"), None, None, None, *_wire_tokens(wire), None)
    return (
        get("finish_reason"),
        _clean(get("refusal")) if known is None else _answer(get("refusal"), known),
        to_json(_answer(get("tool_calls"), known)),
        _answer(get("reasoning"), known),
        *_wire_tokens(wire),
        to_json(_answer(get("extra"), known)),
    )


def _wire_tokens(wire: dict[str, Any]) -> tuple[Any, ...]:
    return (
        wire.get("reasoning_tokens"),
        wire.get("cache_read_tokens"),
        wire.get("cache_write_tokens"),
    )


def _check_fields(check: Any, hide: bool) -> tuple[Any, ...]:
    """A check's columns; a no-look run keeps pass/fail and the exit status only."""
    if hide:
        return (check.passed, check.exit_code, None, None)
    return (check.passed, check.exit_code, check.output, check.error)
