"""What a config may reach when an untrusted caller (an MCP client) hands it to evalwh.

The config author is trusted to run code on their own machine; an agent is not. Under
``evalwh mcp`` every path a config names must resolve (symlinks followed) inside the
server's root, and the features that run code are refused unless the server was started
with ``--allow-code``::

    found = violations(load_config(path), root, allow_code=False)
    # [Violation(key="scorecard[0].function", path="scorers.py", why="runs code ...")]

The check runs twice: :func:`raw_violations` on the parsed YAML before any file it names is
read (so a refused file is never opened and no error can quote it), then
:func:`violations` on the loaded config, which adds what the files brought in (attachments
of prompt files, exec checks of case files). :func:`load_confined` does both and raises a
:class:`ConfinementError` (exit 2) listing every refusal with its key and path.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalwh.config.model import EvalConfig

from evalwh.boundary import (
    ALLOW_CODE_FLAG,
    ConfinementError,
    Violation,
    confined_to,
    inside,
    real_path,
)
from evalwh.errors import ConfigError

CODE_SCORERS = {"python": "function", "semantic": "embedder"}  # type -> option naming code


def _parts_paths(messages: Any, key: str) -> Iterator[tuple[str, str]]:
    from evalwh.config.attachments import KINDS

    for i, message in enumerate(messages if isinstance(messages, list) else []):
        content = message.get("content") if isinstance(message, Mapping) else None
        for j, part in enumerate(content if isinstance(content, list) else []):
            if isinstance(part, Mapping) and isinstance(part.get("path"), str):
                yield f"{key}[{i}].content[{j}].path", part["path"]
            for kind in KINDS:  # the short form names a path when it is no template
                value = part.get(kind) if isinstance(part, Mapping) else None
                if _static_path(value):
                    yield f"{key}[{i}].content[{j}].{kind}", str(value)


def _static_path(value: Any) -> bool:
    from evalwh.config.attachments import is_url

    return isinstance(value, str) and "{" not in value and not is_url(value)


def _command_paths(command: Any, key: str) -> Iterator[tuple[str, str]]:
    """Arguments of a command that name files: anything with a path separator or a dot
    suffix (``./agent.py``, ``/bin/sh``, ``agent.py``); a bare program name is looked up on
    PATH and is not a file of the config."""
    import shlex

    argv = shlex.split(command) if isinstance(command, str) else command
    for i, arg in enumerate(argv if isinstance(argv, list) else []):
        if isinstance(arg, str) and ("/" in arg or "\\" in arg or Path(arg).suffix):
            yield f"{key}[{i}]", arg


def _model_paths(model: Any, key: str) -> Iterator[tuple[str, str]]:
    if isinstance(model, Mapping) and model.get("command") is not None:
        yield from _command_paths(model["command"], f"{key}.command")


def _function_file(spec: Any) -> str | None:
    """The file of a ``path/to/file.py:function`` spec (None for ``module:function``)."""
    if not isinstance(spec, str) or ":" not in spec:
        return None
    target = spec.rpartition(":")[0]
    return target if target.endswith(".py") or "/" in target or "\\" in target else None


def referenced_paths(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(key, path as written) for every file a parsed config names directly."""
    found: list[tuple[str, str]] = []
    settings = data.get("settings") or {}
    for name in ("output_dir", "warehouse", "cache_dir"):
        if isinstance(settings, Mapping) and isinstance(settings.get(name), str):
            found.append((f"settings.{name}", settings[name]))
    for i, model in enumerate(data.get("models") or []):
        found += _model_paths(model, f"models[{i}]")
    for i, variant in enumerate(data.get("variants") or []):
        if isinstance(variant, Mapping):
            if isinstance(variant.get("prompt"), str):
                found.append((f"variants[{i}].prompt", variant["prompt"]))
            schema = variant.get("output_schema")
            if isinstance(schema, Mapping) and isinstance(schema.get("schema_file"), str):
                found.append((f"variants[{i}].output_schema.schema_file", schema["schema_file"]))
            found += _parts_paths(variant.get("messages"), f"variants[{i}].messages")
    for i, source in enumerate(data.get("cases") or []):
        if not isinstance(source, Mapping):
            continue
        for key in ("file", "dir"):
            if isinstance(source.get(key), str):
                found.append((f"cases[{i}].{key}", source[key]))
        files = source.get("files")
        for name, value in files.items() if isinstance(files, Mapping) else ():
            if isinstance(value, str):
                found.append((f"cases[{i}].files.{name}", value))
        source_file = _function_file(source.get("source"))  # a datasource's file.py:Class
        if source_file is not None:
            found.append((f"cases[{i}].source", source_file))
        params = source.get("params")
        if isinstance(params, Mapping) and isinstance(params.get("pattern"), str):
            found.append((f"cases[{i}].params.pattern", params["pattern"]))
    for i, criterion in enumerate(data.get("scorecard") or []):
        if not isinstance(criterion, Mapping):
            continue
        for option in ("function", "embedder"):
            file = _function_file(criterion.get(option))
            if file is not None:
                found.append((f"scorecard[{i}].{option}", file))
        if isinstance(criterion.get("schema_file"), str):
            found.append((f"scorecard[{i}].schema_file", criterion["schema_file"]))
    for i, tool in enumerate(data.get("tools") or []):
        if not isinstance(tool, Mapping):
            continue
        file = _function_file(tool.get("python"))
        if file is not None:
            found.append((f"tools[{i}].python", file))
        if tool.get("command") is not None:
            found += _command_paths(tool["command"], f"tools[{i}].command")
    for i, judge in enumerate(data.get("judges") or []):
        if isinstance(judge, Mapping):
            found += _model_paths(judge.get("model"), f"judges[{i}].model")
            found += _parts_paths(judge.get("messages"), f"judges[{i}].messages")
    return found


