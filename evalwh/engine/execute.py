"""One run from start to end: validate, plan, look up the cache, estimate, execute, write."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from evalwh import __version__
from evalwh.config.model import EvalConfig, ModelSpec
from evalwh.config.settings import Settings
from evalwh.engine.answers import CachedAnswer
from evalwh.engine.feed import FileRead, case_batches, restart_hint, with_checks
from evalwh.engine.pairwise import judge_pairs
from evalwh.engine.plan import (
    Cell,
    Filters,
    Plan,
    build_plan,
    model_identity,
    request_body,
    request_hash,
    request_scope,
)
from evalwh.engine.runner import (
    CellResult,
    CheckOutcome,
    Endpoint,
    Engine,
    EngineStats,
    JudgeRuntime,
)
from evalwh.errors import ConfigError
from evalwh.scoring.judge import JudgePrompts

Progress = Callable[[int, int, CellResult], None]
DEFAULT_OUTPUT_TOKENS = 512  # the estimate's output size when a model sets no max_tokens
JUDGE_OVERHEAD_TOKENS = 300  # a judge prompt's rubric and instructions, estimated


@dataclass
class Prepared:
    """A config checked end to end and its plan: nothing has been called or written yet."""

    config: EvalConfig
    settings: Settings
    plan: Plan
    scorecard: Any
    hashes: list[str] = field(default_factory=list)  # every planned request's hash
    models: list[int] = field(default_factory=list)  # ... its model's index in plan.models
    prompt_chars: list[int] = field(default_factory=list)  # ... and its rendered size
    cells: list[Cell] = field(default_factory=list)  # ... and its (variant, model, case, repeat)
    media_tokens: list[int] = field(default_factory=list)  # ... its attachments' tokens
    turns: list[int] = field(default_factory=list)  # ... its requests at most (a tool loop's)
    unestimated: dict[int, int] = field(default_factory=dict)  # model index -> parts not estimated
    files: dict[str, list[Path]] = field(default_factory=dict)  # sha256 -> where it was seen
    batched: set[str] = field(default_factory=set)  # ids of models asked in batch jobs

    def batch_models(self, asked: bool) -> set[str]:
        """The models a run asks in batch jobs: every one whose provider has a batch API when
        ``asked`` (--batch), else those that say ``batch: true``."""
        return {m.id for m in self.plan.models if (asked or m.batch) and has_batch_api(m)}


def check_config(config: EvalConfig) -> tuple[Any, EvalConfig]:
    """Deep checks beyond the schema: providers, prices, secrets, scorers, checks, thresholds.

    Returns the scorecard and the config with prices resolved and exec checks parsed.
    """
    from evalwh import providers
    from evalwh.config.secrets import check_secret_files, find_key_shaped, preload
    from evalwh.providers.pricing import price_for
    from evalwh.scoring import build_scorecard

    file = str(config.path)
    check_secret_files()  # a malformed secrets file is an error now, not one per request
    leaked = find_key_shaped(config.raw)
    if leaked:
        path, kind = leaked[0]
        raise ConfigError(
            f"this looks like an API key ({kind}); keys never belong in eval.yaml",
            file=file,
            where=path,
            fix="remove it, rotate the key if the file was shared, and set it in the environment "
            "or in .evalwh.secrets.yaml (see docs/secrets.md)",
        )
    preload(secret_names(config))
    models = []
    for model in config.models:
        providers.check(model, file)
        paid = bool(getattr(providers.provider_class(model.provider), "paid", False))
        models.append(replace(model, price=price_for(model, paid=paid, file=file)))
    for variant in config.variants:
        output = variant.output
        for model in models if output is not None else ():
            cls = providers.provider_class(model.provider)
            if output.mode == "native" and not getattr(cls, "structured_output", False):
                raise ConfigError(
                    f"model '{model.id}' (provider {model.provider}) cannot be asked for "
                    "JSON by schema natively",
                    file=file,
                    where=f"{variant.where}.output_schema.mode",
                    fix="use mode: auto (prompted where native is not supported) or mode: prompted",
                )
            check_output = getattr(cls, "check_output", None)
            if check_output is not None and output.mode_for(cls) == "native":
                check_output(output, file=file, where=f"{variant.where}.output_schema")
    check_tools(config, models)
    check_batch(config, models)
    judges = []
    for judge in config.judges:
        providers.check(judge.model, file)
        JudgePrompts(judge, file)  # compiles its templates: syntax and sandbox errors now
        paid = bool(getattr(providers.provider_class(judge.model.provider), "paid", False))
        judges.append(
            replace(
                judge,
                model=replace(judge.model, price=price_for(judge.model, paid=paid, file=file)),
            )
        )
    embedders = [_embedding_model(model, file) for model in config.embedders]
    scorecard = build_scorecard(config.scorecard, config.root, file)
    for case in config.cases:  # criteria values that are templates: every case renders now
        scorecard.prepare(case)
    names = {c.name for c in config.scorecard}
    for name in config.thresholds.get("criteria") or {}:
        if name not in names:
            raise ConfigError(
                f"threshold for unknown criterion '{name}'",
                file=file,
                where=f"thresholds.criteria.{name}",
                fix=f"use a scorecard criterion name: {', '.join(sorted(names))}",
            )
    if config.no_look and config.pairwise:
        raise ConfigError(
            "pairwise judging compares two stored answers, and a no-look run stores none",
            file=file,
            where="pairwise",
            fix="remove `pairwise:` from this no-look eval, or run it without no-look",
        )
    cases = config.cases
    if any(c.check is not None for c in cases):
        from evalwh.scoring.checks import parse_check

        cases = [
            replace(c, check=parse_check(c.check, f"{c.source} check", file))
            if c.check is not None
            else c
            for c in cases
        ]
    return scorecard, replace(
        config, models=models, judges=judges, embedders=embedders, cases=cases
    )


def _embedding_provider(model: ModelSpec) -> Any:
    """An embedder's provider; its module (and httpx, which it imports) is loaded only by a
    run that embeds."""
    from evalwh.providers.embeddings import embedding_provider

    return embedding_provider(model)


def _embedding_model(model: ModelSpec, file: str) -> ModelSpec:
    """An embedder's model checked (its provider can embed) and priced."""
    from evalwh import providers
    from evalwh.providers.embeddings import EMBEDDERS
    from evalwh.providers.pricing import price_for

    providers.check(model, file)
    if model.provider not in EMBEDDERS:
        raise ConfigError(
            f"model '{model.id}' (provider {model.provider}) has no embeddings endpoint",
            file=file,
            where=f"{model.where}.provider",
            fix=f"embed with a model of provider {', '.join(EMBEDDERS)}, e.g. "
            "`{id: embed, provider: openai, model: text-embedding-3-small}`",
        )
    paid = bool(getattr(providers.provider_class(model.provider), "paid", False))
    return replace(model, price=price_for(model, paid=paid, file=file))


