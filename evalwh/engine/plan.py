"""Expand the matrix (variants x models x cases x repeats) after filters, and hash requests."""

from __future__ import annotations

import fnmatch
import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from evalwh.config.model import Case, EvalConfig, ModelSpec
from evalwh.config.outputs import OutputSpec
from evalwh.config.prompts import CompiledVariant, Rendered
from evalwh.errors import UsageError

# Model options that never reach a request's identity (they change how, not what, is asked).
NON_IDENTITY_OPTIONS = frozenset({"headers", "api_key_env", "batch_dir"})
Cell = tuple[str, str, str, int]  # (variant, model, case_id, repeat)


@dataclass(frozen=True)
class Filters:
    models: tuple[str, ...] = ()
    variants: tuple[str, ...] = ()
    cases: tuple[str, ...] = ()
    shard: tuple[int, int] | None = None  # (k, n): the k-th of n shards (1-based)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: list(v) for k, v in self.__dict__.items() if v and k != "shard"}
        if self.shard:
            out["shards"] = self.shard[1]  # the run's; each shard writes its own k
        return out


def shard_of(case_id: str, shards: int) -> int:
    """The 1-based shard of a case: a stable hash of its id, the same on every machine and
    Python (sha256, not ``hash()``), so N processes given k = 1..N split the cases exactly."""
    digest = hashlib.sha256(case_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % shards + 1


@dataclass
class Plan:
    """What a run will execute: the selected axes, with variants compiled once."""

    config: EvalConfig
    variants: list[CompiledVariant]
    models: list[ModelSpec]
    cases: list[Case]
    repeats: int
    skip: set[Cell] = field(default_factory=set)  # cells already stored (resume)
    only: set[Cell] | None = None  # when set, just these cells (retry errors)
    run_size: int | None = None  # a shard's: the whole run's matrix over every shard
    sources: list[Any] = field(default_factory=list)  # evalwh.engine.feed.SourceRead
    case_patterns: tuple[str, ...] = ()  # --case, applied to datasource cases as they come

    @property
    def planned(self) -> int:
        """The cells the run sets out to execute (every shard's, for a sharded run)."""
        return self.size if self.run_size is None else self.run_size

    @property
    def streaming(self) -> bool:
        """Cases also come from datasources, page by page while the run goes."""
        return bool(self.sources)

    @property
    def size(self) -> int:
        """The whole matrix, stored cells included (a datasource's cases are not counted:
        they are unknown until read)."""
        return len(self.variants) * len(self.models) * len(self.cases) * self.repeats

    @property
    def streamed_size(self) -> int | None:
        """The cells of the streamed cases when known up front: every source a case file
        counted when the config was loaded (evalwh.config.streamed) and no ``--case`` to thin
        them; else None (a datasource's rows are unknown until read)."""
        counts: list[int | None] = [getattr(s, "known_cases", None) for s in self.sources]
        if self.case_patterns or None in counts:
            return None
        cases = sum(n for n in counts if n is not None)
        return len(self.variants) * len(self.models) * cases * self.repeats

    def wanted(self, cell: Cell) -> bool:
        return cell not in self.skip and (self.only is None or cell in self.only)

    def cells(self, model: ModelSpec) -> Iterator[tuple[CompiledVariant, Case, int]]:
        """One model's cells, case-major so a slow variant does not starve the others."""
        for case in self.cases:
            for variant in self.variants:
                for repeat in range(self.repeats):
                    if self.wanted((variant.variant.id, model.id, case.id, repeat)):
                        yield variant, case, repeat


def _select(
    kind: str, items: Sequence[Any], wanted: Sequence[str], key: str = "id", *, more: bool = False
) -> list[Any]:
    """The items matching ``wanted``; a pattern matching none is an error unless ``more``
    items come later (a datasource's cases)."""
    if not wanted:
        return list(items)
    chosen = [i for i in items if any(fnmatch.fnmatchcase(str(getattr(i, key)), w) for w in wanted)]
    if more:
        return chosen
    missing = [
        w for w in wanted if not any(fnmatch.fnmatchcase(str(getattr(i, key)), w) for i in items)
    ]
    if missing:
        known = ", ".join(str(getattr(i, key)) for i in items[:20])
        raise UsageError(
            f"--{kind} {', '.join(missing)} matches no {kind} in the config (known: {known})"
        )
    return chosen


def refuse_sharded_datasources(config: EvalConfig) -> str:
    """Why a datasource run is not sharded: each shard would read the whole source again (it
    may change between the reads), and a shard started again skips the cells already stored,
    which is a resume, and a datasource run is never resumed (docs/datasources.md)."""
    names = ", ".join(s.name for s in config.sources)
    return (
        f"{config.path}: --shard cannot split a run whose cases come from a datasource "
        f"({names}): every shard would read the whole source again, and a shard started again "
        "would resume it, which a datasource run never does. Run it unsharded, or export the "
        "source to a case file (file: cases.jsonl) and shard that"
    )


def build_plan(
    config: EvalConfig,
    filters: Filters,
    repeats: int = 1,
    *,
    skip: set[Cell] | None = None,
    only: set[Cell] | None = None,
    sources: list[Any] | None = None,
) -> Plan:
    if repeats < 1:
        raise UsageError("--repeat must be at least 1")
    variants = [CompiledVariant(v) for v in _select("variant", config.variants, filters.variants)]
    models = _select("model", config.models, filters.models)
    cases = _select("case", config.cases, filters.cases, more=bool(sources))
    run_size = None
    if filters.shard is not None and (sources or config.sources):
        from evalwh.config.streamed import refusal

        raise UsageError(refusal(config.sources, "--shard") or refuse_sharded_datasources(config))
    if filters.shard is not None:
        k, n = filters.shard
        run_size = len(variants) * len(models) * len(cases) * repeats
        cases = [c for c in cases if shard_of(c.id, n) == k]
    return Plan(
        config=config,
        variants=variants,
        models=models,
        cases=cases,
        repeats=repeats,
        skip=skip or set(),
        only=only,
        run_size=run_size,
        sources=list(sources or []),
        case_patterns=filters.cases,
    )


def model_identity(model: ModelSpec) -> str:
    """The part of a request's identity that comes from the model entry (JSON, computed once)."""
    options = {k: v for k, v in model.options.items() if k not in NON_IDENTITY_OPTIONS}
    return json.dumps(
        {
            "provider": model.provider,
            "model": model.model,
            "params": model.params,
            "options": options,
        },
        sort_keys=True,
        separators=(",", ":"),
        default=str,
    )


def _body_encoder() -> Any:
    """``json.dumps(messages, sort_keys=True, separators=(",", ":"), ensure_ascii=False)``,
    minus its per-call set-up: the C encoder json.dumps would build, called directly."""
    from json.encoder import (  # type: ignore[attr-defined]  # the C accelerator, untyped
        c_make_encoder,
        encode_basestring,
    )

    reference = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if c_make_encoder is None:  # pragma: no cover - a Python without the _json accelerator
        return reference.encode
    default = reference.default

    def encode(messages: Any) -> str:
        chunks = c_make_encoder({}, default, encode_basestring, None, ":", ",", True, False, True)(
            messages, 0
        )
        return "".join(chunks)

    return encode


_encode_body = _body_encoder()


@lru_cache(maxsize=256)
def _identity_prefix(identity: str) -> Any:
    """sha256 state after ``identity`` and its separator (copied for every request)."""
    h = hashlib.sha256(identity.encode())
    h.update(b"\x00")
    return h


def request_body(messages: Rendered) -> str:
    """The canonical JSON of rendered messages that :func:`request_hash` hashes."""
    body: str = _encode_body(messages)
    return body


def request_scope(
    model: ModelSpec,
    variant: str,
    case_id: str,
    output: OutputSpec | None = None,
    tools: Any = None,
) -> str:
    """What decides an answer besides the rendered messages: the output schema a variant asks
    for (an ``OutputSpec``: its schema and mode, so an answer given without a schema, or to
    another one, is never served from the cache), and for the mock provider the case and the
    variant (its rules and draws depend on them, so two cases with the same prompt never share
    a mock answer), and the tools offered (a ToolUse: definitions and tool choice). "" for a
    request of another provider that asks for no schema and offers no tools."""
    mock = f"{variant}\x00{case_id}" if model.provider == "mock" else ""
    if tools is not None:  # a ToolUse: the tools offered and the tool choice
        mock = f"{mock}\x00tools\x00{tools.digest_text()}"
    if output is None:
        return mock
    return f"{mock}\x00output\x00{output.digest_text()}"


def request_hash(
    identity: str,
    messages: Rendered,
    repeat: int,
    *,
    body: str | None = None,
    scope: str = "",
) -> str:
    """Content hash of a request: model identity, rendered messages, the repeat index and the
    :func:`request_scope`. An attached file is in the rendered messages as its SHA-256 (never
    its path), so the hash follows the file's content. The cache and resume key on it.
    ``body``, when given, is ``request_body(messages)`` computed once for several hashes."""
    h = _identity_prefix(identity).copy()
    h.update((_encode_body(messages) if body is None else body).encode())
    h.update(f"\x00\x00{repeat}".encode())
    if scope:
        h.update(f"\x00{scope}".encode())
    digest: str = h.hexdigest()
    return digest
