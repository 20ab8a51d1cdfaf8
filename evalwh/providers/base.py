"""The small async Provider protocol every model backend implements.

A provider gets a :class:`Request` (rendered messages + the model's spec) and returns a
:class:`Completion` (text, why it ended, token usage) or raises :class:`ProviderError`. The engine owns
timing, timeouts, retries, rate limits, caching and cost; a provider only speaks its wire
format. ``retryable`` tells the engine whether another attempt can succeed (429, 5xx, a
dropped connection) or not (400, 401, 404); ``retry_after`` carries a server's Retry-After.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from evalwh.config.model import Case, ModelSpec


@dataclass(frozen=True)
class Request:
    model: ModelSpec
    messages: list[dict[str, Any]]  # [{"role": ..., "content": [{"type": "text", "text": ...}]}]
    case: Case
    variant: str
    repeat: int = 0
    attempt: int = 1
    # JSON by schema, asked for natively (an evalwh.config.outputs.OutputSpec: schema, name,
    # strict). Only a provider whose class sets ``structured_output = True`` is given one; it
    # maps it onto its own wire format (OpenAI response_format, Anthropic a forced tool call,
    # Gemini generationConfig.responseSchema) and returns the JSON as the completion's text.
    output: Any = None
    # tools the model may call (an evalwh.config.tools.ToolUse: definitions, tool_choice); only
    # a provider whose class sets ``tool_use = True`` is given one. A tool loop's later turns
    # carry the transcript in ``messages``: an assistant message may hold ``tool_calls``
    # ([{"id", "name", "arguments"}]) and a ``tool`` message answers one call (``tool_call_id``,
    # ``name``, ``is_error``, the result as its text part); each provider maps these onto its
    # native format.
    tools: Any = None

    @property
    def params(self) -> dict[str, Any]:
        return self.model.params


# Why an answer ended, the same words for every provider (the provider's own value is kept in
# ``Completion.extra``): ``stop`` it finished (or hit a stop sequence), ``length`` it was cut at
# the token limit, ``tool_calls`` it called tools, ``refusal`` the model declined,
# ``content_filter`` the provider's safety system blocked the prompt or the answer, ``error``
# the provider says the generation failed.
FINISH_REASONS = ("stop", "length", "tool_calls", "refusal", "content_filter", "error")


@dataclass
class Completion:
    """One answer as the provider gave it.

    ``text`` is the answer (the text before a tool call included; reasoning never). Tokens:
    ``input_tokens`` counts every prompt token, cache reads and writes included (of which
    ``cache_read_tokens`` / ``cache_write_tokens``); ``output_tokens`` every generated token,
    reasoning included (of which ``reasoning_tokens``), as the providers bill them.
    """

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # the provider's raw values, stored
    finish_reason: str | None = None  # one of FINISH_REASONS, or None when not said
    refusal: str | None = None  # the model's refusal text, apart from the answer
    tool_calls: list[dict[str, Any]] | None = None  # [{"name": ..., "arguments": {...}}]
    reasoning: str | None = None  # thinking / reasoning text the API returned; never scored
    reasoning_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    # the request's own time, from sending it to the last byte of the answer, when the
    # provider measures it (HTTP providers); None: the engine times the whole complete() call
    latency_ms: float | None = None

    def wire(self) -> dict[str, Any] | None:
        """How the answer ended and its token kinds, as stored beside it (cases and the
        response cache): the fields of WIRE_FIELDS that are set, or None."""
        found = {k: getattr(self, k) for k in WIRE_FIELDS}
        kept = {k: v for k, v in found.items() if v is not None and v != {} and v != []}
        return kept or None


WIRE_FIELDS = (
    "finish_reason",
    "refusal",
    "tool_calls",
    "reasoning",
    "reasoning_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "extra",
)


class ProviderError(Exception):
    """A request failed. ``retryable``: another attempt may succeed."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = False,
        retry_after: float | None = None,
        status: int | None = None,
        kind: str = "provider",
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status
        self.kind = kind


# The words a stored error uses for its cause, written here and read back by the hint of a
# failed run (evalwh.api.hints.failure_causes): an auth error names its key variable, a
# connection that could not be made names the URL.
KEY_NAMED = re.compile(
    r"\(check ([A-Za-z_][A-Za-z0-9_]*)\)|\b([A-Za-z_][A-Za-z0-9_]*) is not set\b"
)
NO_CONNECTION = re.compile(r"cannot connect to (\S+) \(")


def check_key(name: str) -> str:
    """How an auth error names the variable its key came from: ``(check NAME)``."""
    return f"(check {name})"


def cannot_connect(url: str) -> str:
    """How a connection that could not be made (refused, unresolvable) names its URL."""
    return f"cannot connect to {url}"


@dataclass(frozen=True)
class SecretNeed:
    """A secret a model's requests look up: any one of ``names`` will do (the first is the one
    to set), asked for at ``where`` in the config (``models[0]``, ``models[0].api_key_env``,
    ``models[0].headers.X-Api-Key``). A provider declares them with a classmethod
    ``secrets_needed(spec) -> list[SecretNeed]`` (evalwh.providers.secrets_needed)."""

    names: tuple[str, ...]
    where: str


@runtime_checkable
class Provider(Protocol):
    """One instance per configured model, created by :func:`evalwh.providers.create`."""

    async def complete(self, request: Request) -> Completion: ...

    async def aclose(self) -> None: ...


def int_or_none(value: Any) -> int | None:
    """A token count from a reply: an int, else None (a bool, a float or a string is not one)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def message_text(message: dict[str, Any]) -> str:
    """The text parts of a rendered message, joined (for providers that take plain strings)."""
    return "".join(p.get("text", "") for p in message["content"] if p.get("type") == "text")


def prompt_text(messages: list[dict[str, Any]]) -> str:
    return "\n\n".join(f"{m['role']}: {message_text(m)}" for m in messages)


MAX_OUTPUT_BYTES = 1024 * 1024  # bytes of an answer stored (``max_output_bytes``); the rest counted


def cut_answer(completion: Completion, limit: int) -> Completion:
    """``completion`` with its text cut to ``limit`` UTF-8 bytes (at a character's start),
    marked as :func:`truncated` when it was cut."""
    if len(completion.text) <= limit // 4:  # four bytes a character at most: nothing to cut
        return completion
    data = completion.text.encode("utf-8", errors="surrogatepass")
    if len(data) <= limit:
        return completion
    completion.text = data[:limit].decode("utf-8", errors="ignore")
    return truncated(completion, limit, len(data))


def truncated(completion: Completion, kept: int, total: int) -> Completion:
    """``completion`` marked as cut: ``extra.output_truncated`` says what was kept of what."""
    completion.extra = {
        **completion.extra,
        "output_truncated": {"kept_bytes": kept, "total_bytes": total},
    }
    return completion