def check_tools(config: EvalConfig, models: list[ModelSpec]) -> None:
    """A variant with tools: every model can be offered tools (its provider says
    ``tool_use``, the capability table does not rule the model out); a command tool's
    program is a usable argv."""
    from evalwh import providers
    from evalwh.providers.capabilities import tools_problem
    from evalwh.providers.command import argv_of

    file = str(config.path)
    offered = {t.name: t for v in config.variants if v.tools for t in v.tools.tools}
    for tool in offered.values():
        if tool.kind == "command":
            try:
                argv_of(tool.impl)
            except ValueError as exc:
                raise ConfigError(
                    f"tool '{tool.name}': bad command: {exc}",
                    file=file,
                    where=f"{tool.where}.command",
                    fix='write the program and its arguments, e.g. ["python", "tool.py"]',
                ) from None
    for variant in config.variants:
        if variant.tools is None:
            continue
        for model in models:
            cls = providers.provider_class(model.provider)
            problem = (
                None if getattr(cls, "tool_use", False) else "its provider cannot call tools"
            ) or tools_problem(model)
            if problem is not None:
                raise ConfigError(
                    f"model '{model.id}' (provider {model.provider}) cannot be offered the "
                    f"tools of variant '{variant.id}': {problem}",
                    file=file,
                    where=f"{variant.where}.tools",
                    fix="use a model that calls tools (docs/providers.md), or filter this "
                    "variant × model out (--variant / --model)",
                )


def has_batch_api(model: ModelSpec) -> bool:
    """Whether a model can be asked through a batch API: its provider, built for it (no
    socket is opened, no key is read), returns one from ``batch_api()`` (an HTTP provider
    without one inherits the base's, which returns None; so may a server speaking another's
    API, such as ``openai-compatible``)."""
    from evalwh import providers

    make = getattr(providers.provider_class(model.provider), "batch_api", None)
    return make is not None and providers.create(model).batch_api() is not None


def check_batch(config: EvalConfig, models: list[ModelSpec]) -> None:
    """``batch: true`` is refused on a model whose provider has no batch API, and on a
    judge's model (``judges_batch: true`` batches judges); ``judges_batch: true`` is refused
    when a judge's provider has no batch API (docs/batch.md)."""
    file = str(config.path)
    for model in models:
        if model.batch and not has_batch_api(model):
            raise ConfigError(
                f"model '{model.id}' asks for batch: true, and provider {model.provider} has "
                "no batch API",
                file=file,
                where=f"{model.where}.batch",
                fix="remove batch: true (the openai, anthropic, google and mock providers "
                "have one, docs/batch.md)",
            )
    for judge in config.judges:
        if judge.model.batch:
            raise ConfigError(
                f"judge '{judge.id}' asks for batch: true: judges are asked live, as each "
                "answer arrives",
                file=file,
                where=f"{judge.model.where}.batch",
                fix="remove batch: true from the judge's model; `judges_batch: true` at the "
                "top level asks the judges in batch jobs (docs/batch.md)",
            )
        if config.judges_batch and not has_batch_api(judge.model):
            raise ConfigError(
                f"judges_batch: true asks judge '{judge.id}' in batch jobs, and provider "
                f"{judge.model.provider} has no batch API",
                file=file,
                where=f"{judge.model.where}.provider",
                fix="give the judge a model whose provider has a batch API (openai, "
                "anthropic, google, mock), or remove judges_batch: true (docs/batch.md)",
            )


def secret_names(config: EvalConfig) -> list[str]:
    """The secrets a config's models and judges use: API key names and ``${NAME}`` headers."""
    from evalwh import providers

    names = []
    for model in [*config.models, *(j.model for j in config.judges), *config.embedders]:
        try:
            needs = providers.secrets_needed(model)
        except ConfigError:  # an unknown provider is reported by providers.check
            continue
        names += [name for need in needs for name in need.names]
    return names


def prepare(
    config: EvalConfig,
    settings: Settings,
    filters: Filters,
    repeats: int,
    *,
    skip: set[Cell] | None = None,
    only: set[Cell] | None = None,
) -> Prepared:
    """Validate everything a run needs and render every planned prompt once (StrictUndefined)."""
    try:
        return _prepare(config, settings, filters, repeats, skip, only)
    except ConfigError as exc:
        raise config.locate_error(exc) from None