def _outside(found: list[tuple[str, str]], folder: Path, root: Path) -> list[Violation]:
    out = []
    for key, written in found:
        resolved = real_path(folder / Path(written).expanduser())
        if not inside(resolved, root):
            out.append(Violation(key, written, f"resolves to {resolved}, outside the root {root}"))
    return out


def _code(data: Mapping[str, Any], cases: list[Any]) -> list[Violation]:
    why = f"runs code; refused without {ALLOW_CODE_FLAG}"
    out = []
    for i, model in enumerate(data.get("models") or []):
        if isinstance(model, Mapping) and model.get("provider") == "command":
            out.append(Violation(f"models[{i}].provider", "command", why))
    for i, judge in enumerate(data.get("judges") or []):
        model = judge.get("model") if isinstance(judge, Mapping) else None
        if isinstance(model, Mapping) and model.get("provider") == "command":
            out.append(Violation(f"judges[{i}].model.provider", "command", why))
    for i, tool in enumerate(data.get("tools") or []):  # a mock tool runs nothing
        for kind in ("python", "command") if isinstance(tool, Mapping) else ():
            if tool.get(kind) is not None:
                out.append(Violation(f"tools[{i}].{kind}", str(tool[kind]), why))
    for i, criterion in enumerate(data.get("scorecard") or []):
        if not isinstance(criterion, Mapping):
            continue
        option = CODE_SCORERS.get(str(criterion.get("type")))
        # `embedder: {model: ID}` names a model, not code
        if option is not None and not isinstance(criterion.get(option), Mapping):
            out.append(Violation(f"scorecard[{i}].{option}", str(criterion.get(option)), why))
    for i, source in enumerate(data.get("cases") or []):
        # a datasource is code (module:Class), a query that may read any file or ATTACH a
        # database (duckdb), or rows whose exec checks are only known while the run goes
        if isinstance(source, Mapping) and "source" in source:
            out.append(Violation(f"cases[{i}].source", str(source["source"]), why))
    for case in cases:  # inline or from a case file: known once the config is loaded
        if case.check is not None:
            out.append(Violation(f"{case.source} check", "exec check", why))
    return out


