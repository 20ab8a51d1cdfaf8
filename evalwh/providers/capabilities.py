"""Which message parts each provider (and model) accepts, their size limits, and their tokens.

A rendered binary part (:mod:`evalwh.config.attachments`) is checked against this table when
a run is planned — ``evalwh validate``, a dry run, before anything is sent — so an
unsupported part is a ConfigError naming the case, the part, the model and what would
accept it, never an error in the middle of a run:

=====================  ==========================  ======================  ===============
provider               image                       file (documents)        audio / video
=====================  ==========================  ======================  ===============
``mock``, ``command``  any                         any                     any / any
``anthropic``          png jpeg gif webp; 5 MB     pdf, text/plain         no / no
                       base64 each (3.75 MB raw)   32 MB per request
``openai``             png jpeg gif webp           pdf                     wav mp3 (audio
                       50 MB per request           32 MB per request       models) / no
``openai-compatible``  as openai, no size limits   as openai               as openai / no
``google``             png jpeg webp heic heif     pdf, text/*             wav mp3 aiff aac
                                                                           ogg flac / no
=====================  ==========================  ======================  ===============

Per model: ``openai`` takes audio only on its audio models (``*audio*``) and images not on
``gpt-3.5*``, ``o1-mini*``, ``o3-mini*``; ``google``'s whole request (base64) is at most
20 MB inline. Video is typed, hashed and stored, and only ``mock`` and ``command`` take it.
A URL part (``- image: https://...``) is sent as a URL by anthropic and openai (images only).
A provider from a plug-in declares a ``capabilities`` class attribute (a :class:`Capability`);
one that declares none is sent every part as it is.

Parameters a model refuses (:func:`sampling_problem`, checked at validation; evalwh sends
only the parameters a config sets, plus what an API requires: Anthropic's ``max_tokens``):

- OpenAI's reasoning models (``o1*``, ``o3*``, ``o4*``, ``gpt-5*`` but ``gpt-5-chat*``) take no
  ``temperature`` or ``top_p``; ``reasoning_effort`` is for them alone (and any
  ``openai-compatible`` server).
- Anthropic's ``claude-sonnet-4-5``, ``claude-haiku-4-5`` and ``claude-opus-4-1`` (and later)
  take ``temperature`` or ``top_p``, not both; with ``thinking_budget`` (at least 1,024) no
  ``temperature`` and a ``max_tokens``, when set, above the budget.
- ``thinking_budget`` is for ``anthropic`` and ``google`` (Gemini's ``thinkingBudget``: 0 off,
  -1 dynamic); ``reasoning_effort`` is not.

Token estimates for the cost estimate and ``--max-cost`` (:func:`estimate_tokens`):

- anthropic image: width x height / 750, after scaling the long edge down to 1568 px;
  a PDF page: 2,000 tokens (text plus the page image, the middle of Anthropic's 1,500-3,000).
- openai image (detail high): fit in 2048x2048, shortest side to 768, 170 per 512 px tile
  plus 85; a WAV: 10 tokens per second; a PDF page: 1,000 tokens (text plus the image).
- google image: 258 when both sides are at most 384 px, else 258 per 768x768 tile; audio:
  32 tokens per second; a PDF page: 258 tokens.
- mock and command: 0 (no price). Anything else (an MP3's length, an image whose header
  holds no size, a URL) cannot be estimated: the estimate says so rather than counting $0.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from evalwh.config.model import ModelSpec
from evalwh.errors import ConfigError

MB = 1024 * 1024
ANY = None  # every media type of the part's kind


# OpenAI models that reason before answering: no sampling parameters, reasoning_effort taken
REASONING_MODELS = ("o1*", "o3*", "o4*", "gpt-5*")
NOT_REASONING = ("gpt-5-chat*",)
# Anthropic models that refuse temperature and top_p together
ONE_SAMPLING_PARAM = (
    "claude-sonnet-4-5*",
    "claude-haiku-4-5*",
    "claude-opus-4-1*",
    "claude-opus-4-5*",
)
MIN_THINKING_BUDGET = 1024  # Anthropic's smallest budget_tokens


def reasoning_model(model: str) -> bool:
    """An OpenAI reasoning model (o-series, gpt-5): it refuses temperature and top_p."""
    return _matches(model, REASONING_MODELS) and not _matches(model, NOT_REASONING)


def _matches(model: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(model, p) for p in patterns)


def sampling_problem(spec: ModelSpec) -> tuple[str, str] | None:
    """Why the API would refuse this model's params (message, fix), or None."""
    params, provider, model = spec.params, spec.provider, spec.model
    sampling = [k for k in ("temperature", "top_p") if params.get(k) is not None]
    effort, budget = params.get("reasoning_effort"), params.get("thinking_budget")
    if effort is not None and (
        provider in ("anthropic", "google") or (provider == "openai" and not reasoning_model(model))
    ):
        return (
            f"{provider} model '{model}' takes no reasoning_effort",
            "use it with an OpenAI reasoning model (o3, o4-mini, gpt-5); Anthropic and Gemini "
            "take thinking_budget",
        )
    if budget is not None and provider == "openai":
        return (
            f"openai model '{model}' takes no thinking_budget",
            "use reasoning_effort: low | medium | high",
        )
    if provider == "openai" and reasoning_model(model) and sampling:
        return (
            f"OpenAI reasoning model '{model}' refuses {' and '.join(sampling)}",
            f"remove {', '.join(sampling)} from its params (or from defaults.params); "
            "set reasoning_effort instead",
        )
    if provider != "anthropic":
        return None
    if len(sampling) == 2 and _matches(model, ONE_SAMPLING_PARAM):
        return (
            f"Anthropic model '{model}' refuses temperature and top_p together",
            "keep one of them",
        )
    if budget is None:
        return None
    if budget < MIN_THINKING_BUDGET:
        return (
            f"thinking_budget {budget} is below Anthropic's minimum of {MIN_THINKING_BUDGET}",
            f"set thinking_budget: {MIN_THINKING_BUDGET} or more",
        )
    if params.get("temperature") is not None:
        return (
            "Anthropic refuses temperature with extended thinking (thinking_budget)",
            "remove temperature",
        )
    limit = params.get("max_tokens")
    if limit is not None and limit <= budget:
        return (
            f"max_tokens {limit} is not above thinking_budget {budget}: the answer would have "
            "no room after the thinking",
            f"raise max_tokens above {budget}, or leave it out (then it is the budget + 1024)",
        )
    return None


