"""A scorecard: every criterion of an eval applied to one output, and the case's verdict.

The case score is the weighted mean of the criterion scores (criteria with weight 0 are
informational and left out); the case passes when every ``required`` criterion passes.
A scorer that raises never aborts the case: its criterion gets ``error``, score 0, a fail.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalwh.config.model import Case, Criterion
from evalwh.errors import ConfigError
from evalwh.scoring.base import ScoreResult, ScorerFn, build_scorer
from evalwh.scoring.tolerance import TOLERANCE


@dataclass
class CriterionScore:
    name: str
    scorer: str  # the criterion type
    score: float
    passed: bool
    weight: float
    required: bool
    details: dict[str, Any] | None
    rationale: str | None
    error: str | None
    judge_model: str | None = None
    raw_score: float | None = None
    cost_usd: float | None = None


@dataclass
class CaseScore:
    criteria: list[CriterionScore]
    score: float
    passed: bool


def _describe(exc: BaseException) -> str:
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


class Scorecard:
    """Built by :func:`build_scorecard`; ``score()`` is called once per output."""

    def __init__(self, criteria: list[Criterion], scorers: list[ScorerFn]) -> None:
        if len(criteria) != len(scorers):
            raise ValueError("one scorer per criterion")
        self.criteria = list(criteria)
        self._entries = tuple(
            (c.name, c.type, float(c.weight), bool(c.required), float(c.threshold), fn)
            for c, fn in zip(self.criteria, scorers, strict=True)
        )
        self._total_weight = sum(c.weight for c in self.criteria if c.weight > 0)
        # trajectory scorers (evalwh.scoring.trajectory) also take the cell's tool calls
        self._trajectory = {
            c.name
            for c, fn in zip(self.criteria, scorers, strict=True)
            if hasattr(fn, "trajectory")
        }
        # python scorers whose function has a ``transcript`` parameter (evalwh.scoring.transcript)
        self._transcript = {
            c.name
            for c, fn in zip(self.criteria, scorers, strict=True)
            if getattr(fn, "wants_transcript", False)
        }
        # what renders each criterion's templated values for a case (evalwh.scoring.values)
        self._prepare = [p for fn in scorers if (p := getattr(fn, "prepare", None)) is not None]
        # llm-judge criteria: (name, judge id); the engine awaits them and passes the results in
        self.judged = [
            (c.name, getattr(fn, "judge_id", ""))
            for c, fn in zip(self.criteria, scorers, strict=True)
            if getattr(fn, "is_judge", False)
        ]
        # semantic criteria with an embedding model: (name, model id, scorer); the engine
        # embeds (evalwh.engine.embed) and passes the results in as for judges
        self.embedded = [
            (c.name, str(model), fn)
            for c, fn in zip(self.criteria, scorers, strict=True)
            if (model := getattr(fn, "embed_model", None))
        ]

    def prepare(self, case: Case) -> None:
        """Render the criteria's templated values for ``case`` (kept for its scoring); a
        template that fails is a ConfigError naming the criterion and the case."""
        for prepare in self._prepare:
            prepare(case)

    def score(
        self,
        output: str,
        case: Case,
        given: dict[str, ScoreResult] | None = None,
        calls: list[dict[str, Any]] | None = None,
        transcript: list[dict[str, Any]] | None = None,
    ) -> CaseScore:
        """Score one output; ``given`` holds results computed elsewhere (judge criteria),
        ``calls`` the cell's tool calls, for trajectory scorers, ``transcript`` the steps of
        its tool loop, for python scorers that take them."""
        trajectory, wanting = self._trajectory, self._transcript
        if not isinstance(output, str):
            output = "" if output is None else str(output)
        rows: list[CriterionScore] = []
        weighted = 0.0
        case_passed = True
        for name, scorer, weight, required, threshold, fn in self._entries:
            try:
                if given is not None and name in given:
                    result = given[name]
                elif trajectory and name in trajectory:
                    result = fn(output, case, calls)  # type: ignore[call-arg]
                elif wanting and name in wanting:
                    result = fn(output, case, transcript or [])  # type: ignore[call-arg]
                else:
                    result = fn(output, case)
            except Exception as exc:
                row = CriterionScore(
                    name, scorer, 0.0, False, weight, required, None, None, _describe(exc)
                )
            else:
                row = _row(name, scorer, weight, required, threshold, result)
            rows.append(row)
            if weight > 0:
                weighted += weight * row.score
            if required and not row.passed:
                case_passed = False
        total = self._total_weight
        return CaseScore(rows, weighted / total if total > 0 else 0.0, case_passed)

    def failed(self, error: str) -> CaseScore:
        """The score of a request that errored (``error``): no criteria rows, a fail."""
        return CaseScore([], 0.0, False)


def _row(
    name: str, scorer: str, weight: float, required: bool, threshold: float, result: object
) -> CriterionScore:
    if not isinstance(result, ScoreResult):
        wrong = f"scorer returned {type(result).__name__}, not a ScoreResult"
        return CriterionScore(name, scorer, 0.0, False, weight, required, None, None, wrong)
    value = result.score
    error: str | None
    if result.error is not None:
        error = str(result.error)
    elif type(value) is float and 0.0 <= value <= 1.0:  # the common case (NaN fails here)
        error = None
    elif (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or math.isnan(value)
        or not 0.0 <= value <= 1.0
    ):
        error = f"scorer returned score {value!r}, outside [0, 1]"
    else:
        error = None
    if error is not None:
        return CriterionScore(
            name, scorer, 0.0, False, weight, required, result.details, result.rationale, error
        )
    value = float(value)
    passed = value >= threshold - TOLERANCE if result.passed is None else bool(result.passed)
    return CriterionScore(
        name, scorer, value, passed, weight, required, result.details, result.rationale, None
    )


def build_scorecard(criteria: list[Criterion], root: Path, file: str) -> Scorecard:
    """Build every criterion's scorer (raising ConfigError for bad options) into a Scorecard."""
    if not criteria:
        raise ConfigError(
            "the scorecard has no criteria",
            file=file,
            where="scorecard",
            fix="add at least one criterion under `scorecard:`",
        )
    seen: dict[str, str] = {}
    for c in criteria:
        if c.name in seen:
            raise ConfigError(
                f"duplicate criterion name '{c.name}' (also at {seen[c.name] or 'another entry'})",
                file=file,
                where=c.where or "scorecard",
                fix="give every criterion a unique name",
            )
        seen[c.name] = c.where
    root = Path(root)
    return Scorecard(criteria, [build_scorer(c, root, file) for c in criteria])
