"""Provider registry: built-ins and third-party providers register the same way.

A provider is a class with ``__init__(spec: ModelSpec)``, ``async complete(request)``,
``async aclose()``, an optional ``classmethod check(spec) -> None`` that raises
ConfigError for a bad model entry and an optional ``classmethod secrets_needed(spec)`` that
lists the keys its requests look up (checked before a run: evalwh.engine.keys). Built-ins are listed in :data:`BUILTIN` as import paths,
imported only when used; third-party packages add an ``evalwh.providers`` entry point.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from importlib.metadata import entry_points
from typing import Any

from evalwh.config.model import ModelSpec
from evalwh.errors import ConfigError

BUILTIN: dict[str, str] = {
    "mock": "evalwh.providers.mock:MockProvider",
    "anthropic": "evalwh.providers.anthropic:AnthropicProvider",
    "openai": "evalwh.providers.openai:OpenAIProvider",
    "openai-compatible": "evalwh.providers.openai:OpenAICompatibleProvider",
    "command": "evalwh.providers.command:CommandProvider",
    "google": "evalwh.providers.google:GoogleProvider",
}


def fast_http() -> bool:
    """The ``fast`` extra's HTTP path is on: httpx-aiohttp installed and not switched off with
    ``EVALWH_HTTP_TRANSPORT=httpx`` (evalwh.providers.http_aiohttp). Imports nothing heavy."""
    import os
    from importlib.util import find_spec

    if os.environ.get("EVALWH_HTTP_TRANSPORT", "").strip().lower() == "httpx":
        return False
    return find_spec("httpx_aiohttp") is not None


@lru_cache(maxsize=1)
def available() -> dict[str, str]:
    """Provider name -> "module:Class", built-ins first, then entry points."""
    found = dict(BUILTIN)
    for ep in entry_points(group="evalwh.providers"):
        found.setdefault(ep.name, ep.value)
    return found


def provider_class(name: str, *, where: str = "", file: str | None = None) -> Any:
    # a built-in reads no entry points (scanning every package's metadata: ~5-20 ms)
    target = BUILTIN.get(name) or available().get(name)
    if target is None:
        raise ConfigError(
            f"unknown provider '{name}'",
            file=file,
            where=f"{where}.provider" if where else None,
            fix=f"use one of: {', '.join(sorted(available()))}",
        )
    module_name, _, attr = target.partition(":")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except Exception as exc:  # a third-party entry point that does not load
        raise ConfigError(
            f"cannot load provider '{name}' from {target}: {type(exc).__name__}: {exc}",
            file=file,
            where=f"{where}.provider" if where else None,
            fix="reinstall the package that registers this provider (entry point group "
            "'evalwh.providers')",
        ) from None


def check(spec: ModelSpec, file: str | None = None) -> None:
    cls = provider_class(spec.provider, where=spec.where, file=file)
    checker = getattr(cls, "check", None)
    if checker is not None:
        checker(spec, file)


def secrets_needed(spec: ModelSpec) -> list[Any]:
    """The secrets a request of ``spec`` looks up (evalwh.providers.base.SecretNeed): none for
    a provider that declares none (the mock, the command provider)."""
    needed = getattr(provider_class(spec.provider), "secrets_needed", None)
    return list(needed(spec)) if needed is not None else []


def create(spec: ModelSpec) -> Any:
    return provider_class(spec.provider)(spec)
