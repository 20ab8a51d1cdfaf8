"""YAML loading that remembers where every value came from, for errors that name a line."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from evalwh.errors import ConfigError


def load_yaml(path: Path) -> tuple[Any, yaml.Node | None]:
    """Parse ``path``; return the data and its node tree (for :func:`locate`)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            "file not found", file=str(path), fix="check the path (it is relative to the config)"
        ) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not UTF-8 text ({exc.reason})", file=str(path)) from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.load(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        raise ConfigError(
            f"malformed YAML: {exc.problem}" + (f" ({exc.context})" if exc.context else ""),
            file=str(path),
            line=mark.line + 1 if mark else None,
            column=mark.column + 1 if mark else None,
            fix="fix the YAML syntax at that place (indentation, a missing ':' or an unclosed quote)",
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"malformed YAML: {exc}", file=str(path)) from None
    return data, node


def _child(node: yaml.Node | None, key: str | int) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        return next((v for k, v in node.value if k.value == key), None)
    if isinstance(node, yaml.SequenceNode) and isinstance(key, int) and 0 <= key < len(node.value):
        return node.value[key]
    return None


def locate(node: yaml.Node | None, path: list[str | int]) -> tuple[int | None, int | None]:
    """Line and column (1-based) of the deepest node found along ``path``."""
    best = node
    for key in path:
        child = _child(best, key)
        if child is None:
            break
        best = child
    if best is None:
        return None, None
    return best.start_mark.line + 1, best.start_mark.column + 1


def key_location(
    node: yaml.Node | None, path: list[str | int], key: str
) -> tuple[int | None, int | None]:
    """Line and column of the key ``key`` in the mapping at ``path`` (for unknown-key errors)."""
    mapping = node
    for step in path:
        mapping = _child(mapping, step)
    if isinstance(mapping, yaml.MappingNode):
        for k, _ in mapping.value:
            if k.value == key:
                return k.start_mark.line + 1, k.start_mark.column + 1
    return locate(node, path)


def format_path(path: list[str | int] | tuple[str | int, ...]) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def parse_path(where: str) -> list[str | int]:
    """Inverse of :func:`format_path`: ``models[1].params`` -> ["models", 1, "params"]."""
    out: list[str | int] = []
    for token in re.findall(r"[^.\[\]]+|\[\d+\]", where):
        out.append(int(token[1:-1]) if token.startswith("[") else token)
    return out
