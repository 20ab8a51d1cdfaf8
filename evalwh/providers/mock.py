"""The deterministic mock provider: no network, no key, scriptable per model and case.

Its script lives under ``mock:`` in a model entry::

    - id: mock-small
      provider: mock
      mock:
        latency_ms: [20, 60]            # fixed, or a deterministic value in a range
        default: "{{ expected }}"       # reply when no rule fires (Jinja2)
        rules:                          # tried in order; the first that fires answers
          - when: {case: q3}            # case / variant (one or a list), prompt (regex),
            reply: "I do not know."     # metadata (key: value) - all must hold
          - when: {variant: terse}
            rate: 0.3                   # fires for a fixed 30% of matching requests
            reply: "{{ expected | lower }}!"
          - error: "overloaded"         # an injected failure
            transient: true             # retryable: a later attempt may succeed
            rate: 0.05
          - when: {turn: 0}             # a tool loop's first request (n: after n answers)
            tool_calls:                 # the reply calls tools (docs/tools.md)
              - {name: get_weather, arguments: {city: Paris}}

The same request always gets the same answer (the draw hashes model, variant, case and
repeat; a transient error also hashes the attempt), so runs are reproducible and the
quickstart shows real, stable differences between variants and models.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from typing import Any

from evalwh.config.model import ModelSpec
from evalwh.errors import ConfigError
from evalwh.providers.base import Completion, ProviderError, Request, prompt_text

DEFAULT_REPLY = "{{ expected }}"


def _draw(*parts: object) -> float:
    """A deterministic number in [0, 1) from the given parts."""
    digest = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def _as_set(value: Any) -> set[str] | None:
    if value is None:
        return None
    return {str(v) for v in value} if isinstance(value, list) else {str(value)}


def _tokens(text: str) -> int:
    return max(1, (len(text) + 3) // 4)


def _turn(request: Request) -> int:
    """Which turn of a tool loop a request is: the answers already in its messages."""
    return sum(1 for m in request.messages if m["role"] == "assistant" and "tool_calls" in m)


class _Rule:
    def __init__(self, raw: dict[str, Any], index: int, spec: ModelSpec, file: str | None) -> None:
        from evalwh.config.prompts import compile_template

        where = f"{spec.where}.mock.rules[{index}]"
        when = raw.get("when") or {}
        self.index = index
        self.cases = _as_set(when.get("case"))
        self.variants = _as_set(when.get("variant"))
        self.metadata = dict(when.get("metadata") or {})
        self.turn = when.get("turn")
        self.tool_calls = raw.get("tool_calls")
        try:
            self.prompt = re.compile(when["prompt"]) if "prompt" in when else None
        except re.error as exc:
            raise ConfigError(
                f"bad regular expression in when.prompt: {exc}",
                file=file,
                where=f"{where}.when.prompt",
                fix="fix the pattern (Python re syntax)",
            ) from None
        self.rate = float(raw.get("rate", 1.0))
        self.reply = (
            compile_template(raw["reply"], file=file or "", where=f"{where}.reply")
            if "reply" in raw
            else None
        )
        self.error = raw.get("error")
        self.transient = bool(raw.get("transient", False))
        self.latency = raw.get("latency_ms")

    def fires(self, request: Request, prompt: str) -> bool:
        case = request.case
        if self.cases is not None and case.id not in self.cases:
            return False
        if self.variants is not None and request.variant not in self.variants:
            return False
        if any(str(case.metadata.get(k)) != str(v) for k, v in self.metadata.items()):
            return False
        if self.turn is not None and self.turn != _turn(request):
            return False
        if self.prompt is not None and not self.prompt.search(prompt):
            return False
        if self.rate >= 1.0:
            return True
        key: tuple[str | int, ...] = (
            request.model.id,
            request.variant,
            case.id,
            request.repeat,
            self.index,
        )
        if self.error is not None and self.transient:
            key += (request.attempt,)
        return _draw(*key) < self.rate


class MockProvider:
    """Deterministic answers from a script; see the module docstring."""

    # JSON by schema counts as asked natively: the script's reply is the answer either way,
    # so `--fake` runs a suite whose variants insist on `mode: native`
    structured_output = True
    tool_use = True  # a rule's tool_calls script a tool loop's model

    def __init__(self, spec: ModelSpec) -> None:
        from evalwh.config.prompts import compile_template

        script = spec.options.get("mock") or {}
        self.spec = spec
        self.rules = [_Rule(r, i, spec, None) for i, r in enumerate(script.get("rules") or [])]
        self.default = compile_template(
            script.get("default", DEFAULT_REPLY), file="", where=f"{spec.where}.mock.default"
        )
        self.latency = script.get("latency_ms", 0)

    @classmethod
    def check(cls, spec: ModelSpec, file: str | None = None) -> None:
        script = spec.options.get("mock") or {}
        from evalwh.config.prompts import compile_template

        for i, raw in enumerate(script.get("rules") or []):
            _Rule(raw, i, spec, file)
        compile_template(
            script.get("default", DEFAULT_REPLY),
            file=file or "",
            where=f"{spec.where}.mock.default",
        )

    def _latency_s(self, latency: Any, request: Request) -> float:
        if isinstance(latency, list):
            low, high = latency
            draw = _draw(
                "latency", request.model.id, request.variant, request.case.id, request.repeat
            )
            return float(low + (high - low) * draw) / 1000
        return float(latency or 0) / 1000

    async def complete(self, request: Request) -> Completion:
        prompt = prompt_text(request.messages)
        rule = next((r for r in self.rules if r.fires(request, prompt)), None)
        latency = self._latency_s(
            rule.latency if rule and rule.latency is not None else self.latency, request
        )
        if latency > 0:
            await asyncio.sleep(latency)
        return self._answer(request, prompt, rule)

    def answer(self, request: Request) -> Completion:
        """What :meth:`complete` answers, at once (no latency): the batch API's answers."""
        prompt = prompt_text(request.messages)
        return self._answer(
            request, prompt, next((r for r in self.rules if r.fires(request, prompt)), None)
        )

    def _answer(self, request: Request, prompt: str, rule: _Rule | None) -> Completion:
        if rule is not None and rule.error is not None:
            raise ProviderError(f"mock: {rule.error}", retryable=rule.transient, kind="provider")
        template = rule.reply if rule is not None and rule.reply is not None else self.default
        case = request.case
        context = {
            **case.vars,
            "vars": case.vars,
            "expected": "" if case.expected is None else case.expected,
            "case": {"id": case.id, "metadata": case.metadata},
            "variant": request.variant,
            "model": request.model.id,
            "prompt": prompt,
        }
        from evalwh.config.prompts import is_sandbox_violation

        try:
            text = template.render(context)
        except Exception as exc:
            if is_sandbox_violation(exc):  # an attribute name computed from data; nothing ran
                raise ProviderError(
                    f"mock: reply template sandbox violation: {exc}", kind="provider"
                ) from None
            raise ProviderError(f"mock: reply template failed: {exc}", kind="provider") from None
        completion = Completion(
            text=text, input_tokens=_tokens(prompt), output_tokens=_tokens(text)
        )
        if rule is not None and rule.tool_calls and request.tools is not None:
            turn = _turn(request)
            completion.tool_calls = [
                {
                    "id": f"call_{turn}_{i}",
                    "name": c["name"],
                    "arguments": c.get("arguments") or {},
                }
                for i, c in enumerate(rule.tool_calls)
            ]
            completion.finish_reason = "tool_calls"
            if rule.reply is None:  # calls only, no text beside them
                completion.text = ""
                completion.output_tokens = _tokens(json.dumps(completion.tool_calls))
        return completion

    def batch_api(self) -> Any:
        """The mock's batch API (evalwh.providers.batch_mock): jobs kept as files, answered
        as :meth:`complete` would, scripted by ``mock.batch``."""
        from evalwh.providers.batch_mock import MockBatchApi

        return MockBatchApi(self)

    async def aclose(self) -> None:
        return None
