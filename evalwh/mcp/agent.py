"""Who is asking: an :class:`Agent` is an MCP client confined to a root folder (every config
path it names resolves inside it, and code-running features need ``--allow-code``), with the
warehouse and settings it reads.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from evalwh.errors import UsageError

if TYPE_CHECKING:
    from evalwh.api import WarehouseView
    from evalwh.config.model import EvalConfig
    from evalwh.config.settings import Settings

ENV_ROOT = "EVALWH_MCP_ROOT"


def mcp_root(env: Mapping[str, str] | None = None, cwd: Path | None = None) -> Path:
    """The folder agents may read configs from: ``EVALWH_MCP_ROOT``, else the working folder."""
    env = os.environ if env is None else env
    raw = env.get(ENV_ROOT)
    root = Path(raw).expanduser() if raw else (cwd or Path.cwd())
    if not root.is_absolute():
        root = (cwd or Path.cwd()) / root
    root = root.resolve()
    if not root.is_dir():
        raise UsageError(f"{ENV_ROOT}={raw!r} is not a folder")
    return root


def confine(config_path: str | Path, root: Path) -> Path:
    """``config_path`` (relative paths start at ``root``) resolved, symlinks followed; a
    UsageError when it lands outside ``root``."""
    given = Path(config_path).expanduser()
    resolved = (given if given.is_absolute() else root / given).resolve()
    if resolved != root and root not in resolved.parents:
        raise UsageError(
            f"config_path '{config_path}' resolves to {resolved}, outside the server's root "
            f"{root} ({ENV_ROOT}); pass a config inside the root"
        )
    return resolved


@dataclass
class Agent:
    """What an agent-facing server knows: its root, its warehouse, its environment."""

    root: Path
    output_dir: Path | None = None
    allow_code: bool = False  # `evalwh mcp --allow-code`: python scorers, command, checks
    env: Mapping[str, str] = field(default_factory=lambda: os.environ)
    cwd: Path = field(default_factory=Path.cwd)
    _warehouse: Path | None = None
    _settings: Settings | None = None

    @classmethod
    def from_env(cls, output_dir: str | Path | None = None, *, allow_code: bool = False) -> Agent:
        cwd = Path.cwd()
        return cls(
            root=mcp_root(os.environ, cwd),
            output_dir=Path(output_dir) if output_dir else None,
            allow_code=allow_code,
            cwd=cwd,
        )

    def load(self, config_path: str) -> EvalConfig:
        """The config at ``config_path``, confined to the root (evalwh.config.confinement): every
        file it names inside, no code-running feature unless ``allow_code``."""
        from evalwh.config.confinement import load_confined

        return load_confined(confine(config_path, self.root), self.root, allow_code=self.allow_code)

    @property
    def warehouse(self) -> Path:
        """The one warehouse this server reads and runs into: the one `evalwh list` would use
        in the working folder (-o, EVALWH_OUTPUT_DIR, ./eval.yaml's settings, .evalwh)."""
        if self._warehouse is None:
            from evalwh import api

            local = self.cwd / "eval.yaml"
            view = api.open_warehouse(
                config=local if local.is_file() else None, output_dir=self.output_dir
            )
            self._warehouse, self._settings = view.path, view.settings
        return self._warehouse

    def view(self) -> WarehouseView:
        """The warehouse, with the settings that bound its queries (mcp_query_timeout_s ...)."""
        from evalwh.api import WarehouseView

        return WarehouseView(self.warehouse, self._settings)

    def run_output_dir(self) -> Path | None:
        """What run_eval gets as output_dir so that its run lands in :attr:`warehouse`."""
        return self.warehouse.parent if self.warehouse.name == "warehouse.duckdb" else None


# -- run_eval -------------------------------------------------------------------------------
