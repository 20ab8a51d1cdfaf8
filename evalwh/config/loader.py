"""Load eval.yaml into an :class:`EvalConfig`: parse, check against the schema, resolve files."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalwh.config.model import (
    Calibration,
    Comparison,
    Criterion,
    EvalConfig,
    Judge,
    Label,
    ModelSpec,
    PointLabel,
    Price,
    Side,
    Variant,
    canonical_hash,
)
from evalwh.config.validate import validate_document
from evalwh.config.yamlpos import format_path, load_yaml, locate
from evalwh.errors import ConfigError

DEFAULT_CONFIG = "eval.yaml"
DEFAULT_DEADLINE_S = 300.0  # one call's overall bound, retries and Retry-After waits included
MODEL_KEYS = {
    "id",
    "provider",
    "model",
    "params",
    "max_concurrency",
    "requests_per_minute",
    "timeout_s",
    "max_retries",
    "deadline_s",
    "adaptive_concurrency",
    "price",
    "on_truncated",
    "batch",
}
# Sections that do not change what a run asks or scores (resume keeps working when they change).
NOT_HASHED = ("cases", "settings", "labels", "calibration", "thresholds", "description")
CRITERION_KEYS = {"name", "type", "weight", "required", "threshold", "description"}


def load_config(path: str | Path) -> EvalConfig:
    """Read and validate an eval config. Raises ConfigError naming the file, place and fix."""
    path = Path(path)
    if path.is_dir():
        path = path / DEFAULT_CONFIG
    if not path.is_file():
        raise ConfigError(
            "config file not found",
            file=str(path),
            fix="pass the path of an eval.yaml, or create one with `evalwh init`",
        )
    path = path.resolve()
    file = str(path)
    data, node = load_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(
            "the config must be a YAML mapping", file=file, fix="start with `models:`"
        )
    return build_config(data, path, node)


def build_config(data: dict[str, Any], path: Path, node: Any = None) -> EvalConfig:
    """Validate config data (as parsed from ``path``) and build the typed config."""
    from evalwh.config.datasets import dataset_rows, inline_case, load_file_source, source_spec
    from evalwh.config.folders import directory_cases

    file = str(path)
    validate_document(data, node, file)

    def where_line(p: list[str | int]) -> dict[str, Any]:
        line, column = locate(node, p)
        return {"file": file, "where": format_path(p), "line": line, "column": column}

    def unique(items: list[Any], key: str, section: str) -> None:
        seen: dict[str, int] = {}
        for i, item in enumerate(items):
            value = str(item[key]) if isinstance(item, dict) else getattr(item, key)
            if value in seen:
                raise ConfigError(
                    f"duplicate {key} '{value}' (also at {section}[{seen[value]}])",
                    **where_line([section, i, key]),
                    fix=f"give every entry of {section} a unique {key}",
                )
            seen[value] = i

    unique(data["models"], "id", "models")
    models = model_specs(data, path.parent)

    unique(data["variants"], "id", "variants")
    variants = [_variant(v, i, path) for i, v in enumerate(data["variants"])]

    from evalwh.config.datasets import refuse_repeated_ids
    from evalwh.config.streamed import refusal, refuse_duplicate_ids, streamed_file

    cases, sources, streamed = [], [], []
    no_look = bool((data.get("privacy") or {}).get("no_look"))
    for i, source in enumerate(data["cases"]):
        if "file" in source:
            where = f"cases[{i}]"
            large = streamed_file(source, path.parent, where, file, quiet=no_look)
            if large is not None:
                sources.append(large[0])
                streamed.append(large)
            else:
                cases.extend(load_file_source(source, path.parent, where, file, quiet=no_look))
        elif "dir" in source:
            cases.extend(directory_cases(source, path.parent, f"cases[{i}]", file))
        elif "source" in source:
            sources.append(source_spec(source, f"cases[{i}]", file))
        else:
            cases.append(
                inline_case(
                    source,
                    f"{path.name} cases[{i}]",
                    folder=path.parent,
                    origin=(file, f"cases[{i}].files"),
                )
            )
    refuse_repeated_ids(cases, file)
    refuse_duplicate_ids(streamed, cases, path.parent, file)

    unique(data["scorecard"], "name", "scorecard")
    scorecard = [
        Criterion(
            name=c["name"],
            type=c["type"],
            weight=float(c.get("weight", 1.0)),
            required=bool(c.get("required", True)),
            threshold=float(c.get("threshold", 0.5)),
            options={k: v for k, v in c.items() if k not in CRITERION_KEYS},
            where=f"scorecard[{i}]",
        )
        for i, c in enumerate(data["scorecard"])
    ]
    models, embedders = _embedding_models(data, models, where_line)
    from evalwh.config.outputs import attach_outputs

    variants = attach_outputs(data, variants, scorecard, path)
    from evalwh.config.tools import attach_tools

    variants = attach_tools(data, variants, path)
    if not any(c.weight > 0 for c in scorecard):
        raise ConfigError(
            "every criterion has weight 0",
            **where_line(["scorecard"]),
            fix="give at least one criterion a positive weight",
        )

    judges = [_judge(j, f"judges[{i}]", path) for i, j in enumerate(data.get("judges") or [])]
    unique(data.get("judges") or [], "id", "judges")
    judge_ids = {j.id for j in judges}
    for i, c in enumerate(data["scorecard"]):
        if c["type"] == "llm-judge" and c["judge"] not in judge_ids:
            raise ConfigError(
                f"unknown judge '{c['judge']}'",
                **where_line(["scorecard", i, "judge"]),
                fix=f"define it under `judges:` (known: {', '.join(sorted(judge_ids)) or 'none'})",
            )
    comparisons = _comparisons(
        data, models, variants, judge_ids, {c.name for c in scorecard}, where_line
    )
    if comparisons and (why := refusal(sources, "pairwise")):
        raise ConfigError(why, **where_line(["pairwise"]))
    if comparisons and sources:
        raise ConfigError(
            "pairwise comparisons need every case in the config: a datasource's rows are read "
            "while the run goes and not kept for the judge, who compares the answers after it",
            **where_line(["pairwise"]),
            fix="export the source to a file and list it under `cases:` (`- file: cases.parquet`),"
            " or compare two runs' scores with `evalwh compare A B`",
        )
    case_ids = None if sources else {c.id for c in cases}
    labels = _labels(data, comparisons, case_ids, where_line)
    scales = {j.id: j.scale for j in judges}
    judged = {c.name: scales[c.options["judge"]] for c in scorecard if c.type == "llm-judge"}
    sides = ([v.id for v in variants], [m.id for m in models])
    point_labels = _point_labels(data, judged, case_ids, where_line, sides)
    raw_cal = data.get("calibration") or {}
    calibration = Calibration(
        min_kappa=float(raw_cal.get("min_kappa", 0.6)),
        min_labels=int(raw_cal.get("min_labels", 20)),
        max_flip_rate=float(raw_cal.get("max_flip_rate", 0.30)),
        on_below_floor=str(raw_cal.get("on_below_floor", "flag")),
    )

    snapshot = dict(data)
    snapshot["variants"] = [
        {
            "id": v.id,
            "messages": [[m.role, [p.to_dict() for p in m.content]] for m in v.messages],
            **({"output": v.output.to_dict()} if v.output is not None else {}),
            **({"tools": [t.name for t in v.tools.tools]} if v.tools is not None else {}),
        }
        for v in variants
    ]
    rows = dataset_rows(cases)
    return EvalConfig(
        path=path,
        name=str(data.get("name") or path.parent.name or path.stem),
        description=data.get("description"),
        settings=dict(data.get("settings") or {}),
        models=models,
        variants=variants,
        cases=cases,
        scorecard=scorecard,
        thresholds=dict(data.get("thresholds") or {}),
        raw=data,
        config_hash=canonical_hash({k: v for k, v in snapshot.items() if k not in NOT_HASHED}),
        dataset_hash=canonical_hash([rows, [s.record() for s in sources]] if sources else rows),
        judges=judges,
        embedders=embedders,
        pairwise=comparisons,
        labels=labels,
        point_labels=point_labels,
        calibration=calibration,
        node=node,
        sources=sources,
        no_look=no_look,
        redact_outputs=(data.get("privacy") or {}).get("redact_outputs") is not False,
        judges_batch=bool(data.get("judges_batch", False)),
    )


def with_defaults(raw: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """A model entry over the suite's ``defaults:``: its own keys win, ``params`` merge key by
    key (``defaults: {params: {temperature: 0}}`` and a model's ``params: {max_tokens: 64}``
    give both)."""
    if not defaults:
        return raw
    params = {**(defaults.get("params") or {}), **(raw.get("params") or {})}
    merged = {**{k: v for k, v in defaults.items() if k != "params"}, **raw}
    if params:
        merged["params"] = params
    return merged


def model_specs(data: dict[str, Any], root: Path | None = None) -> list[ModelSpec]:
    """The ``models:`` of a config's data (as loaded, or a run's stored snapshot) over its
    ``defaults:``."""
    defaults = data.get("defaults") or {}
    return [
        _model(with_defaults(m, defaults), f"models[{i}]", root)
        for i, m in enumerate(data["models"])
    ]


def judge_model_specs(data: dict[str, Any], root: Path | None = None) -> list[ModelSpec]:
    """The models of a config's ``judges:`` (as loaded, or a run's stored snapshot)."""
    judges = data.get("judges") or []
    return [_model(j["model"], f"judges[{i}].model", root) for i, j in enumerate(judges)]


def _model(raw: dict[str, Any], where: str, root: Path | None = None) -> ModelSpec:
    price = raw.get("price")
    return ModelSpec(
        id=raw["id"],
        provider=raw["provider"],
        model=raw.get("model") or raw["id"],
        params=dict(raw.get("params") or {}),
        max_concurrency=raw.get("max_concurrency"),
        requests_per_minute=raw.get("requests_per_minute"),
        timeout_s=float(raw.get("timeout_s", 60.0)),
        max_retries=int(raw.get("max_retries", 3)),
        deadline_s=float(raw.get("deadline_s", DEFAULT_DEADLINE_S)),
        adaptive_concurrency=bool(raw.get("adaptive_concurrency", True)),
        price=Price(0.0, 0.0) if price == 0 else (Price(**price) if price else None),
        options={k: v for k, v in raw.items() if k not in MODEL_KEYS},
        on_truncated=str(raw.get("on_truncated", "fail")),
        where=where,
        root=root,
        batch=bool(raw.get("batch", False)),
    )


def _variant(raw: dict[str, Any], index: int, config_path: Path) -> Variant:
    from evalwh.config.prompts import messages_from_config

    where = f"variants[{index}]"
    if "messages" in raw:
        return Variant(
            id=raw["id"],
            messages=messages_from_config(raw["messages"]),
            description=raw.get("description"),
            source=str(config_path),
            where=where,
            root=config_path.parent,
        )
    from evalwh.boundary import readable

    prompt_path = readable(config_path.parent / raw["prompt"], f"{where}.prompt")
    if not prompt_path.is_file():
        raise ConfigError(
            f"prompt file not found: {prompt_path}",
            file=str(config_path),
            where=f"{where}.prompt",
            fix="check the path; it is relative to the config file's folder",
        )
    if prompt_path.suffix.lower() in (".yaml", ".yml"):
        data, node = load_yaml(prompt_path)
        validate_document(data, node, str(prompt_path), definition="prompt_file")
        messages = messages_from_config(data["messages"])
        description = raw.get("description") or data.get("description")
        return Variant(
            id=raw["id"],
            messages=messages,
            description=description,
            source=str(prompt_path),
            where="prompt",
            root=config_path.parent,
        )
    text = prompt_path.read_text(encoding="utf-8")
    return Variant(
        id=raw["id"],
        messages=messages_from_config([{"role": "user", "content": text}]),
        description=raw.get("description"),
        source=str(prompt_path),
        where="prompt",
        root=config_path.parent,
    )


def _embedding_models(
    data: dict[str, Any], models: list[ModelSpec], where_line: Callable[..., dict[str, Any]]
) -> tuple[list[ModelSpec], list[ModelSpec]]:
    """The matrix's models and the embedding models: a model that a ``semantic`` criterion's
    ``embedder: {model: ID}`` names embeds texts and answers no prompt, so it leaves the
    matrix. An ID that names no model is an error with the known ones."""
    by_id = {m.id: m for m in models}
    named: list[str] = []
    for i, c in enumerate(data["scorecard"]):
        embedder = c.get("embedder") if c["type"] == "semantic" else None
        if not isinstance(embedder, dict):
            continue
        if embedder["model"] not in by_id:
            raise ConfigError(
                f"criterion '{c['name']}': the embedder names no model '{embedder['model']}'",
                **where_line(["scorecard", i, "embedder", "model"]),
                fix="add the embedding model under `models:` (e.g. `- {id: embed, provider: "
                "openai, model: text-embedding-3-small}`) and name its id here "
                f"(models: {', '.join(by_id)})",
            )
        if embedder["model"] not in named:
            named.append(embedder["model"])
    matrix = [m for m in models if m.id not in named]
    if named and not matrix:
        raise ConfigError(
            "every model of `models:` is an embedder: none is left to answer the prompts",
            **where_line(["models"]),
            fix="add the model to evaluate under `models:` beside the embedding model",
        )
    return matrix, [by_id[name] for name in named]


def _judge(raw: dict[str, Any], where: str, config_path: Path) -> Judge:
    from evalwh.config.prompts import messages_from_config

    scale = raw.get("scale") or {"min": 0, "max": 1}
    if scale["max"] <= scale["min"]:
        raise ConfigError(
            "the scale's max must be above its min",
            file=str(config_path),
            where=f"{where}.scale",
            fix="e.g. scale: {min: 1, max: 5}",
        )
    return Judge(
        id=raw["id"],
        model=_model(raw["model"], f"{where}.model", config_path.parent),
        rubric=raw.get("rubric"),
        messages=messages_from_config(raw["messages"]) if raw.get("messages") else None,
        scale=(float(scale["min"]), float(scale["max"])),
        where=where,
    )


def _comparisons(
    data: dict[str, Any],
    models: list[ModelSpec],
    variants: list[Variant],
    judge_ids: set[str],
    criteria: set[str],
    where_line: Any,
) -> list[Comparison]:
    model_ids, variant_ids = {m.id for m in models}, {v.id for v in variants}
    out = []
    for i, raw in enumerate(data.get("pairwise") or []):
        if raw["judge"] not in judge_ids:
            raise ConfigError(
                f"unknown judge '{raw['judge']}'",
                **where_line(["pairwise", i, "judge"]),
                fix=f"define it under `judges:` (known: {', '.join(sorted(judge_ids)) or 'none'})",
            )
        sides = {}
        for role in ("baseline", "candidate"):
            side = raw[role]
            for key, known in (("model", model_ids), ("variant", variant_ids)):
                if key in side and side[key] not in known:
                    raise ConfigError(
                        f"unknown {key} '{side[key]}'",
                        **where_line(["pairwise", i, role, key]),
                        fix=f"use one of: {', '.join(sorted(known))}",
                    )
            sides[role] = Side(model=side.get("model"), variant=side.get("variant"))
        if sides["baseline"] == sides["candidate"]:
            raise ConfigError(
                "baseline and candidate are the same side",
                **where_line(["pairwise", i]),
                fix="compare two different models or variants",
            )
        for name in raw.get("require") or []:
            if name not in criteria:
                raise ConfigError(
                    f"unknown criterion '{name}'",
                    **where_line(["pairwise", i, "require"]),
                    fix=f"use scorecard criterion names: {', '.join(sorted(criteria))}",
                )
        out.append(
            Comparison(
                raw["name"],
                raw["judge"],
                sides["baseline"],
                sides["candidate"],
                tuple(raw.get("require") or ()),
                f"pairwise[{i}]",
            )
        )
    names = [c.name for c in out]
    if len(set(names)) != len(names):
        raise ConfigError(
            "duplicate pairwise name", **where_line(["pairwise"]), fix="give each a unique name"
        )
    return out


POINT_LABELS = ["pass", "fail"]
PREFER = {
    "A": "baseline",
    "B": "candidate",
    "tie": "tie",
    "baseline": "baseline",
    "candidate": "candidate",
}


def _labels(
    data: dict[str, Any],
    comparisons: list[Comparison],
    case_ids: set[str] | None,  # None: cases also come from a datasource, unknown until read
    where_line: Any,
) -> list[Label]:
    out = []
    for i, raw in enumerate(data.get("labels") or []):
        if "prefer" not in raw:
            continue  # a pointwise label: _point_labels
        case_id = _label_case(raw, i, case_ids, where_line)
        known = {x for c in comparisons for x in (*_side_ids(c.baseline), *_side_ids(c.candidate))}
        if str(raw["prefer"]) not in PREFER and str(raw["prefer"]) not in known:
            raise ConfigError(
                f"prefer '{raw['prefer']}' is none of A, B, tie, baseline, candidate or a "
                "compared model or variant id",
                **where_line(["labels", i, "prefer"]),
                fix="say which answer the labeller preferred: A (baseline), B (candidate), tie, "
                "or the preferred side's id",
            )
        matches = comparisons
        if "comparison" in raw:
            matches = [c for c in comparisons if c.name == raw["comparison"]]
        named = [c for c in matches if _sides_match(raw, c, swapped=False)]
        swapped = [c for c in matches if _sides_match(raw, c, swapped=True)]
        flip = not named and bool(swapped) and ("baseline" in raw or "candidate" in raw)
        matches = swapped if flip else named
        if len(matches) != 1:
            names = ", ".join(c.name for c in comparisons) or "none"
            raise ConfigError(
                "this label matches "
                + ("no" if not matches else "more than one")
                + " pairwise comparison",
                **where_line(["labels", i]),
                fix=f"name it with `comparison:` (pairwise entries: {names}) or give baseline/candidate",
            )
        prefer = _prefer(raw, matches[0], where_line(["labels", i, "prefer"]), flip=flip)
        out.append(Label(matches[0].name, case_id, prefer, raw.get("note")))
    return out


def _side_ids(side: Side) -> set[str]:
    return {x for x in (side.model, side.variant) if x}


def _sides_match(raw: dict[str, Any], c: Comparison, *, swapped: bool) -> bool:
    """Whether a label's ``baseline`` / ``candidate`` ids name ``c``'s sides (the other way
    round when ``swapped``); a label that names neither matches every comparison."""
    for key in ("baseline", "candidate"):
        if key not in raw:
            continue
        role = {"baseline": "candidate", "candidate": "baseline"}[key] if swapped else key
        if str(raw[key]) not in _side_ids(getattr(c, role)):
            return False
    return True


def _prefer(raw: dict[str, Any], c: Comparison, where: dict[str, Any], *, flip: bool) -> str:
    """``prefer`` as the comparison's baseline | candidate | tie, from A/B/tie,
    baseline/candidate or the id of the preferred side. A/B and baseline/candidate mean the
    sides as the label names them: ``flip`` when it names them the other way round."""
    other = {"baseline": "candidate", "candidate": "baseline", "tie": "tie"}
    value = str(raw["prefer"])
    if value in PREFER:
        return other[PREFER[value]] if flip else PREFER[value]
    hits = [k for k in ("baseline", "candidate") if value in _side_ids(getattr(c, k))]
    if len(hits) == 1:
        return hits[0]
    raise ConfigError(
        f"prefer '{value}' names neither side of pairwise '{c.name}'",
        **where,
        fix="use A, B, tie, baseline, candidate, or a side's id: "
        f"{c.baseline.describe()} (baseline), {c.candidate.describe()} (candidate)",
    )


def _label_case(raw: dict[str, Any], i: int, case_ids: set[str] | None, where_line: Any) -> str:
    """The label's case id, known to the config (``case_ids`` None: a datasource's cases come
    at run time, so any id is accepted)."""
    case_id = str(raw["case"])
    if case_ids is not None and case_id not in case_ids:
        raise ConfigError(
            f"label for unknown case '{case_id}'",
            **where_line(["labels", i, "case"]),
            fix="use a case id from `cases:`",
        )
    return case_id


ANSWER_KEYS = ("variant", "model", "repeat")  # a pointwise label naming any grades one answer


def _point_labels(
    data: dict[str, Any],
    criteria: dict[str, tuple[float, float]],
    case_ids: set[str] | None,
    where_line: Any,
    sides: tuple[list[str], list[str]] = ([], []),
    cells: set[tuple[str, str, str, int]] | None = None,
) -> list[PointLabel]:
    """The pointwise ``labels:`` entries (``label:`` instead of ``prefer:``); ``criteria``
    maps each llm-judge criterion to its judge's scale. An entry naming ``variant``,
    ``model`` or ``repeat`` grades one answer: ``sides`` are the variant and model ids it may
    name (the only one is the default), ``cells`` the stored (variant, model, case, repeat)
    answers it must be one of (None: a config's labels, whose answers come with the run)."""
    out = []
    for i, raw in enumerate(data.get("labels") or []):
        if "label" not in raw:
            continue
        case_id = _label_case(raw, i, case_ids, where_line)
        names = ", ".join(sorted(criteria)) or "none"
        name = raw.get("criterion")
        if name is None and len(criteria) == 1:
            name = next(iter(criteria))
        if name not in criteria:
            close = difflib.get_close_matches(str(name), list(criteria), n=1)
            raise ConfigError(
                "this label names no llm-judge criterion"
                if name is None
                else f"label for unknown llm-judge criterion '{name}'",
                **where_line(["labels", i, "criterion" if name is not None else "label"]),
                fix=(f"did you mean '{close[0]}'? " if close else "")
                + f"name it with `criterion:` (llm-judge criteria: {names})",
            )
        value = raw["label"]
        low, high = criteria[name]
        if isinstance(value, str) and value not in POINT_LABELS:
            close = difflib.get_close_matches(value.lower(), POINT_LABELS, n=1)
            raise ConfigError(
                f"label '{value}' is neither pass nor fail",
                **where_line(["labels", i, "label"]),
                fix=(f"did you mean '{close[0]}'? " if close else "")
                + f"give pass, fail or a score from {low:g} to {high:g}",
            )
        if not isinstance(value, str) and not low <= value <= high:
            raise ConfigError(
                f"label {value:g} is outside the judge's scale {low:g}..{high:g}",
                **where_line(["labels", i, "label"]),
                fix=f"give pass, fail or a score from {low:g} to {high:g}",
            )
        if not any(k in raw for k in ANSWER_KEYS):
            out.append(PointLabel(name, case_id, value, raw.get("note")))
            continue
        variant, model, repeat = _answer(raw, i, case_id, sides, cells, where_line)
        out.append(PointLabel(name, case_id, value, raw.get("note"), variant, model, repeat))
    return out


def _answer(
    raw: dict[str, Any],
    i: int,
    case_id: str,
    sides: tuple[list[str], list[str]],
    cells: set[tuple[str, str, str, int]] | None,
    where_line: Any,
) -> tuple[str, str, int]:
    """The (variant, model, repeat) a pointwise label of one answer names."""
    named = []
    for key, known in zip(("variant", "model"), sides, strict=True):
        listed = ", ".join(known) or "none"
        if key in raw and str(raw[key]) not in known:
            close = difflib.get_close_matches(str(raw[key]), known, n=1)
            raise ConfigError(
                f"label for unknown {key} '{raw[key]}'",
                **where_line(["labels", i, key]),
                fix=(f"did you mean '{close[0]}'? " if close else "") + f"{key}s: {listed}",
            )
        if key not in raw and len(known) != 1:
            raise ConfigError(
                f"this label of one answer names no {key}",
                **where_line(["labels", i]),
                fix=f"name the answer's {key} with `{key}:` ({key}s: {listed})",
            )
        named.append(str(raw[key]) if key in raw else known[0])
    repeat = raw.get("repeat", 0)
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 0:
        raise ConfigError(
            f"repeat {repeat!r} is not a repeat number",
            **where_line(["labels", i, "repeat"]),
            fix="give the answer's repeat: 0 for the first (the default)",
        )
    if cells is not None and (named[0], named[1], case_id, repeat) not in cells:
        raise ConfigError(
            f"the run has no answer of case '{case_id}' by {named[0]} × {named[1]}, repeat {repeat}",
            **where_line(["labels", i]),
            fix="label an answer the run's Label answers tab shows",
        )
    return named[0], named[1], repeat