def _prepare(
    config: EvalConfig,
    settings: Settings,
    filters: Filters,
    repeats: int,
    skip: set[Cell] | None,
    only: set[Cell] | None,
) -> Prepared:
    from evalwh.engine.feed import open_sources
    from evalwh.engine.overrides import real_spec
    from evalwh.providers.capabilities import check_parts, media_tokens

    scorecard, config = check_config(config)
    sources = open_sources(config.sources, config.root, str(config.path), config.no_look)
    plan = build_plan(config, filters, repeats, skip=skip, only=only, sources=sources)
    prepared = Prepared(config, settings, plan, scorecard)
    identities = [model_identity(m) for m in plan.models]
    for variant in plan.variants:
        for case in plan.cases:
            messages = variant.render(case)  # raises ConfigError naming the template and case
            size = sum(len(p.get("text", "")) for m in messages for p in m["content"])
            body = request_body(messages)  # serialised once for every model and repeat
            binary = any(p["type"] != "text" for m in messages for p in m["content"])
            tools = variant.variant.tools
            turns = tools.limits.max_turns if tools is not None else 1
            if binary:
                _collect_files(messages, prepared.files)
            for index, (model, identity) in enumerate(zip(plan.models, identities, strict=True)):
                media = unknown = 0
                if binary:  # unsupported parts and sizes are errors now, not mid-run
                    real = real_spec(model)  # --fake: as the provider it stands for
                    check_parts(real, messages, case.id, variant.variant.id, str(config.path))
                    media, unknown = media_tokens(real.provider, messages)
                for r in range(repeats):
                    if plan.wanted((variant.variant.id, model.id, case.id, r)):
                        prepared.hashes.append(
                            request_hash(
                                identity,
                                messages,
                                r,
                                body=body,
                                scope=request_scope(
                                    model,
                                    variant.variant.id,
                                    case.id,
                                    variant.variant.output,
                                    variant.variant.tools,
                                ),
                            )
                        )
                        prepared.models.append(index)
                        prepared.prompt_chars.append(size)
                        prepared.cells.append((variant.variant.id, model.id, case.id, r))
                        prepared.media_tokens.append(media)
                        prepared.turns.append(turns)
                        if unknown:
                            prepared.unestimated[index] = (
                                prepared.unestimated.get(index, 0) + unknown
                            )
    return prepared


def _collect_files(messages: Any, files: dict[str, list[Path]]) -> None:
    from evalwh.config.attachments import places_of

    for message in messages:
        for part in message["content"]:
            sha = part.get("sha256")
            if sha and sha not in files:
                files[sha] = places_of(sha)


def store_files(prepared: Prepared) -> None:
    """Copy the run's attachments into the artifact store (once per content, verified) and
    read them from there from now on: a file edited during the run cannot change a request.
    A no-look run leaves the artifact store untouched: its requests read each file where it
    is, checked against the hash taken when the run was planned (docs/no-look.md)."""
    from evalwh.config.attachments import remember
    from evalwh.warehouse.artifacts import ArtifactChanged, ArtifactStore

    if not prepared.files or prepared.config.no_look:
        return
    try:
        stored = ArtifactStore(prepared.settings.local_dir).put_all(prepared.files)
    except ArtifactChanged as exc:
        raise ConfigError(
            str(exc), file=str(prepared.config.path), fix="run again to use the new content"
        ) from None
    for sha, path in stored.items():
        remember(sha, path)