@dataclass(frozen=True)
class Limit:
    bytes: int
    label: str
    base64: bool = False  # the limit is on the base64 text, as the API measures it

    def over(self, size: int) -> bool:
        return (4 * math.ceil(size / 3) if self.base64 else size) > self.bytes


@dataclass(frozen=True)
class Capability:
    """What one provider or model accepts: part kind -> media types (``ANY``: all)."""

    kinds: dict[str, frozenset[str] | None]
    part_limits: dict[str, Limit] = field(default_factory=dict)  # per part of a kind
    request_limits: dict[str, Limit] = field(default_factory=dict)  # parts of a kind, summed
    request_limit: Limit | None = None  # every binary part of a request, summed
    urls: frozenset[str] = frozenset()  # kinds that may be sent as a URL

    def accepts(self, kind: str, media_type: str | None) -> bool:
        if kind not in self.kinds:
            return False
        allowed = self.kinds[kind]
        return allowed is None or media_type is None or media_type in allowed


def _types(*names: str) -> frozenset[str]:
    return frozenset(names)


EVERYTHING = Capability(
    {"image": ANY, "file": ANY, "audio": ANY, "video": ANY},
    urls=frozenset({"image", "file", "audio", "video"}),
)
IMAGES = _types("image/png", "image/jpeg", "image/gif", "image/webp")
OPENAI = Capability(
    {
        "image": IMAGES,
        "file": _types("application/pdf"),
        "audio": _types("audio/wav", "audio/mpeg"),
    },
    request_limits={
        "image": Limit(50 * MB, "50 MB of images per request"),
        "file": Limit(32 * MB, "32 MB of files per request"),
    },
    urls=frozenset({"image"}),
)
TABLE: dict[str, Capability] = {
    "mock": EVERYTHING,
    "command": EVERYTHING,
    "anthropic": Capability(
        {"image": IMAGES, "file": _types("application/pdf", "text/plain")},
        part_limits={"image": Limit(5 * MB, "5 MB base64 per image (3.75 MB raw)", True)},
        request_limit=Limit(32 * MB, "32 MB per request", True),
        urls=frozenset({"image"}),
    ),
    "openai": OPENAI,
    "openai-compatible": replace(OPENAI, request_limits={}),
    "google": Capability(
        {
            "image": _types("image/png", "image/jpeg", "image/webp", "image/heic", "image/heif"),
            "file": _types(
                "application/pdf",
                "text/plain",
                "text/html",
                "text/csv",
                "text/markdown",
                "text/xml",
                "application/json",
            ),
            "audio": _types(
                "audio/wav", "audio/mpeg", "audio/aiff", "audio/aac", "audio/ogg", "audio/flac"
            ),
        },
        request_limit=Limit(20 * MB, "20 MB per request inline (base64)", True),
    ),
}
# Models whose API refuses tools (function calling), though their provider offers them.
NO_TOOLS: list[tuple[str, str]] = [
    ("openai", "o1-mini*"),
    ("openai", "o1-preview*"),
    ("openai", "gpt-3.5-turbo-instruct*"),
    ("openai", "*-search-preview*"),
    ("google", "gemini-*-image*"),
]


