"""Settings layering: flags > EVALWH_* environment > eval.yaml ``settings:`` > user config > defaults."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from evalwh.errors import ConfigError
from evalwh.warehouse.lake import LakeTarget, is_target, parse_target

DEFAULTS: dict[str, Any] = {
    "output_dir": ".evalwh",
    "warehouse": None,  # default: <output_dir>/warehouse.duckdb; or a ducklake: target
    "lake": None,  # DuckLake data path and S3 settings (docs/scale-out.md)
    "cache_dir": None,  # default: the response cache lives in the warehouse
    "concurrency": 16,
    "cache": True,
    "export_parquet": True,
    "batch_size": 2000,
    "repeat": 1,
    "max_cost_usd": None,  # no cap unless set
    "stale_after_s": 120.0,  # a running run whose heartbeat is older counts as interrupted
    "max_error_rate": 1.0,  # a run whose share of errored cells reaches this fails (exit 3)
    # Bounds (docs/configuration.md): DuckDB memory for the warehouse connections evalwh opens,
    # and the timeout, memory and threads of one `evalwh sql` / MCP `query` statement.
    "memory_limit": "2GB",
    "query_timeout_s": 30.0,
    "mcp_query_timeout_s": 10.0,
    "query_memory_limit": "1GB",
    "query_threads": 2,
}
FLOAT_KEYS = (
    "max_cost_usd",
    "stale_after_s",
    "max_error_rate",
    "query_timeout_s",
    "mcp_query_timeout_s",
)
MEMORY_KEYS = ("memory_limit", "query_memory_limit")
MEMORY_SIZE = re.compile(r"^\s*\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*$", re.I)
PATH_KEYS = ("output_dir", "warehouse", "cache_dir")
CACHE_FILE = "cache.duckdb"  # the response cache's file inside cache_dir


@dataclass(frozen=True)
class Settings:
    output_dir: Path
    warehouse: Path | LakeTarget  # a DuckDB file, or a shared DuckLake warehouse
    concurrency: int
    cache: bool
    export_parquet: bool
    batch_size: int
    repeat: int
    max_cost_usd: float | None
    stale_after_s: float
    max_error_rate: float
    memory_limit: str
    query_timeout_s: float
    mcp_query_timeout_s: float
    query_memory_limit: str
    query_threads: int
    sources: Mapping[str, str]  # setting -> where its value came from (for `evalwh validate -v`)
    cache_dir: Path | None = None  # the response cache's own folder (None: in the warehouse)

    @property
    def cache_path(self) -> Path | LakeTarget:
        """The DuckDB file that holds the response cache: ``<cache_dir>/cache.duckdb`` when
        ``cache_dir`` is set, else the warehouse itself."""
        return self.cache_dir / CACHE_FILE if self.cache_dir is not None else self.warehouse

    @property
    def local_dir(self) -> Path:
        """The folder on this machine beside the warehouse (exports, attached files): the
        warehouse file's folder; for a lake, the output folder."""
        if isinstance(self.warehouse, LakeTarget):
            return self.output_dir
        return self.warehouse.parent

    @property
    def exports_dir(self) -> Path:
        return self.local_dir / "exports"

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "sources"}
        return {k: str(v) if isinstance(v, (Path, LakeTarget)) else v for k, v in out.items()}


def user_config_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get("EVALWH_CONFIG_DIR"):
        return Path(env["EVALWH_CONFIG_DIR"])
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "evalwh"


def _parse_env(key: str, raw: str) -> Any:
    kind = (
        float if key in FLOAT_KEYS else (type(DEFAULTS[key]) if DEFAULTS[key] is not None else str)
    )
    name = f"EVALWH_{key.upper()}"
    if key == "lake":
        return _parse_lake_env(name, raw)
    if kind is float:
        try:
            number = float(raw)
        except ValueError:
            raise ConfigError(
                f"{name}={raw!r} is not a number", fix=f"set {name} to a number such as 2.50"
            ) from None
        if number < 0:
            raise ConfigError(f"{name} must not be negative", fix=f"set {name} to 0 or more")
        return number
    if kind is bool:
        low = raw.strip().lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{name}={raw!r} is not a boolean", fix=f"set {name} to true or false")
    if kind is int:
        try:
            value = int(raw)
        except ValueError:
            raise ConfigError(
                f"{name}={raw!r} is not an integer", fix=f"set {name} to a number"
            ) from None
        if value < 1:
            raise ConfigError(f"{name} must be at least 1", fix=f"set {name} to a positive number")
        return value
    return raw