@dataclass
class Estimate:
    """What a run will ask for and cost, before anything is called."""

    cells: int
    cached: int
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    by_model: list[dict[str, Any]]
    datasources: bool = False  # cases also come from a datasource: not counted here
    # cells of streamed case files (evalwh.config.streamed): counted by the loader's first
    # pass, not in calls, tokens or cost (their prompts are rendered as the run reads them)
    streamed_cells: int = 0
    # batch mode: cost_usd prices the batched requests at the batch price, live_cost_usd is
    # the same run asked live; None without batch jobs
    live_cost_usd: float | None = None
    batch: dict[str, Any] | None = None  # models batched, and cells of theirs run live
    note: str = (
        f"input = rendered characters / 4; output = max_tokens, or {DEFAULT_OUTPUT_TOKENS} when "
        "unset; a tool loop's cell: max_turns requests of at least its prompt each; judges: one pointwise call per judged answer, two per pairwise pair (both "
        f"orders), each reading the answer(s) at their max_tokens plus {JUDGE_OVERHEAD_TOKENS} "
        "tokens of instructions; embeddings: each answer at its max_tokens and each distinct "
        "reference once; images, audio and PDF pages by each provider's rule "
        "(docs/providers.md), and a file no rule can estimate is counted under 'not estimated'"
    )

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def estimate(prepared: Prepared, cache: dict[str, CachedAnswer]) -> Estimate:
    from evalwh.providers.pricing import batch_factor

    models = prepared.plan.models
    rows: list[dict[str, Any]] = [
        {
            "model": m.id,
            "calls": 0,
            "cached": 0,
            "input_tokens": 0,
            "output_tokens": 0,
            "cost_usd": 0.0,
        }
        for m in models
    ]
    batched = [m.id in prepared.batched for m in models]
    looped = {v.variant.id for v in prepared.plan.variants if v.variant.tools is not None}
    in_batch = [[0, 0] for _ in models]  # per model: input and output tokens asked in batches
    live_loops = 0  # cells of batched models that run live (tool loops)
    for key, index, chars, media, turns, cell in zip(
        prepared.hashes,
        prepared.models,
        prepared.prompt_chars,
        prepared.media_tokens,
        prepared.turns,
        prepared.cells,
        strict=True,
    ):
        row = rows[index]
        if key in cache:
            row["cached"] += 1
            continue
        # a tool loop: up to max_turns requests, each resending the prompt at least
        row["calls"] += turns
        input_tokens = (max(1, chars // 4) + media) * turns
        output_tokens = turns * int(models[index].params.get("max_tokens") or DEFAULT_OUTPUT_TOKENS)
        row["input_tokens"] += input_tokens
        row["output_tokens"] += output_tokens
        if batched[index]:
            if cell[0] in looped:
                live_loops += 1
            else:
                in_batch[index][0] += input_tokens
                in_batch[index][1] += output_tokens
    for index, unknown in prepared.unestimated.items():
        rows[index]["not_estimated"] = unknown  # attachment parts no rule could count
    saved = 0.0  # what the batch price saves over the live one
    for row, model, (batch_in, batch_out) in zip(rows, models, in_batch, strict=True):
        price = model.price
        row["cost_usd"] = price.cost(row["input_tokens"], row["output_tokens"]) if price else None
        if price is not None and model.id in prepared.batched:
            live = row["cost_usd"]
            row["live_cost_usd"] = live
            row["cost_usd"] = live - price.cost(batch_in, batch_out) * (
                1 - batch_factor(model.provider)
            )
            saved += live - row["cost_usd"]
    judged = _judge_rows(prepared, cache)
    saved += sum(r["live_cost_usd"] - r["cost_usd"] for r in judged if "live_cost_usd" in r)
    rows += judged
    rows += _embedding_rows(prepared, cache)
    in_jobs = bool(prepared.batched) or judged_in_batch(prepared)
    cost = sum(r["cost_usd"] or 0.0 for r in rows)
    return Estimate(
        cells=len(prepared.hashes),
        cached=sum(r["cached"] for r in rows),
        calls=sum(r["calls"] for r in rows),
        input_tokens=sum(r["input_tokens"] for r in rows),
        output_tokens=sum(r["output_tokens"] for r in rows),
        cost_usd=cost,
        by_model=rows,
        datasources=prepared.plan.streaming and prepared.plan.streamed_size is None,
        streamed_cells=prepared.plan.streamed_size or 0,
        live_cost_usd=cost + saved if in_jobs else None,
        batch=_batch_note(prepared, live_loops) if in_jobs else None,
    )


def _batch_note(prepared: Prepared, live_loops: int) -> dict[str, Any]:
    """What a batch run asks in batch jobs and what it asks live, and why."""
    live = [
        f"{m.id}: provider {m.provider} has no batch API"
        if not has_batch_api(m)
        else f"{m.id}: asked live (no batch: true, no --batch)"
        for m in prepared.plan.models
        if m.id not in prepared.batched
    ]
    if live_loops:
        live.append(f"{live_loops} tool-loop cell(s): a loop's turns depend on each other")
    config = prepared.config
    if judged_in_batch(prepared):
        if config.pairwise:
            live.append("pairwise judges: asked after the run")
        if config.embedders:
            live.append("embeddings: asked as each answer arrives")
    elif config.judges or config.embedders:
        live.append("judges and embeddings: asked as each answer arrives")
    judges = sorted({j.model.id for j in config.judges}) if judged_in_batch(prepared) else []
    return {
        "models": sorted(prepared.batched),
        "live": live,
        **({"judges": judges} if judges else {}),
    }


def _output_tokens(model: ModelSpec) -> int:
    return int(model.params.get("max_tokens") or DEFAULT_OUTPUT_TOKENS)


def _judge_rows(prepared: Prepared, cache: dict[str, CachedAnswer]) -> list[dict[str, Any]]:
    """Estimated judge calls and their cost, one row per judge (:func:`judge_calls`); under
    judges_batch the pointwise calls at the batch price (the row's ``live_cost_usd``: all
    of them live)."""
    from evalwh.providers.pricing import batch_factor

    judges = {j.id: j for j in prepared.config.judges}
    pointwise = judge_calls(prepared, cache, pairwise=False) if judged_in_batch(prepared) else {}
    out = []
    for judge_id, (n, input_tokens) in judge_calls(prepared, cache).items():
        judge_model = judges[judge_id].model
        output_tokens = n * _output_tokens(judge_model)
        price = judge_model.price
        row: dict[str, Any] = {
            "model": f"{judge_model.id} (judge {judge_id})",
            "calls": n,
            "cached": 0,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cost_usd": price.cost(input_tokens, output_tokens) if price else None,
        }
        if price is not None and judge_id in pointwise:
            batch_n, batch_in = pointwise[judge_id]
            batch_cost = price.cost(batch_in, batch_n * _output_tokens(judge_model))
            row["live_cost_usd"] = row["cost_usd"]
            row["cost_usd"] -= batch_cost * (1 - batch_factor(judge_model.provider))
        out.append(row)
    return out


def _embedding_rows(prepared: Prepared, cache: dict[str, CachedAnswer]) -> list[dict[str, Any]]:
    """Estimated embedding calls, one row per semantic criterion with an embedding model: the
    answer of every cell not cached (at its model's max_tokens) and each distinct reference
    once (characters / 4), one call per text."""
    config, models = prepared.config, prepared.plan.models
    embedders = {m.id: m for m in config.embedders}
    cases = {c.id: c for c in prepared.plan.cases}
    out = []
    for criterion in config.scorecard:
        embedder = criterion.options.get("embedder") if criterion.type == "semantic" else None
        if not isinstance(embedder, dict):
            continue
        calls = tokens = 0
        references: set[str] = set()
        for key, index, cell in zip(prepared.hashes, prepared.models, prepared.cells, strict=True):
            if key in cache:
                continue
            calls += 1
            tokens += _output_tokens(models[index])
            case = cases.get(cell[2])
            given = criterion.options.get("reference", case.expected if case else None)
            for item in given if isinstance(given, list) else [] if given is None else [given]:
                references.add(item if isinstance(item, str) else str(item))
        calls += len(references)
        tokens += sum(max(1, len(text) // 4) for text in references)
        model = embedders[embedder["model"]]
        out.append(
            {
                "model": f"{model.id} (embedder of {criterion.name})",
                "calls": calls,
                "cached": 0,
                "input_tokens": tokens,
                "output_tokens": 0,
                "cost_usd": model.price.cost(tokens, 0) if model.price else None,
            }
        )
    return out


def judge_calls(
    prepared: Prepared, cache: dict[str, CachedAnswer], *, pairwise: bool = True
) -> dict[str, list[int]]:
    """Judge id -> [estimated calls, input tokens]: per ``llm-judge`` criterion, one call per
    answer that is not cached (its judgement is then new too); per pairwise comparison (when
    ``pairwise``), two per pair of cells (both orders). Repeats are cells of their own, so
    they count. A judge no criterion or comparison uses is not in it."""
    from evalwh.engine.pairwise import _matches

    config, models = prepared.config, prepared.plan.models
    judges = {j.id: j for j in config.judges}
    calls: dict[str, list[int]] = {}  # judge id -> [calls, input tokens]
    for criterion in config.scorecard:
        judge = criterion.options.get("judge") if criterion.type == "llm-judge" else None
        if judge not in judges:
            continue
        for key, index, chars in zip(
            prepared.hashes, prepared.models, prepared.prompt_chars, strict=True
        ):
            if key not in cache:
                row = calls.setdefault(judge, [0, 0])
                row[0] += 1
                row[1] += chars // 4 + _output_tokens(models[index]) + JUDGE_OVERHEAD_TOKENS
    by_cell = {
        cell: (chars, models[index])
        for cell, index, chars in zip(
            prepared.cells, prepared.models, prepared.prompt_chars, strict=True
        )
    }
    for comparison in config.pairwise if pairwise else ():
        base, cand = comparison.baseline, comparison.candidate
        for (variant, model, case_id, repeat), (chars, spec) in by_cell.items():
            if not _matches(base, variant, model):
                continue
            other = (cand.variant or variant, cand.model or model, case_id, repeat)
            if other not in by_cell or other == (variant, model, case_id, repeat):
                continue
            answers = _output_tokens(spec) + _output_tokens(by_cell[other][1])
            row = calls.setdefault(comparison.judge, [0, 0])
            row[0] += 2
            row[1] += 2 * (chars // 4 + answers + JUDGE_OVERHEAD_TOKENS)
    return calls


def git_commit(folder: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def cache_lookup(warehouse: Any, hashes: list[str]) -> dict[str, CachedAnswer]:
    import pyarrow as pa

    from evalwh.warehouse.connect import read_connection, register_stream
    from evalwh.warehouse.queries import run_query

    if not hashes or not warehouse.exists:
        return {}
    # waits for another process's write lock as long as a flush would (never fails a run for it)
    with read_connection(warehouse.path, wait_s=None) as con:
        planned = pa.table({"request_hash": pa.array(hashes, pa.string())})
        register_stream(con, "planned_hashes", planned)
        table = run_query(con, "cache_lookup")
    return cached_answers(table)


def cache_holds(warehouse: Any, models: Any) -> bool:
    """Whether the response cache holds any answer of these models (sql/cache_holds.sql)."""
    if not warehouse.exists:
        return False
    pairs = [[m.provider, m.model] for m in models]
    return bool(warehouse.query("cache_holds", models=pairs).column("holds")[0].as_py())


def cached_answers(table: Any) -> dict[str, CachedAnswer]:
    """request_hash -> CachedAnswer from a cache query's Arrow table."""
    cols = table.to_pydict()
    return {
        h: CachedAnswer(o, i, t, lat, json.loads(w) if w else None)
        for h, o, i, t, lat, w in zip(
            cols["request_hash"],
            cols["output"],
            cols["input_tokens"],
            cols["output_tokens"],
            cols["latency_ms"],
            cols["wire"],
            strict=True,
        )
    }


@dataclass
class Outcome:
    run_id: str
    status: str
    stats: EngineStats
    rows_written: int
    token: str | None = None  # the run's lease, still held until the export is in place
    stop_reason: str | None = None  # why a `stopped` run sent nothing more (the cost cap)
    commit_retries: int = 0  # conflicting lake commits the run's writer retried


async def _drive(
    engine: Engine, writer: Any, before_last: Callable[[], None] = lambda: None
) -> EngineStats:
    """Run the engine while flushing due batches in a worker thread, one at a time;
    ``before_last`` is called once the engine has ended, before the last flush."""
    run = asyncio.ensure_future(engine.run())
    flushing: asyncio.Future[None] | None = None
    try:
        while not run.done():
            # wake up when the run ends, a flush ends (the next batch may be waiting) or 10 ms:
            # the engine waits for the writer once a batch is pending (RunWriter.max_pending)
            waiting: set[asyncio.Future[Any]] = {run} if flushing is None else {run, flushing}
            await asyncio.wait(
                waiting,
                timeout=0.01,
                return_when=asyncio.FIRST_COMPLETED,
            )
            if flushing is not None and flushing.done():
                flushing.result()
                flushing = None
            if flushing is None and writer.due():
                flushing = asyncio.ensure_future(
                    asyncio.to_thread(writer.flush, writer.take_batch())
                )
        return run.result()
    finally:
        if not run.done():
            run.cancel()
            await asyncio.gather(run, return_exceptions=True)
        if flushing is not None:
            await flushing
        before_last()
        await asyncio.to_thread(writer.flush, writer.take_batch())


def execute(
    prepared: Prepared,
    *,
    label: str | None,
    filters: Filters,
    use_cache: bool,
    cache: dict[str, CachedAnswer],
    progress: Progress | None = None,
    redact: Callable[[str], str] = lambda s: s,
    continue_run: str | None = None,
    replace_rows: bool = False,
    token: str | None = None,
    max_cost: float | None = None,
    shard: bool = False,
    carried: Any = None,
    on_batch: Callable[[list[Any]], None] | None = None,
    closing: ExitStack | None = None,
) -> Outcome:
    """Execute the plan into a new run, or into ``continue_run`` (resume / retry errors),
    whose lease ``token`` the caller already holds (evalwh.warehouse.lease.claim).

    On success the run is left ``exporting`` (lease kept): the caller writes the export and
    then the final status. SIGINT/SIGTERM flush the answers, mark the run ``interrupted`` and
    raise RunInterrupted. ``max_cost`` is enforced on actual spend plus in-flight reservations
    (evalwh.engine.budget): when the next request would cross it nothing more is sent and the run
    ends ``stopped``.

    ``shard``: the plan is one shard of ``continue_run``, which other processes write too; the
    run's status is left alone (``evalwh finish`` or the last shard concludes it).

    Every answer is journaled as it arrives (evalwh.engine.journal; not in a no-look run);
    ``carried`` (a journal.Carried) holds a continued run's journaled answers to replay.

    The models in ``prepared.batched`` are asked in batch jobs (evalwh.engine.batch): a
    continued run waits on the jobs it stored, a retry of errors submits new ones;
    ``on_batch`` is told the jobs' states after each round of polls.

    ``closing``: the caller's stack, which the run's end enters a ``shared_connection`` on
    once the engine has ended (not for a shard), so that the last flush, the run's final row
    and what the caller does next (its closing queries) share one connection, which the
    caller closes; without it each opens its own (a connect and a checkpoint at close each).
    """
    from evalwh import providers as registry
    from evalwh.engine.budget import Budget
    from evalwh.engine.records import RowSink
    from evalwh.engine.signals import RunInterrupted, grace_s, signal_name, stop_on_signals
    from evalwh.warehouse.connect import shared_connection
    from evalwh.warehouse.lake import flush_sizes
    from evalwh.warehouse.lease import new_token
    from evalwh.warehouse.store import Warehouse, new_run_id, utcnow
    from evalwh.warehouse.writer import RunWriter

    config, settings, plan = prepared.config, prepared.settings, prepared.plan
    grace = grace_s()  # a bad EVALWH_INTERRUPT_GRACE_S is refused before the run exists
    # ... and EVALWH_BATCH_POLL_S
    first_poll = None
    if prepared.batched or judged_in_batch(prepared):  # a live run imports no batch module
        from evalwh.engine.batch import first_poll_s

        first_poll = first_poll_s()
    store_files(prepared)  # before the run exists: a file that changed refuses the run
    warehouse = Warehouse(settings.warehouse)
    selection = filters.to_dict()
    run_row = {
        "label": label,
        "suite": config.name,
        "status": "running",
        "config_path": str(config.path),
        "config_hash": config.config_hash,
        "dataset_hash": config.dataset_hash,
        "git_commit": git_commit(config.root),
        "config_snapshot": config.snapshot(),
        "filters": {
            **selection,
            "repeat": plan.repeats,
            **({"batch": sorted(prepared.batched)} if prepared.batched else {}),
        },
        "no_look": config.no_look,
        "datasources": [r.record() for r in plan.sources] or None,
        "n_planned": plan.planned,
        "started_at": utcnow(),
        "heartbeat_at": utcnow(),
        "evalwh_version": __version__,
    }
    created = continue_run is None
    if shard and continue_run is not None and filters.shard is not None:
        from evalwh.warehouse.shards import join
        from evalwh.warehouse.writer import to_json

        run_id = continue_run
        for key in ("config_snapshot", "filters", "datasources"):
            run_row[key] = to_json(run_row[key])
        created = join(settings.warehouse, {"run_id": run_id, **run_row}, filters.shard[1])
    elif continue_run is not None:
        run_id = continue_run
    else:
        run_id, token = new_run_id(), new_token()
        warehouse.create_run({"run_id": run_id, **run_row, "lease_token": token})
    flush_rows, flush_every_s = flush_sizes(settings.warehouse, settings.batch_size)
    writer = RunWriter(
        settings.warehouse,
        run_id,
        batch_size=flush_rows,
        flush_interval_s=flush_every_s,
        refresh_cache=not use_cache,
        replace=replace_rows,
        token=token,
        heartbeat_s=settings.stale_after_s / 4,
        cache_path=settings.cache_path,
    )
    sink = RowSink(writer, run_id, no_look=config.no_look, redact_outputs=config.redact_outputs)
    journal = None if config.no_look else _open_journal(prepared, run_id, filters, sink, carried)
    writer.flushed = None if journal is None else journal.durable
    streamed = plan.streamed_size
    total = len(prepared.hashes) + (streamed or 0)
    if plan.streaming and streamed is None:
        total = 0  # unknown until read

    def on_result(result: CellResult) -> None:
        sink(result)
        if progress is not None:
            progress(sink.seen, total, result)

    if created:
        warehouse.insert_labels(run_id, config, pointwise=not config.no_look)
    if config.no_look:  # the response cache is neither read nor written
        use_cache, cache = False, {}
    if plan.streaming:  # identical requests within reach still share an answer
        cache = _bounded(cache)

    async def main() -> EngineStats:
        from evalwh.engine.embed import MARK

        endpoints = {m.id: Endpoint.for_model(m, registry.create(m)) for m in plan.models}
        judges = {
            j.id: JudgeRuntime(
                JudgePrompts(j, str(config.path)),
                Endpoint.for_model(j.model, registry.create(j.model), limited=True),
            )
            for j in config.judges
        }
        embedders = {
            m.id: Endpoint.for_model(m, _embedding_provider(m), limited=True)
            for m in config.embedders
        }
        for endpoint in embedders.values():
            endpoint.identity += MARK  # an embedding's cache key is never a chat answer's
        if judges or embedders:
            scorers = [*(j.model for j in config.judges), *config.embedders]
            cache.update(judge_cache(Warehouse(settings.cache_path), scorers) if use_cache else {})
        if use_cache and any(v.variant.tools for v in plan.variants):
            # a tool loop's later turns are keyed on its transcript, unknown before the run:
            # the cached answers of its models serve them (as a judge's)
            cache.update(judge_cache(Warehouse(settings.cache_path), list(plan.models)))
        batch = _batch_feed(prepared, run_id, endpoints, budget, on_batch, first_poll)
        stored = {}
        if continue_run is not None and not replace_rows and (batch or judged_in_batch(prepared)):
            from evalwh.engine.batch import stored_jobs

            stored = await asyncio.to_thread(stored_jobs, warehouse, run_id)  # a resume's jobs
        judge_batch = _judge_feed(prepared, run_id, judges, budget, on_batch, first_poll, stored)
        if batch is not None:
            replay = carried.replay if carried is not None else {}
            batch.plan(
                plan,
                endpoints,
                lambda key: key in replay or (use_cache and key in cache),
                stored,
            )
        engine = Engine(
            plan,
            endpoints,
            prepared.scorecard,
            on_result,
            concurrency=settings.concurrency,
            cache=cache,
            reuse=use_cache,
            remember=None if config.no_look else sink.remember,
            redact=redact,
            redact_answers=config.redact_outputs,
            judges=judges,
            embedders=embedders,
            check_runner=_checks(config.no_look)
            if plan.streaming or any(c.check for c in plan.cases)
            else None,
            backpressure=lambda: writer.pending >= writer.max_pending,
            budget=budget if budget.cap is not None else None,  # no cap: no bookkeeping
            batches=case_batches(plan, with_checks(str(config.path))) if plan.streaming else None,
            no_look=config.no_look,
            journal=journal,
            replay=carried.replay if carried is not None else None,
            batch=batch,
            judge_batch=judge_batch,
            # the plan's hashes: the engine does not hash a planned request again
            keys=None
            if plan.streaming
            else dict(zip(prepared.cells, prepared.hashes, strict=True)),
            # a streamed case file's batches are looked up in the cache one query a batch (a
            # datasource's rows are not: docs/datasources.md)
            # (and only when the cache holds an answer of the run's models: a first run's
            # batches would each scan the cache it is filling)
            lookup=partial(cache_lookup, Warehouse(settings.cache_path))
            if use_cache
            and settings.cache
            and plan.sources
            and all(isinstance(s, FileRead) for s in plan.sources)
            and cache_holds(Warehouse(settings.cache_path), plan.models)
            else None,
        )
        holder.append(engine)
        try:
            stats = await _drive(engine, writer, hold)
            if config.pairwise and not engine.stopping and not budget.stopped:
                rows = warehouse.query("pair_sides", run_id=run_id).to_pylist()
                pairs = await judge_pairs(engine, config, run_id, rows)
                await asyncio.to_thread(
                    writer.write_pairs, pairs, [c.name for c in config.pairwise]
                )
            return stats
        finally:
            for endpoint in [
                *endpoints.values(),
                *(j.endpoint for j in judges.values()),
                *embedders.values(),
            ]:
                await endpoint.provider.aclose()
            if holder:
                await asyncio.to_thread(holder[0].toolbox.close)

    holder: list[Engine] = []
    caught: list[str] = []
    budget = Budget(max_cost)

    def hold() -> None:
        if closing is not None and not shard:
            closing.enter_context(shared_connection(settings.warehouse))

    def stop() -> None:
        if holder:
            holder[0].stop()

    async def guarded() -> EngineStats:
        task = asyncio.current_task()
        assert task is not None
        with stop_on_signals(task, stop, caught, grace):
            return await main()

    status = "failed"
    try:
        stats = run_loop(guarded())
        status = "interrupted" if caught else "stopped" if budget.stopped else "exporting"
    except (KeyboardInterrupt, asyncio.CancelledError) as interrupt:
        status = "interrupted"  # a signal before the handlers were in place (or an embedder's)
        caught.append(caught[0] if caught else signal_name(interrupt))
    finally:
        if journal is not None:
            journal.close()
        done = holder[0].stats if holder else EngineStats()
        if not shard:
            _finish(
                warehouse,
                run_id,
                status,
                token,
                {
                    "requests": done.requests,
                    "cache_hits": done.cache_hits,
                    "retries": done.retries,
                    "errors": done.errors,
                    "judge_requests": done.judge_requests,
                    "rows": writer.rows_written,
                    **({"batched": done.batched} if done.batched else {}),
                    # conflicting lake commits this run's writer retried (0 on a file)
                    "commit_retries": writer.retries,
                    **({"replayed": done.replayed} if done.replayed else {}),
                    **({"stop_reason": budget.reason} if budget.stopped else {}),
                },
                [r.record() for r in plan.sources] or None,
                holder[0].feed.queued if holder and holder[0].feed is not None else None,
            )
    if status == "interrupted":
        if config.sources:  # refused by --resume, and sharded runs refuse datasources
            hint = restart_hint(str(config.path))
        elif shard:
            hint = "continue it with the same `evalwh run ... --shard K/N --run-id RUN` command"
        else:
            hint = f"continue it with `evalwh run {config.path} --resume {run_id}`"
        raise RunInterrupted(
            f"interrupted ({caught[0]}): run {run_id} stopped after flushing "
            f"{writer.rows_written} answered row(s); {hint}",
            run_id=run_id,
            signal_name=caught[0],
        )
    return Outcome(run_id, status, stats, writer.rows_written, token, budget.reason, writer.retries)


def _batch_feed(
    prepared: Prepared,
    run_id: str,
    endpoints: dict[str, Endpoint],
    budget: Any,
    on_batch: Callable[[list[Any]], None] | None,
    first_poll: float | None,
) -> Any:
    """The run's BatchFeed (evalwh.engine.batch) over the batch APIs of its batched models,
    or None when none is batched."""
    if not prepared.batched:
        return None
    from evalwh.engine.batch import BatchFeed

    return BatchFeed(
        run_id,
        prepared.settings.warehouse,
        _batch_apis([endpoints[model_id] for model_id in prepared.batched]),
        budget=budget if budget.cap is not None else None,
        on_poll=on_batch,
        first_wait=first_poll,
    )


def _batch_apis(endpoints: list[Endpoint]) -> dict[str, Any]:
    """Model id -> the batch API of its provider, for those whose provider has one."""
    apis = {}
    for endpoint in endpoints:
        make = getattr(endpoint.provider, "batch_api", None)
        api = make() if make is not None else None
        if api is not None:
            apis[endpoint.model.id] = api
    return apis


def judged_in_batch(prepared: Prepared) -> bool:
    """Whether the run asks its llm-judge criteria's judges in batch jobs (judges_batch)."""
    return prepared.config.judges_batch and bool(prepared.scorecard.judged)


def _judge_feed(
    prepared: Prepared,
    run_id: str,
    judges: dict[str, JudgeRuntime],
    budget: Any,
    on_batch: Callable[[list[Any]], None] | None,
    first_poll: float | None,
    stored: dict[str, Any],
) -> Any:
    """The run's JudgeFeed (evalwh.engine.judge_batch) over the batch APIs of its judges'
    models under ``judges_batch: true``, else None (judges asked live)."""
    if not judged_in_batch(prepared):
        return None
    from evalwh.engine.judge_batch import JudgeFeed

    return JudgeFeed(
        run_id,
        prepared.settings.warehouse,
        _batch_apis([runtime.endpoint for runtime in judges.values()]),
        stored,
        budget=budget if budget.cap is not None else None,
        on_poll=on_batch,
        first_wait=first_poll,
    )


def _open_journal(
    prepared: Prepared, run_id: str, filters: Filters, sink: Any, carried: Any
) -> Any:
    """The run's answer journal, beside the warehouse (evalwh.engine.journal), holding a
    continued run's records of cells not stored yet."""
    from evalwh.engine.journal import Journal, journal_dir, journal_path

    settings, config = prepared.settings, prepared.config
    path = journal_path(journal_dir(settings.local_dir), run_id, filters.shard)
    header = {"run_id": run_id, "config_hash": config.config_hash, "shard": filters.shard}
    kept = carried.kept if carried is not None else ()
    return Journal(path, header, sink.journal_record, kept=kept)


def run_loop(main: Any) -> Any:
    """``asyncio.run(main)``, on uvloop's event loop when the ``fast`` extra is installed
    (uvloop and the aiohttp transport; Python 3.11+): about 20 % less CPU per HTTP request.
    With httpcore's pools uvloop measured *slower* (benchmarks/README.md), so it is used only
    together with the aiohttp transport. ``EVALWH_EVENT_LOOP=asyncio`` keeps the standard loop.
    """
    import os
    import sys

    from evalwh.providers import fast_http

    if (
        sys.version_info >= (3, 11)
        and os.environ.get("EVALWH_EVENT_LOOP", "") != "asyncio"
        and fast_http()
    ):
        try:
            import uvloop
        except ImportError:
            pass
        else:
            with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                return runner.run(main)
    return asyncio.run(main)


def _finish(
    warehouse: Any,
    run_id: str,
    status: str,
    token: str | None,
    totals: dict[str, Any],
    datasources: list[dict[str, Any]] | None = None,
    n_planned: int | None = None,
) -> None:
    """Record the run's end (and, for a datasource run, what it read: rows, digest, and the
    cells it handed out as ``n_planned``); when the run
    is already failing (status ``failed``: an error is on its way up, a full disk say), a
    failure here is logged and the first error reported."""
    import logging

    try:
        warehouse.finish_run(
            run_id, status, totals, token=token, datasources=datasources, n_planned=n_planned
        )
    except Exception as exc:
        if status != "failed":
            raise
        logging.getLogger("evalwh.engine").warning(
            "could not mark run %s %s: %s", run_id, status, exc
        )


def _checks(no_look: bool) -> Callable[[Any, str], Any]:
    """The exec-check runner; a no-look run writes no answer file (evalwh.scoring.checks)."""

    async def check_runner(case: Any, output: str) -> CheckOutcome:
        from evalwh.scoring.checks import run_check

        result = await run_check(case.check, output, case.vars, no_look=no_look)
        return CheckOutcome(result.passed, result.exit_code, result.output, result.error)

    return check_runner


def _bounded(cache: dict[str, CachedAnswer]) -> Any:
    from evalwh.engine.feed import BoundedCache

    bounded = BoundedCache(len(cache) + BoundedCache.default_limit)
    bounded.update(cache)
    return bounded


def judge_cache(warehouse: Any, models: list[ModelSpec]) -> dict[str, CachedAnswer]:
    """Cached replies of the judge models (judge requests are only known once answers exist)."""
    if not warehouse.exists:
        return {}
    out: dict[str, CachedAnswer] = {}
    for model in models:
        out.update(
            cached_answers(
                warehouse.query("cache_for_model", provider=model.provider, model=model.model)
            )
        )
    return out
