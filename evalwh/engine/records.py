"""Turn a finished cell into warehouse rows (column order of evalwh.warehouse.writer)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from evalwh.engine.runner import CellResult
from evalwh.warehouse.writer import RunWriter, to_json


class RowSink:
    """The engine's sink: converts results to rows and buffers them in a RunWriter.

    Case fields that repeat for every variant x model (vars, expected, metadata) are
    serialised once per case.
    """

    def __init__(self, writer: RunWriter, run_id: str) -> None:
        self.writer = writer
        self.run_id = run_id
        self._case_json: dict[str, tuple[str | None, ...]] = {}
        self.passed = 0
        self.errors = 0
        self.seen = 0

    def _case_fields(self, result: CellResult) -> tuple[str | None, ...]:
        case = result.case
        fields = self._case_json.get(case.id)
        if fields is None:
            fields = (
                to_json(case.vars),
                to_json(case.expected),
                to_json(case.metadata),
                to_json(case.human_label),
            )
            self._case_json[case.id] = fields
        return fields

    def __call__(self, result: CellResult) -> None:
        now = datetime.now(timezone.utc)
        scored = result.scored
        self.seen += 1
        self.passed += scored.passed
        self.errors += result.error is not None
        key = (self.run_id, result.variant, result.model.id, result.case.id, result.repeat)
        row: list[Any] = [
            *key,
            *self._case_fields(result),
            to_json(result.messages),
            result.output,
            result.error,
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
        ]
        self.writer.add_case(row)
        for c in scored.criteria:
            self.writer.add_score(
                [
                    *key,
                    c.name,
                    c.scorer,
                    c.score,
                    c.passed,
                    c.weight,
                    c.required,
                    to_json(c.details),
                    c.rationale,
                    c.error,
                ]
            )
        if result.output is not None and not result.cached:
            self.writer.add_cache(
                [
                    result.request_hash,
                    result.model.provider,
                    result.model.model,
                    result.output,
                    result.input_tokens,
                    result.output_tokens,
                    result.latency_ms,
                    now,
                    self.run_id,
                ]
            )
