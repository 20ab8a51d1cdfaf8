"""Scoring: criteria (exact, contains, regex, JSON, python, plug-ins) and the scorecard.

Cheap to import: heavy dependencies (jsonschema) load only when a scorer that needs them is
built.
"""

from __future__ import annotations

from evalwh.scoring.base import SCORERS, ScoreResult, ScorerFn, build_scorer
from evalwh.scoring.scorecard import CaseScore, CriterionScore, Scorecard, build_scorecard

__all__ = [
    "SCORERS",
    "CaseScore",
    "CriterionScore",
    "ScoreResult",
    "Scorecard",
    "ScorerFn",
    "build_scorecard",
    "build_scorer",
]
