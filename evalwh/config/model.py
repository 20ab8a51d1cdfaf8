"""The validated, typed form of an eval config. Built by :mod:`evalwh.config.loader`."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalwh.config.attachments import Attachment

PART_TYPES = ("text", "image", "file", "audio", "video")


@dataclass(frozen=True)
class Part:
    """One typed piece of a message's content.

    ``text`` is a template; a binary part (image, file, audio, video) has a ``source``
    template that renders to a file reference (``{{ files.photo }}``), a path relative to the
    config's folder or a URL, or the older explicit ``path``/``url`` keys.
    """

    type: str
    text: str | None = None
    path: str | None = None
    url: str | None = None
    media_type: str | None = None
    source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass(frozen=True)
class Message:
    role: str
    content: tuple[Part, ...]


@dataclass(frozen=True)
class Variant:
    id: str
    messages: tuple[Message, ...]
    description: str | None = None
    source: str = ""  # the file the messages came from (config or prompt file)
    where: str = ""  # path inside the config, for error messages
    output: Any = None  # an evalwh.config.outputs.OutputSpec: JSON by schema is asked for
    root: Path | None = None  # the config's folder: a part's relative file resolves here
    tools: Any = None  # an evalwh.config.tools.ToolUse: each cell is a model-tool loop


@dataclass(frozen=True)
class Price:
    input_per_mtok: float
    output_per_mtok: float
    # prompt tokens read from / written to the provider's prompt cache (None: the input price)
    cache_read_per_mtok: float | None = None
    cache_write_per_mtok: float | None = None

    def cost(
        self,
        input_tokens: int,
        output_tokens: int,
        cache_read_tokens: int | None = None,
        cache_write_tokens: int | None = None,
    ) -> float:
        """USD for one answer. ``input_tokens`` counts every prompt token, the cached ones
        included; ``output_tokens`` every generated one, reasoning included (billed at the
        output price)."""
        read, written = cache_read_tokens or 0, cache_write_tokens or 0
        plain = max(0, input_tokens - read - written)
        read_price = (
            self.input_per_mtok if self.cache_read_per_mtok is None else self.cache_read_per_mtok
        )
        write_price = (
            self.input_per_mtok if self.cache_write_per_mtok is None else self.cache_write_per_mtok
        )
        return (
            plain * self.input_per_mtok
            + read * read_price
            + written * write_price
            + output_tokens * self.output_per_mtok
        ) / 1e6


@dataclass(frozen=True)
class ModelSpec:
    id: str
    provider: str
    model: str
    params: dict[str, Any] = field(default_factory=dict)
    max_concurrency: int | None = None
    requests_per_minute: float | None = None
    timeout_s: float = 60.0
    max_retries: int = 3
    deadline_s: float = 300.0  # one call, retries and Retry-After waits included
    adaptive_concurrency: bool = True  # back off on 429s (evalwh.engine.limits.AdaptiveLimit)
    price: Price | None = None
    options: dict[str, Any] = field(default_factory=dict)  # provider-specific keys (mock: ...)
    # an answer cut at the token limit: a failed cell (error_kind truncated), or scored as given
    on_truncated: str = "fail"
    where: str = ""
    root: Path | None = None  # the config's folder: relative files (images, commands) resolve here
    # ask through the provider's batch API (evalwh.engine.batch); how, not what, is asked: not
    # part of a request's identity
    batch: bool = False


@dataclass(frozen=True)
class Case:
    id: str
    vars: dict[str, Any] = field(default_factory=dict)
    expected: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)
    human_label: Any = None
    source: str = ""  # "file:line" or "eval.yaml cases[3]", for error messages
    check: Any = None  # an exec check (evalwh.scoring.checks.CheckSpec) or None
    files: dict[str, Attachment] = field(default_factory=dict)  # name -> attached file


@dataclass(frozen=True)
class SourceSpec:
    """A ``cases:`` entry read from a datasource while the run goes (evalwh.datasources)."""

    name: str  # the datasource's name or module:Class, as written
    params: dict[str, Any] = field(default_factory=dict)
    mapping: dict[str, Any] = field(default_factory=dict)  # id/expected/vars/metadata columns
    where: str = ""  # cases[i], for error messages
    case_file: bool = False  # a case file too large to hold (evalwh.config.streamed)

    def record(self) -> dict[str, Any]:
        """What the run stores about it (runs.datasources): name and parameters."""
        return {"name": self.name, "params": self.params, "where": self.where}


@dataclass(frozen=True)
class Criterion:
    name: str
    type: str
    weight: float = 1.0
    required: bool = True
    threshold: float = 0.5
    options: dict[str, Any] = field(default_factory=dict)
    where: str = ""


@dataclass(frozen=True)
class Judge:
    """An LLM judge: its own model (outside the matrix), a rubric, an optional prompt."""

    id: str
    model: ModelSpec
    rubric: str | None = None
    messages: tuple[Message, ...] | None = None
    scale: tuple[float, float] = (0.0, 1.0)
    where: str = ""


@dataclass(frozen=True)
class Side:
    model: str | None = None
    variant: str | None = None

    def describe(self) -> str:
        return " × ".join(x for x in (self.variant, self.model) if x)


@dataclass(frozen=True)
class Comparison:
    """A pairwise comparison: the judge sees baseline and candidate answers in both orders."""

    name: str
    judge: str
    baseline: Side
    candidate: Side
    require: tuple[str, ...] = ()
    where: str = ""


@dataclass(frozen=True)
class Label:
    comparison: str
    case_id: str
    prefer: str  # baseline | candidate | tie
    note: str | None = None


@dataclass(frozen=True)
class PointLabel:
    """A human label for one llm-judge criterion: ``pass``/``fail`` or a score on the
    criterion judge's scale. With ``variant``, ``model`` and ``repeat`` it grades that one
    answer (compared with the judge's verdict on it); without, the case (compared with the
    judge's majority verdict over the case's answers). It beats the case's ``human_label`` for
    that criterion."""

    criterion: str
    case_id: str
    label: str | float  # "pass" | "fail" | a raw score
    note: str | None = None
    variant: str | None = None
    model: str | None = None
    repeat: int | None = None


@dataclass(frozen=True)
class Calibration:
    min_kappa: float = 0.6
    min_labels: int = 20
    max_flip_rate: float = 0.30
    on_below_floor: str = "flag"


@dataclass
class EvalConfig:
    """A loaded, validated eval: everything a run needs, nothing resolved from the environment."""

    path: Path
    name: str
    description: str | None
    settings: dict[str, Any]
    models: list[ModelSpec]
    variants: list[Variant]
    cases: list[Case]
    scorecard: list[Criterion]
    thresholds: dict[str, Any]
    raw: dict[str, Any]
    config_hash: str
    dataset_hash: str
    judges: list[Judge] = field(default_factory=list)
    # models a semantic criterion embeds with (``embedder: {model: ID}``), out of the matrix
    embedders: list[ModelSpec] = field(default_factory=list)
    pairwise: list[Comparison] = field(default_factory=list)
    labels: list[Label] = field(default_factory=list)
    point_labels: list[PointLabel] = field(default_factory=list)
    calibration: Calibration = field(default_factory=Calibration)
    node: Any = field(default=None, repr=False, compare=False)  # YAML node tree, for error lines
    sources: list[SourceSpec] = field(default_factory=list)  # cases read while the run goes
    no_look: bool = False  # privacy.no_look (or --no-look): no case data is stored or shown
    redact_outputs: bool = True  # privacy.redact_outputs: answers stored with secrets as ***
    # judges_batch: llm-judge requests asked in batch jobs of the judge's model (docs/batch.md)
    judges_batch: bool = False

    def locate_error(self, error: Any) -> Any:
        """Add the line and column to a ConfigError about this config that lacks them."""
        from evalwh.config.yamlpos import locate, parse_path

        if (
            error.line is None
            and error.where
            and error.file == str(self.path)
            and self.node is not None
        ):
            error.line, error.column = locate(self.node, parse_path(error.where))
            error.args = (error._format(),)
        return error

    @property
    def root(self) -> Path:
        return self.path.parent

    def snapshot(self) -> dict[str, Any]:
        """The config as a run stores it. A no-look run's stores, in place of its private
        texts, their hashes (:func:`hashed`): every value of an inline case but its ``id``
        and ``metadata`` (each var on its own), and the prompt texts of variants and judges
        (message contents, text parts, rubrics). Keys, ids, roles, file and datasource
        entries stay, so the snapshot keeps its shape and two runs' snapshots still diff."""
        if not self.no_look:
            return self.raw
        raw = dict(self.raw)
        if isinstance(raw.get("cases"), list):
            raw["cases"] = [_hashed_case(entry) for entry in raw["cases"]]
        for section in ("variants", "judges"):
            if isinstance(raw.get(section), list):
                raw[section] = [_hashed_prompts(item) for item in raw[section]]
        return raw


