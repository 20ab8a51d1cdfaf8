"""YAML loading that remembers where every value came from, for errors that name a line.

Every YAML file evalwh reads (configs, prompt files, settings, secrets, schema files) goes
through :func:`load_yaml` / :func:`parse_yaml`, which refuse duplicate keys at any depth,
nesting deeper than :data:`MAX_DEPTH`, alias bombs, non-UTF-8 bytes and lone surrogates,
each as a ConfigError naming the file, line and fix.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from evalwh.errors import ConfigError

MAX_DEPTH = 200  # nesting levels a YAML document may have
MAX_ALIAS_NODES = 100_000  # nodes that aliases may add when the document is expanded


class BoundedLoader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML ships no types
    """SafeLoader that refuses duplicate keys, deep nesting and alias bombs while composing.

    PyYAML builds aliases as shared nodes, so a 10 KB "billion laughs" file composes fast but
    expands to gigabytes once it is serialised (JSON, the warehouse). We count the nodes each
    alias adds to the expanded document and stop past :data:`MAX_ALIAS_NODES`; nesting stops
    at :data:`MAX_DEPTH` (before Python's recursion limit turns it into a crash).
    """

    def __init__(self, stream: str, file: str = "<yaml>") -> None:
        super().__init__(stream)
        self.file = file
        self.depth = 0
        self.alias_nodes = 0
        self.sizes: dict[int, int] = {}

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            node = super().compose_node(parent, index)
            self.alias_nodes += self._size(node)
            if self.alias_nodes > MAX_ALIAS_NODES:
                raise ConfigError(
                    f"YAML aliases expand to more than {MAX_ALIAS_NODES:,} nodes "
                    f"(the alias *{event.anchor} and those before it)",
                    file=self.file,
                    line=event.start_mark.line + 1,
                    column=event.start_mark.column + 1,
                    fix="write the data out instead of nesting anchors and aliases "
                    "(an alias bomb is refused)",
                )
            return node
        self.depth += 1
        if self.depth > MAX_DEPTH:
            mark = self.peek_event().start_mark
            raise ConfigError(
                f"YAML nested more than {MAX_DEPTH} levels deep",
                file=self.file,
                line=mark.line + 1,
                column=mark.column + 1,
                fix=f"flatten the data to at most {MAX_DEPTH} levels of lists and mappings",
            )
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def compose_mapping_node(self, anchor: Any) -> Any:
        node = super().compose_mapping_node(anchor)
        seen: dict[tuple[str, str], int] = {}
        for key, _ in node.value:
            if not isinstance(key, yaml.ScalarNode) or key.tag == "tag:yaml.org,2002:merge":
                continue
            ident = (key.tag, key.value)
            if ident in seen:
                raise ConfigError(
                    f"duplicate key '{key.value}' (first at line {seen[ident]})",
                    file=self.file,
                    line=key.start_mark.line + 1,
                    column=key.start_mark.column + 1,
                    fix="remove one of the two keys or merge their values: YAML keeps only one",
                )
            seen[ident] = key.start_mark.line + 1
        return node

    def _size(self, node: yaml.Node) -> int:
        """Nodes in the expanded tree under ``node`` (memoised: aliases share nodes)."""
        known = self.sizes.get(id(node))
        if known is not None:
            return known
        size = 1
        if isinstance(node, yaml.SequenceNode):
            size += sum(self._size(child) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            size += sum(self._size(k) + self._size(v) for k, v in node.value)
        self.sizes[id(node)] = size
        return size


def _decode(raw: bytes, path: Path) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ConfigError(
            f"not UTF-8 text ({exc.reason}: byte 0x{raw[exc.start]:02x})",
            file=str(path),
            line=line,
            column=column,
            fix="save the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8`)",
        ) from None


def load_yaml(path: Path) -> tuple[Any, yaml.Node | None]:
    """Parse ``path``; return the data and its node tree (for :func:`locate`).

    Duplicate keys, nesting deeper than :data:`MAX_DEPTH` and alias bombs are ConfigErrors.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(
            "file not found", file=str(path), fix="check the path (it is relative to the config)"
        ) from None
    except IsADirectoryError:
        raise ConfigError(
            "is a folder, not a YAML file", file=str(path), fix="point at a .yaml file"
        ) from None
    return parse_yaml(_decode(raw, path), str(path))


def parse_yaml(text: str, file: str) -> tuple[Any, yaml.Node | None]:
    """Parse YAML text (from ``file``, for errors) with the bounds of :class:`BoundedLoader`."""
    try:  # the reader checks the characters as it is made: a control character fails here
        loader = BoundedLoader(text, file)
    except yaml.reader.ReaderError as exc:
        pos = exc.position
        raise ConfigError(
            f"malformed YAML: unacceptable character #x{exc.character:04x} ({exc.reason})",
            file=file,
            line=text.count("\n", 0, pos) + 1,
            column=pos - (text.rfind("\n", 0, pos) + 1) + 1,
            fix="remove the character, or write it as an escape (\\x01) in a double-quoted string",
        ) from None
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        raise ConfigError(
            f"malformed YAML: {exc.problem}" + (f" ({exc.context})" if exc.context else ""),
            file=file,
            line=mark.line + 1 if mark else None,
            column=mark.column + 1 if mark else None,
            fix="fix the YAML syntax at that place (indentation, a missing ':' or an unclosed quote)",
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(
            f"malformed YAML: {exc}", file=file, fix="fix the YAML syntax of the file"
        ) from None
    except RecursionError:
        raise ConfigError(
            "YAML nested too deeply",
            file=file,
            fix=f"flatten the data to at most {MAX_DEPTH} levels of lists and mappings",
        ) from None
    finally:
        loader.dispose()
    _check_text(data, file, node)
    return data, node


def _check_text(data: Any, file: str, node: yaml.Node | None) -> None:
    """Refuse lone surrogates (\\ud800 escapes): they cannot be stored as UTF-8."""
    bad = find_surrogate(data)
    if bad is not None:
        line, column = locate(node, list(bad))
        raise ConfigError(
            "a string holds a lone surrogate (an escape such as \\ud800), which is not text",
            file=file,
            where=format_path(list(bad)),
            line=line,
            column=column,
            fix="remove the escape or write the character it should stand for",
        )


def find_surrogate(value: Any, path: tuple[str | int, ...] = ()) -> tuple[str | int, ...] | None:
    """The path of the first string (key or value) holding a lone surrogate, or None."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return where
        elif isinstance(item, dict):
            for k, v in item.items():
                if isinstance(k, str) and _SURROGATE.search(k):
                    return where
                stack.append((v, (*where, str(k))))
        elif isinstance(item, list):
            stack.extend((v, (*where, i)) for i, v in enumerate(item))
    return None


_SURROGATE = re.compile("[\\ud800-\\udfff]")


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
