"""LLM judges: prompts, and lenient parsing of their replies.

A judge is a first-class prompt: a model of its own (outside the matrix), a rubric and an
optional message template, defined once under ``judges:``. Pointwise (``llm-judge``
criteria) it returns a score on its scale; pairwise it names the better of two answers.
The engine sends judge requests through the same providers, limits, cache and cost
accounting as answers (see :mod:`evalwh.engine.runner`).

Replies are parsed leniently: a JSON object (bare, fenced, or inside prose), else a
``score: 4`` / ``4/5`` / ``winner: B`` line. A reply with no usable score fails that
criterion (with the reply's start in the error), never the run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from evalwh.config.model import Case, Criterion, Judge, Message, Variant
from evalwh.config.prompts import CompiledVariant, Rendered, messages_from_config
from evalwh.scoring.base import ScoreResult
from evalwh.scoring.jsonextract import parse_json

POINTWISE_MESSAGES = [
    {
        "role": "system",
        "content": (
            "You are a careful, strict evaluator. Grade the answer against the rubric. "
            "Reply with one JSON object and nothing else: "
            '{"score": <a number from {{ scale_min }} to {{ scale_max }}>, "rationale": "<one or two sentences>"}'
        ),
    },
    {
        "role": "user",
        "content": (
            "Rubric:\n{{ rubric }}\n\nInput:\n{{ input }}\n\n"
            "{% if expected %}Reference answer:\n{{ expected }}\n\n{% endif %}"
            "{% if transcript %}How the answer was reached (the model's tool calls and their "
            "results):\n{{ transcript }}\n\n{% endif %}"
            "Answer to grade:\n{{ output }}"
        ),
    },
]
PAIRWISE_MESSAGES = [
    {
        "role": "system",
        "content": (
            "You compare two answers to the same input and decide which is better by the rubric. "
            "Judge substance, not length or position. Reply with one JSON object and nothing else: "
            '{"winner": "A" | "B" | "tie", "rationale": "<one or two sentences>"}'
        ),
    },
    {
        "role": "user",
        "content": (
            "Rubric:\n{{ rubric }}\n\nInput:\n{{ input }}\n\n"
            "{% if expected %}Reference answer:\n{{ expected }}\n\n{% endif %}"
            "Answer A:\n{{ answer_a }}\n\nAnswer B:\n{{ answer_b }}"
        ),
    },
]
DEFAULT_RUBRIC = "The answer is correct, complete and directly addresses the input."


@dataclass
class JudgeCall:
    """What the engine sends for one judgement."""

    messages: Rendered


class JudgePrompts:
    """A judge's compiled pointwise and pairwise prompts."""

    def __init__(self, judge: Judge, file: str) -> None:
        self.judge = judge
        custom = judge.messages
        self.pointwise = self._compile(custom or messages_from_config(POINTWISE_MESSAGES), file)
        self.pairwise = self._compile(custom or messages_from_config(PAIRWISE_MESSAGES), file)

    def _compile(self, messages: tuple[Message, ...], file: str) -> CompiledVariant:
        # CompiledVariant names a part `<where>.messages[i].content[j]`: judges[0].messages[1]...
        return CompiledVariant(
            Variant(id=self.judge.id, messages=messages, source=file, where=self.judge.where)
        )

    def _context(self, case: Case, input_text: str, **extra: Any) -> Case:
        expected = case.expected
        values = {
            **case.vars,
            "input": input_text,
            "expected": "" if expected is None else expected,
            "rubric": self.judge.rubric or DEFAULT_RUBRIC,
            "scale_min": _num(self.judge.scale[0]),
            "scale_max": _num(self.judge.scale[1]),
            "output": "",
            "transcript": "",
            "answer_a": "",
            "answer_b": "",
            **extra,
        }
        return replace(case, vars=values)

    def point(self, case: Case, input_text: str, output: str, transcript: str = "") -> Rendered:
        """The pointwise prompt; ``transcript`` is the cell's tool loop as
        :func:`~evalwh.scoring.transcript.render_transcript` gives it (empty without one)."""
        return self.pointwise.render(
            self._context(case, input_text, output=output, transcript=transcript)
        )

    def pair(self, case: Case, input_text: str, answer_a: str, answer_b: str) -> Rendered:
        return self.pairwise.render(
            self._context(case, input_text, answer_a=answer_a, answer_b=answer_b)
        )


def _num(x: float) -> str:
    return f"{x:g}"


def input_text(messages: Rendered) -> str:
    """The conversation the answer replied to, as the judge sees it (system prompt left out)."""
    parts = []
    for m in messages:
        if m["role"] == "system":
            continue
        text = "".join(p.get("text", f"[{p.get('type')}]") for p in m["content"])
        parts.append(text if len(messages) <= 2 else f"{m['role']}: {text}")
    return "\n\n".join(parts)


