"""Load eval.yaml into an :class:`EvalConfig`: parse, check against the schema, resolve files."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from evalwh.config.model import Criterion, EvalConfig, ModelSpec, Price, Variant
from evalwh.config.validate import validate_document
from evalwh.config.yamlpos import format_path, load_yaml, locate
from evalwh.errors import ConfigError

DEFAULT_CONFIG = "eval.yaml"
MODEL_KEYS = {
    "id",
    "provider",
    "model",
    "params",
    "max_concurrency",
    "requests_per_minute",
    "timeout_s",
    "max_retries",
    "price",
}
CRITERION_KEYS = {"name", "type", "weight", "required", "threshold", "description"}


def canonical_hash(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def load_config(path: str | Path) -> EvalConfig:
    """Read and validate an eval config. Raises ConfigError naming the file, place and fix."""
    from evalwh.datasets import dataset_rows, inline_case, load_file_source

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
    models = [_model(m, f"models[{i}]") for i, m in enumerate(data["models"])]

    unique(data["variants"], "id", "variants")
    variants = [_variant(v, i, path) for i, v in enumerate(data["variants"])]

    cases = []
    for i, source in enumerate(data["cases"]):
        if "file" in source:
            cases.extend(load_file_source(source, path.parent, f"cases[{i}]", file))
        else:
            cases.append(inline_case(source, f"{path.name} cases[{i}]"))
    seen_cases: dict[str, str] = {}
    for case in cases:
        if case.id in seen_cases:
            raise ConfigError(
                f"duplicate case id '{case.id}' ({case.source} and {seen_cases[case.id]})",
                file=file,
                where="cases",
                fix="give every case a unique id",
            )
        seen_cases[case.id] = case.source

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
    if not any(c.weight > 0 for c in scorecard):
        raise ConfigError(
            "every criterion has weight 0",
            **where_line(["scorecard"]),
            fix="give at least one criterion a positive weight",
        )

    snapshot = dict(data)
    snapshot["variants"] = [
        {"id": v.id, "messages": [[m.role, [p.to_dict() for p in m.content]] for m in v.messages]}
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
        config_hash=canonical_hash(
            {k: v for k, v in snapshot.items() if k not in ("cases", "settings")}
        ),
        dataset_hash=canonical_hash(rows),
        node=node,
    )


def _model(raw: dict[str, Any], where: str) -> ModelSpec:
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
        price=Price(0.0, 0.0) if price == 0 else (Price(**price) if price else None),
        options={k: v for k, v in raw.items() if k not in MODEL_KEYS},
        where=where,
    )


def _variant(raw: dict[str, Any], index: int, config_path: Path) -> Variant:
    from evalwh.prompts import messages_from_config

    where = f"variants[{index}]"
    if "messages" in raw:
        return Variant(
            id=raw["id"],
            messages=messages_from_config(raw["messages"]),
            description=raw.get("description"),
            source=str(config_path),
            where=where,
        )
    prompt_path = (config_path.parent / raw["prompt"]).resolve()
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
        )
    text = prompt_path.read_text(encoding="utf-8")
    return Variant(
        id=raw["id"],
        messages=messages_from_config([{"role": "user", "content": text}]),
        description=raw.get("description"),
        source=str(prompt_path),
        where="prompt",
    )