def tools_problem(model: ModelSpec) -> str | None:
    """Why ``model`` cannot be offered tools though its provider can (:data:`NO_TOOLS`)."""
    for provider, pattern in NO_TOOLS:
        if provider == model.provider and fnmatch.fnmatchcase(model.model, pattern):
            return f"{model.model} does not support tool calls"
    return None


# Per model, where one API serves models with different inputs: (provider, glob, change).
MODEL_RULES: list[tuple[str, str, dict[str, Any]]] = [
    ("openai", "gpt-3.5*", {"drop": ("image", "file", "audio")}),
    ("openai", "o1-mini*", {"drop": ("image", "file", "audio")}),
    ("openai", "o3-mini*", {"drop": ("image", "file", "audio")}),
    ("openai", "*audio*", {}),
    ("openai", "*", {"drop": ("audio",)}),  # audio input: the audio models only
]


def capability(model: ModelSpec) -> Capability:
    """What ``model`` accepts: the provider's row, narrowed by the first matching model rule."""
    from evalwh.providers import provider_class

    declared = getattr(provider_class(model.provider), "capabilities", None)
    cap = declared if isinstance(declared, Capability) else TABLE.get(model.provider, EVERYTHING)
    for provider, pattern, change in MODEL_RULES:
        if provider == model.provider and fnmatch.fnmatchcase(model.model, pattern):
            drop = change.get("drop", ())
            return replace(cap, kinds={k: v for k, v in cap.kinds.items() if k not in drop})
    return cap


def _accepted_by(kind: str, media_type: str | None, url: bool) -> str:
    names = [
        name
        for name, cap in TABLE.items()
        if cap.accepts(kind, media_type) and (not url or kind in cap.urls)
    ]
    return ", ".join(names)


def binary_parts(messages: list[dict[str, Any]]) -> Iterable[tuple[int, int, dict[str, Any]]]:
    for i, message in enumerate(messages):
        for j, part in enumerate(message["content"]):
            if part.get("type", "text") != "text":
                yield i, j, part