def _lake(data: Mapping[str, Any]) -> list[Violation]:
    """A client's config may not point the run at a DuckLake: that would connect out, with
    the server's PostgreSQL and S3 credentials, to wherever the config says. The server's own
    warehouse (a lake or not) is set where it was started."""
    settings = data.get("settings") or {}
    if not isinstance(settings, Mapping):
        return []
    out = []
    warehouse = settings.get("warehouse")
    if isinstance(warehouse, str) and warehouse.startswith("ducklake:"):
        why = "a DuckLake target in a client's config is refused: the server's warehouse is used"
        out.append(Violation("settings.warehouse", warehouse, why))
    if "lake" in settings:
        out.append(Violation("settings.lake", "lake", "lake settings belong to the server"))
    return out


def raw_violations(
    data: Mapping[str, Any], config_path: Path, root: Path, *, allow_code: bool
) -> list[Violation]:
    """Refusals found in a parsed config before any file it names is read."""
    found = _outside(referenced_paths(data), config_path.parent, root) + _lake(data)
    return found + ([] if allow_code else _code(data, []))


def violations(config: Any, root: Path, *, allow_code: bool) -> list[Violation]:
    """Every refusal for a loaded config (an :class:`~evalwh.config.model.EvalConfig`):
    paths outside ``root``, attachments of prompt files, and code-running features when
    ``allow_code`` is false. An empty list: the config stays inside."""
    from evalwh.config.attachments import KINDS

    root = root.resolve()
    found = _outside(referenced_paths(config.raw), config.root, root) + _lake(config.raw)
    attachments = []
    for variant in config.variants:
        for i, message in enumerate(variant.messages):
            for j, part in enumerate(message.content):
                if part.path is not None:
                    key = f"{variant.where}.messages[{i}].content[{j}].path"
                    attachments.append((key, part.path))
                elif part.type in KINDS and _static_path(part.source):
                    key = f"{variant.where}.messages[{i}].content[{j}].{part.type}"
                    attachments.append((key, str(part.source)))
    for case in config.cases:  # files of case files (file:// values) and folders, resolved
        for name, attached in case.files.items():
            attachments.append((f"{case.source} files.{name}", str(attached.path)))
    known = {(v.key, v.path) for v in found}
    found += [v for v in _outside(attachments, config.root, root) if (v.key, v.path) not in known]
    if not inside(real_path(config.path), root):
        found.append(Violation("config_path", str(config.path), f"is outside the root {root}"))
    return found + ([] if allow_code else _code(config.raw, list(config.cases)))


def load_confined(path: Path, root: Path, *, allow_code: bool) -> EvalConfig:
    """Load the config at ``path`` for an untrusted caller: refuse before reading any file
    outside ``root`` or loading code without ``allow_code``; raise ConfinementError."""
    from evalwh.config.loader import DEFAULT_CONFIG, build_config
    from evalwh.config.yamlpos import load_yaml

    root = root.resolve()
    path = path / DEFAULT_CONFIG if path.is_dir() else path
    if not path.is_file():
        raise ConfigError("config file not found", file=str(path), fix="pass an eval.yaml")
    path = path.resolve()
    data, node = load_yaml(path)
    if isinstance(data, Mapping):
        found = raw_violations(data, path, root, allow_code=allow_code)
        if found:
            raise ConfinementError(path, found)
    if not isinstance(data, dict):
        raise ConfigError(
            "the config must be a YAML mapping", file=str(path), fix="start with `models:`"
        )
    with confined_to(root, path):
        config = build_config(data, path, node)
    found = violations(config, root, allow_code=allow_code)
    if found:
        raise ConfinementError(path, found)
    return config