_SCORE = re.compile(
    r"(?i)\b(?:score|rating|grade)\b\s*[:=]?\s*\**\s*(-?\d+(?:\.\d+)?)(?:\s*/\s*(\d+(?:\.\d+)?))?"
)
_FRACTION = re.compile(r"(?<![\d.])(-?\d+(?:\.\d+)?)\s*/\s*(\d+(?:\.\d+)?)(?![\d.])")
_WINNER = re.compile(
    r"(?i)\b(?:winner|verdict|better(?: answer)?|preference|prefer(?:red)?|choice)\b[\"'*\s]*"
    r"(?:is\b)?[\"'*\s:=]*(?:answer\s+)?\"?(A|B|tie|draw|equal|neither)\b"
)
RATIONALE_KEYS = ("rationale", "reasoning", "explanation", "reason", "justification")


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    return text[:160] + ("…" if len(text) > 160 else "")


def parse_score(reply: str, scale: tuple[float, float]) -> ScoreResult:
    """A pointwise judge reply -> a score in [0, 1] (raw score in details)."""
    low, high = scale
    raw: float | None = None
    rationale = None
    ok, value, _ = parse_json(reply, extract=True)
    if ok and isinstance(value, dict):
        for key in ("score", "rating", "grade"):
            if key in value:
                raw = _to_float(value[key])
                break
        rationale = next((str(value[k]) for k in RATIONALE_KEYS if value.get(k)), None)
    if raw is None:
        match = _SCORE.search(reply) or _FRACTION.search(reply)
        if match:
            raw = float(match.group(1))
            out_of = float(match.group(2)) if match.group(2) else None
            if out_of and out_of != high:  # "4/5" on another scale: rescale
                raw = low + raw / out_of * (high - low)
    if raw is None:
        return ScoreResult(0.0, error=f"judge reply has no usable score: {_excerpt(reply)!r}")
    if not low <= raw <= high:
        return ScoreResult(
            0.0,
            error=f"judge score {raw:g} is outside its scale {low:g}..{high:g}: {_excerpt(reply)!r}",
        )
    return ScoreResult((raw - low) / (high - low), details={"raw_score": raw}, rationale=rationale)


def _to_float(value: Any) -> float | None:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        match = re.match(r"\s*(-?\d+(?:\.\d+)?)", value)
        return float(match.group(1)) if match else None
    return None


def parse_winner(reply: str) -> tuple[str, str | None]:
    """A pairwise judge reply -> ("A" | "B" | "tie" | "invalid", rationale)."""
    ok, value, _ = parse_json(reply, extract=True)
    rationale = None
    if ok and isinstance(value, dict):
        rationale = next((str(value[k]) for k in RATIONALE_KEYS if value.get(k)), None)
        for key in ("winner", "verdict", "better", "preference", "choice"):
            if key in value and value[key] is not None:
                return _normal(str(value[key])), rationale
    match = _WINNER.search(reply)
    if match:
        return _normal(match.group(1)), rationale
    bare = reply.strip().strip(".\"'*").upper()
    if bare in ("A", "B", "TIE"):
        return _normal(bare), rationale
    return "invalid", rationale


def _normal(word: str) -> str:
    word = word.strip().strip(".\"'*").lower()
    if word in ("a", "answer a"):
        return "A"
    if word in ("b", "answer b"):
        return "B"
    if word in ("tie", "draw", "equal", "neither", "both"):
        return "tie"
    return "invalid"


def combine(verdict_ab: str, verdict_ba: str) -> tuple[str, bool]:
    """Verdicts from both orders -> (baseline | candidate | tie, flipped).

    In the AB order A is the baseline; in BA, A is the candidate. A side wins only when both
    orders name it; anything else is a tie. ``flipped``: the two orders disagree.
    """
    ab = {"A": "baseline", "B": "candidate", "tie": "tie"}.get(verdict_ab, "invalid")
    ba = {"A": "candidate", "B": "baseline", "tie": "tie"}.get(verdict_ba, "invalid")
    flipped = ab != ba and "invalid" not in (ab, ba)
    if ab == ba and ab in ("baseline", "candidate"):
        return ab, False
    return "tie", flipped


def judge_criterion(criterion: Criterion, root: Any, file: str) -> Any:
    """Registry factory for ``llm-judge``: the engine scores these criteria asynchronously."""

    def not_here(output: str, case: Case) -> ScoreResult:
        return ScoreResult(
            0.0, error="llm-judge criteria are scored by the engine, not synchronously"
        )

    not_here.is_judge = True  # type: ignore[attr-defined]
    not_here.judge_id = criterion.options["judge"]  # type: ignore[attr-defined]
    return not_here
