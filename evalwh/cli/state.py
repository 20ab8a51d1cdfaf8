"""Global options (accepted before or after the command) and the output channel."""

from __future__ import annotations

import functools
import inspect
import json
import logging
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Annotated, Any, TypeVar, get_type_hints

import typer
from rich.console import Console


@dataclass
class GlobalState:
    config: Path | None = None
    output_dir: Path | None = None
    warehouse: str | None = None
    quiet: bool = False
    verbose: int = 0
    no_color: bool = False
    json: bool = False
    cache_dir: Path | None = None

    def merge(self, **values: Any) -> None:
        for key, value in values.items():
            if value not in (None, False, 0):
                setattr(self, key, value)
        if self.cache_dir is not None:
            # a flag outranks the environment, which is the next layer of the settings: the
            # core reads it there, as it does EVALWH_CACHE_DIR itself
            os.environ["EVALWH_CACHE_DIR"] = str(self.cache_dir.expanduser().resolve())

    def where(self) -> dict[str, Any]:
        """Where the warehouse is, as every core call takes it: ``-o`` and ``--warehouse``."""
        return {"output_dir": self.output_dir, "warehouse": self.warehouse}


STATE = GlobalState()

ConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--config",
        "-c",
        metavar="PATH",
        help="The eval config (default: ./eval.yaml).",
        show_default=False,
    ),
]
OutputDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--output-dir",
        "-o",
        metavar="DIR",
        help="Folder of the warehouse and exports (default: .evalwh).",
        show_default=False,
    ),
]
WarehouseOpt = Annotated[
    str | None,
    typer.Option(
        "--warehouse",
        metavar="TARGET",
        help="The warehouse: a DuckDB file or a ducklake: target (default: "
        "<output dir>/warehouse.duckdb; also EVALWH_WAREHOUSE).",
        show_default=False,
    ),
]
QuietOpt = Annotated[
    bool, typer.Option("--quiet", "-q", help="No progress or notes; results only.")
]
VerboseOpt = Annotated[
    int, typer.Option("--verbose", "-v", count=True, help="More logging (-vv: debug).")
]
NoColorOpt = Annotated[bool, typer.Option("--no-color", help="No colours (also: NO_COLOR=1).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]
CacheDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--cache-dir",
        metavar="DIR",
        help="Folder of the response cache, apart from the warehouse (also: "
        "EVALWH_CACHE_DIR, settings.cache_dir).",
        show_default=False,
    ),
]

GLOBAL_PARAMS = [
    inspect.Parameter("config", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=ConfigOpt),
    inspect.Parameter(
        "output_dir", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=OutputDirOpt
    ),
    inspect.Parameter(
        "warehouse", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=WarehouseOpt
    ),
    inspect.Parameter("quiet", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=QuietOpt),
    inspect.Parameter("verbose", inspect.Parameter.KEYWORD_ONLY, default=0, annotation=VerboseOpt),
    inspect.Parameter(
        "no_color", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=NoColorOpt
    ),
    inspect.Parameter("json", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=JsonOpt),
    inspect.Parameter(
        "cache_dir", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=CacheDirOpt
    ),
]
F = TypeVar("F", bound=Callable[..., Any])


def with_globals(fn: F) -> F:
    """Let a command accept the global options after its name too (`evalwh run --json`)."""
    hints = get_type_hints(fn, include_extras=True)  # resolve string annotations in fn's module
    signature = inspect.signature(fn)
    signature = signature.replace(
        parameters=[
            p.replace(annotation=hints.get(p.name, p.annotation))
            for p in signature.parameters.values()
        ]
    )
    names = {p.name for p in GLOBAL_PARAMS}

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        STATE.merge(**{k: kwargs.pop(k) for k in list(kwargs) if k in names})
        configure_logging()
        return fn(*args, **kwargs)

    params = list(signature.parameters.values()) + GLOBAL_PARAMS
    wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {**hints, **{p.name: p.annotation for p in GLOBAL_PARAMS}}
    return wrapper  # type: ignore[return-value]


def configure_logging() -> None:
    level = (
        logging.WARNING
        if STATE.verbose == 0
        else (logging.INFO if STATE.verbose == 1 else logging.DEBUG)
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_SafeFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler], force=True)


class _SafeFormatter(logging.Formatter):
    """Log lines (which may quote provider replies or case data) with control characters
    shown escaped, like everything else evalwh prints."""

    def format(self, record: logging.LogRecord) -> str:
        from evalwh.reports.textsafe import terminal_safe

        return terminal_safe(super().format(record))


def no_color() -> bool:
    return STATE.no_color or bool(os.environ.get("NO_COLOR"))


class SafeConsole(Console):
    """The one console evalwh prints through: untrusted text cannot drive the terminal.

    Markup and emoji codes are off (a ``[bold]`` or ``:smile:`` in a model output prints
    literally; evalwh styles with Text objects), strings are neutralised before layout, and every text segment is neutralised
    again as it is written (:func:`evalwh.reports.textsafe.terminal_safe`: ESC, C0/C1 controls and
    bidi overrides shown escaped, e.g. ``\\x1b``), so no code path prints a raw control
    character; rich's own styling and cursor control are separate segments and unaffected.
    """

    def render_str(self, text: str, **kwargs: Any) -> Any:
        from evalwh.reports.textsafe import terminal_safe

        return super().render_str(terminal_safe(text), **kwargs)

    def _render_buffer(self, buffer: Any) -> str:
        from rich.segment import Segment

        from evalwh.reports.textsafe import terminal_safe

        return super()._render_buffer(
            Segment(terminal_safe(text), style, control)
            if not control
            else Segment(text, style, control)
            for text, style, control in buffer
        )


@functools.lru_cache(maxsize=2)
def _console(stderr: bool, plain: bool) -> Console:
    console = SafeConsole(
        stderr=stderr, no_color=plain, highlight=False, soft_wrap=False, markup=False, emoji=False
    )
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = 160  # logs and CI: do not squeeze tables into 80 columns
    return console


def out() -> Console:
    return _console(False, no_color())


def err() -> Console:
    return _console(True, no_color())


def note(message: str) -> None:
    """An informational line on stderr (silent with -q or --json)."""
    if not STATE.quiet and not STATE.json:
        err().print(message)


def json_default(value: Any) -> Any:
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "to_dict"):
        return value.to_dict()
    return str(value)


def emit_json(data: Any) -> None:
    from evalwh.reports.textsafe import json_safe

    text = json.dumps(data, default=json_default, ensure_ascii=False, indent=2)
    sys.stdout.write(json_safe(text) + "\n")
    sys.stdout.flush()