def canonical_hash(value: Any) -> str:
    """The SHA-256 of ``value`` as compact JSON with sorted keys: the config and dataset
    hashes (evalwh.config.loader) and a no-look snapshot's hashed texts."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def hashed(value: Any) -> str:
    """``sha256:`` and the SHA-256 of ``value`` as compact JSON with sorted keys (the hash the
    config hash uses): equal texts give equal hashes, so a change still shows in a diff."""
    return "sha256:" + canonical_hash(value)


def _hashed_case(entry: Any) -> Any:
    if not isinstance(entry, dict) or {"file", "source", "dir"} & entry.keys():
        return entry  # where the cases are read from, not the cases
    kept = ("id", "metadata")
    out = {key: value if key in kept else hashed(value) for key, value in entry.items()}
    if isinstance(entry.get("vars"), dict):
        out["vars"] = {name: hashed(value) for name, value in entry["vars"].items()}
    return out


def _hashed_prompts(item: Any) -> Any:
    if not isinstance(item, dict):
        return item
    out = dict(item)
    if "rubric" in out:
        out["rubric"] = hashed(out["rubric"])
    if isinstance(out.get("messages"), list):
        out["messages"] = [_hashed_message(message) for message in out["messages"]]
    return out


def _hashed_message(message: Any) -> Any:
    if not isinstance(message, dict) or "content" not in message:
        return message
    content = message["content"]
    if isinstance(content, list):
        content = [
            {**part, "text": hashed(part["text"])}
            if isinstance(part, dict) and "text" in part
            else part
            for part in content
        ]
    else:
        content = hashed(content)
    return {**message, "content": content}