def check_parts(
    model: ModelSpec, messages: list[dict[str, Any]], case_id: str, variant: str, file: str
) -> None:
    """Raise ConfigError for the first part ``model`` cannot take (type, media type, size)."""
    cap: Capability | None = None
    totals: dict[str, int] = {}
    for i, j, part in binary_parts(messages):
        cap = cap or capability(model)
        kind, media_type, url = part["type"], part.get("media_type"), "url" in part
        where = f"variant '{variant}' messages[{i}].content[{j}]"
        who = f"model '{model.id}' ({model.provider} {model.model})"
        what = part.get("name") or part.get("url") or kind
        if not cap.accepts(kind, media_type) or (url and kind not in cap.urls):
            shown = "a URL" if url else media_type or kind
            others = _accepted_by(kind, media_type, url)
            raise ConfigError(
                f"case '{case_id}': {who} does not accept the {kind} part '{what}' ({shown})",
                file=file,
                where=where,
                fix=_fix(cap, kind, url, others),
            )
        size = int(part.get("bytes") or 0)
        limit = cap.part_limits.get(kind)
        if limit is not None and limit.over(size):
            raise _too_big(case_id, who, kind, what, size, limit, file, where)
        totals[kind] = totals.get(kind, 0) + size
        totals[""] = totals.get("", 0) + size
        limit = cap.request_limits.get(kind)
        if limit is not None and limit.over(totals[kind]):
            raise _too_big(
                case_id, who, kind, f"{what} and the others", totals[kind], limit, file, where
            )
        if cap.request_limit is not None and cap.request_limit.over(totals[""]):
            raise _too_big(
                case_id,
                who,
                "file",
                "the request's files",
                totals[""],
                cap.request_limit,
                file,
                where,
            )


def _fix(cap: Capability, kind: str, url: bool, others: str) -> str:
    if url and kind in cap.kinds:
        return f"attach the file itself instead of a URL (URLs are accepted by: {others})"
    takes = cap.kinds.get(kind)
    if takes:
        return (
            f"convert it to one of {', '.join(sorted(takes))}, or use a model that accepts "
            f"it ({others})"
        )
    return f"use a model whose provider accepts {kind} parts: {others} (docs/providers.md)"


def _too_big(
    case_id: str, who: str, kind: str, what: str, size: int, limit: Limit, file: str, where: str
) -> ConfigError:
    return ConfigError(
        f"case '{case_id}': the {kind} '{what}' ({size / MB:.1f} MB) is over the limit of "
        f"{who}: {limit.label}",
        file=file,
        where=where,
        fix="make the file smaller (resize, compress, split), or use a provider with a "
        "larger limit (docs/providers.md)",
    )


# ---- token estimates ---------------------------------------------------------------------


def estimate_tokens(provider: str, part: dict[str, Any], info: dict[str, Any]) -> int | None:
    """Input tokens of one binary part for ``provider``; None when no rule can tell."""
    if provider in ("mock", "command"):
        return 0
    kind = part.get("type")
    w, h = int(info.get("width") or 0), int(info.get("height") or 0)
    seconds = float(info["seconds"]) if "seconds" in info else None
    pages = int(info.get("pages") or 0)
    if kind == "image" and w and h:
        if provider == "anthropic":
            scale = min(1.0, 1568 / max(w, h))
            return max(1, math.ceil(w * scale * h * scale / 750))
        if provider in ("openai", "openai-compatible"):
            scale = min(1.0, 2048 / max(w, h))
            w2, h2 = w * scale, h * scale
            scale = min(1.0, 768 / min(w2, h2))
            tiles = math.ceil(w2 * scale / 512) * math.ceil(h2 * scale / 512)
            return 85 + 170 * tiles
        if provider == "google":
            if w <= 384 and h <= 384:
                return 258
            return 258 * math.ceil(w / 768) * math.ceil(h / 768)
    if kind == "audio" and seconds is not None:
        per_second = {"google": 32, "openai": 10, "openai-compatible": 10}.get(provider)
        return None if per_second is None else max(1, math.ceil(seconds * per_second))
    if kind == "file" and pages:
        per_page = {"anthropic": 2000, "openai": 1000, "google": 258}.get(provider)
        return None if per_page is None else pages * per_page
    return None


def media_tokens(provider: str, messages: list[dict[str, Any]]) -> tuple[int, int]:
    """(estimated input tokens of a request's binary parts, parts no rule could estimate)."""
    from evalwh.config.attachments import info

    tokens = unknown = 0
    for _i, _j, part in binary_parts(messages):
        found = None if "url" in part else estimate_tokens(provider, part, info(part["sha256"]))
        if found is None:
            unknown += 1
        else:
            tokens += found
    return tokens, unknown