def _parse_lake_env(name: str, raw: str) -> dict[str, Any]:
    """``EVALWH_LAKE``: the ``lake:`` mapping as JSON (handy in a CI job's environment)."""
    import json

    try:
        value = json.loads(raw)
    except ValueError:
        value = None
    allowed = {"data_path", "s3", "secret", "flush_rows", "flush_interval_s"}
    if not isinstance(value, dict) or not set(value) <= allowed:
        raise ConfigError(
            f"{name} is not a JSON object of {', '.join(sorted(allowed))}",
            fix=f'set {name} to e.g. {{"data_path": "s3://bucket/evalwh/", "s3": {{"region": '
            '"us-east-1"}}',
        )
    return value


def _user_settings(env: Mapping[str, str]) -> tuple[dict[str, Any], Path | None]:
    from evalwh.config.yamlpos import load_yaml

    path = user_config_dir(env) / "config.yaml"
    if not path.is_file():
        return {}, None
    data, node = load_yaml(path)
    if data is None:
        return {}, path
    from evalwh.config.validate import validate_document

    validate_document(data, node, str(path), definition="settings")
    return dict(data), path


def resolve_settings(
    flags: Mapping[str, Any] | None = None,
    config_settings: Mapping[str, Any] | None = None,
    config_dir: Path | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    secret: Callable[[str], str | None] | None = None,
) -> Settings:
    """Layer the sources. Paths from a file resolve against that file's folder, others against cwd.

    ``secret`` looks up a DuckLake target's credentials by name (default: the environment;
    evalwh.api passes the secrets-file lookup of evalwh.config.secrets)."""
    env = os.environ if env is None else env
    cwd = cwd or Path.cwd()
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    base: dict[str, Path] = {}
    rank: dict[str, int] = {}
    sources_order: list[str] = []

    def apply(layer: Mapping[str, Any], origin: str, folder: Path) -> None:
        level = len(sources_order) + 1  # each later layer outranks the ones before
        sources_order.append(origin)
        for key, value in layer.items():
            if value is None or key not in DEFAULTS:
                continue
            values[key], sources[key], base[key], rank[key] = value, origin, folder, level

    apply({k: v for k, v in DEFAULTS.items() if v is not None}, "default", cwd)
    user, user_path = _user_settings(env)
    if user_path:
        apply(user, str(user_path), user_path.parent)
    if config_settings:
        apply(config_settings, "eval.yaml settings", config_dir or cwd)
    apply(
        {
            k: _parse_env(k, env[f"EVALWH_{k.upper()}"])
            for k in DEFAULTS
            if f"EVALWH_{k.upper()}" in env
        },
        "environment",
        cwd,
    )
    apply(dict(flags or {}), "flag", cwd)

    for key in MEMORY_KEYS:
        if not MEMORY_SIZE.match(str(values[key])):
            raise ConfigError(
                f"{key}={values[key]!r} is not a memory size",
                where=f"setting {key} (from {sources[key]})",
                fix=f"write a size such as 1GB or 512MB for {key}",
            )
    output_dir = (base["output_dir"] / Path(values["output_dir"]).expanduser()).resolve()
    if output_dir.exists() and not output_dir.is_dir():
        raise ConfigError(
            f"the output folder {output_dir} is a file",
            where=f"output_dir (from {sources['output_dir']})",
            fix="point -o / output_dir at a folder (it is created when missing)",
        )
    # A warehouse path set at a lower layer than output_dir follows output_dir (``-o`` wins).
    warehouse: Path | LakeTarget
    if "warehouse" in values and is_target(str(values["warehouse"])):
        warehouse = parse_target(
            str(values["warehouse"]),
            values.get("lake"),
            base=base["warehouse"],
            lake_base=base.get("lake"),
            where=f"setting warehouse (from {sources['warehouse']})",
            secret=secret or env.get,
        )
    elif "warehouse" in values and rank["warehouse"] >= rank["output_dir"]:
        warehouse = (base["warehouse"] / Path(values["warehouse"]).expanduser()).resolve()
    else:
        warehouse = output_dir / "warehouse.duckdb"
        sources["warehouse"] = sources["output_dir"]
    return Settings(
        output_dir=output_dir,
        warehouse=warehouse,
        concurrency=int(values["concurrency"]),
        cache=bool(values["cache"]),
        export_parquet=bool(values["export_parquet"]),
        batch_size=int(values["batch_size"]),
        repeat=int(values["repeat"]),
        max_cost_usd=float(values["max_cost_usd"])
        if values.get("max_cost_usd") is not None
        else None,
        stale_after_s=float(values["stale_after_s"]),
        max_error_rate=float(values["max_error_rate"]),
        memory_limit=str(values["memory_limit"]).strip(),
        query_timeout_s=float(values["query_timeout_s"]),
        mcp_query_timeout_s=float(values["mcp_query_timeout_s"]),
        query_memory_limit=str(values["query_memory_limit"]).strip(),
        query_threads=int(values["query_threads"]),
        sources=sources,
        cache_dir=(base["cache_dir"] / Path(values["cache_dir"]).expanduser()).resolve()
        if values.get("cache_dir")
        else None,
    )
