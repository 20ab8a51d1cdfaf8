"""The boundaries a file read for a config must stay within, with every symlink followed:
a file found in a folder (a ``dir:`` source, a folder of case files, a glob's matches) stays in
that folder, and under MCP every file read for a config stays inside the server's root
(:func:`confined_to`, :func:`readable`). Below ``evalwh.config`` and ``evalwh.datasources`` so
that both read through it (docs/security.md)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from evalwh.errors import ConfigError, UsageError

ALLOW_CODE_FLAG = "--allow-code"


@dataclass(frozen=True)
class Violation:
    key: str  # where in the config, e.g. cases[0].file
    path: str  # the value as written
    why: str

    def __str__(self) -> str:
        return f"{self.key}: {self.path!r} {self.why}"


class ConfinementError(UsageError):
    """A config that reaches outside the root, or runs code without ``--allow-code``."""

    def __init__(self, config: Path, found: list[Violation]) -> None:
        self.config = config
        self.violations = found
        lines = "\n".join(f"  - {v}" for v in found)
        super().__init__(
            f"{config}: refused, this server does not reach these:\n{lines}\n"
            f"  fix: keep every file inside the server's root; code-running features need a "
            f"server started with `evalwh mcp {ALLOW_CODE_FLAG}` (docs/security.md)"
        )

    def to_dict(self) -> dict[str, object]:
        return {
            **super().to_dict(),
            "violations": [{"key": v.key, "path": v.path, "why": v.why} for v in self.violations],
        }


def real_path(path: Path) -> Path:
    """``path`` with every symlink followed (``Path.resolve(strict=True)``); a path that does
    not exist resolves as far as it goes, so the reader's own "not found" still names it."""
    try:
        return path.resolve(strict=True)
    except (OSError, RuntimeError):
        return path.resolve()


def inside(path: Path, root: Path) -> bool:
    """``path`` (already resolved) is ``root`` or under it."""
    return path.is_relative_to(root)


def in_folder(path: Path, folder: Path, *, file: str | None, where: str | None) -> Path:
    """The real path of ``path``, a file found in ``folder`` (a ``dir:`` source, a folder of
    case files, a glob's matches), or a ConfigError when it resolves outside ``folder``
    (resolved): a symlink in a folder must not carry a file from elsewhere into a run. The
    folder is what the config author pointed at; its content may come from anyone."""
    real = real_path(path)
    if not inside(real, folder):
        raise ConfigError(
            f"{path.name} in {folder} resolves to {real}, outside that folder",
            file=file,
            where=where,
            fix="copy the file into the folder instead of linking it, or point the config "
            "at the folder the link leads to",
        )
    return real


_BOUNDARY: ContextVar[tuple[Path, Path] | None] = ContextVar("evalwh_mcp_root", default=None)


@contextmanager
def confined_to(root: Path, config: Path) -> Iterator[None]:
    """Within it, every file read for ``config`` (:func:`readable`) must resolve inside
    ``root``, whichever key named it: the MCP root as a hard boundary behind the check of
    the keys a config is known to name (:func:`raw_violations`)."""
    token = _BOUNDARY.set((root.resolve(), config))
    try:
        yield
    finally:
        _BOUNDARY.reset(token)


def readable(path: Path, key: str) -> Path:
    """The real path of a file about to be read for a config (``key`` names where); inside
    :func:`confined_to`, a ConfinementError when it resolves outside the root, unopened."""
    real = real_path(path)
    bound = _BOUNDARY.get()
    if bound is not None and not inside(real, bound[0]):
        root, config = bound
        why = f"resolves to {real}, outside the root {root}"
        raise ConfinementError(config, [Violation(key, str(path), why)])
    return real
